"""Stage: a cast to float8_e5m2 rounds past the format's range as eager does.

Eager rounds a value of magnitude 61440 or more (half way from e5m2's largest,
57344, to the next power of two) to +-inf. Triton's conversion differs: the
GPU's `cvt.rn.satfinite` saturates at +-57344, and the interpreter gives NaN
from 98304. An unclamped `x.to(torch.float8_e5m2)` of a large value came back
57344 or NaN where eager gives inf. to_e5m2_eager (templates/helpers.py.j2) writes
inf's bits there. float8_e4m3fn has no inf: eager saturates at 448, as the GPU
does, and is left alone.
"""

from __future__ import annotations

import ast

from porter.ast_tools import cast_to
from porter.port.model import PortState

HELPER = "to_e5m2_eager"
NOTE = "casts to float8_e5m2 give +-inf past its range, as eager's (to_e5m2_eager)"


def eager_e5m2_casts(fn: ast.FunctionDef) -> int:
    """Rewrite fn's `v.to(tl.float8e5)` (not bitcasts) as `to_e5m2_eager(v)`, in
    place; how many."""
    count = 0

    class Rewrite(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal count
            if cast_to(node) == "tl.float8e5" and not node.keywords:
                count += 1
                return ast.Call(ast.Name(HELPER, ast.Load()), [node.func.value], [])
            return node

    Rewrite().visit(fn)
    return count


def eager_fp8_overflow(port: PortState) -> None:
    """A cast to float8_e5m2 gives +-inf past the format's range, as eager's
    does, where Triton's saturates (to_e5m2_eager)."""
    for kp, form, _ in port.forms():
        if eager_e5m2_casts(form):
            kp.helpers.add(HELPER)
            if NOTE not in kp.notes:
                kp.notes.append(NOTE)
