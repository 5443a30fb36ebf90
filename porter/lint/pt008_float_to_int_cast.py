"""PT008: float -> int cast with no clamp to the target range first."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import ERROR, INFO, Hit, Rule, hit

_INT_TARGETS = {
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
}
# A raw load narrowed to 8/16 bits is almost always float data being quantized.
_SMALL_TARGETS = {"int8", "int16", "uint8", "uint16"}

RULE = Rule(
    id="PT008",
    name="float-to-int-cast",
    severity=ERROR,
    title="float to int cast without a clamp",
    reason=(
        "Out-of-range float to int conversion is not saturating in Triton (it is undefined in "
        "the underlying LLVM/PTX path and differs from torch's behaviour): a quantizer's "
        "`(x / scale).to(tl.int8)` wraps outliers to the wrong sign."
    ),
    fix="clamp to the target range first: `tl.clamp(q, -128.0, 127.0).to(tl.int8)`",
)


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        for site in kc.flow.casts.values():
            target = site.detail
            if target not in _INT_TARGETS:
                continue
            (src,) = site.operands
            from_float = src.floaty or (bool(src.loads) and target in _SMALL_TARGETS)
            if not from_float or (src.clamp_lo and src.clamp_hi):
                continue
            if src.absmax:
                continue  # scaled by the block's own max(|x|): in range by construction
            # In a helper the value's range is the caller's, which is not followed.
            unseen = kc.helper and not src.loads
            yield hit(
                site.node,
                f"`{ast.unparse(site.node)}` casts a float value to {target} without "
                f"clamping it to the {target} range first"
                + (
                    " (in a helper: the linter does not see whether callers clamp)"
                    if unseen
                    else ""
                ),
                f"clamp first: `tl.clamp(value, lo, hi).to(tl.{target})` with {target}'s range",
                INFO if unseen else None,
            )
