"""Stage: add a linear layer's bias in its pointwise epilogue, not in cuBLAS.

Captured on the codegen-only target, Inductor keeps the bias in the matmul
(`addmm(bias, x, w, out=buf)`) and its epilogue kernel reads `buf` alone.
On a GPU it does not: torch's post-grad pass `unfuse_bias_add_to_pointwise`
applies to GPU tensors only, and there the matmul runs without its bias and
the epilogue adds it. cuBLAS's bias epilogue is not free: on an H200 (CUDA
graph of 20 calls) the `torch.mm` form took 0.90-1.00 of the `addmm` form's
time in bf16 and fp16 at 1-256 tokens of 128 -> 256 and 4096 -> 4096
features, and the bias costs the epilogue one small load it keeps in cache.

In fp32 the scaffold keeps `addmm`: cuBLAS's plain fp32 matmul at 16 rows of
128 -> 256 ran a kernel of 32.8 µs where `addmm` took 4.3
(lab/NOTES.md). So the launcher picks by the output's element
size, and the kernel adds the bias under the ADD_BIAS constexpr.

`unfuse_bias` rewrites the launcher's

    torch.addmm(bias, x, w, alpha=1, beta=1, out=out)
    kernel[grid](out_ptr=out, ...)

into

    add_bias = out.element_size() == 2
    if add_bias:
        torch.mm(x, w, out=out)
    else:
        torch.addmm(bias, x, w, alpha=1, beta=1, out=out)
    kernel[grid](out_ptr=out, bias_ptr=bias, ..., ADD_BIAS=add_bias)

where the kernel after the matmul is a (rows, cols) tile kernel over the
matmul's output, contiguous rows of the bias' length, and it loads that
output once, in fp32 (`add_bias_after_load` adds the bias there).
"""

from __future__ import annotations

import ast

from porter.port.launch.launcher import Launcher, LaunchStep
from porter.port.model import KernelPort, Param, PortState
from porter.ast_tools import comment_stmt, is_call

ADD_BIAS = "ADD_BIAS"
BIAS_PTR = "bias_ptr"
NOTE = (
    "2-byte outputs: the matmul runs without its bias, which the kernel after it "
    "adds (as Inductor does on a GPU); fp32 keeps cuBLAS's addmm"
)
_WHY = (
    "# 2-byte outputs: the bias is added in the kernel below, as Inductor does on\n"
    "# a GPU; cuBLAS's bias epilogue took up to 1.1x the time on an H200. fp32\n"
    "# keeps addmm: cuBLAS's plain fp32 matmul took 7.7x its time at 16 rows\n"
    "# (lab/NOTES.md)."
)


def loaded_once(fn: ast.FunctionDef, ptr: str) -> ast.Assign | None:
    """The top-level `x = tl.load(ptr + offsets, ...).to(tl.float32)`, where it
    is the kernel's only load through ptr."""
    loads = [
        n
        for n in ast.walk(fn)
        if is_call(n, "tl.load")
        and n.args
        and ptr in {m.id for m in ast.walk(n.args[0]) if isinstance(m, ast.Name)}
    ]
    if len(loads) != 1:
        return None
    for stmt in fn.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            continue
        value = stmt.value
        upcast = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "to"
            and [ast.unparse(a) for a in value.args] == ["tl.float32"]
        )
        if (
            upcast
            and value.func.value is loads[0]
            and ast.unparse(loads[0].args[0]) == f"{ptr} + offsets"
        ):
            return stmt
    return None


def add_bias_after_load(fn: ast.FunctionDef, ptr: str, k: str) -> bool:
    """After the tile kernel's one fp32 load through ptr, add the bias of its
    column under ADD_BIAS; adds the bias_ptr parameter after ptr and the
    ADD_BIAS constexpr before the block sizes. False (unchanged) where the
    kernel's offsets are not `rows * k + cols`, ptr is loaded elsewhere, or
    the kernel has the parameters already."""
    names = {a.arg for a in fn.args.args}
    if ptr not in names or {BIAS_PTR, ADD_BIAS} & names or "BLOCK_ROWS" not in names:
        return False
    offsets = [
        s
        for s in fn.body
        if isinstance(s, ast.Assign)
        and [ast.unparse(t) for t in s.targets] == ["offsets"]
    ]
    if len(offsets) != 1 or ast.unparse(offsets[0].value) != f"rows * {k} + cols":
        return False
    load = loaded_once(fn, ptr)
    if load is None:
        return False
    x = load.targets[0].id
    add = ast.parse(
        f"if {ADD_BIAS}:\n"
        f"    {x} = {x} + tl.load({BIAS_PTR} + cols, cols < {k}, "
        f'eviction_policy="evict_last").to(tl.float32)'
    ).body[0]
    add.body.insert(
        0, comment_stmt("the matmul's bias, one per column (kept in cache)")
    )
    fn.body.insert(fn.body.index(load) + 1, add)
    args = fn.args.args
    at = next(i for i, a in enumerate(args) if a.arg == ptr)
    args.insert(at + 1, ast.arg(BIAS_PTR))
    blocks = next(i for i, a in enumerate(args) if a.arg == "BLOCK_ROWS")
    args.insert(
        blocks,
        ast.arg(ADD_BIAS, annotation=ast.parse("tl.constexpr", mode="eval").body),
    )
    return True


def _addmm(call: str) -> tuple[str, str, str] | None:
    """(bias, mm call, out) of `torch.addmm(bias, a, b, alpha=1, beta=1,
    out=out)`, the mm call being `torch.mm(a, b, out=out)`; None otherwise."""
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not (is_call(node, "torch.addmm") and len(node.args) == 3):
        return None
    kw = {k.arg: k.value for k in node.keywords}
    if set(kw) - {"alpha", "beta", "out"} or "out" not in kw:
        return None
    for scale in ("alpha", "beta"):
        if scale in kw and not (
            isinstance(kw[scale], ast.Constant) and kw[scale].value == 1
        ):
            return None
    bias, out = node.args[0], kw["out"]
    if not (isinstance(bias, ast.Name) and isinstance(out, ast.Name)):
        return None
    mm = ast.Call(
        ast.parse("torch.mm", mode="eval").body,
        node.args[1:],
        [ast.keyword("out", out)],
    )
    return bias.id, ast.unparse(mm), out.id


def unfuse_bias(launcher: Launcher, ports: list[KernelPort], module) -> bool:
    """Rewrite the first addmm whose output the next launch's tile kernel reads
    (module docstring); False (unchanged) where there is none."""
    launches = [s for s in launcher.steps if s.kind == "launch"]
    port_of = {id(step): kp for step, kp in zip(launches, ports)}
    # By the launcher's name for the tensor (a parameter `fc.bias` is `fc_bias`).
    bias_sizes = {
        gi.target.replace(".", "_"): list(gi.sizes)
        for gi in module.inputs
        if gi.kind == "tensor"
    }
    for i, step in enumerate(launcher.steps[:-1]):
        nxt = launcher.steps[i + 1]
        if step.kind != "extern" or nxt.kind != "launch":
            continue
        found = _addmm(step.call)
        kp = port_of.get(id(nxt))
        if found is None or kp is None or kp.tile is None:
            continue
        bias, mm, out = found
        k_param, k_expr, _ = kp.tile
        if bias_sizes.get(bias) != [k_expr]:
            continue
        alloc = next((a for a in launcher.allocs if a.var == out), None)
        if alloc is None or alloc.strides != [k_expr, "1"]:
            continue
        ptr = next((name for name, value in nxt.args if value == out), None)
        if ptr is None or not add_bias_after_load(kp.tree, ptr, k_param):
            continue
        _rewrite_steps(step, nxt, bias, mm, out, ptr)
        kp.params.insert(
            [p.name for p in kp.params].index(ptr) + 1,
            Param(BIAS_PTR, "pointer", bias),
        )
        kp.notes.append(NOTE)
        return True
    return False


def _rewrite_steps(
    extern: LaunchStep, launch: LaunchStep, bias: str, mm: str, out: str, ptr: str
) -> None:
    addmm = extern.call.strip()
    extern.call = (
        f"{_WHY}\n"
        f"add_bias = {out}.element_size() == 2\n"
        f"if add_bias:\n    {mm}\n"
        f"else:\n    {addmm}"
    )
    names = [name for name, _ in launch.args]
    launch.args.insert(names.index(ptr) + 1, (BIAS_PTR, bias))
    names = [name for name, _ in launch.args]
    at = names.index("BLOCK_ROWS") if "BLOCK_ROWS" in names else len(names)
    launch.args.insert(at, (ADD_BIAS, "add_bias"))


def bias_after_matmul(port: PortState) -> None:
    """An addmm's bias moves into the tile kernel that reads its output, where
    the kernel takes it (unfuse_bias)."""
    unfuse_bias(port.launcher, port.kernels, port.module)
