"""PT006: math on a raw `tl.load` result, whose dtype may be fp16/bf16."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint import names
from porter.lint.context import Context, KernelContext
from porter.lint.findings import WARNING, Hit, Rule, hit

RULE = Rule(
    id="PT006",
    name="low-precision-math",
    severity=WARNING,
    title="math on a loaded value without an fp32 upcast",
    reason=(
        "The element type is whatever the caller passes; with fp16/bf16 inputs, sums, "
        "squares and exponentials on the raw load run and accumulate in low precision."
    ),
    fix="upcast at the load: `tl.load(...).to(tl.float32)`, and cast once at the store",
)


def _is_int_constant(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def _data_loads(kc: KernelContext, load_ids) -> set[int]:
    """Loads that are float data: not used to index memory, not read from an int table."""
    out = set()
    for load_id in load_ids:
        if load_id in kc.flow.index_loads:
            continue
        base = kc.flow.load_base.get(load_id)
        # No named base (a pointer loaded or built at run time): no evidence either way.
        if base is None or names.is_int_data_pointer(base):
            continue
        out.add(load_id)
    return out


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        reported: set[int] = set()
        for site in sorted(
            kc.flow.math_uses.values(), key=lambda s: (s.node.lineno, s.node.col_offset)
        ):
            if site.detail == "comparison":
                if any(_is_int_constant(n) for n in site.operand_nodes):
                    continue  # `x == 0`, `idx < 0`: integer data
                if all(v.loads for v in site.operands):
                    continue  # two loads compared: exact in any precision
            loads = set()
            for v in site.operands:
                loads |= v.loads
            fresh = _data_loads(kc, loads) - reported
            if not fresh:
                continue
            reported |= fresh
            bases = sorted({kc.flow.load_base.get(i) or "?" for i in fresh})
            what = ", ".join(f"`{b}`" for b in bases)
            use = (
                site.detail
                if site.detail in ("arithmetic", "comparison")
                else f"tl.{site.detail}"
            )
            yield hit(
                site.node,
                f"{use} on a raw tl.load from {what} in `{kc.kernel.name}` with no "
                f"`.to(tl.float32)`: fp16/bf16 inputs compute in low precision",
                "load with `tl.load(...).to(tl.float32)` and cast once at the store",
            )
