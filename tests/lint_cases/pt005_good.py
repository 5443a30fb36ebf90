"""PT005 good: a barrier between store and load; in-place load-then-store needs none."""

import triton
import triton.language as tl


@triton.jit
def two_pass_kernel(
    x_ptr, tmp_ptr, out_ptr, row_stride: tl.int64, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(tmp_ptr + row * row_stride + cols, x * 2.0, mask=mask)
    # Another thread of this block wrote part of what we read next.
    tl.debug_barrier()
    y = tl.load(tmp_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * row_stride + cols, y + 1.0, mask=mask)


@triton.jit
def in_place_kernel(x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * n_cols
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        tl.store(x_ptr + cols, (x * 0.5).to(x_ptr.dtype.element_ty), mask=cols < n_cols)
