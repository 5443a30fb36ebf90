"""PT005 bad: reading back elements another thread stored, with no barrier."""

import triton
import triton.language as tl


@triton.jit
def reverse_kernel(
    x_ptr, tmp_ptr, out_ptr, row_stride: tl.int64, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(tmp_ptr + row * row_stride + cols, x * 2.0, mask=mask)
    rev = n_cols - 1 - cols
    y = tl.load(tmp_ptr + row * row_stride + rev, mask=mask).to(tl.float32)  # PT005
    tl.store(out_ptr + row * row_stride + cols, y + 1.0, mask=mask)


@triton.jit
def looped_kernel(buf_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    buf_ptr += row * n_cols
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        tl.store(
            buf_ptr + cols, tl.zeros([BLOCK], dtype=tl.float32), mask=cols < n_cols
        )
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(buf_ptr + cols + 1, mask=cols + 1 < n_cols)  # PT005: a neighbour
        tl.store(out_ptr + row * n_cols + cols, v, mask=cols < n_cols)


@triton.jit
def phased_kernel(part_ptr, n_splits, PHASE: tl.constexpr, MAX: tl.constexpr):
    split = tl.program_id(1)
    splits = tl.arange(0, MAX)
    if PHASE >= 0:
        tl.store(part_ptr + split, 1.0)
    if PHASE < 2:  # PHASE 0 and 1 hold both
        v = tl.load(part_ptr + splits, mask=splits < n_splits)  # PT005
        tl.store(part_ptr + MAX + split, tl.sum(v.to(tl.float32)))


@triton.jit
def phase_partial(
    part_ptr, acc, LOOP: tl.constexpr, PHASE: tl.constexpr, MAX: tl.constexpr
):
    if PHASE >= LOOP:
        tl.store(part_ptr + LOOP * MAX + tl.program_id(1), tl.sum(acc))
    if PHASE <= LOOP:  # PHASE == LOOP holds both
        acc = tl.load(part_ptr + LOOP * MAX + tl.arange(0, MAX))  # PT005
    return acc
