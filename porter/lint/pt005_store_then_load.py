"""PT005: a load from a pointer the kernel already stored to, with no barrier between."""

from __future__ import annotations

from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import ERROR, Hit, Rule, hit

RULE = Rule(
    id="PT005",
    name="store-then-load",
    severity=ERROR,
    title="store then load of the same pointer without tl.debug_barrier()",
    reason=(
        "Triton does not order a store and a later load through the same pointer: another "
        "thread of the block may read before the write lands. A barrier synchronizes the "
        "block (not separate programs)."
    ),
    fix="put `tl.debug_barrier()` between the `tl.store` and the `tl.load`",
)


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        stored = {}  # base pointer -> the store since the last barrier
        for op in kc.flow.memops:
            if op.kind == "barrier":
                stored.clear()
            elif op.kind == "store" and op.base:
                stored.setdefault(op.base, op.node)
            elif op.kind == "load" and op.base in stored:
                store = stored[op.base]
                yield hit(
                    op.node,
                    f"`{kc.kernel.name}` loads from `{op.base}` after storing to it "
                    f"(line {store.lineno}) with no tl.debug_barrier() between",
                    f"add `tl.debug_barrier()` after the store on line {store.lineno}",
                )
