"""PT006 bad: math on raw loads (fp16/bf16 in, low-precision math)."""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, row_stride: tl.int64, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=-float("inf"))
    x_max = tl.max(x, axis=0)  # PT006
    num = tl.exp(x - x_max)
    tl.store(out_ptr + row * row_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        acc += tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)  # PT006
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def relu_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.where(x > 0.0, x, 0.0))  # PT006: comparison
