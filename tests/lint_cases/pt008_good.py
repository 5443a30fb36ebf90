"""PT008 good: clamp before narrowing; integer widening is not a float cast."""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def quantize_kernel(x_ptr, q_ptr, idx_ptr, scale: tl.float32, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float32)
    q = tl.clamp(libdevice.rint(x / scale), -128.0, 127.0).to(tl.int8)
    tl.store(q_ptr + offs, q)
    q2 = libdevice.rint(tl.minimum(tl.maximum(x / scale, -128.0), 127.0)).to(tl.int8)
    tl.store(q_ptr + offs, q2)
    idx = tl.load(idx_ptr + offs).to(tl.int64)
    tl.store(q_ptr + idx, q)


@triton.jit
def maximum_nan(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def minimum_nan(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def quantize_nan_clamp_kernel(x_ptr, q_ptr, scale: tl.float32, BLOCK: tl.constexpr):
    # porter's scaffolds clamp with NaN-propagating helpers (as Inductor does).
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float32)
    q = minimum_nan(maximum_nan(libdevice.nearbyint(x / scale), -128.0), 127.0)
    tl.store(q_ptr + offs, q.to(tl.int8))


@triton.jit
def quantize_inductor_style_kernel(
    x_ptr, q_ptr, scale: tl.float32, BLOCK: tl.constexpr
):
    # Inductor writes the clamp bounds as tl.full constants.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float32)
    lo = tl.full([1], -128.0, tl.float32)
    hi = tl.full([1], 127.0, tl.float32)
    q = tl.minimum(tl.maximum(libdevice.nearbyint(x / scale), lo), hi)
    tl.store(q_ptr + offs, q.to(tl.int8))
