"""PT002: a program id or runtime size multiplied into a pointer offset while still int32."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.dataflow import Val
from porter.lint.findings import ERROR, Hit, Rule, hit

RULE = Rule(
    id="PT002",
    name="int32-offset",
    severity=ERROR,
    title="offset product computed in int32",
    reason=(
        "tl.program_id and integer arguments are int32; `row * stride` wraps past 2**31 "
        "elements (a 16K-token x 128K-wide tensor, a large KV cache) and reads the wrong memory."
    ),
    fix="widen before multiplying: `row = tl.program_id(0).to(tl.int64)`, "
    "or annotate the argument `: tl.int64`",
)


# Why a product can overflow, and how to widen in that case.
_PID = (
    "a program id",
    "widen the program id where it is read: `tl.program_id(0).to(tl.int64)`",
)
_SIZE = (
    "a runtime size argument",
    "annotate the argument `: tl.int64` or `.to(tl.int64)` it first",
)
_LOAD = (
    "a loaded index times an integer argument",
    "widen the loaded index: `tl.load(...).to(tl.int64)`",
)


def _why(a: Val, b: Val) -> tuple[str, str] | None:
    """Why `a * b` can overflow int32, or None when it cannot (for our purposes)."""
    if a.wide or b.wide:
        return None
    if a.pid or b.pid:
        return _PID
    # program_id(1|2) is capped at 65,535, so only a runtime factor can overflow it.
    runtime = ("param", "size", "index_load", "pid", "small_pid")
    if (a.small_pid and any(getattr(b, f) for f in runtime)) or (
        b.small_pid and any(getattr(a, f) for f in runtime)
    ):
        return _PID
    if a.size or b.size:
        return _SIZE
    if (a.index_load and (b.param or b.size)) or (b.index_load and (a.param or a.size)):
        return _LOAD
    return None


# `pid * 2`, `pid * 3`: structural factors (pairs, xyz) would need 2**30 programs to
# overflow; tile sizes and strides are what push offsets past 2**31.
_SMALL_LITERAL = 16


def _small_literal(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and 0 <= node.value <= _SMALL_LITERAL
    )


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        flagged: dict[int, tuple[str, str]] = {}
        for node_id in kc.flow.pointer_mults:
            site = kc.flow.mults[node_id]
            if any(_small_literal(n) for n in site.operand_nodes):
                continue
            if node_id in kc.flow.widened_mults and any(v.const for v in site.operands):
                # `(pid * BLOCK_ROWS + ...).to(tl.int64) * stride`: a row index, widened
                # before it meets the stride. It only overflows past 2**31 rows.
                continue
            why = _why(*site.operands)
            if why:
                flagged[node_id] = why
        for node_id, (cause, fix) in flagged.items():
            site = kc.flow.mults[node_id]
            inner = set().union(*(v.mults for v in site.operands))
            if inner & flagged.keys():
                continue  # report the innermost product: that is where to widen
            yield hit(
                site.node,
                f"`{ast.unparse(site.node)}` multiplies {cause} into a pointer offset in "
                f"int32 in `{kc.kernel.name}`; it overflows past 2**31 elements",
                fix,
            )
