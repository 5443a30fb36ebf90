"""PT005 good: a barrier between store and load; in-place load-then-store needs none."""

import triton
import triton.language as tl


@triton.jit
def two_pass_kernel(
    x_ptr, tmp_ptr, out_ptr, row_stride: tl.int64, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(tmp_ptr + row * row_stride + cols, x * 2.0, mask=mask)
    # Another thread of this block wrote part of what we read next.
    tl.debug_barrier()
    y = tl.load(tmp_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * row_stride + cols, y + 1.0, mask=mask)


@triton.jit
def in_place_kernel(x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * n_cols
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        tl.store(x_ptr + cols, (x * 0.5).to(x_ptr.dtype.element_ty), mask=cols < n_cols)


@triton.jit
def add_then_reread_kernel(x_ptr, r_ptr, n_cols, BLOCK: tl.constexpr):
    # Same pointer and mask: each thread reads back its own elements.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(r_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(x_ptr + row * n_cols + cols, a + b, mask=mask)
    s = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(r_ptr + row * n_cols + cols, s * 2.0, mask=mask)


@triton.jit
def either_branch_kernel(q_ptr, n_cols, FUSED: tl.constexpr, BLOCK: tl.constexpr):
    # The store and the load sit in different branches of one if: never both run.
    cols = tl.arange(0, BLOCK)
    if FUSED:
        tl.store(q_ptr + cols, tl.zeros([BLOCK], dtype=tl.float32), mask=cols < n_cols)
    else:
        half = tl.load(q_ptr + n_cols - 1 - cols, mask=cols < n_cols)
        tl.store(q_ptr + cols, half, mask=cols < n_cols)


@triton.jit
def phased_kernel(part_ptr, n_splits, PHASE: tl.constexpr, MAX: tl.constexpr):
    # A store in one phase and a load in the later ones: two ifs on one
    # constexpr that no value meets together, so one compiled kernel holds one.
    split = tl.program_id(1)
    splits = tl.arange(0, MAX)
    if PHASE == 0:
        tl.store(part_ptr + split, 1.0)
    if PHASE > 0:
        total = tl.sum(
            tl.load(part_ptr + splits, mask=splits < n_splits, other=0.0).to(tl.float32)
        )
        tl.store(part_ptr + MAX + split, total)


@triton.jit
def phase_partial(
    part_ptr, acc, LOOP: tl.constexpr, PHASE: tl.constexpr, MAX: tl.constexpr
):
    # Two constexprs: loop LOOP's phase stores the partial, later phases load
    # them; no PHASE and LOOP meet both tests (porter's split_partial).
    if PHASE == LOOP:
        tl.store(part_ptr + LOOP * MAX + tl.program_id(1), tl.sum(acc))
    if PHASE > LOOP:
        acc = tl.load(part_ptr + LOOP * MAX + tl.arange(0, MAX))
    return acc
