"""A float's cast to a narrow int made eager's (narrow_int_casts)."""

from __future__ import annotations

import ast

from porter.ast_tools import (
    assigned_names,
    bindings,
    call_name,
    is_call,
    ptr_base,
    walk_stmts,
)
from porter.port.model import KernelPort

# The integer types a float narrows to through a wider int in eager (ATen
# casts float -> int32/int64, then truncates), with their ranges.
_NARROW = {
    "tl.int8": (-(2**7), 2**7 - 1),
    "tl.int16": (-(2**15), 2**15 - 1),
    "tl.uint8": (0, 2**8 - 1),
    "tl.uint16": (0, 2**16 - 1),
}
_ROUNDINGS = ("nearbyint", "rint", "round", "floor", "ceil", "trunc")


def _cast(node: ast.AST) -> str | None:
    """The dtype text of a `v.to(T)` cast (not a bitcast), else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and len(node.args) == 1
        and not any(k.arg == "bitcast" for k in node.keywords)
    ):
        return ast.unparse(node.args[0])
    return None


def _may_be_float(e: ast.AST, floats: set[str], pointers: dict[str, str]) -> bool:
    """Whether e may hold a float: float literals, names in `floats`, true
    divisions, float casts and loads, and calls of any of these; an
    expression of unknown type counts as float."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, float)
    if isinstance(e, ast.Name):
        return e.id in floats
    if isinstance(e, (ast.Compare, ast.BoolOp)):
        return False
    if isinstance(e, ast.BinOp):
        return isinstance(e.op, ast.Div) or any(
            _may_be_float(v, floats, pointers) for v in (e.left, e.right)
        )
    if isinstance(e, ast.UnaryOp):
        return _may_be_float(e.operand, floats, pointers)
    if isinstance(e, ast.Subscript):
        return _may_be_float(e.value, floats, pointers)
    if isinstance(e, ast.IfExp):
        return any(_may_be_float(v, floats, pointers) for v in (e.body, e.orelse))
    if isinstance(e, ast.Call):
        cast = _cast(e)
        if cast is not None:
            return "float" in cast or "fp" in cast
        if is_call(e, "tl.load") and e.args:
            kind = pointers.get(ptr_base(e.args[0]) or "", "")
            return not kind or "fp" in kind or "bf" in kind
        if is_call(e, "tl.full") and len(e.args) == 3:
            return "float" in ast.unparse(e.args[2])
        return not e.args or any(_may_be_float(a, floats, pointers) for a in e.args)
    return True


def _float_names(fn: ast.FunctionDef, pointers: dict[str, str]) -> set[str]:
    """Names that may hold a float, to a fixed point (a loop's accumulators)."""
    floats = {p for p, t in pointers.items() if not t.startswith("*") and "fp" in t}
    while True:
        before = len(floats)
        for stmt, _ in walk_stmts(fn.body):
            value = getattr(stmt, "value", None)
            if isinstance(stmt, (ast.Assign, ast.AugAssign)) and _may_be_float(
                value, floats, pointers
            ):
                floats.update(assigned_names(stmt))
                if isinstance(stmt, ast.AugAssign) and isinstance(
                    stmt.target, ast.Name
                ):
                    floats.add(stmt.target.id)
        if len(floats) == before:
            return floats


def _bounds(e: ast.AST, bound: dict[str, list[ast.AST]], depth: int = 8):
    """(low, high) that e provably lies in, either None where unknown: numbers,
    tl.full, min/max/clamp against them, roundings, names bound once."""
    if depth == 0:
        return None, None
    if isinstance(e, ast.Constant) and isinstance(e.value, (int, float)):
        return e.value, e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        low, high = _bounds(e.operand, bound, depth - 1)
        return (None if high is None else -high), (None if low is None else -low)
    if isinstance(e, ast.Name) and len(bound.get(e.id, [])) == 1:
        return _bounds(bound[e.id][0], bound, depth - 1)
    if not isinstance(e, ast.Call):
        return None, None
    if _cast(e) is not None and "float" in (_cast(e) or ""):
        return _bounds(e.func.value, bound, depth - 1)
    name = call_name(e).rsplit(".", 1)[-1]
    args = [_bounds(a, bound, depth - 1) for a in e.args]
    if name == "full" and len(args) == 3:
        return args[1]
    if name.startswith(_ROUNDINGS) and len(args) == 1:
        low, high = args[0]
        whole = all(v is None or float(v).is_integer() for v in (low, high))
        return (low, high) if whole else (None, None)
    if name.startswith(("minimum", "maximum")) and len(args) == 2:
        lows, highs = [a[0] for a in args], [a[1] for a in args]
        if name.startswith("minimum"):
            known = [h for h in highs if h is not None]
            return (None if None in lows else min(lows)), (
                min(known) if known else None
            )
        known = [lo for lo in lows if lo is not None]
        return (max(known) if known else None), (None if None in highs else max(highs))
    if name == "clamp" and len(args) == 3:
        return args[1][0], args[2][1]
    return None, None


def narrow_int_casts(kp: KernelPort) -> None:
    """A float cast to int8, int16, uint8 or uint16 goes through int32
    (`v.to(tl.int32).to(tl.int8)`), as eager's cast does: out of the narrow
    type's range eager wraps, while Triton's direct cast is undefined (LLVM
    poison: what a GPU gives depends on its lowering). A chain of narrow casts
    (Inductor's `.to(tl.int16).to(tl.uint8)`) becomes one hop. Values clamped
    into the range first, and integer values, keep their casts."""
    fn = kp.tree
    pointers = {a.name: a.type for a in kp.record.signature}
    floats = _float_names(fn, pointers)
    bound = bindings(fn)
    count = 0

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal count
            target = _cast(node)
            if target not in _NARROW:
                return self.generic_visit(node)
            # a chain of narrow casts truncates as its last one does
            inner = node.func.value
            while _cast(inner) in _NARROW:
                inner = inner.func.value
            inner = self.visit(inner)
            low, high = _bounds(inner, bound)
            lo, hi = _NARROW[target]
            if (
                _cast(inner) in ("tl.int32", "tl.int64")
                or not _may_be_float(inner, floats, pointers)
                or (low is not None and high is not None and lo <= low <= high <= hi)
            ):
                return self.generic_visit(node)
            count += 1
            wide = ast.Call(
                ast.Attribute(inner, "to", ast.Load()),
                [ast.parse("tl.int32", mode="eval").body],
                [],
            )
            return ast.Call(ast.Attribute(wide, "to", ast.Load()), node.args, [])

    Fix().visit(fn)
    if count:
        kp.notes.append(
            f"{count} float cast(s) to a narrow int go through int32, as eager's do"
        )
