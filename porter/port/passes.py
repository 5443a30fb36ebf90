"""The port passes: small, named AST rewrites of one Inductor kernel.

Each pass takes a KernelPort and rewrites `kp.tree` (the kernel's FunctionDef)
in place, recording what it changed in `kp.notes`. porter.port.pipeline's
PIPELINE is the order they run in (docs/port.md explains each).
"""

from __future__ import annotations

import ast
import re

from porter.ast_tools import (
    assigned_names,
    bindings,
    full_names,
    is_call,
    ptr_base,
    read_counts,
    rename_names,
    walk_stmts,
)
from porter.port.model import KernelPort

# ---------------------------------------------------------------- helpers


def _todo(text: str) -> ast.stmt:
    """A marker statement the renderer turns into a `# TODO(porter): ...` comment."""
    return ast.Expr(ast.Constant(f"TODO(porter): {text}"))


# ---------------------------------------------------------------- passes


def strip_heuristics(kp: KernelPort) -> None:
    """Keep only the @triton.jit function: Inductor's heuristics decorator, its
    meta and imports go (the launcher chooses the config)."""
    tree = ast.parse(kp.record.source)
    fn = next(
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == kp.record.name
    )
    fn.decorator_list = []
    kp.tree = fn
    # A scan's or custom reduction's combine function is generated beside the
    # kernel (`_triton_helper_fn_add0`): keep it, under a readable name.
    renames = {}
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and n.name.startswith("_triton_helper_fn_"):
            new = "combine_" + n.name[len("_triton_helper_fn_") :]
            renames[n.name] = new
            n.name = new
            n.decorator_list = []
            kp.combine_fns.append(n)
    rename_names(fn, renames)
    kp.notes.append("dropped Inductor's @triton_heuristics decorator and its meta")


def _is_pure(value: ast.AST) -> bool:
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in (
                "tl.store",
                "tl.atomic_add",
                "tl.debug_barrier",
                "tl.device_assert",
            ):
                return False
    return True


def drop_unread(fn: ast.FunctionDef) -> int:
    """Remove pure assignments nothing reads, until none is left; how many went."""
    removed = 0
    changed = True
    while changed:
        changed = False
        used = read_counts(fn)
        for stmt, body in walk_stmts(fn.body):
            targets = assigned_names(stmt)
            if not targets or isinstance(stmt, (ast.For, ast.While)):
                continue
            value = getattr(stmt, "value", None)
            if value is None or not _is_pure(value):
                continue
            if all(used.get(t, 0) == 0 for t in targets):
                body.remove(stmt)
                removed += 1
                changed = True
                break
    return removed


def drop_dead_aliases(kp: KernelPort) -> None:
    """Remove Inductor's compatibility aliases (rnumel, RBLOCK, roffset, rindex,
    rbase) and any pure assignment nothing reads."""
    removed = drop_unread(kp.tree)
    if removed:
        kp.notes.append(f"removed {removed} dead alias(es) and unused value(s)")


CORE_MATH = {
    "libdevice.rsqrt": "tl.rsqrt",
    "libdevice.sqrt": "tl.sqrt",
    "libdevice.exp": "tl.exp",
    "libdevice.exp2": "tl.exp2",
    "libdevice.log": "tl.log",
    "libdevice.log2": "tl.log2",
    "libdevice.sin": "tl.sin",
    "libdevice.cos": "tl.cos",
    "libdevice.abs": "tl.abs",
    "libdevice.fabs": "tl.abs",
    "libdevice.floor": "tl.floor",
    "libdevice.ceil": "tl.ceil",
    "libdevice.erf": "tl.erf",
    "tl_math.exp": "tl.exp",
    "tl_math.log": "tl.log",
    "tl_math.abs": "tl.abs",
    "tl_math.sin": "tl.sin",
    "tl_math.cos": "tl.cos",
    "tl_math.sqrt": "tl.sqrt",
    "tl_math.exp2": "tl.exp2",
    "tl_math.log2": "tl.log2",
    "triton_helpers.promote_to_tensor": "",
}
# Inductor's helpers with a porter-written equivalent in templates/helpers.py.j2.
HELPERS = {
    "triton_helpers.maximum": "maximum_nan",
    "triton_helpers.minimum": "minimum_nan",
    "triton_helpers.max2": "max_nan",
    "triton_helpers.min2": "min_nan",
    "triton_helpers.any": "any_true",
    "triton_helpers.welford_reduce": "welford_accumulate",
    "triton_helpers.welford_combine": "welford_merge",
    "triton_helpers.welford": "welford_finish",
    "triton_helpers.online_softmax_reduce": "online_softmax_finish",
    "triton_helpers.online_softmax_combine": "online_softmax_accumulate",
    "triton_helpers.maximum_with_index": "argmax_step",
    "triton_helpers.max_with_index": "argmax_rows",
    "triton_helpers.minimum_with_index": "argmin_step",
    "triton_helpers.min_with_index": "argmin_rows",
    "triton_helpers.select_one": "select_masked",
    "triton_helpers.div_floor_integer": "floor_div",
    "triton_helpers.remainder_integer": "floor_mod",
    "triton_helpers.pow_integer": "int_pow",
    "triton_helpers.prod": "row_product",
}
HELPER_DEPENDS = {
    "max_nan": {"maximum_nan"},
    "min_nan": {"minimum_nan"},
    "welford_finish": {"welford_merge"},
    "online_softmax_finish": {"max_nan", "maximum_nan", "exp_ftz"},
    "online_softmax_accumulate": {"maximum_nan", "exp_ftz"},
    "rescale_sum": {"exp_ftz"},
    "argmax_rows": {"argmax_step"},
    "argmin_rows": {"argmin_step"},
    "row_product": {"multiply"},
}
UNSUPPORTED = {
    "tl.inline_asm_elementwise": "inline assembly is target-specific",
    "tl.rand": "random numbers cannot match eager bit for bit",
    "tl.randn": "random numbers cannot match eager bit for bit",
    "tl.randint": "random numbers cannot match eager bit for bit",
}


def core_math(kp: KernelPort) -> None:
    """Use triton core ops where they are exact (tl.exp, tl.rsqrt...); keep
    libdevice only where core has none (tanh, erf...); swap Inductor's helpers
    for porter's own readable ones; flag what cannot be ported faithfully."""
    swapped = 0

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal swapped
            name = ast.unparse(node.func)
            if name in CORE_MATH:
                swapped += 1
                if CORE_MATH[name] == "":
                    return node.args[0]
                node.func = ast.parse(CORE_MATH[name], mode="eval").body
            elif name in HELPERS:
                swapped += 1
                helper = HELPERS[name]
                kp.helpers.add(helper)
                kp.helpers |= HELPER_DEPENDS.get(helper, set())
                node.func = ast.Name(helper, ast.Load())
                if helper.startswith("online_softmax"):
                    node.args = node.args[:-1]  # use_fast_math: porter keeps exact exp
            elif name.startswith("libdevice."):
                kp.uses_libdevice = True
            elif name.startswith(("triton_helpers.", "tl_math.")):
                kp.todos.append(f"{name} has no porter equivalent yet")
            return node

    Fix().visit(kp.tree)
    for fn in kp.combine_fns:  # a scan's combine (logcumsumexp's) calls them too
        Fix().visit(fn)
    for stmt, body in walk_stmts(kp.tree.body):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in UNSUPPORTED:
                why = UNSUPPORTED[ast.unparse(node.func)]
                body.insert(body.index(stmt), _todo(f"{ast.unparse(node.func)}: {why}"))
                kp.todos.append(f"{ast.unparse(node.func)}: {why}")
                break
    if swapped:
        kp.notes.append(
            f"replaced {swapped} Inductor helper/libdevice call(s) by core ops or porter helpers"
        )


def typed_constants(kp: KernelPort) -> None:
    """`tl.full([1, 1], c, tl.float32)` becomes the literal `c` (an fp32
    constant in Triton); block-shaped fills stay."""
    count = 0

    class Fix(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if is_call(node.value, "tl.full"):
                # a method of the tensor is called (a 0-d output's offset,
                # `tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)`):
                # a Python literal has none
                return node
            self.generic_visit(node)
            return node

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal count
            if not is_call(node, "tl.full") or len(node.args) != 3:
                return node
            shape, value, dtype = node.args
            ones = isinstance(shape, ast.List) and all(
                isinstance(e, ast.Constant) and e.value == 1 for e in shape.elts
            )
            dt = ast.unparse(dtype)
            if ones and dt in ("tl.float32", "tl.int32"):
                literal = ast.unparse(value)
                if (
                    dt == "tl.float32"
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, int)
                ):
                    value = ast.Constant(float(value.value))
                count += 1
                return value if literal[:5] != "float" else node
            return node

    Fix().visit(kp.tree)
    if count:
        kp.notes.append(f"turned {count} tl.full constant(s) into typed literals")


def noop_casts_and_broadcasts(kp: KernelPort) -> None:
    """Drop `.to(T)` applied to a value already of type T by the same cast, and
    `tl.broadcast_to` of a value that already spans the block."""
    fn = kp.tree
    cast_of: dict[str, str] = {}
    for stmt, _ in walk_stmts(fn.body):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            v = stmt.value
            if (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Attribute)
                and v.func.attr == "to"
                and len(v.args) == 1
            ):
                cast_of[stmt.targets[0].id] = ast.unparse(v.args[0])
    # In a (rows, columns) kernel a value spans the block only if it depends
    # on both axes: a column index alone is (1, R0_BLOCK), and a tuple
    # reduction (min_with_index) needs its indices at the values' shape.
    full = full_names(fn, {"xindex", "x0"})
    columns = {"r0_index", "r0_base", "r0_1"}
    if columns & {t for stmt, _ in walk_stmts(fn.body) for t in assigned_names(stmt)}:
        full &= full_names(fn, columns)
    else:
        full |= full_names(fn, columns)
    count = 0

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal count
            f = node.func
            if (
                isinstance(f, ast.Attribute)
                and f.attr == "to"
                and len(node.args) == 1
                and not node.keywords
            ):
                target = ast.unparse(node.args[0])
                inner = f.value
                if isinstance(inner, ast.Name) and cast_of.get(inner.id) == target:
                    count += 1
                    return inner
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr == "to"
                    and ast.unparse(inner.args[0]) == target
                ):
                    count += 1
                    return inner
            if is_call(node, "tl.broadcast_to") and isinstance(node.args[0], ast.Name):
                if node.args[0].id in full:
                    count += 1
                    return node.args[0]
            return node

    Fix().visit(fn)
    if count:
        kp.notes.append(f"removed {count} no-op cast(s) / broadcast(s)")


def fold_copies(kp: KernelPort) -> None:
    """`tmp2 = tmp1` (left behind by removed casts and broadcasts) is folded away
    when both names are assigned exactly once."""
    folded = fold_plain_copies(kp.tree)
    if folded:
        kp.notes.append(f"folded {folded} plain copies")


def fold_plain_copies(fn: ast.FunctionDef) -> int:
    """fold_copies on a function; how many copies went."""
    folded = 0
    while True:
        counts: dict[str, int] = {}
        for stmt, _ in walk_stmts(fn.body):
            for t in assigned_names(stmt):
                counts[t] = counts.get(t, 0) + 1
            if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
                counts[stmt.target.id] = counts.get(stmt.target.id, 0) + 2
        args = {a.arg for a in fn.args.args}
        copy = None
        for stmt, body in walk_stmts(fn.body):
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Name)
                and counts.get(stmt.targets[0].id) == 1
                and (counts.get(stmt.value.id) == 1 or stmt.value.id in args)
            ):
                copy = (stmt, body)
                break
        if copy is None:
            return folded
        stmt, body = copy
        body.remove(stmt)
        rename_names(fn, {stmt.targets[0].id: stmt.value.id})
        folded += 1


def widen_program_id(kp: KernelPort) -> None:
    """`tl.program_id(0)` becomes `tl.program_id(0).to(tl.int64)` so every
    offset built from it is computed in int64 (no 2^31 overflow)."""

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if is_call(node, "tl.program_id"):
                return ast.parse(f"{ast.unparse(node)}.to(tl.int64)", mode="eval").body
            return node

    Fix().visit(kp.tree)
    kp.notes.append("widened the program id to int64 before any offset arithmetic")


def barrier_before_reload(kp: KernelPort) -> None:
    """A load from a pointer this kernel stored to earlier gets a
    `tl.debug_barrier()` before it (the seed's write-then-read rule)."""
    stored: set[str] = set()
    inserted = 0

    def visit(body: list[ast.stmt]) -> None:
        nonlocal inserted
        i = 0
        while i < len(body):
            stmt = body[i]
            loads = {
                ptr_base(n.args[0]) for n in ast.walk(stmt) if is_call(n, "tl.load")
            }
            if (loads - {None}) & stored:
                body.insert(
                    i, ast.Expr(ast.parse("tl.debug_barrier()", mode="eval").body)
                )
                stored.clear()
                inserted += 1
                i += 1
            for n in ast.walk(stmt):
                if is_call(n, "tl.store"):
                    stored.add(ptr_base(n.args[0]))
            i += 1

    visit(kp.tree.body)
    if inserted:
        kp.notes.append(
            f"added {inserted} tl.debug_barrier() between a store and a later load of the same pointer"
        )


def drop_store_only_barriers(kp: KernelPort) -> None:
    """`tl.debug_barrier()` orders a program's reads and writes of one buffer.
    Inductor puts one before every store to an in-place buffer (in_out_ptr0),
    also where the kernel never reads it (logsumexp's output); where no
    argument is both loaded and stored, each barrier goes. Kept wherever a
    load or store goes through anything but an argument plus an offset, which
    could alias."""
    fn = kp.tree
    args = {a.arg for a in fn.args.args}
    loaded, stored = set(), set()
    for n in ast.walk(fn):
        for name, into in (("tl.load", loaded), ("tl.store", stored)):
            if is_call(n, name):
                base = ptr_base(n.args[0]) if n.args else None
                if base not in args:
                    return
                into.add(base)
    if loaded & stored:
        return
    dropped = 0
    for node in ast.walk(fn):
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            kept = [
                s
                for s in body
                if not (
                    isinstance(s, ast.Expr) and is_call(s.value, "tl.debug_barrier")
                )
            ]
            if len(kept) < len(body):
                dropped += len(body) - len(kept)
                setattr(node, field, kept or [ast.Pass()])
    if dropped:
        kp.notes.append(
            f"dropped {dropped} tl.debug_barrier() before a store to a buffer "
            "the kernel never reads"
        )


_UNIFORM_CALLS = {
    "tl.rsqrt",
    "tl.sqrt",
    "tl.sqrt_rn",  # what core_math makes of libdevice.sqrt
    "tl.exp",
    "tl.log",
    "tl.abs",
    "tl.cast",
    "tl.where",
    "maximum_nan",
    "minimum_nan",
}


# A row maximum: exp of a value minus it is at most 1, and the row's sum at least 1.
ROW_MAX = ("max_nan", "tl.max", "maximum_nan")


def takes_row_max(fn: ast.FunctionDef) -> bool:
    """The kernel takes a row maximum (a softmax's or logsumexp's shift)."""
    return any(
        isinstance(c, ast.Call) and ast.unparse(c.func) in ROW_MAX for c in ast.walk(fn)
    )


def _positive(v: ast.AST) -> bool:
    """A number literal above 0 (an eps, a clamp's floor)."""
    return (
        isinstance(v, ast.Constant)
        and isinstance(v.value, (int, float))
        and not isinstance(v.value, bool)
        and v.value > 0
    )


def _constant_of(v: ast.AST, bound: dict[str, list[ast.AST]]) -> ast.AST:
    """v, or the constant a name is bound to once (`tmp8 = 1e-05`)."""
    if isinstance(v, ast.Name) and len(bound.get(v.id, [])) == 1:
        return bound[v.id][0]
    return v


def _sums_shifted_exp(
    v: ast.AST, bound: dict[str, list[ast.AST]], fn: ast.FunctionDef
) -> bool:
    """`tl.sum(acc, 1)` of exp values in a kernel that takes a row maximum
    (softmax's sum: exp(x - max x) holds exp(0) = 1)."""
    if not (isinstance(v, ast.Call) and ast.unparse(v.func) == "tl.sum" and v.args):
        return False
    if not takes_row_max(fn):
        return False
    seen, todo = set(), [v.args[0]]
    while todo:
        for c in ast.walk(todo.pop()):
            if isinstance(c, ast.Call) and ast.unparse(c.func) in ("tl.exp", "exp_ftz"):
                return True
            if isinstance(c, ast.Name) and c.id not in seen:
                seen.add(c.id)
                todo += bound.get(c.id, [])
    return False


def reciprocal_divisors(kp: KernelPort) -> None:
    """`x / row_sum`, with a divisor that is one value per row (a reduction's
    result, a scalar, a constant), becomes `x * (1.0 / row_sum)`: one division
    per row instead of one IEEE division per element, as hand-written kernels
    do. It can move a result by one fp32 ulp, far inside the parity verdict;
    only where the divisor cannot be subnormal (far_from_zero)."""
    fn = kp.tree
    uniform = {a.arg for a in fn.args.args if not a.arg.endswith("_ptr")}

    def is_uniform(v: ast.AST) -> bool:
        if isinstance(v, ast.Constant):
            return isinstance(v.value, (int, float))
        if isinstance(v, ast.Name):
            return v.id in uniform
        if isinstance(v, ast.Subscript):
            # `tl.sum(x, 1)[:, None]`: a reduction kept as a column
            return isinstance(v.value, ast.Call) and "None" in ast.unparse(v.slice)
        if isinstance(v, ast.BinOp):
            return is_uniform(v.left) and is_uniform(v.right)
        if isinstance(v, ast.UnaryOp):
            return is_uniform(v.operand)
        if isinstance(v, ast.Call):
            func = v.func
            if isinstance(func, ast.Attribute) and func.attr == "to":
                return is_uniform(func.value)
            return ast.unparse(func) in _UNIFORM_CALLS and all(
                is_uniform(a) or ast.unparse(a).startswith("tl.") for a in v.args
            )
        return False

    changed = 0
    bound = bindings(fn)

    def far_from_zero(v: ast.AST, depth: int = 0) -> bool:
        """The divisor cannot be subnormal, where 1 / it overflows to inf while
        x / it is finite (x / x.sum() of a row of tiny values): a nonzero
        constant, a size or scalar argument, a value plus or at least a positive
        constant (var + eps, max(amax, 1e-10)), such a value scaled by a
        constant or under a root, or softmax's sum of exp (in a kernel that
        takes a row maximum)."""
        if depth > 12:
            return False
        again = lambda x: far_from_zero(x, depth + 1)  # noqa: E731
        if isinstance(v, ast.Constant):
            return isinstance(v.value, (int, float)) and v.value != 0
        if isinstance(v, ast.Name):
            if v.id in uniform and v.id in {a.arg for a in fn.args.args}:
                return True
            values = bound.get(v.id, [])
            return len(values) == 1 and again(values[0])
        if isinstance(v, ast.BinOp):
            if isinstance(v.op, ast.Add):
                return _positive(_constant_of(v.left, bound)) or _positive(
                    _constant_of(v.right, bound)
                )
            if isinstance(v.op, (ast.Mult, ast.Div)):
                return again(v.left) and again(v.right)
            return False
        if isinstance(v, ast.Subscript):
            return _sums_shifted_exp(v.value, bound, fn)
        if isinstance(v, ast.Call):
            name = ast.unparse(v.func)
            if isinstance(v.func, ast.Attribute) and v.func.attr == "to":
                return again(v.func.value)
            if name in ("tl.cast", "tl.sqrt", "tl.sqrt_rn", "libdevice.sqrt"):
                return bool(v.args) and again(v.args[0])
            if name in ("maximum_nan", "tl.maximum") and len(v.args) >= 2:
                return _positive(_constant_of(v.args[1], bound))
        return False

    class Fix(ast.NodeTransformer):
        def visit_BinOp(self, n: ast.BinOp) -> ast.AST:
            self.generic_visit(n)
            if (
                isinstance(n.op, ast.Div)
                and is_uniform(n.right)
                and not is_uniform(n.left)
                and far_from_zero(n.right)
            ):
                nonlocal changed
                changed += 1
                inverse = ast.BinOp(ast.Constant(1.0), ast.Div(), n.right)
                return ast.BinOp(n.left, ast.Mult(), inverse)
            return n

    for stmt, _ in walk_stmts(fn.body):
        if isinstance(stmt, ast.Assign):
            if not (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            stmt.value = Fix().visit(stmt.value)
            if is_uniform(stmt.value):
                uniform.add(stmt.targets[0].id)
            else:
                uniform.discard(stmt.targets[0].id)
    if changed:
        kp.notes.append(
            f"turned {changed} division(s) by a per-row value into multiplication by its reciprocal"
        )
