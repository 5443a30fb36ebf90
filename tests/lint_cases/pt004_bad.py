"""PT004 bad: per-call sizes that Triton specializes on."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):  # PT004
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def scale_rows_kernel(
    x_ptr,
    num_tokens,  # PT004: a token count, even unused
    total,  # PT004: bounds the program id
    row_stride: tl.int64,
    hidden: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    if row >= total:
        return
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(
        x_ptr + row * row_stride + cols, (x * 2.0).to(x_ptr.dtype.element_ty), mask=mask
    )
