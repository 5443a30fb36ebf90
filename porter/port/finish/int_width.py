"""Stage: an int argument read at its own width.

Inductor writes `tl.cast(start, tl.int32)` where it proved at capture that
an int argument fits in 32 bits (`ids - tl.cast(start, tl.int32)`). The
scaffold takes other values too: Triton passes an int argument as int32
where it fits and as int64 where not, so the cast changes nothing but a
value past int32, which it truncates (a vocabulary shard's `end = 2**31`
mapped every id to row 0). The argument is read as itself.
"""

from __future__ import annotations

import ast

from porter.ast_tools import cast_of
from porter.port.model import PortState

# The kinds of parameter that are Python ints at the launch.
_INT_KINDS = ("runtime", "model")


def plain_int_casts(fn: ast.FunctionDef, ints: set[str]) -> int:
    """Replace `tl.cast(name, tl.int32)` of one of `ints` by `name`; how many."""
    count = 0

    class Plain(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal count
            name = cast_of(node, ints, "tl.int32")
            if name is not None:
                count += 1
                return node.args[0]
            return node

    Plain().visit(fn)
    return count


def read_ints_whole(port: PortState) -> None:
    """Every kernel form's `tl.cast(start, tl.int32)` of an int argument read
    as `start`, which Triton passes at a width that holds it
    (plain_int_casts)."""
    for kp, form, _ in port.forms():
        ints = {p.name for p in kp.params if p.kind in _INT_KINDS}
        n = plain_int_casts(form, ints)
        if n:
            note = f"{form.name}: {n} int argument(s) read at their own width"
            if note not in kp.notes:
                kp.notes.append(note)
