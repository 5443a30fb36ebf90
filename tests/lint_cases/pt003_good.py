"""PT003 good: flags in do_not_specialize (by name or index), bools, or constexpr."""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_tokens", "has_bias", 5])
def bias_act_kernel(
    x_ptr,
    bias_ptr,
    out_ptr,
    num_tokens,
    has_bias,
    add_one,
    is_gated: tl.int1,
    USE_GELU: tl.constexpr,
    n_cols: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    if has_bias:
        x += tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    if add_one:
        x += 1.0
    if is_gated:
        x = x * tl.sigmoid(x)
    if USE_GELU:
        x = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(out_ptr + row * n_cols + cols, x.to(out_ptr.dtype.element_ty), mask=mask)
