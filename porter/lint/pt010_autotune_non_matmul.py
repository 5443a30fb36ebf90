"""PT010: triton.autotune on a kernel that is not matmul-like (no tl.dot)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import WARNING, Hit, Rule, hit

RULE = Rule(
    id="PT010",
    name="autotune-non-matmul",
    severity=WARNING,
    title="autotune on a non-matmul kernel",
    reason=(
        "Autotuning benchmarks every config on first call for each key, which costs startup "
        "time and makes timing noisy; outside matmul a legible heuristic picks as well."
    ),
    fix="drop triton.autotune; pick BLOCK_SIZE/num_warps with a small heuristic "
    "(next power of two of the row, warps by row size)",
)


def _uses_dot(func: ast.AST, ctx: Context, seen: set[str]) -> bool:
    """tl.dot in the body, or in a helper function of this file it calls."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            name = ctx.module.aliases.tl_name(node.func)
            if name in ("dot", "dot_scaled"):
                return True
            if isinstance(node.func, ast.Name) and node.func.id not in seen:
                helper = ctx.module.functions.get(node.func.id)
                if helper is not None:
                    seen.add(node.func.id)
                    if _uses_dot(helper, ctx, seen):
                        return True
    return False


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        kernel = kc.kernel
        if kernel.autotune is not None and not _uses_dot(
            kernel.func, ctx, {kernel.func.name}
        ):
            yield hit(
                kernel.autotune,
                f"`{kernel.name}` is autotuned but has no tl.dot; autotuning a non-matmul "
                f"kernel costs startup time for little gain",
            )
