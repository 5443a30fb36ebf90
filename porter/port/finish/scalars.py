"""Arithmetic on a kernel's numbers as a hand-written kernel spells it:
`row_sum / hidden + eps`, where Inductor writes
`row_sum / tl.cast(hidden, tl.float32) + tl.cast(eps, tl.float32)`. Triton
converts an int or float argument met by an fp32 value to fp32 itself.
"""

from __future__ import annotations

import ast

from porter.ast_tools import bindings, cast_of, read_counts, stmt_lists
from porter.port.model import PortState

# A per-call or per-model size, and a float argument (eps, a temperature).
_NUMBER_KINDS = ("runtime", "model", "scalar")
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
# Calls whose result is fp32 where their first argument is.
_SAME_TYPE = {
    "tl.sum",
    "tl.max",
    "tl.min",
    "tl.rsqrt",
    "tl.sqrt",
    "tl.sqrt_rn",
    "libdevice.sqrt",
    "tl.exp",
    "tl.log",
    "tl.abs",
}


def _is_fp32(
    node: ast.AST, bound: dict[str, list[ast.AST]], seen: frozenset[str] = frozenset()
) -> bool:
    """node is an fp32 value by its construction: a cast to fp32, an fp32
    block (`tl.zeros(..., tl.float32)`), a reduction or math function of one,
    arithmetic with one on either side (fp32 wins over ints and literals), a
    name each of whose bindings is one (a loop's accumulator too)."""
    again = lambda n: _is_fp32(n, bound, seen)  # noqa: E731
    if isinstance(node, ast.Name):
        if node.id in seen:
            return True  # its other bindings decide (acc = acc + x)
        values = bound.get(node.id, [])
        inner = seen | {node.id}
        return bool(values) and all(_is_fp32(v, bound, inner) for v in values)
    if isinstance(node, ast.Subscript):  # `tl.sum(x, 1)[:, None]`
        return again(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
        return again(node.left) or again(node.right)
    if isinstance(node, ast.Call):
        func = ast.unparse(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            return bool(node.args) and ast.unparse(node.args[0]) == "tl.float32"
        if func in ("tl.cast", "tl.full", "tl.zeros"):
            return ast.unparse(node.args[-1]) == "tl.float32" if node.args else False
        if func in _SAME_TYPE:
            return bool(node.args) and again(node.args[0])
        if func == "tl.where" and len(node.args) == 3:
            return again(node.args[1]) or again(node.args[2])
    return False


def plain_number_casts(fn: ast.FunctionDef, numbers: set[str]) -> int:
    """`tl.cast(n, tl.float32)` of an int or float argument (or a temporary
    bound once to one), as one side of `+ - * /` whose other side is an fp32
    value by construction (_is_fp32), becomes `n`: Triton converts n to fp32
    there itself. A temporary nothing reads any more goes. Returns how many
    casts went. A cast beside a literal (`1.0 / tl.cast(hidden, tl.float32)`,
    which Python would divide in float64 for a constexpr), or anywhere else,
    stays."""
    bound = bindings(fn)
    temps = {
        name: arg
        for name, values in bound.items()
        if len(values) == 1
        and (arg := cast_of(values[0], numbers, "tl.float32")) is not None
    }

    def number_of(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name) and node.id in temps:
            return temps[node.id]
        return cast_of(node, numbers, "tl.float32")

    changed = 0

    class Fix(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            self.generic_visit(node)
            if not isinstance(node.op, _ARITHMETIC):
                return node
            nonlocal changed
            for side, other in (("left", node.right), ("right", node.left)):
                name = number_of(getattr(node, side))
                if name is not None and number_of(other) is None:
                    if _is_fp32(other, bound):
                        setattr(node, side, ast.Name(name, ast.Load()))
                        changed += 1
            return node

    Fix().visit(fn)
    read = read_counts(fn)
    for body in list(stmt_lists(fn)):
        body[:] = [
            s
            for s in body
            if not (
                isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and s.targets[0].id in temps
                and not read.get(s.targets[0].id)
            )
        ]
    return changed


def drop_number_casts(port: PortState) -> None:
    """Every kernel form's `tl.cast(hidden, tl.float32)` and `tl.cast(eps,
    tl.float32)` beside an fp32 value read as `hidden` and `eps`
    (plain_number_casts)."""
    for kp, form, _ in port.forms():
        # (an fp64 argument's casts are its fp32 uses: bind.scalar_width)
        numbers = {
            p.name
            for p in kp.params
            if p.kind in _NUMBER_KINDS and p.annotation != "tl.float64"
        }
        plain_number_casts(form, numbers)
