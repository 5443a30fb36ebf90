"""Stage: an int argument read at its own width.

Inductor writes `tl.cast(start, tl.int32)` where it proved at capture that
an int argument fits in 32 bits (`ids - tl.cast(start, tl.int32)`). The
scaffold takes other values too: Triton passes an int argument as int32
where it fits and as int64 where not, so the cast changes nothing but a
value past int32, which it truncates (a vocabulary shard's `end = 2**31`
mapped every id to row 0). The argument is read as itself, but where the
cast value meets an int32 tensor in arithmetic (fairseq's position ids:
`mask.int() + past`): eager computes that in int32 and wraps, as the cast does.
"""

from __future__ import annotations

import ast

from porter.ast_tools import bindings, cast_of, is_call
from porter.port.model import PortState

# The kinds of parameter that are Python ints at the launch.
_INT_KINDS = ("runtime", "model")


def _int32(node: ast.AST, int32_names: set[str]) -> bool:
    """node is an int32 value: cast to int32, or a name bound to one."""
    if isinstance(node, ast.Name):
        return node.id in int32_names
    if isinstance(node, ast.Call) and node.args:
        to = isinstance(node.func, ast.Attribute) and node.func.attr == "to"
        dtype = node.args[0] if to else node.args[-1]
        return (to or is_call(node, "tl.cast")) and ast.unparse(dtype) == "tl.int32"
    return False


def _wrapped_in_int32(fn: ast.FunctionDef, ints: set[str]) -> set[int]:
    """ids of the casts of `ints` that meet an int32 value in arithmetic,
    directly or through a name bound to the cast."""
    bound = bindings(fn)
    int32_names = {
        n for n, vs in bound.items() if len(vs) == 1 and _int32(vs[0], set())
    }
    cast_names = {
        n: vs[0]
        for n, vs in bound.items()
        if len(vs) == 1 and cast_of(vs[0], ints, "tl.int32") is not None
    }
    kept = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Pow)):
            continue
        for a, b in ((node.left, node.right), (node.right, node.left)):
            cast = cast_names.get(a.id) if isinstance(a, ast.Name) else a
            if cast_of(cast, ints, "tl.int32") is not None and _int32(b, int32_names):
                kept.add(id(cast))
    return kept


def plain_int_casts(fn: ast.FunctionDef, ints: set[str]) -> int:
    """Replace `tl.cast(name, tl.int32)` of one of `ints` by `name`, but where
    it meets an int32 value in arithmetic; how many."""
    count = 0
    kept = _wrapped_in_int32(fn, ints)

    class Plain(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal count
            name = cast_of(node, ints, "tl.int32")
            if name is not None and id(node) not in kept:
                count += 1
                return node.args[0]
            return node

    Plain().visit(fn)
    return count


def read_ints_whole(port: PortState) -> None:
    """Every kernel form's `tl.cast(start, tl.int32)` of an int argument read
    as `start`, which Triton passes at a width that holds it, but where it
    meets an int32 value in arithmetic, which eager wraps as the cast does
    (plain_int_casts)."""
    for kp, form, _ in port.forms():
        ints = {p.name for p in kp.params if p.kind in _INT_KINDS}
        n = plain_int_casts(form, ints)
        if n:
            note = f"{form.name}: {n} int argument(s) read at their own width"
            if note not in kp.notes:
                kp.notes.append(note)
