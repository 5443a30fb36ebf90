"""PT004 good: runtime sizes in do_not_specialize; strides and per-model sizes stay specialized."""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["n_elements"])
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["num_tokens", "total"])
def scale_rows_kernel(
    x_ptr, num_tokens, total, row_stride, n_cols, BLOCK: tl.constexpr
):
    # row_stride and n_cols are fixed by the layout and the model: specializing them is free.
    row = tl.program_id(0).to(tl.int64)
    if row >= total:
        return
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(
        x_ptr + row * row_stride + cols, (x * 2.0).to(x_ptr.dtype.element_ty), mask=mask
    )


@triton.jit
def column_block_kernel(x_ptr, N, stride_n, BLOCK_N: tl.constexpr):
    # N is a weight dimension (per model), though it bounds a program-id index.
    pid_n = tl.program_id(0).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = offs_n < N
    x = tl.load(x_ptr + offs_n * stride_n, mask=mask, other=0.0).to(tl.float32)
    tl.store(x_ptr + offs_n * stride_n, (x + 1.0).to(x_ptr.dtype.element_ty), mask=mask)


@triton.jit
def first_above(values, edges_ptr, numel, BLOCK: tl.constexpr):
    # A device helper (it returns a value, so no grid launches it), defined
    # where no kernel of this file calls it: its ints are never specialized.
    cols = tl.arange(0, BLOCK)
    edges = tl.load(edges_ptr + cols, mask=cols < numel, other=float("inf"))
    return tl.sum((edges <= values[:, None]).to(tl.int32), 1)
