"""PT009: integer `//` or `%` on an operand that can be negative."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import INFO, WARNING, Hit, Rule, hit

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


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        for site in kc.flow.divmods.values():
            left, lnode = site.operands[0], site.operand_nodes[0]
            if not left.neg:
                continue
            dividend = ast.unparse(lnode)
            if left.negated:
                why = "comes from a negation or a negative literal"
                severity = None
            else:
                # `end - start` is how lengths are written; the linter cannot see
                # that end >= start, so it only notes the subtraction.
                why = "comes from a subtraction of a runtime value (the linter cannot "
                why += "see whether it stays non-negative)"
                severity = INFO
            yield hit(
                site.node,
                f"`{ast.unparse(site.node)}`: `{dividend}` {why}; for a negative "
                f"dividend Triton's `{site.detail}` truncates toward zero where Python "
                f"floors (-1 // 16 is 0 in a kernel, -1 in the reference)",
                f"make `{dividend}` provably non-negative (e.g. `tl.maximum(..., 0)`) "
                f"or handle the negative case explicitly",
                severity,
            )
