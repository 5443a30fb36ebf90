"""Stage: a size the launcher computes as a difference is checked not to be
negative.

`x[:, 64:]` beside `x[:, :64]` at a width of 96: Dynamo sizes the first
slice 64 and the rest `hidden - 64`, taking `hidden >= 64` from the capture
without a guard. At a width of 40 eager takes 40 columns and an empty rest;
the kernels wrote 64 columns, past the row, and a view of `hidden - 64`
columns failed. The launcher refuses such a call in one line.
"""

from __future__ import annotations

import ast

from porter.port.launch.launcher import spell_dims
from porter.port.model import PortState

_SIZE_KINDS = ("runtime", "model")


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def size_less_a_number(expr: str) -> bool:
    """expr is sizes less a number (`-64 + hidden`, `hidden - 64`)."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return False
    terms, signs = [node], [1]
    out = []
    while terms:
        t, sign = terms.pop(), signs.pop()
        if isinstance(t, ast.BinOp) and isinstance(t.op, (ast.Add, ast.Sub)):
            terms += [t.left, t.right]
            signs += [sign, sign if isinstance(t.op, ast.Add) else -sign]
        else:
            out.append((t, sign))
    numbers = [sign * v for t, sign in out if (v := _number(t)) is not None]
    sized = [t for t, _ in out if _number(t) is None]
    return bool(sized) and sum(numbers) < 0


def refuse_negative_sizes(port: PortState) -> None:
    """Each size a kernel takes that the launcher computes by subtracting
    (`-64 + hidden`, the rest of a row after a literal slice) is checked to be
    at least 0: a call where it is not is refused in one line, not written
    past the row."""
    launcher = port.launcher
    named = {d.name: d.expr for d in launcher.dims}
    seen: list[str] = []
    for kp in port.kernels:
        for p in kp.params:
            if (
                p.kind in _SIZE_KINDS
                and size_less_a_number(p.value)
                and p.value not in seen
            ):
                seen.append(p.value)
    for value in seen:
        spelled = spell_dims(value, named)
        said = f"the kernels assume {spelled} >= 0, as the capture's sizes had it"
        launcher.shape_checks.append(f"if {value} < 0:\n    refuse({said!r})")
        port.notes.append(f"a call where {value} < 0 is refused")
