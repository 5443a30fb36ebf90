"""PT009 bad: // and % on values that can be negative (Triton truncates, Python floors)."""

import triton
import triton.language as tl


@triton.jit
def window_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr, WINDOW: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    rel = offs - shift
    bucket = rel // WINDOW  # PT009: rel can be negative
    phase = shift % 4  # PT009: shift is a signed argument
    x = tl.load(x_ptr + offs).to(tl.float32)
    tl.store(out_ptr + bucket * WINDOW + phase, x.to(out_ptr.dtype.element_ty))
