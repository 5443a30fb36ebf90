"""PT011: a [num_tokens, num_heads] grid in a launcher that may serve prefill."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from porter.lint import names
from porter.lint.context import Context
from porter.lint.findings import WARNING, Hit, Rule, hit
from porter.lint.grids import head_count, is_tiled, runtime_size

RULE = Rule(
    id="PT011",
    name="token-head-grid",
    severity=WARNING,
    title="one program per (token, head) in a launcher that serves prefill",
    reason=(
        "A [num_tokens, num_heads] grid is a good low-latency mapping for decode, but for "
        "prefill it launches millions of tiny programs with no reuse between tokens."
    ),
    fix="tile tokens (`triton.cdiv(num_tokens, BLOCK_M)`) so each program handles several, "
    "or keep this grid in a decode-only launcher",
)


def _decode_only(ctx: Context, launch) -> bool:
    """The launcher, kernel or file says decode and not prefill."""
    words = [launch.kernel, Path(ctx.module.path).stem]
    if launch.launcher is not None:
        words.append(launch.launcher.name)
    return names.decode_only(*words)


def check(ctx: Context) -> Iterator[Hit]:
    for launch in ctx.module.launches:
        grid = launch.grid
        if not grid or len(grid) < 2:
            continue
        tokens = runtime_size(grid[0], launch.scope)
        if not tokens or is_tiled(grid[0], launch.scope):
            continue
        if any(is_tiled(e, launch.scope) for e in grid[1:]):
            continue  # another axis tiles the work: each program already does a block
        heads = next(
            (h for h in (head_count(e, launch.scope) for e in grid[1:]) if h), None
        )
        if heads and not _decode_only(ctx, launch):
            yield hit(
                launch.node,
                f"`{launch.kernel}` launches one program per token and head "
                f"(`{tokens}` x `{heads}`); fine for decode, slow for prefill",
            )
