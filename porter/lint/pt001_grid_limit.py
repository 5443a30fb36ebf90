"""PT001: grid[1] / grid[2] must not grow with a runtime size (CUDA caps them at 65,535)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import ERROR, Hit, Rule, hit
from porter.lint.grids import runtime_size

RULE = Rule(
    id="PT001",
    name="grid-dim-limit",
    severity=ERROR,
    title="grid[1] or grid[2] grows with a runtime size",
    reason=(
        "CUDA limits grid dimensions 1 and 2 to 65,535 programs; a token or batch count "
        "there launches fine in tests and fails once a deployment runs 64K+ tokens."
    ),
    fix="put the runtime dimension in grid[0] (limit 2**31-1), or tile it so grid[1] stays small",
)


def check(ctx: Context) -> Iterator[Hit]:
    for launch in ctx.module.launches:
        if not launch.grid:
            continue
        for axis, element in enumerate(launch.grid[1:3], start=1):
            why = runtime_size(element, launch.scope)
            if why:
                yield hit(
                    element,
                    f"grid[{axis}] `{ast.unparse(element)}` of `{launch.kernel}` grows with the "
                    f"runtime size `{why}`; CUDA caps grid[1] and grid[2] at 65,535",
                    f"swap it into grid[0], e.g. `({ast.unparse(element)}, "
                    f"{ast.unparse(launch.grid[0])})`, and swap the tl.program_id axes to match",
                )
