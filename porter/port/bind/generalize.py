"""Passes that make the kernel general and explicit, using the launch records.

bind_parameters: name every argument after what it is bound to (x_ptr, out_ptr,
num_tokens, hidden), make per-call sizes runtime ints (do_not_specialize) and
per-model sizes constexpr; row strides become int64 arguments read from the
tensors; explicit fp32 compute with stores cast to the output's element type.
readable_names: index variables and temporaries named after what they hold.
"""

from __future__ import annotations

import ast
import copy
import functools
import itertools
import re
from collections import Counter

import sympy

from porter.errors import PorterError
from porter.parse import launch_meta_params
from porter.port.model import KernelPort, Param, PortState, module_attr
from porter.ties import sym_expr
from porter.ast_tools import (
    assigned_names,
    bindings,
    is_call,
    join_sum,
    names_in,
    rename_names,
    split_sum,
    walk_stmts,
    ptr_base,
    unique_name,
)
from porter.records import Capture, CompiledModule

FLOAT_PTR = ("*fp32", "*fp16", "*bf16", "*fp64")
LOW_PRECISION = {"bfloat16": "tl.bfloat16", "float16": "tl.float16"}


def ident(text: str) -> str:
    """A Python identifier for a launcher expression: x.size(1) // 2 -> x_size1_div2."""
    expr = text
    text = re.sub(r"\.size\((\d+)\)", r"_size\1", text)
    text = re.sub(r"\+\s*-\s*1\s*\*", " minus ", text)  # Inductor's `a + -1*b`
    text = text.replace("//", " div ").replace("*", " times ").replace("+", " plus ")
    text = text.replace("-", " minus ")
    text = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_")
    if text[:1].isdigit():
        text = f"size_{text}"  # `1 + head_dim // 2`: an identifier cannot start with 1
    if len(text) > _MAX_IDENT:
        # min(2 ** math.floor(math.log2(float(n))), ...) spelled out is
        # unreadable: a size of the dims it reads
        dims = re.findall(
            r"\b(?!(?:min|max|math|floor|ceil|log2|float|int)\b)[A-Za-z_]\w*", expr
        )
        text = "_".join(dict.fromkeys(dims))
        text = f"{text}_size" if text and len(text) <= _MAX_IDENT else "size"
    return text or "size"


_MAX_IDENT = 40


def _whole(k: sympy.Expr) -> bool:
    """k is a whole number at any integer sizes: a polynomial with integer
    coefficients in them (a floor division counts as one)."""
    floors = {f: sympy.Dummy() for f in k.atoms(sympy.floor)}
    k = k.xreplace(floors)
    if not k.free_symbols:
        return bool(k.is_Integer)
    try:
        poly = sympy.Poly(k, *sorted(k.free_symbols, key=str))
    except sympy.PolynomialError:
        return False
    return all(c.is_Integer for c in poly.coeffs())


def same_expr(a: str, b: str) -> bool:
    if a.replace(" ", "") == b.replace(" ", ""):
        return True
    sa, sb = sym_expr(a), sym_expr(b)
    if sa is None or sb is None:
        return False
    try:
        return sympy.simplify(sa - sb) == 0
    except TypeError:
        return False


def per_call(expr: str, kp: KernelPort) -> bool:
    """Whether size `expr` changes from call to call: it reads a per-call dim,
    or an axis that grows with one (`x.size(0)` of x [2 * num_tokens, H]),
    which as a constexpr would compile the kernel again for each size."""
    if set(re.findall(r"[A-Za-z_]\w*", expr)) & kp.runtime_dims:
        return True
    axes = re.findall(r"\b(\w+)\.(?:size\(|shape\[)(\d+)", expr)
    return any((t, int(a)) in kp.runtime_axes for t, a in axes)


def bind_parameters(kp: KernelPort, cap: Capture, module: CompiledModule) -> None:
    """Name and classify every kernel parameter from what the launch binds it to."""
    runtime_dims = {d.name for d in cap.dims if d.role == "runtime"}
    kp.runtime_dims = frozenset(runtime_dims)
    kp.runtime_axes = frozenset(
        (t, a) for d in cap.dims if d.role == "runtime" for t, a in d.derived
    )
    by_param = {b.param: b for b in kp.launch.args} if kp.launch else {}
    kp.bindings = by_param
    tensors = _tensor_layouts(module)
    renames: dict[str, str] = {}
    size_exprs: dict[str, str] = {}  # new size param name -> its expression
    for arg in kp.record.signature:
        b = by_param.get(arg.name)
        if arg.type.startswith("*"):
            if b is None:
                continue
            if b.kind == "input":
                var = _var(b.target)
                new = f"{var}_ptr"
            elif b.kind == "output":
                var = module.output_var(int(b.target))
                new = f"{var}_ptr"
            else:
                var = module.buffer_var(b.target)
                new = f"{var}_ptr"
            view = _view_expr(b, var, tensors.get(_tensor_of(b, module)))
            if view:
                # The wrapper handed Inductor a view (e.g. the second half of a
                # concatenated output): the launcher makes the same view.
                same = next((p for p in kp.params if p.view == view), None)
                var = (
                    same.value
                    if same
                    else f"{var}_view{sum(1 for p in kp.params if p.view)}"
                )
            twin = next(
                (p for p in kp.params if p.kind == "pointer" and p.name == new), None
            )
            if twin is not None and twin.value == var:
                # One tensor passed twice (read, then written in place: a
                # BatchNorm's running mean): one pointer serves both.
                renames[arg.name] = new
                continue
            if twin is not None:
                new = f"{var}_ptr"  # another view of the same tensor
            taken = {p.name for p in kp.params}
            if new in taken:
                # the tensor itself after a view of it took its name (a loop's
                # outputs stacked: out at offsets 2, 3, 1, then 0)
                new = unique_name(new.removesuffix("_ptr"), taken) + "_ptr"
            renames[arg.name] = new
            kp.pointer_dtype[new] = arg.type
            kp.params.append(Param(new, "pointer", var, original=arg.name, view=view))
        elif b is not None and b.kind == "scalar":
            # A float argument or module attribute (eps, alpha, a scale) the
            # kernel takes at run time.
            new = _var(b.target)
            if new in RESERVED:
                new = (
                    f"{new}_value"  # an argument named mask: the index would shadow it
                )
            renames[arg.name] = new
            kp.params.append(
                Param(new, "scalar", _scalar_value(b, cap, module), original=arg.name)
            )
        elif arg.name in launch_meta_params(kp.record.source, kp.record.name):
            block = _block_name(arg.name, kp.record.kind)
            renames[arg.name] = block
            kp.params.append(Param(block, "block", block, "tl.constexpr", arg.name))
        else:
            if b is None:
                continue
            expr = b.expr if b.kind == "size" else (b.expr or b.value)
            new = _size_name(arg.name, expr, kp.record.kind)
            existing = next(
                (n for n, e in size_exprs.items() if same_expr(e, expr)), None
            )
            if existing:
                renames[arg.name] = existing  # two params with one value: keep one
                continue
            if new in size_exprs:
                new = f"{new}_{len(size_exprs)}"
            size_exprs[new] = expr
            renames[arg.name] = new
            runtime = per_call(expr, kp)
            if b.kind == "literal" and arg.name == "r0_numel":
                runtime = False
            kind = "runtime" if runtime else "model"
            ann = "" if runtime else "tl.constexpr"
            kp.params.append(Param(new, kind, launcher_expr(expr), ann, arg.name))
    # The launcher binds each dim and each tensor or scalar to a local of its
    # name: a size global `w` beside a parameter `self.w` would be one name.
    dims = {d.name for d in cap.dims}
    for p in kp.params:
        name = p.value if p.kind == "pointer" else p.name
        if p.kind in ("pointer", "scalar") and name in dims:
            other = p.value.split(".item()")[0] if p.kind == "scalar" else name
            if other == name and name not in cap.input_names:
                other = f"self.{name}"
            raise PorterError(
                f"{cap.reference_file}: the size {name} and {cap.reference_name}'s "
                f"{other} share a name, which the scaffold cannot tell apart; "
                "rename one of them"
            )
    # An int argument of the size's name (`hidden: int` beside DIMS' hidden):
    # the launcher's `num_tokens, hidden = x.shape` would overwrite it.
    for i in module.inputs:
        arg = re.fullmatch(r"L\['(\w+)'\]", i.source)
        if i.kind == "symint" and arg and arg.group(1) in dims:
            raise PorterError(
                f"{cap.reference_file}: the size {arg.group(1)} and "
                f"{cap.reference_name}'s int argument {arg.group(1)} share a name, "
                "which the scaffold cannot tell apart; rename the "
                + (
                    "size global"
                    if cap.reference_kind == "kernelbench"
                    else "DIMS entry"
                )
            )
    # Inductor hard-codes static sizes in the body (r0_numel = 512): read them from
    # the constexpr parameter instead.
    _drop_body_constants(kp, renames)
    _rewrite_strides(kp, renames, size_exprs, tensors, module)
    rename_names(kp.tree, renames)
    set_signature(kp)
    _constexpr_casts(kp)
    kp.notes.append(
        "named arguments after what they are bound to; per-call sizes are runtime "
        "ints in do_not_specialize, per-model sizes constexpr, row strides int64 arguments"
    )


def _scalar_value(binding, cap: Capture, module: CompiledModule) -> str:
    """The launcher expression for a scalar argument: the reference's own
    argument, a module attribute (self.alpha), or, for a module-level global
    of the reference file (math.pi), its value at capture."""
    gi = next((g for g in module.inputs if g.target == binding.target), None)
    if gi is not None and gi.source.startswith("G["):
        if gi.value is None:
            raise PorterError(
                f"{cap.reference_file}: the kernels read the global {binding.target}, "
                "whose value the capture did not keep; make it a literal or an argument"
            )
        return repr(gi.value)
    # forward's own argument (one get_inputs leaves to its default too), or
    # the module's attribute
    call_arg = gi is not None and re.fullmatch(r"L\['\w+'\]", gi.source) is not None
    value = (
        binding.target
        if call_arg
        or binding.target in cap.input_names
        or cap.reference_kind != "kernelbench"
        else module_attr(binding.target)
    )
    if gi is not None and gi.kind == "tensor":
        return f"{value}.item()"  # a 0-d tensor the wrapper read as a number
    return value


def set_signature(kp: KernelPort) -> None:
    """The kernel's arguments, in order and annotated, from kp.params."""
    kp.tree.args.args = [
        ast.arg(
            p.name, ast.parse(p.annotation, mode="eval").body if p.annotation else None
        )
        for p in kp.params
    ]


def _view_expr(binding, var: str, base_strides: list[str] | None) -> str:
    view = binding.view
    if not view or (view["offset"] == "0" and view["strides"] == base_strides):
        return ""
    sizes = _tuple(launcher_expr(s) for s in view["sizes"])
    strides = _tuple(launcher_expr(s) for s in view["strides"])
    return as_strided_text(var, sizes, strides, launcher_expr(view["offset"]))


def as_strided_text(var: str, sizes: str, strides: str, offset: str) -> str:
    """`var.as_strided(sizes, strides, ...)` at `offset` elements past var's
    own storage offset (no `+ 0`)."""
    start = f"{var}.storage_offset()" + (f" + {offset}" if offset != "0" else "")
    return f"{var}.as_strided({sizes}, {strides}, {start})"


def _tuple(items) -> str:
    """A tuple's text, with the trailing comma only where one item needs it
    (black would otherwise explode it a line per item)."""
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _var(target: str) -> str:
    return target.replace(".", "_")


def _block_name(name: str, kind: str) -> str:
    if name == "XBLOCK":
        return "BLOCK_SIZE" if kind == "pointwise" else "BLOCK_ROWS"
    if name == "R0_BLOCK":
        return "BLOCK_COLS"
    return name


def _size_name(param: str, expr: str, kind: str) -> str:
    if re.fullmatch(r"[A-Za-z_]\w*", expr or ""):
        # A dim named like the kernels' own index variables (rows, cols, mask)
        # would be shadowed by them: `row_mask = rows < rows`.
        return f"{expr}_size" if expr in RESERVED - {"num_rows"} else expr
    if param == "xnumel":
        return "numel" if kind == "pointwise" else "num_rows"
    if param == "r0_numel":
        return "row_size"
    return ident(expr)


def launcher_expr(expr: str) -> str:
    return re.sub(r"(\w+)\.size\((\d+)\)", r"\1.shape[\2]", expr)


def _tensor_layouts(module: CompiledModule) -> dict[str, list[str]]:
    """Strides (as expressions in dims) of every tensor a pointer can be bound to."""
    out = {gi.target: gi.strides for gi in module.inputs if gi.kind == "tensor"}
    for b in module.buffers:
        out[b.name] = b.strides
    return out


def _drop_body_constants(kp: KernelPort, renames: dict[str, str]) -> None:
    params = set(renames)
    for stmt, body in list(walk_stmts(kp.tree.body)):
        targets = assigned_names(stmt)
        if len(targets) == 1 and targets[0] in params | {"R0_BLOCK"}:
            value = getattr(stmt, "value", None)
            if isinstance(value, (ast.Constant, ast.Name)):
                if isinstance(value, ast.Constant):
                    kp.static_sizes[targets[0]] = value.value
                body.remove(stmt)
    if "R0_BLOCK" in kp.static_sizes and not any(
        p.original == "R0_BLOCK" for p in kp.params
    ):
        kp.params.append(
            Param("BLOCK_COLS", "block", "BLOCK_COLS", "tl.constexpr", "R0_BLOCK")
        )
        renames["R0_BLOCK"] = "BLOCK_COLS"
    if "r0_numel" in kp.static_sizes:
        # the persistent mask was all-true for the captured size; make it real.
        for stmt, _ in walk_stmts(kp.tree.body):
            if assigned_names(stmt) == ["r0_mask"]:
                stmt.value = ast.parse("r0_index < r0_numel", mode="eval").body


def _rewrite_strides(
    kp: KernelPort,
    renames: dict[str, str],
    size_exprs: dict[str, str],
    tensors: dict[str, list[str]],
    module: CompiledModule,
) -> None:
    """In `ptr + (a + coef*var)` offsets, a non-unit coefficient is a stride of that
    tensor: replace it by an int64 argument the launcher reads from the tensor."""
    original_expr = {
        old: size_exprs[new] for old, new in renames.items() if new in size_exprs
    }
    for k, v in kp.static_sizes.items():
        original_expr.setdefault(k, str(v))
    stride_params: dict[str, str] = {}
    # An input's sizes, to index axes Inductor merged one by one.
    in_sizes = {gi.target: gi.sizes for gi in module.inputs if gi.kind == "tensor"}
    # Per pointer, the axes each of its accesses has a stride term for. An axis
    # only some accesses index by stride (x read by rows and by a flat index:
    # `x0 + ks0*x1` and `x2`) is not free: the flat one assumes packed rows.
    matched: dict[str, list[set[int]]] = {}
    # Per pointer, axes a constant term is a whole number of strides of.
    ambiguous: dict[str, set[int]] = {}
    free: dict[str, set[int]] | None = None

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if not (is_call(node, "tl.load") or is_call(node, "tl.store")):
                return node
            ptr_expr = node.args[0]
            if not (
                isinstance(ptr_expr, ast.BinOp) and isinstance(ptr_expr.op, ast.Add)
            ):
                return node
            if (
                not isinstance(ptr_expr.left, ast.Name)
                or ptr_expr.left.id not in renames
            ):
                return node
            old_ptr = ptr_expr.left.id
            binding = kp.bindings.get(old_ptr)
            if binding is None:
                return node
            sizes = None
            if binding.view:
                strides = binding.view["strides"]
            else:
                strides = tensors.get(_tensor_of(binding, module), [])
                sizes = in_sizes.get(_tensor_of(binding, module))
            ptr_expr.right = _fix_terms(
                ptr_expr.right, old_ptr, renames[old_ptr], strides, sizes
            )
            return node

    def _fix_terms(
        index: ast.AST, old_ptr: str, new_ptr: str, strides: list[str], sizes
    ) -> ast.AST:
        terms = split_sum(index)
        axes: set[int] = set()
        if free is None:
            matched.setdefault(old_ptr, []).append(axes)
        found = []  # per term: (coef, var, axis)
        for term in terms:
            coef, var = _coef_var(term)
            axis = None
            if coef is not None:
                coef_expr = _substitute(ast.unparse(coef), original_expr)
                axis = next(
                    (
                        i
                        for i, s in enumerate(strides)
                        if s != "1" and same_expr(s, coef_expr)
                    ),
                    None,
                )
            found.append((coef, var, axis))
        axes |= {a for _, _, a in found if a is not None}
        out = []
        for term, (coef, var, axis) in zip(terms, found):
            if coef is None and free is None:
                # A whole number of one axis's stride is a step along that axis
                # (a shifted row, (x1 - 1) * width expanded) or an offset within
                # a row that equals it (a reversed column, width - 1 - x0): the
                # axis keeps its captured stride, so both read right.
                a = _stride_multiple(term, strides)
                if a is not None:
                    ambiguous.setdefault(old_ptr, set()).add(a)
            if axis is None:
                if free is None:
                    # A step porter did not tie to one axis's stride argument:
                    # the kernel assumes the captured strides on the axes it
                    # may step along, and the launcher copies a tensor with
                    # others.
                    pinned = _axes_stepped(term, strides)
                    ambiguous.setdefault(old_ptr, set()).update(pinned)
                out.append(term)
                continue
            # An index over axes Inductor saw packed (tokens x heads of a
            # contiguous q, one `x1 * head_dim`) spans each of them, so a
            # strided view (a slice of a fused QKV) needs no copy.
            spans = [axis]
            while sizes and spans[0] > 0 and spans[0] - 1 not in axes:
                a = spans[0]
                if not same_expr(strides[a - 1], f"({sizes[a]}) * ({strides[a]})"):
                    break
                spans.insert(0, a - 1)
            axes.update(spans)
            if free is None or not set(spans) <= free[old_ptr]:
                out.append(term)
                continue
            var_name = new_ptr[: -len("_ptr")]
            tensor = next(p.value for p in kp.params if p.name == new_ptr)
            index_expr = copy.deepcopy(var)
            for a in spans:
                stride_params[f"{var_name}_stride{a}"] = f"{tensor}.stride({a})"
            split = []
            for a in reversed(spans):
                pname = f"{var_name}_stride{a}"
                part = index_expr
                if a != spans[0]:
                    size = ast.Name(_size_param(sizes[a]), ast.Load())
                    part = ast.BinOp(index_expr, ast.Mod(), size)
                    index_expr = ast.BinOp(index_expr, ast.FloorDiv(), size)
                split.insert(
                    0, ast.BinOp(part, ast.Mult(), ast.Name(pname, ast.Load()))
                )
            out += split
        return join_sum(out)

    def _axes_stepped(term: ast.AST, strides: list[str]) -> set[int]:
        """The axes a term that moves with the element may step along: the
        one whose stride its coefficient is a whole number of; none for a
        bare index along the row or an offset within it; every axis where
        porter cannot tell."""
        if not _reads_index(term) or isinstance(term, ast.Name):
            return set()
        factors = _factors(term)
        moving = [f for f in factors if _reads_index(f)]
        if len(factors) > 1 and len(moving) == 1:
            # the coefficient is every other factor: `n * x1 * (c // 2)` steps
            # x1 by n * (c // 2), half a channel axis of packed rows
            coef = functools.reduce(
                lambda a, b: ast.BinOp(a, ast.Mult(), b),
                [f for f in factors if f is not moving[0]],
            )
            a = _stride_multiple(coef, strides)
            if a is None:
                return set()
            # steps of a size's number of rows (chunk_size * H * x4,
            # x4 over batches and chunks) cross the outer axes too
            return set(range(a + 1)) if _sized(coef, strides[a]) else {a}
        return set(range(len(strides)))

    def _sized(term: ast.AST, stride: str) -> bool:
        """term is a stride times a size, not a fixed number of strides."""
        value = sym_expr(_substitute(ast.unparse(term), original_expr))
        step = sym_expr(stride)
        return not sympy.simplify(value / step).is_number

    def _stride_multiple(term: ast.AST, strides: list[str]) -> int | None:
        """The axis `term` is a whole number of strides of (the stride not 1),
        else None."""
        names = names_in(term)
        if not names or any(_INDEX_VAR.match(n) for n in names):
            return None
        value = sym_expr(_substitute(ast.unparse(term), original_expr))
        if value is None:
            return None
        for a, text in enumerate(strides):
            stride = sym_expr(text) if text != "1" else None
            if stride is None or stride == 0:
                continue
            try:
                k = sympy.simplify(value / stride)
            except TypeError:
                continue
            # a number of strides, or a size's number of them (chunk_size
            # rows; (1 + batch) // 2 of them: chunk(2)'s second half)
            if k != 0 and (k.is_Integer or _whole(k)):
                return a
        return None

    def _size_param(expr: str) -> str:
        """The kernel's parameter holding size `expr`, added where it has none."""
        name = next((n for n, e in size_exprs.items() if same_expr(e, expr)), None)
        if name is None:
            name = ident(expr)
            if name in RESERVED - {"num_rows"}:
                name = f"{name}_size"  # a dim named cols: the index would shadow it
            taken = {p.name for p in kp.params} | set(renames)
            while name in taken:
                name += "_"
            size_exprs[name] = expr
            runtime = per_call(expr, kp)
            kp.params.append(
                Param(
                    name,
                    "runtime" if runtime else "model",
                    launcher_expr(expr),
                    "" if runtime else "tl.constexpr",
                )
            )
        return name

    Fix().visit(copy.deepcopy(kp.tree))
    free = {
        ptr: set.intersection(*axes) - ambiguous.get(ptr, set())
        for ptr, axes in matched.items()
    }
    Fix().visit(kp.tree)
    for name, value in stride_params.items():
        kp.params.append(Param(name, "stride", value, "tl.int64"))
    # Order: pointers, sizes and strides, then constexprs (Triton style).
    order = {
        "pointer": 0,
        "scalar": 1,
        "runtime": 1,
        "stride": 2,
        "model": 3,
        "block": 4,
    }
    kp.params.sort(key=lambda p: order[p.kind])


def _tensor_of(binding, module: CompiledModule) -> str:
    """Input name, or allocation name of the output/scratch buffer a pointer is bound to."""
    if binding.kind == "output":
        return module.outputs[int(binding.target)]
    return binding.target


_INDEX_VAR = re.compile(r"^(x\d+|r0_\d+|xindex|r0_index)$")


def _coef_var(term: ast.AST) -> tuple[ast.AST | None, ast.AST | None]:
    """(coefficient, index) of a `coef * index` term: the index an index
    variable, or arithmetic of one with constants (`x1 // 2`, a grouped
    query head's kv head); the coefficient free of index variables."""
    if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult):
        for a, b in ((term.left, term.right), (term.right, term.left)):
            if _is_index(b) and not any(_INDEX_VAR.match(n) for n in names_in(a)):
                return a, b
    return None, None


def _is_index(node: ast.AST) -> bool:
    """An index variable, or one under // and % by constants."""
    if isinstance(node, ast.Name):
        return bool(_INDEX_VAR.match(node.id))
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.FloorDiv, ast.Mod))
        and isinstance(node.right, ast.Constant)
        and _is_index(node.left)
    )


def _factors(term: ast.AST) -> list[ast.AST]:
    """The factors of a product, in order (`a * b * c` -> [a, b, c])."""
    if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult):
        return _factors(term.left) + _factors(term.right)
    return [term]


def _reads_index(term: ast.AST) -> bool:
    """A term that moves with the element (an index variable, or a value
    loaded for it), not a fixed offset."""
    return any(
        _INDEX_VAR.match(n) or re.fullmatch(r"_?tmp\d+", n) for n in names_in(term)
    )


def _substitute(text: str, mapping: dict[str, str]) -> str:
    return re.sub(
        r"\b[A-Za-z_]\w*\b",
        lambda m: f"({mapping[m.group(0)]})" if m.group(0) in mapping else m.group(0),
        text,
    )


def _scalar_arith(expr: ast.AST) -> bool:
    """Names and numbers under arithmetic and comparisons only (Inductor's
    `0 * (0 >= n) + n * (n > 0)` for max(0, n)): a Python scalar where every
    name is one."""
    return all(
        isinstance(
            n,
            (ast.Name, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant, ast.Load),
        )
        or isinstance(n, (ast.operator, ast.unaryop, ast.cmpop))
        for n in ast.walk(expr)
    )


def _constexpr_casts(kp: KernelPort) -> None:
    """`(hidden).to(tl.float32)` on a constexpr int, or `eps.to(tl.float32)` on a
    float or int argument, becomes `tl.cast(hidden, tl.float32)`: a Python
    scalar has no .to under Triton's interpreter."""
    constexprs = {
        p.name
        for p in kp.params
        if p.annotation == "tl.constexpr" or p.kind in ("scalar", "runtime")
    }
    # A name bound once to arithmetic of those is a scalar too (`tmp10 = ks0*ks1;
    # tmp10.to(tl.float32)`, torch 2.11's form of the cast torch 2.13 inlines).
    values = bindings(kp.tree)
    stores = Counter(
        n.id
        for n in ast.walk(kp.tree)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    )
    grew = True
    while grew:
        grew = False
        for name, (value, *_) in values.items():
            if name in constexprs or stores[name] != 1:
                continue
            if _scalar_arith(value) and names_in(value) <= constexprs:
                constexprs.add(name)
                grew = True

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            f = node.func
            if (
                not (isinstance(f, ast.Attribute) and f.attr == "to")
                or len(node.args) != 1
            ):
                return node
            # A name, or arithmetic of names (`(dim2 * dim1).to(...)`), all scalars.
            names = names_in(f.value)
            if names and _scalar_arith(f.value) and names <= constexprs:
                return ast.parse(
                    f"tl.cast({ast.unparse(f.value)}, {ast.unparse(node.args[0])})",
                    mode="eval",
                ).body
            return node

    Fix().visit(kp.tree)
    _constexpr_broadcasts(kp)


def _constexpr_broadcasts(kp: KernelPort) -> None:
    """`tl.broadcast_to(max_position, [BLOCK_SIZE])` of a size porter made a
    constexpr becomes `tl.full([BLOCK_SIZE], max_position, tl.int64)`: the
    GPU compiler cannot broadcast a constexpr (the interpreter can)."""
    types = {a.name: a.type for a in kp.record.signature}
    constexprs = {
        p.name: types.get(p.original, "i64")
        for p in kp.params
        if p.annotation == "tl.constexpr" and p.kind == "model"
    }

    class Fix(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            # `block.dtype is tl.float32` (Inductor's test of a runtime int):
            # a constexpr has no dtype on the GPU; its argument's type stands in
            self.generic_visit(node)
            if (
                node.attr == "dtype"
                and isinstance(node.value, ast.Name)
                and node.value.id in constexprs
            ):
                wide = constexprs[node.value.id] != "i32"
                return ast.parse("tl.int64" if wide else "tl.int32", mode="eval").body
            return node

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if not (is_call(node, "tl.broadcast_to") and len(node.args) == 2):
                return node
            # a constexpr, or arithmetic of constexprs and numbers (hidden // 2)
            arg = node.args[0]
            names = {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
            if not names or not _scalar_arith(arg) or not names <= set(constexprs):
                return node
            wide = any(constexprs[n] != "i32" for n in names)
            dtype = "tl.int64" if wide else "tl.int32"
            return ast.parse(
                f"tl.full({ast.unparse(node.args[1])}, {ast.unparse(arg)}, {dtype})",
                mode="eval",
            ).body

    Fix().visit(kp.tree)


def explicit_dtypes(kp: KernelPort) -> None:
    """Loads of float data are upcast to fp32, stores cast to the output pointer's
    element type, and rounding casts to the capture dtype follow the input's dtype:
    one kernel serves fp32, fp16 and bf16."""
    float_ptrs = {n for n, t in kp.pointer_dtype.items() if t in FLOAT_PTR}
    first_input = next(
        (p.name for p in kp.params if p.kind == "pointer" and p.name in float_ptrs),
        None,
    )
    low = LOW_PRECISION.get(kp.capture_dtype)
    bitcasts = {
        t
        for stmt, _ in walk_stmts(kp.tree.body)
        if isinstance(stmt, ast.Assign) and _is_bitcast(stmt.value)
        for t in assigned_names(stmt)
    }

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            f = node.func
            if is_call(node, "tl.store") and len(node.args) >= 2:
                ptr = ptr_base(node.args[0])
                value = node.args[1]
                if ptr and (
                    _is_bitcast(value)
                    or (isinstance(value, ast.Name) and value.id in bitcasts)
                ):
                    # Bits stored as they are (an fp8 cache written through a
                    # uint8 view): a bitcast to the pointer's own type, never
                    # tl.store's conversion by value.
                    node.args[1] = ast.parse(
                        f"({ast.unparse(value)}).to({ptr}.dtype.element_ty, bitcast=True)",
                        mode="eval",
                    ).body
                    return node
                if ptr in float_ptrs:
                    value = node.args[1]
                    if (
                        isinstance(value, ast.Call)
                        and isinstance(value.func, ast.Attribute)
                        and value.func.attr == "to"
                    ):
                        value = value.func.value
                    node.args[1] = ast.parse(
                        f"({ast.unparse(value)}).to({ptr}.dtype.element_ty)",
                        mode="eval",
                    ).body
                return node
            if (
                low
                and isinstance(f, ast.Attribute)
                and f.attr == "to"
                and node.args
                and ast.unparse(node.args[0]) == low
                and first_input
            ):
                node.args[0] = ast.parse(
                    f"{first_input}.dtype.element_ty", mode="eval"
                ).body
            return node

    Fix().visit(kp.tree)
    for stmt, _ in walk_stmts(kp.tree.body):
        if isinstance(stmt, ast.Assign) and is_call(stmt.value, "tl.load"):
            if ptr_base(stmt.value.args[0]) in float_ptrs:
                stmt.value = ast.parse(
                    f"{ast.unparse(stmt.value)}.to(tl.float32)", mode="eval"
                ).body
    kp.notes.append(
        "loads upcast to fp32, stores cast to the output's element type (fp32/fp16/bf16 alike)"
    )


def _is_bitcast(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and len(node.args) == 1
        and any(
            k.arg == "bitcast" and isinstance(k.value, ast.Constant) and k.value.value
            for k in node.keywords
        )
    )


READABLE_REDUCTION = {
    "xoffset": "row_start",
    "xindex": "rows",
    "xmask": "row_mask",
    "r0_base": "col_base",
    "r0_index": "cols",
    "r0_mask": "col_mask",
    "r0_offset": "col_start",
    "r0_numel": "row_size",
}
READABLE_POINTWISE = {"xoffset": "block_start", "xindex": "offsets", "xmask": "mask"}
RESERVED = (
    set(READABLE_REDUCTION.values())
    | set(READABLE_POINTWISE.values())
    | {"row_block", "col_block", "rows", "cols", "mask", "num_rows", "k_cols"}
)


def readable_names(kp: KernelPort) -> None:
    """Index variables after their role (rows, cols, mask); temporaries after
    what they hold where it can be inferred (x, weight, rstd); tmpN otherwise."""
    fn = kp.tree
    mapping = dict(
        READABLE_POINTWISE if kp.record.kind == "pointwise" else READABLE_REDUCTION
    )
    # `x0 = xindex` and `r0_1 = r0_index` are plain aliases: fold them.
    for stmt, body in list(walk_stmts(fn.body)):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name):
            t = assigned_names(stmt)
            if (
                len(t) == 1
                and re.fullmatch(r"x\d+|r0_\d+", t[0])
                and stmt.value.id in ("xindex", "r0_index")
            ):
                mapping[t[0]] = mapping.get(stmt.value.id, stmt.value.id)
                body.remove(stmt)
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {
        p.name for p in kp.params
    }
    # A temporary is never named like an index variable (an input called mask
    # or offsets once had its loads overwrite the bounds mask), nor like the
    # names later passes give (porter.port.speed.tile's row_block, col_block).
    taken = (set(used) - set(mapping)) | set(mapping.values()) | RESERVED
    for stmt, _ in walk_stmts(fn.body):
        if not isinstance(stmt, ast.Assign) or len(assigned_names(stmt)) != 1:
            continue
        (target,) = assigned_names(stmt)
        if not re.fullmatch(r"tmp\d+", target):
            continue
        hint = _hint(stmt.value, mapping)
        if hint is None:
            continue
        name, n = hint, 2
        while name in taken:
            name, n = f"{hint}_{n}", n + 1
        taken.add(name)
        mapping[target] = name
    mapping = {k: v for k, v in mapping.items() if k != v}
    rename_names(fn, mapping)
    kp.notes.append("renamed index variables and temporaries after what they hold")


def _hint(value: ast.AST, mapping: dict[str, str]) -> str | None:
    inner = value
    if (
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Attribute)
        and inner.func.attr == "to"
    ):
        inner = inner.func.value
    if is_call(inner, "tl.load"):
        base = ptr_base(inner.args[0])
        if base and base.endswith("_ptr"):
            return base[: -len("_ptr")]
    if is_call(inner, "tl.rsqrt"):
        return "rstd"
    if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Call):
        call = ast.unparse(inner.value.func)
        if call == "tl.sum":
            return "row_sum"
        if call in ("max_nan", "tl.max"):
            return "row_max"
    if is_call(inner, "tl.exp"):
        return "exp"
    return None


def bind_kernel_parameters(port: PortState) -> None:
    """Each kernel's parameters bound to what its launch passes: pointers,
    runtime sizes, per-model sizes and strides (bind_parameters)."""
    views: dict[str, str] = {}  # launcher name of a view -> the view it makes
    for kp in port.kernels:
        bind_parameters(kp, port.cap, port.module)
        _distinct_views(kp, views)


def _distinct_views(kp: KernelPort, views: dict[str, str]) -> None:
    """A view another kernel made under the same name (each kernel numbers its
    own views from 0) gets a name of its own, so that one name is one view
    across the launcher."""
    renames = {}
    for p in kp.params:
        if not p.view:
            continue
        name = p.value
        if views.get(name, p.view) != p.view:
            same = next((n for n, v in views.items() if v == p.view), None)
            base = re.sub(r"_view\d+$", "", name)
            name = same or next(
                f"{base}_view{i}"
                for i in itertools.count()
                if f"{base}_view{i}" not in views
            )
            renames[p.value] = name
        views[name] = p.view
    if renames:
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, renames)) + r")\b")
        for p in kp.params:
            p.value = pattern.sub(lambda m: renames[m.group(1)], p.value)


def name_kernels(port: PortState) -> None:
    """The kernels named for the reference (`rmsnorm_kernel`, with `_looped`
    and `_online` for a reduction's other forms)."""
    base = port.cap.reference_name.lower()
    for i, kp in enumerate(port.kernels):
        name = f"{base}_kernel" if len(port.kernels) == 1 else f"{base}_kernel_{i}"
        if kp.persistent is not None:
            kp.persistent.name = name
            kp.looped_name = f"{name}_looped"
        kp.tree.name = kp.looped_name or name
        if kp.online is not None:
            kp.online.name = f"{name}_online"
