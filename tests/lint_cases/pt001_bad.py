"""PT001 bad: a token count in grid[1] or grid[2]."""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_tokens"])
def rope_kernel(x_ptr, num_tokens, row_stride: tl.int64, HEAD_DIM: tl.constexpr):
    head = tl.program_id(0).to(tl.int64)
    token = tl.program_id(1).to(tl.int64)
    cols = tl.arange(0, HEAD_DIM)
    ptrs = x_ptr + token * row_stride + head * HEAD_DIM + cols
    x = tl.load(ptrs).to(tl.float32)
    tl.store(ptrs, (x * 2.0).to(x_ptr.dtype.element_ty))


def rope(x, num_heads):
    num_tokens = x.shape[0]
    grid = (num_heads, num_tokens)  # PT001
    rope_kernel[grid](x, num_tokens, x.stride(0), HEAD_DIM=128)


def rope_lambda(x, n_heads):
    n, d = x.shape
    grid = lambda meta: (n_heads, triton.cdiv(n, meta["BLOCK"]))  # PT001: x.shape[0]
    rope_kernel[grid](x, n, x.stride(0), HEAD_DIM=d)


def rope_3d(x):
    rope_kernel[(4, 2, x.numel())](x, x.shape[0], x.stride(0), HEAD_DIM=128)  # PT001


def rope_rows(x, num_heads):
    # A name that is not per-model keeps the dim-0 guess.
    rows = x.shape[0]
    grid = (num_heads, triton.cdiv(rows, 4))  # PT001
    rope_kernel[grid](x, rows, x.stride(0), HEAD_DIM=128)


def rope_size(x, num_heads):
    # Nor does a bare `size`.
    size = x.shape[0]
    grid = (num_heads, triton.cdiv(size, 4))  # PT001
    rope_kernel[grid](x, size, x.stride(0), HEAD_DIM=128)
