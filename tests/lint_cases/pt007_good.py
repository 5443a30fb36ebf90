"""PT007 good: fp32 math; a Python float argument (`eps`) arrives as fp32, annotated or not."""

import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(
    x_ptr, out_ptr, row_stride: tl.int64, eps: tl.float32, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(
        out_ptr + row * row_stride + cols,
        (x * rstd).to(out_ptr.dtype.element_ty),
        mask=mask,
    )


@triton.jit
def scale_kernel(x_ptr, out_ptr, scale, n_cols, BLOCK: tl.constexpr):
    # Stating fp32 once is harmless: Triton passes a Python float as fp32 anyway.
    scale = scale.to(tl.float32)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(
        out_ptr + row * n_cols + cols,
        (x * scale).to(out_ptr.dtype.element_ty),
        mask=mask,
    )


@triton.jit
def unannotated_eps_kernel(x_ptr, out_ptr, eps, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, x * rstd, mask=mask)
