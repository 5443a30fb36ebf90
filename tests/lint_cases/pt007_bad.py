"""PT007 bad: float64 in kernels, explicit or through an unannotated float scalar."""

import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(
    x_ptr, out_ptr, row_stride: tl.int64, eps, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    rstd = tl.rsqrt(mean_sq + eps)  # PT007: eps may arrive as fp64
    tl.store(
        out_ptr + row * row_stride + cols,
        (x * rstd).to(out_ptr.dtype.element_ty),
        mask=mask,
    )


@triton.jit
def sum_fp64_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask).to(tl.float64)  # PT007
    tl.store(out_ptr + row, tl.sum(x, axis=0).to(tl.float32))
