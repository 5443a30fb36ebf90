"""tidy_temporaries: the last pass over a kernel's body, so it reads like a hand-written one.

Inductor names every intermediate `tmpN` and gives constants their own (`tmp9 =
1e-06`). This pass, run after every other pass has matched on those names:
- folds constant temporaries into their uses (`x + 1e-06`);
- folds a temporary used once into the statement right after it, where it is
  the first thing evaluated, so the kernel computes the same ops in the same
  order (`rstd = tl.rsqrt(row_sum / hidden + 1e-06)`);
- names what is left after what it holds (`acc`, `x_sq`, `exp_x`), `val` where
  nothing better can be said.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from porter.ast_tools import read_counts, stmt_lists
from porter.port.finish.pdl import PDL_RELEASE, PDL_WAIT
from porter.port.model import PortState

_TMP = re.compile(r"_?tmp\d+(_\w+)?")  # tmp5, _tmp3, welford's tmp4_mean, tmp5_run
_SUFFIXED = re.compile(r"_?tmp\d+_([a-z]\w*)")
# Helpers whose tuple results have names: (mean, m2, count).
_RESULTS = {
    "row_mean_m2": ("mean", "m2", "count"),
    "welford_finish": ("row_mean", "row_m2", "row_count"),
    "welford_accumulate": ("mean_next", "m2_next", "count_next"),
}
# Inductor's suffixes that say less than a name could: Welford's weight is
# the count of values taken.
_SUFFIX_NAMES = {"weight": "count"}
# Calls whose place in the kernel matters: memory, barriers, the PDL handshake.
_ORDERED = re.compile(
    r"(^|\.)(load|store|atomic_\w+|debug_barrier|gdc_wait|gdc_launch_dependents"
    rf"|{PDL_WAIT}|{PDL_RELEASE})$"
)
_MAX_NAME = 24
# A value folded into its use stays short enough to read there.
_MAX_INLINE = 48


def tidy_temporaries(fn: ast.FunctionDef) -> int:
    """Fold and rename fn's tmpN temporaries in place; returns how many it touched."""
    touched = 0
    while True:
        n = _fold_constants(fn) + _fold_single_uses(fn)
        if not n:
            break
        touched += n
    return touched + _rename_temporaries(fn)


def _stores(fn: ast.AST) -> Counter:
    out: Counter = Counter()
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] += 1
    return out


def _single_target(stmt: ast.stmt) -> str | None:
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return stmt.targets[0].id
    return None


def _substitute(tree: ast.AST, name: str, value: ast.expr) -> None:
    class Sub(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id == name and isinstance(node.ctx, ast.Load):
                return ast.copy_location(_copy(value), node)
            return node

    Sub().visit(tree)


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def _is_constant(value: ast.expr) -> bool:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        value = value.operand
    return isinstance(value, ast.Constant) and isinstance(value.value, (int, float))


def _fold_constants(fn: ast.FunctionDef) -> int:
    stores = _stores(fn)
    # `tmp0.to(...)`: a Python number has no methods, a Triton scalar does.
    receivers = {
        n.value.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
    }
    done = 0
    for body in list(stmt_lists(fn)):
        for stmt in list(body):
            target = _single_target(stmt)
            if target and _TMP.fullmatch(target) and stores[target] == 1:
                if _is_constant(stmt.value) and target not in receivers:
                    body.remove(stmt)
                    _substitute(fn, target, stmt.value)
                    done += 1
    return done


def _ordered_call(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and _ORDERED.search(ast.unparse(n.func))
        for n in ast.walk(node)
    )


def _fold_single_uses(fn: ast.FunctionDef) -> int:
    """`tmpN = e` used once, later in the same statement list, with only pure
    statements between that leave e's inputs alone: the use takes e."""
    stores, loads = _stores(fn), read_counts(fn)
    for body in stmt_lists(fn):
        for i, stmt in enumerate(body):
            target = _single_target(stmt)
            if not (target and _TMP.fullmatch(target)):
                continue
            if (
                stores[target] != 1
                or loads.get(target) != 1
                or _ordered_call(stmt.value)
            ):
                continue
            if len(ast.unparse(stmt.value)) > _MAX_INLINE:
                continue
            inputs = set(read_counts(stmt.value))
            for j in range(i + 1, len(body)):
                later = body[j]
                if read_counts(later).get(target):
                    # In a nested loop the value would be recomputed each turn; and
                    # where other ops run before the use, they would now run first.
                    if not isinstance(
                        later, (ast.For, ast.While, ast.If, ast.With)
                    ) and _evaluated_first(later, target):
                        del body[i]
                        _substitute(later, target, stmt.value)
                        return 1
                    break
                # Anything computed between would now run before the folded ops.
                if any(not isinstance(n, _TRIVIAL) for n in _evaluation_order(later)):
                    break
                if _ordered_call(later) or inputs & set(_stores(later)):
                    break
    return 0


# Nodes that emit no op of their own (an operator token is applied after its operands).
_TRIVIAL = (
    ast.Name,
    ast.Constant,
    ast.Attribute,
    ast.expr_context,
    ast.keyword,
    ast.operator,
    ast.cmpop,
    ast.unaryop,
    ast.boolop,
)


def _evaluation_order(node: ast.AST):
    """Nodes in the order Python evaluates them (children first, in field order)."""
    if isinstance(node, ast.Assign):
        yield from _evaluation_order(node.value)
        return
    for child in ast.iter_child_nodes(node):
        yield from _evaluation_order(child)
    yield node


def _evaluated_first(stmt: ast.stmt, name: str) -> bool:
    """No operation in stmt runs before `name` is read, so the ops folded in at
    that point run in the order they ran as a statement of their own."""
    for node in _evaluation_order(stmt):
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if not isinstance(node, _TRIVIAL):
            return False
    return False


def _stored_as(fn: ast.FunctionDef) -> dict[str, str]:
    """Temporaries whose value a tl.store writes: `out` for a store to out_ptr."""
    out = {}
    for call in ast.walk(fn):
        if (
            isinstance(call, ast.Call)
            and ast.unparse(call.func).endswith("store")
            and len(call.args) >= 2
        ):
            value = call.args[1]
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                value = value.func.value  # v.to(out_ptr.dtype.element_ty)
            base = call.args[0]
            while isinstance(base, ast.BinOp):
                base = base.left
            if isinstance(value, ast.Name) and isinstance(base, ast.Name):
                stem = re.sub(r"_?ptrs?(_?\d+)?$", "", base.id) or "out"
                out[value.id] = stem
    return out


def _rename_temporaries(fn: ast.FunctionDef) -> int:
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    taken |= {a.arg for a in fn.args.args}
    mapping: dict[str, str] = {}
    stored = _stored_as(fn)
    for body in stmt_lists(fn):
        for stmt in body:
            for target, hint in _tuple_targets(stmt):
                if _TMP.fullmatch(target) and target not in mapping:
                    name, n = hint, 2
                    while name in taken:
                        name, n = f"{hint}_{n}", n + 1
                    taken.add(name)
                    mapping[target] = name
            target = _single_target(stmt)
            if not (target and _TMP.fullmatch(target)) or target in mapping:
                continue
            hint = stored.get(target) or _hint(stmt.value, mapping) or "val"
            suffixed = _SUFFIXED.fullmatch(target)
            if suffixed and suffixed.group(1) in ("run", "new", "next"):
                hint = f"{hint}_{suffixed.group(1)}"  # the online kernel's tmp9_run
            elif suffixed:
                hint = suffixed.group(1)  # welford's tmp4_mean: mean
                hint = _SUFFIX_NAMES.get(hint, hint)
            if not hint.isidentifier() or hint in ("tl", "triton", "libdevice"):
                hint = "val"
            name, n = hint, 2
            while name in taken:
                name, n = f"{hint}_{n}", n + 1
            taken.add(name)
            mapping[target] = name
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
    return len(mapping)


def _tuple_targets(stmt: ast.stmt) -> list[tuple[str, str]]:
    """`a, b, c = welford(...)`: each name with a hint from the call (welford_0...)."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Tuple)
    ):
        return []
    func = "part"
    if isinstance(stmt.value, ast.Call):
        func = ast.unparse(stmt.value.func).split(".")[-1]
    elts = stmt.targets[0].elts
    names = _RESULTS.get(func, [f"{func}_{i}" for i in range(len(elts))])
    if len(names) != len(elts):
        names = [f"{func}_{i}" for i in range(len(elts))]
    return [(t.id, n) for t, n in zip(elts, names) if isinstance(t, ast.Name)]


def _short(node: ast.expr, mapping: dict[str, str]) -> str | None:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        name = mapping.get(node.id, node.id)
        return None if _TMP.fullmatch(name) else name
    return None


_OPS = {ast.Add: "plus", ast.Sub: "minus", ast.Mult: "times", ast.Div: "over"}


def _hint(value: ast.expr, mapping: dict[str, str]) -> str | None:
    """A name for what value holds, from its outermost operation."""
    if isinstance(value, ast.Call):
        func = ast.unparse(value.func).split(".")[-1]
        if func in ("full", "zeros"):
            return "acc"
        if func == "to" and isinstance(value.func, ast.Attribute):
            return _hint(value.func.value, mapping)
        if func == "where" and len(value.args) == 3:
            # where(mask, v, 0) holds v (masked); where(inf, 0, m) a guarded m
            guarded = _is_constant(value.args[1])
            kept = value.args[2] if guarded else value.args[1]
            name = _short(kept, mapping) or _hint(kept, mapping)
            if not name:
                return None
            return _fit(f"safe_{name}" if guarded else f"{name}_masked")
        arg = _short(value.args[0], mapping) if value.args else None
        func = {"sum": "block_sum", "max": "block_max"}.get(func, func)
        return _fit(f"{func}_{arg}" if arg else func)
    if isinstance(value, ast.BinOp) and type(value.op) in _OPS:
        a, b = _short(value.left, mapping), _short(value.right, mapping)
        if a and a == b and isinstance(value.op, ast.Mult):
            return _fit(f"{a}_sq")
        if a and b:
            return _fit(f"{a}_{_OPS[type(value.op)]}_{b}")
        if a and _is_constant(value.right):
            if isinstance(value.op, ast.Div) and "sum" in a:
                return _fit(a.replace("sum", "mean"))
            scaled = isinstance(value.op, (ast.Mult, ast.Div))
            return _fit(f"{a}_scaled" if scaled else f"{a}_shifted")
        inner = _hint(value.left, mapping)
        if inner and isinstance(value.op, ast.Mult) and _is_constant(value.right):
            return _fit(f"{inner}_scaled")
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        a = _short(value.operand, mapping)
        return _fit(f"neg_{a}") if a else None
    if isinstance(value, ast.Subscript):
        base = _short(value.value, mapping)
        if base:  # x[:, None]: x as a column
            return _fit(
                f"{base}_col" if ast.unparse(value.slice) == ":, None" else base
            )
        return _hint(value.value, mapping)
    if isinstance(value, ast.Compare) and len(value.ops) == 1:
        left = _short(value.left, mapping) or _hint(value.left, mapping)
        if left and "inf" in ast.unparse(value.comparators[0]):
            return _fit(f"{left}_is_inf")
        return _fit(f"{left}_test") if left else "cond"
    return None


def _fit(name: str) -> str | None:
    name = re.sub(r"[^0-9a-zA-Z_]", "_", name)
    return name if len(name) <= _MAX_NAME else None


def tidy_kernels(port: PortState) -> None:
    """Every kernel form's tmpN temporaries folded or named (tidy_temporaries)."""
    for _, form, _ in port.forms():
        tidy_temporaries(form)
