"""PT006 good: upcast at the load; integer loads used as indices; tl.dot inputs."""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, row_stride: tl.int64, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=-float("inf")).to(
        tl.float32
    )
    num = tl.exp(x - tl.max(x, axis=0))
    out = num / tl.sum(num, axis=0)
    tl.store(
        out_ptr + row * row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask
    )


@triton.jit
def cache_write_kernel(
    key_ptr, cache_ptr, slot_mapping_ptr, key_stride: tl.int64, BLOCK: tl.constexpr
):
    token = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_mapping_ptr + token).to(tl.int64)
    if slot < 0:  # padding token
        return
    block = slot // 16
    cols = tl.arange(0, BLOCK)
    k = tl.load(key_ptr + token * key_stride + cols)
    tl.store(cache_ptr + (block * 16 + slot % 16) * BLOCK + cols, k)


@triton.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def tile_dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    idx = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + idx[:, None] * BLOCK + idx[None, :])
    b = tl.load(b_ptr + idx[:, None] * BLOCK + idx[None, :])
    acc = tl.dot(a, b, out_dtype=tl.float32)
    tl.store(
        c_ptr + idx[:, None] * BLOCK + idx[None, :], acc.to(c_ptr.dtype.element_ty)
    )


@triton.jit
def softmax_raw_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    # tl.max upcasts fp16/bf16 to fp32, so x - max, exp and the sum all run in fp32.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(
        out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=cols < n_cols
    )
