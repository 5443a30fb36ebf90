"""PT009: integer `//` or `%` on an operand that can be negative."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import WARNING, Hit, Rule, hit

RULE = Rule(
    id="PT009",
    name="negative-div-mod",
    severity=WARNING,
    title="`//` or `%` on a possibly negative operand",
    reason=(
        "Triton's `//` and `%` truncate toward zero like C; Python's floor. `-1 // 16` "
        "is 0 in a kernel and -1 in the reference, so a ported index goes wrong only "
        "for negative inputs."
    ),
    fix="prove the operand non-negative (`tl.maximum(x, 0)`, a guard) "
    "or write the floor explicitly",
)


def _suspects(site, params: set[str]) -> list[str]:
    """Operands that can be negative. The divisor only counts when it is a signed
    parameter itself: divisors computed in the kernel are sizes in practice, and
    a negative dividend is where truncation and flooring part ways."""
    (left, right), (lnode, rnode) = site.operands, site.operand_nodes
    out = []
    if left.neg:
        out.append(ast.unparse(lnode))
    if right.neg and isinstance(rnode, ast.Name) and rnode.id in params:
        out.append(ast.unparse(rnode))
    return out


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        params = {p.name for p in kc.kernel.params}
        for site in kc.flow.divmods.values():
            suspects = _suspects(site, params)
            if not suspects:
                continue
            yield hit(
                site.node,
                f"`{ast.unparse(site.node)}`: `{suspects[0]}` can be negative, and Triton's "
                f"`{site.detail}` truncates toward zero where Python floors",
                f"make `{suspects[0]}` provably non-negative (e.g. `tl.maximum(..., 0)`) "
                f"or handle the negative case explicitly",
            )
