"""PT006: a reduction or loop accumulation over values that may still be fp16/bf16.

Triton promotes an op to fp32 when one operand is fp32 (`x.to(tl.float32) * w`),
and `tl.sum` accumulates in its input's dtype unless given `dtype=`. So the hazard
is a sum, scan or `acc +=` whose operand never met fp32: every partial sum rounds
to 8 bits of mantissa. Single elementwise ops round once, as eager PyTorch does, and
max, min and comparisons are exact in any precision: those are not reported.
Transcendental math on a raw load is reported at info.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint import names
from porter.lint.context import Context, KernelContext
from porter.lint.dataflow import Val
from porter.lint.findings import INFO, WARNING, Hit, Rule, hit

RULE = Rule(
    id="PT006",
    name="low-precision-math",
    severity=WARNING,
    title="sum or accumulation in the input's low precision",
    reason=(
        "The element type is whatever the caller passes; with fp16/bf16 inputs, "
        "tl.sum, tl.cumsum and `acc +=` over raw loads accumulate in 16 bits: a bf16 "
        "partial sum keeps 8 significant bits, up to 0.4% lost per add, compounding "
        "over a row."
    ),
    fix="upcast at the load: `tl.load(...).to(tl.float32)`, or pass "
    "`tl.sum(x, dtype=tl.float32)`; cast once at the store",
)

_ACCUMULATING = {"sum", "cumsum", "prod", "cumprod", "reduce"}
_MATH = {"exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "pow"}


def _data_loads(kc: KernelContext, v: Val) -> set[int]:
    """Loads that are float data: not used to index memory, not read from an int table."""
    if v.f32:
        return set()
    out = set()
    for load_id in v.loads:
        if load_id in kc.flow.index_loads:
            continue
        base = kc.flow.load_base.get(load_id)
        # No named base (a pointer loaded or built at run time): no evidence either way.
        if base is None or names.is_int_data_pointer(base):
            continue
        out.add(load_id)
    return out


def _bases(kc: KernelContext, loads: set[int]) -> str:
    return ", ".join(f"`{b}`" for b in sorted({kc.flow.load_base[i] for i in loads}))


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        sites = [s for s in kc.flow.math_uses.values() if s.detail in _ACCUMULATING]
        for site in sites:
            loads = _data_loads(kc, site.operands[0]) if site.operands else set()
            if loads:
                yield hit(
                    site.node,
                    f"tl.{site.detail} in `{kc.kernel.name}` accumulates values loaded "
                    f"from {_bases(kc, loads)} in their own dtype: with fp16/bf16 inputs "
                    f"every partial sum rounds to 16 bits",
                    f"upcast the load (`.to(tl.float32)`) or write "
                    f"`tl.{site.detail}(..., dtype=tl.float32)`",
                )
        for site in kc.flow.accumulations.values():
            acc, value = site.operands
            loads = _data_loads(kc, value)
            if loads and not acc.f32:
                target = ast.unparse(site.operand_nodes[0])
                yield hit(
                    site.node,
                    f"`{target}` in `{kc.kernel.name}` accumulates values loaded from "
                    f"{_bases(kc, loads)} across loop iterations without fp32: with "
                    f"fp16/bf16 inputs the running total rounds to 16 bits each step",
                    f"start the accumulator in fp32 (`tl.zeros(..., dtype=tl.float32)`) "
                    f"and upcast the load",
                )
        for site in kc.flow.math_uses.values():
            if site.detail not in _MATH:
                continue
            loads = set().union(*(_data_loads(kc, v) for v in site.operands))
            if loads:
                yield hit(
                    site.node,
                    f"tl.{site.detail} in `{kc.kernel.name}` runs on values loaded from "
                    f"{_bases(kc, loads)} in their own dtype; fine for one op, lossy if "
                    f"its result feeds a long chain (the linter cannot see the dtype)",
                    "upcast the load with `.to(tl.float32)` if the result is accumulated",
                    INFO,
                )
