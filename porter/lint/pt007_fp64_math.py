"""PT007: float64 in a kernel: explicit fp64 types, or float scalars that may arrive as fp64."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import WARNING, Hit, Rule, hit

RULE = Rule(
    id="PT007",
    name="fp64-promotion",
    severity=WARNING,
    title="float64 math in a kernel",
    reason=(
        "fp64 runs at a small fraction of fp32 throughput on most GPUs. Liger-Kernel "
        "documents Inductor passing float scalars as fp64, which silently promotes the "
        "whole expression; an explicit tl.float64 does the same."
    ),
    fix="annotate float scalars `eps: tl.float32` (or `eps = eps.to(tl.float32)`), "
    "and compute in tl.float32",
)


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        lines = set()
        for node in ast.walk(kc.kernel.func):
            if (
                isinstance(node, ast.Attribute)
                and ctx.module.aliases.tl_name(node) == "float64"
            ):
                if node.lineno not in lines:
                    lines.add(node.lineno)
                    yield hit(
                        node,
                        f"`{kc.kernel.name}` uses tl.float64; fp64 math is far slower than fp32",
                        "compute in tl.float32 unless fp64 is measured to be necessary",
                    )
        reported: set[str] = set()
        for site in sorted(
            kc.flow.math_uses.values(), key=lambda s: (s.node.lineno, s.node.col_offset)
        ):
            params = set()
            for v in site.operands:
                params |= v.f64_params
            for name in sorted(params - reported):
                reported.add(name)
                yield hit(
                    site.node,
                    f"float scalar `{name}` of `{kc.kernel.name}` is used in math without a "
                    f"dtype: passed as fp64 it promotes the expression to float64",
                    f"annotate `{name}: tl.float32` or cast it once: `{name} = {name}.to(tl.float32)`",
                )
