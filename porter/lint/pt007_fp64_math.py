"""PT007: float64 in a kernel, which runs far slower than fp32 on most GPUs.

Only explicit float64 is reported (`tl.float64`, `.to(tl.float64)`): Triton passes a
Python float argument as fp32, so an unannotated `eps` is not fp64. Explicit fp64 is
usually deliberate (a rotary frequency table), so the rule reports at info.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import INFO, Hit, Rule, hit

RULE = Rule(
    id="PT007",
    name="fp64-math",
    severity=INFO,
    title="float64 math in a kernel",
    reason=(
        "fp64 runs at 1/64 of the fp32 rate on consumer and L40-class GPUs (1/2 on "
        "H100/H200); a kernel that computes in tl.float64 is fast only on the latter."
    ),
    fix="compute in tl.float32 unless fp64 is measured to be necessary",
)


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        lines = set()
        for node in ast.walk(kc.kernel.func):
            if (
                isinstance(node, ast.Attribute)
                and ctx.module.aliases.tl_name(node) == "float64"
                and node.lineno not in lines
            ):
                lines.add(node.lineno)
                yield hit(
                    node,
                    f"`{kc.kernel.name}` computes in tl.float64; fp64 is 1/64 of the "
                    f"fp32 rate on consumer and L40-class GPUs",
                )
