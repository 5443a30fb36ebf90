"""PT002 good: widen first, or use an int64 argument."""

import triton
import triton.language as tl


@triton.jit
def copy_rows_kernel(
    x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x_ptr += row * x_row_stride
    x = tl.load(x_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, x, mask=mask)


@triton.jit
def int64_stride_kernel(x_ptr, out_ptr, row_stride: tl.int64, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(
        out_ptr + row * row_stride + cols, tl.load(x_ptr + row * row_stride + cols)
    )


@triton.jit(do_not_specialize=["n_elements"])
def copy_flat_kernel(x_ptr, out_ptr, n_elements, col_stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    lane = tl.arange(0, BLOCK) * col_stride  # bounded by BLOCK * stride: fine
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + lane, mask=mask), mask=mask)


@triton.jit
def gather_block_kernel(
    cache_ptr, block_table_ptr, out_ptr, block_stride, max_blocks, BLOCK: tl.constexpr
):
    seq = tl.program_id(0).to(tl.int64)
    block_number = tl.load(block_table_ptr + seq * max_blocks).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    vals = tl.load(cache_ptr + block_number * block_stride + offs)
    tl.store(out_ptr + seq * BLOCK + offs, vals)


@triton.jit(do_not_specialize=["num_rows"])
def tile_on_one_axis_kernel(
    x_ptr,
    out_ptr,
    num_rows,
    x_stride0: tl.int64,
    row_size: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    COL_BLOCKS: tl.constexpr,
):
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS  # below COL_BLOCKS at any grid size
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_rows) & (cols < row_size)
    x = tl.load(x_ptr + cols + rows * x_stride0, mask)
    tl.store(out_ptr + cols + rows * row_size, x, mask)
