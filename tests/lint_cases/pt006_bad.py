"""PT006 bad: sums and accumulations that run in the input's fp16/bf16."""

import triton
import triton.language as tl


@triton.jit
def rms_kernel(x_ptr, out_ptr, row_stride: tl.int64, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / n_cols  # PT006: squares summed in bf16
    rstd = tl.rsqrt(mean_sq + 1e-6)  # PT006 (info): rsqrt of a bf16 value
    tl.store(out_ptr + row * row_stride + cols, x * rstd, mask=mask)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=x_ptr.dtype.element_ty)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        acc += tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)  # PT006
    tl.store(out_ptr + row, tl.sum(acc.to(tl.float32), axis=0))


@triton.jit
def dot_row_kernel(q_ptr, k_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    q = tl.load(q_ptr + offs)
    k = tl.load(k_ptr + offs)
    tl.store(out_ptr + tl.program_id(0), tl.sum(q * k))  # PT006: q * k in bf16
