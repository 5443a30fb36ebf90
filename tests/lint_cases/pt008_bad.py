"""PT008 bad: float to int casts with no clamp to the target range."""

import triton
import triton.language as tl


@triton.jit
def quantize_kernel(x_ptr, q_ptr, raw_ptr, scale: tl.float32, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float32)
    q = (x / scale).to(tl.int8)  # PT008
    tl.store(q_ptr + offs, q)
    lo_only = tl.maximum(x * 127.0, -128.0)
    tl.store(q_ptr + offs, lo_only.to(tl.int8))  # PT008: clamped below only
    tl.store(raw_ptr + offs, tl.load(x_ptr + offs).to(tl.uint8))  # PT008: bytes
