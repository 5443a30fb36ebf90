"""Stage: a rounding to fp16/bf16 of a value already so rounded drops.

A graph that casts a value down and computes on it (fake quantization, an
int's fp16 overflow) is compiled keeping eager's roundings
(capture._rounds_on_purpose); Inductor then rounds each value at its cast,
at each op's input and at its output, so one value is rounded three times
(`x.to(tl.bfloat16).to(tl.float32).to(tl.bfloat16).to(tl.float32)`).
A rounding is idempotent: the first one stays.
"""

from __future__ import annotations

import ast

from porter.ast_tools import assigned_names, bindings, cast_to, walk_stmts
from porter.port.model import PortState

_LOW = ("tl.float16", "tl.bfloat16")


def _cast(node: ast.AST) -> str | None:
    """T of a `v.to(T)` call (not a bitcast), else None."""
    return cast_to(node) if isinstance(node, ast.Call) and not node.keywords else None


def _rounding(node: ast.AST, rounded: dict[str, str]) -> str | None:
    """The fp16/bf16 type node's value was rounded to and widened back to
    fp32 from (`v.to(tl.bfloat16).to(tl.float32)`, or a name bound only to
    such values), else None."""
    if isinstance(node, ast.Name):
        return rounded.get(node.id)
    if _cast(node) == "tl.float32" and _cast(node.func.value) in _LOW:
        return _cast(node.func.value)
    return None


def drop_repeated_roundings(fn: ast.FunctionDef) -> int:
    """Drop fn's roundings of values already rounded alike; returns how many."""
    writes: dict[str, int] = {}
    for stmt, _ in walk_stmts(fn.body):
        for name in assigned_names(stmt):
            writes[name] = writes.get(name, 0) + 1
    rounded = {}
    for name, values in bindings(fn).items():
        kinds = {_rounding(v, {}) for v in values}
        if len(values) == writes.get(name) and len(kinds) == 1 and None not in kinds:
            rounded[name] = kinds.pop()
    count = 0

    class Drop(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal count
            if _cast(node) == "tl.float32" and _cast(node.func.value) in _LOW:
                again = node.func.value.func.value
                if _rounding(again, rounded) == _cast(node.func.value):
                    count += 1
                    return again
            return node

    Drop().visit(fn)
    return count


def drop_repeated_rounding(port: PortState) -> None:
    """A rounding to fp16/bf16 and back of a value already rounded to that
    type drops (`v.to(tl.bfloat16).to(tl.float32)` of such a v is v)."""
    for kp, form, _ in port.forms():
        n = drop_repeated_roundings(form)
        if n:
            kp.notes.append(f"dropped {n} repeated fp16/bf16 rounding(s)")
