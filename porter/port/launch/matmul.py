"""Stage: a small matmul and the pointwise epilogue after it in one Triton kernel.

Inductor (without max-autotune) leaves a matmul to cuBLAS and puts what
follows it (bias, activation) in a pointwise kernel that reads the matmul's
output back: two launches and a round trip of the output through memory.
Where the matmul is small, that overhead is most of the time. For those
calls the scaffold gets a second kernel that computes the matmul's
(rows, cols) tile in registers with `tl.dot` and runs the epilogue on it.

`matmul_epilogue_form` derives that kernel from the epilogue's tile kernel:
its one fp32 load of the matmul's output becomes the matmul itself,

    out = tl.load(out_ptr + offsets, mask).to(tl.float32)

into

    out = tl.zeros((BLOCK_ROWS, BLOCK_COLS), dtype=tl.float32)
    for k_start in range(0, in_features, BLOCK_K):
        ...
        out = tl.dot(lhs_tile, rhs_tile, out)

and everything after it (the bias under ADD_BIAS, the activation, the store)
stays as it was. `fuse_matmul_epilogue` gives the launcher that kernel's
launch in place of the pair, taken up to MATMUL_EPILOGUE_MAX_ROWS rows and
MATMUL_EPILOGUE_MAX_MACS multiply-adds, and past those rows where the inner
dimension is at most MATMUL_WIDE_MAX_INNER (in larger blocks); for fp32
outputs (tl.dot in tf32x3) not at one row of a large weight
(`matmul_in_one_kernel` in the template says why, with the H200 figures):
ahead of the pair, returning after it, where the pair ends the launcher; in
an if/else around the pair elsewhere. Other calls keep cuBLAS and the
epilogue kernel.
"""

from __future__ import annotations

import ast
import copy
import re

from porter.port.launch.bias import ADD_BIAS, loaded_once
from porter.port.launch.launcher import (
    NO_PDL_AFTER_EXTERN,
    Calls,
    Launcher,
    LaunchStep,
    pdl_behind,
    unit_stride,
)
from porter.port.model import KernelPort, PortOptions, PortState, all_steps
from porter.ast_tools import comment_stmt, is_call

LHS_PTR = "lhs_ptr"
RHS_PTR = "rhs_ptr"
LHS_ROW_STRIDE = "lhs_row_stride"
RHS_K_STRIDE = "rhs_k_stride"
RHS_COL_STRIDE = "rhs_col_stride"
BLOCK_K = "BLOCK_K"
DOT_PRECISION = "DOT_PRECISION"
# The names the derived kernel adds; an epilogue already using one is left alone.
_ADDED = {
    LHS_PTR,
    RHS_PTR,
    LHS_ROW_STRIDE,
    RHS_K_STRIDE,
    RHS_COL_STRIDE,
    BLOCK_K,
    "k_start",
    "k_cols",
    "lhs_tile",
    "rhs_tile",
}
NOTE = (
    "small matmuls: a second kernel computes the matmul's tile "
    "with tl.dot and applies the epilogue to it in registers (one launch, no "
    "round trip of the matmul's output); larger ones keep cuBLAS"
)
_WHY = (
    "# A small matmul: one kernel for the matmul and what follows it, no\n"
    "# cuBLAS call and no round trip of its output (matmul_in_one_kernel\n"
    "# says where it wins)."
)


def _assignment_of(fn: ast.FunctionDef, name: str) -> ast.Assign | None:
    """The one top-level `name = ...` of fn, or None."""
    found = [
        s
        for s in fn.body
        if isinstance(s, ast.Assign) and [ast.unparse(t) for t in s.targets] == [name]
    ]
    return found[0] if len(found) == 1 else None


def _bounds(fn: ast.FunctionDef) -> tuple[str, str] | None:
    """(rows bound, cols bound) of a tile kernel's `mask = (rows < R) & (cols < C)`."""
    mask = _assignment_of(fn, "mask")
    if mask is None:
        return None
    value = mask.value
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitAnd)):
        return None
    out = []
    for side, var in ((value.left, "rows"), (value.right, "cols")):
        if not (
            isinstance(side, ast.Compare)
            and ast.unparse(side.left) == var
            and len(side.ops) == 1
            and isinstance(side.ops[0], ast.Lt)
        ):
            return None
        out.append(ast.unparse(side.comparators[0]))
    return out[0], out[1]


def _stored_once(fn: ast.FunctionDef, ptr: str) -> bool:
    """fn stores through ptr once, at `ptr + offsets` (the tile it loaded)."""
    stores = [
        n
        for n in ast.walk(fn)
        if is_call(n, "tl.store")
        and n.args
        and ptr in {m.id for m in ast.walk(n.args[0]) if isinstance(m, ast.Name)}
    ]
    return len(stores) == 1 and ast.unparse(stores[0].args[0]) == f"{ptr} + offsets"


def _arg(name: str, annotation: str = "") -> ast.arg:
    ann = ast.parse(annotation, mode="eval").body if annotation else None
    return ast.arg(name, annotation=ann)


def matmul_epilogue_form(
    fn: ast.FunctionDef, ptr: str, k_size: str, precision: bool = False
) -> ast.FunctionDef | None:
    """A copy of the tile kernel fn whose one fp32 load through ptr is the
    matmul of lhs (rows by k_size, unit stride along k) and rhs (k_size by
    cols) instead (module docstring); k_size becomes a constexpr parameter.
    None (fn unchanged either way) where fn is not a (rows, cols) tile
    kernel that loads and stores the tile at ptr + offsets once, or already
    uses a name the form adds. precision: tl.dot takes its input precision
    from a DOT_PRECISION constexpr (for fp32 operands)."""
    names = {a.arg for a in fn.args.args}
    used = names | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    if ptr not in names or not {"BLOCK_ROWS", "BLOCK_COLS"} <= names:
        return None
    if (_ADDED | {k_size, DOT_PRECISION}) & used:
        return None
    bounds = _bounds(fn)
    offsets = _assignment_of(fn, "offsets")
    if bounds is None or offsets is None:
        return None
    row_bound, col_bound = bounds
    if ast.unparse(offsets.value) != f"rows * {col_bound} + cols":
        return None
    if loaded_once(fn, ptr) is None or not _stored_once(fn, ptr):
        return None
    if row_bound not in names:
        return None
    new = copy.deepcopy(fn)
    load = loaded_once(new, ptr)
    acc = load.targets[0].id
    matmul = ast.parse(
        f"{acc} = tl.zeros((BLOCK_ROWS, BLOCK_COLS), dtype=tl.float32)\n"
        f"for k_start in range(0, {k_size}, {BLOCK_K}):\n"
        f"    k_cols = (k_start + tl.arange(0, {BLOCK_K})).to(tl.int64)\n"
        f"    lhs_tile = tl.load(\n"
        f"        {LHS_PTR} + rows * {LHS_ROW_STRIDE} + k_cols[None, :],\n"
        f"        (rows < {row_bound}) & (k_cols[None, :] < {k_size}),\n"
        f"        other=0.0,\n"
        f"    )\n"
        f"    rhs_tile = tl.load(\n"
        f"        {RHS_PTR} + k_cols[:, None] * {RHS_K_STRIDE}"
        f" + cols.to(tl.int64) * {RHS_COL_STRIDE},\n"
        f"        (k_cols[:, None] < {k_size}) & (cols < {col_bound}),\n"
        f"        other=0.0,\n"
        f"    )\n"
        f"    {acc} = tl.dot(lhs_tile, rhs_tile, {acc}"
        + (f", input_precision={DOT_PRECISION})" if precision else ")")
    ).body
    matmul.insert(
        0,
        comment_stmt(
            "the matmul's tile in fp32, BLOCK_K of the inner dimension a step"
        ),
    )
    at = new.body.index(load)
    new.body[at : at + 1] = matmul
    args = new.args.args
    args[0:0] = [_arg(LHS_PTR), _arg(RHS_PTR)]
    at = next(i for i, a in enumerate(args) if a.arg == row_bound) + 1
    # The weight's strides are fixed per model: left to Triton's specialization
    # (a unit stride becomes a constant, so its loads are vectorized).
    args[at:at] = [
        _arg(LHS_ROW_STRIDE, "tl.int64"),
        _arg(RHS_K_STRIDE),
        _arg(RHS_COL_STRIDE),
    ]
    # The inner size, a per-model size, goes with the others (before the
    # output's row size, or else the block sizes).
    before = col_bound if col_bound in {a.arg for a in args} else "BLOCK_ROWS"
    at = next(i for i, a in enumerate(args) if a.arg == before)
    args.insert(at, _arg(k_size, "tl.constexpr"))
    at = next(i for i, a in enumerate(args) if a.arg == "BLOCK_COLS") + 1
    args.insert(at, _arg(BLOCK_K, "tl.constexpr"))
    if precision:
        args.insert(at + 1, _arg(DOT_PRECISION, "tl.constexpr"))
    # linear_gelu_kernel -> linear_gelu_matmul_kernel; mlp_kernel_0 ->
    # mlp_matmul_kernel_0.
    named = re.fullmatch(r"(.*)_kernel(_\d+)?", fn.name)
    base, number = named.groups() if named else (fn.name, None)
    new.name = f"{base}_matmul_kernel{number or ''}"
    return new


def _mm(call: str) -> ast.Call | None:
    """The one `torch.mm(lhs, rhs, out=out)` of an extern step's text."""
    try:
        tree = ast.parse(call)
    except SyntaxError:
        return None
    found = [n for n in ast.walk(tree) if is_call(n, "torch.mm")]
    if len(found) != 1:
        return None
    node = found[0]
    kw = {k.arg: k.value for k in node.keywords}
    if len(node.args) != 2 or set(kw) != {"out"}:
        return None
    if not isinstance(kw["out"], ast.Name):
        return None
    return node


def _identifiers(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def fuse_matmul_epilogue(
    launcher: Launcher, ports: list[KernelPort], options: PortOptions = PortOptions()
) -> bool:
    """Give every step pair `torch.mm(lhs, rhs, out=out)` (or unfuse_bias's
    form of it) + a tile kernel over `out` a matmul-and-epilogue launch taken
    instead for small calls: ahead of the pair, returning after it, where the
    pair ends the launcher; else in an if/else around the pair (the step's
    `otherwise`). False (unchanged) where there is none."""
    launches = [s for s in launcher.steps if s.kind == "launch"]
    port_of = dict(zip(map(id, launches), ports))
    fused = False
    # From the end: a pair nested in an if/else leaves the indices before it.
    for i in range(len(launcher.steps) - 2, -1, -1):
        steps = launcher.steps
        if steps[i].kind != "extern" or steps[i + 1].kind != "launch":
            continue
        step = _matmul_step(
            launcher, steps[i], steps[i + 1], port_of, options.matmul_fp32
        )
        if step is None:
            continue
        if not pdl_behind(steps[i - 1] if i > 0 else None, options.pdl_after_extern):
            step.pdl = False  # the launcher's rule for a kernel behind an extern call
            step.setup.insert(0, NO_PDL_AFTER_EXTERN)
        if i + 2 == len(steps):
            steps.insert(i, step)
        else:
            step.otherwise = steps[i : i + 2]
            steps[i : i + 2] = [step]
        fused = True
    return fused


def _matmul_step(
    launcher: Launcher,
    extern: LaunchStep,
    epilogue: LaunchStep,
    port_of: dict,
    fp32: str | None,
) -> LaunchStep | None:
    """The matmul-and-epilogue launch for one (extern, epilogue) pair, or None
    where the pair is not a matmul and a tile kernel over its output."""
    kp = port_of.get(id(epilogue))
    mm = _mm(extern.call)
    if kp is None or kp.tile is None or mm is None or kp.persistent is not None:
        return None
    out = mm.keywords[0].value.id
    operands = {n.id for a in mm.args for n in ast.walk(a) if isinstance(n, ast.Name)}
    if out in operands:
        return None
    alloc = next((a for a in launcher.allocs if a.var == out), None)
    _, cols, rows = kp.tile
    if alloc is None or alloc.strides != [cols, "1"]:
        return None
    ptr = next((name for name, value in epilogue.args if value == out), None)
    lhs, rhs = (ast.unparse(a) for a in mm.args)
    lhs_var = lhs if lhs.isidentifier() else "lhs"
    # The inner size by name: the dim the launcher reads off the lhs, or the
    # column count of a buffer the launcher allocates (contiguous rows).
    lhs_alloc = next((a for a in launcher.allocs if a.var == lhs_var), None)
    if lhs_alloc is not None and not (
        len(lhs_alloc.strides) == 2 and lhs_alloc.strides[1] == "1"
    ):
        lhs_alloc = None
    k_dim = next(
        (
            d
            for d in launcher.dims
            if d.expr == f"{lhs_var}.shape[1]"
            or (lhs_alloc is not None and d.name == lhs_alloc.sizes[1])
        ),
        None,
    )
    k_size = k_dim.name if k_dim is not None else "inner_size"
    # Without a named size for it, the inner size is the weight's, which the
    # input must match (cuBLAS would refuse; the kernel would read past it).
    k_expr = k_dim.name if k_dim is not None else "rhs.shape[0]"
    # The branch names the weight's view `rhs` (and an lhs expression `lhs`):
    # not where the launcher already has a name of its own for them.
    taken = _identifiers(launcher.signature) | _identifiers(" ".join(launcher.prelude))
    for other in all_steps(launcher.steps):
        if other.kind == "matmul":
            continue  # another pair's branch, whose rhs is its own
        taken |= _identifiers(other.call) | {
            n for _, v in other.args for n in _identifiers(v)
        }
    if "rhs" in taken or (lhs_var != lhs and lhs_var in taken):
        return None
    form = matmul_epilogue_form(kp.tree, ptr, k_size, fp32 is not None) if ptr else None
    if form is None:
        return None
    row_bound, col_bound = _bounds(kp.tree)
    setup = [_WHY]
    if lhs_var != lhs:
        setup.append(f"{lhs_var} = {lhs}")
    if lhs_alloc is None and unit_stride(lhs_var) not in launcher.prelude:
        # The kernel takes the inner dimension at unit stride.
        setup.append(unit_stride(lhs_var))
    setup.append(f"rhs = {rhs}")
    if k_dim is None:
        setup.append(
            f"if {lhs_var}.shape[1] != rhs.shape[0]:\n"
            f"    raise ValueError(f'{lhs_var} has {{{lhs_var}.shape[1]}} columns; "
            f"the matmul takes {{rhs.shape[0]}}')"
        )
    setup += [
        f"BLOCK_ROWS, BLOCK_COLS, BLOCK_K, num_warps, num_stages = "
        f"matmul_settings({rows}, {k_expr}, {out}.element_size())",
        f"COL_BLOCKS = triton.cdiv({cols}, BLOCK_COLS)",
    ]
    args = []
    for name, value in epilogue.args:
        if name == ADD_BIAS:
            value = "True"  # the bias is this kernel's in every dtype it takes
        args.append((name, value))
        if name == row_bound:
            args += [
                (LHS_ROW_STRIDE, f"{lhs_var}.stride(0)"),
                (RHS_K_STRIDE, "rhs.stride(0)"),
                (RHS_COL_STRIDE, "rhs.stride(1)"),
            ]
        if name == "BLOCK_COLS":
            args.append((BLOCK_K, BLOCK_K))
            if fp32 is not None:
                # tf32 (Triton's default) concerns fp32 operands only.
                args.append(
                    (
                        DOT_PRECISION,
                        f'"{fp32}" if {out}.element_size() == 4 else "tf32"',
                    )
                )
    at = next(
        (i for i, (name, _) in enumerate(args) if name in (col_bound, "BLOCK_ROWS")),
        len(args),
    )
    args.insert(at, (k_size, k_expr))
    args[0:0] = [(LHS_PTR, lhs_var), (RHS_PTR, "rhs")]
    # The branch's condition comes before rhs (and lhs) are made.
    when_k = (
        k_dim.name
        if k_dim is not None
        else (f"{lhs}.shape[1]" if lhs.isidentifier() else f"({lhs}).shape[1]")
    )
    step = LaunchStep(
        "matmul",
        kernel=form.name,
        grid=epilogue.grid,
        args=args,
        setup=setup,
        num_warps="num_warps",
        num_stages="num_stages",
        pdl=True,
        when=(
            f"matmul_in_one_kernel({rows}, {when_k}, {cols}, {out}.element_size())"
            # fp32 operands left to cuBLAS: only 2-byte outputs take the one kernel
            + ("" if fp32 is not None else f" and {out}.element_size() == 2")
        ),
        calls=Calls({"matmul_settings", "matmul_in_one_kernel"}),
    )
    kp.matmul = form
    kp.notes.append(NOTE)
    return step


def matmul_with_epilogue(port: PortState) -> None:
    """A small matmul and the tile kernel over its output gain one kernel
    for both, taken for small calls (fuse_matmul_epilogue)."""
    fuse_matmul_epilogue(port.launcher, port.kernels, port.options)
