"""PT001 good: runtime sizes only in grid[0]; per-model sizes elsewhere."""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_tokens"])
def rope_kernel(x_ptr, num_tokens, row_stride: tl.int64, HEAD_DIM: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    cols = tl.arange(0, HEAD_DIM)
    ptrs = x_ptr + token * row_stride + head * HEAD_DIM + cols
    x = tl.load(ptrs).to(tl.float32)
    tl.store(ptrs, (x * 2.0).to(x_ptr.dtype.element_ty))


def rope(x, hidden):
    num_tokens = x.shape[0]
    BLOCK = 128
    rope_kernel[(num_tokens, triton.cdiv(hidden, BLOCK))](
        x, num_tokens, x.stride(0), HEAD_DIM=BLOCK
    )


def rope_shape(x):
    grid = (x.shape[0], x.shape[1], 1)
    rope_kernel[grid](x, x.shape[0], x.stride(0), HEAD_DIM=128)


def rope_elements(x):
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)
    rope_kernel[grid](x, n_elements, x.stride(0), HEAD_DIM=128)


def rope_decode(x, num_heads):
    # Decode-only launcher: one program per (token, head) is the low-latency choice.
    num_tokens = x.shape[0]
    rope_kernel[(num_tokens, num_heads)](x, num_tokens, x.stride(0), HEAD_DIM=128)


def linear_epilogue(x, weight):
    # A weight's first dim is per model: the name says so, not the dim.
    num_tokens = x.shape[0]
    out_features = weight.shape[0]
    grid = (triton.cdiv(num_tokens, 4), triton.cdiv(out_features, 128))
    rope_kernel[grid](x, num_tokens, x.stride(0), HEAD_DIM=128)
