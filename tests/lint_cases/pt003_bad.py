"""PT003 bad: runtime 0/1 flags that Triton specializes on."""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_tokens"])
def bias_act_kernel(
    x_ptr,
    bias_ptr,
    out_ptr,
    num_tokens,
    has_bias,  # PT003: named like a flag
    add_one,  # PT003: used as an `if` condition
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
    tl.store(out_ptr + row * n_cols + cols, x.to(out_ptr.dtype.element_ty), mask=mask)
