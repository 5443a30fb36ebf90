"""PT007 bad: float64 math in kernels (reported at info: it is usually deliberate)."""

import triton
import triton.language as tl


@triton.jit
def sum_fp64_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask).to(tl.float64)  # PT007
    tl.store(out_ptr + row, tl.sum(x, axis=0).to(tl.float32))


@triton.jit
def freq_kernel(out_ptr, base, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    exponent = i.to(tl.float64) / BLOCK  # PT007
    tl.store(out_ptr + i, tl.exp(-exponent * tl.log(base)).to(tl.float32))
