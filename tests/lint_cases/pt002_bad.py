"""PT002 bad: program ids and loaded indices multiplied into offsets in int32."""

import triton
import triton.language as tl


@triton.jit
def copy_rows_kernel(
    x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask)  # PT002 (info)
    tl.store(out_ptr + row * out_row_stride + cols, x, mask=mask)  # PT002 (info)


@triton.jit(do_not_specialize=["n_elements"])
def copy_flat_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)  # PT002: reaches the pointer below
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def widened_too_late_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    start = (tl.program_id(0) * stride).to(tl.int64)  # PT002: already wrapped
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + start + cols, tl.load(x_ptr + start + cols))


@triton.jit
def gather_block_kernel(
    cache_ptr, block_table_ptr, out_ptr, block_stride, max_blocks, BLOCK: tl.constexpr
):
    seq = tl.program_id(0).to(tl.int64)
    block_number = tl.load(block_table_ptr + seq * max_blocks)
    offs = tl.arange(0, BLOCK)
    offs += block_number * block_stride  # PT002: int32 block table
    vals = tl.load(cache_ptr + offs)
    tl.store(out_ptr + seq * BLOCK + offs, vals)


@triton.jit
def bounded_block_times_stride_kernel(
    x_ptr, out_ptr, stride, COL_BLOCKS: tl.constexpr, BLOCK: tl.constexpr
):
    col_block = tl.program_id(0) % COL_BLOCKS
    start = col_block * stride  # PT002: bounded, but the stride is not
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + start + cols, tl.load(x_ptr + start + cols))


@triton.jit
def logits_row_kernel(logits_ptr, out_ptr, vocab_size, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(logits_ptr + row * vocab_size + cols)  # PT002: 16K rows of 128K
    tl.store(out_ptr + row, tl.max(x, axis=0))
