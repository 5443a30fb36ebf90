"""Returns the input itself unchanged, a strided slice view of a new tensor, and a 0-d sum expanded to [T].

Ported by porter 0.1.0 from return_input_and_view.py::return_input_and_view (torch 2.13.0+cpu, triton 3.9.0, 2026-12-05); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl

from ..common import (
    MAX_FUSED_COLS,
    launch_settings,
    looped_settings,
    pdl_enabled,
    pdl_release,
    pdl_wait,
    refuse,
    strided_as,
)


@triton.jit(do_not_specialize=["row_size"])
def return_input_and_view_kernel(
    x_ptr,
    out0_ptr,
    out1_ptr,
    row_size,
    num_rows: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    col_mask = cols < row_size
    x = tl.load(x_ptr + cols, col_mask, eviction_policy="evict_first", other=0.0)
    x = x.to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    out0 = tl.sigmoid(x)
    broadcast_to_out0_masked = tl.where(
        col_mask, tl.broadcast_to(out0, [BLOCK_ROWS, BLOCK_COLS]), 0
    )
    tl.store(
        out0_ptr + tl.broadcast_to(cols, [BLOCK_ROWS, BLOCK_COLS]),
        out0.to(out0_ptr.dtype.element_ty),
        col_mask,
    )
    row_sum = tl.sum(broadcast_to_out0_masked, 1)[:, None]
    tl.store(
        out1_ptr + tl.full([1, 1], 0, tl.int32).broadcast_to(BLOCK_ROWS, 1),
        row_sum.to(out1_ptr.dtype.element_ty),
        None,
    )


@triton.jit(do_not_specialize=["row_size"])
def return_input_and_view_kernel_looped(
    x_ptr,
    out0_ptr,
    out1_ptr,
    row_size,
    num_rows: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL)
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, row_size, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < row_size
        x = tl.load(x_ptr + cols, col_mask, eviction_policy="evict_first", other=0.0)
        x = x.to(tl.float32)
        out0 = tl.sigmoid(x)
        val = acc + tl.broadcast_to(out0, [BLOCK_ROWS, BLOCK_COLS])
        acc = tl.where(col_mask, val, acc)
        tl.store(
            out0_ptr + tl.broadcast_to(cols, [BLOCK_ROWS, BLOCK_COLS]),
            out0.to(out0_ptr.dtype.element_ty),
            col_mask,
        )
    row_sum = tl.sum(acc, 1)[:, None]
    tl.store(
        out1_ptr + tl.full([1, 1], 0, tl.int32).broadcast_to(BLOCK_ROWS, 1),
        row_sum.to(out1_ptr.dtype.element_ty),
        None,
    )


def return_input_and_view(x):
    """Same arguments and outputs as the reference return_input_and_view."""
    if x.dim() != 2:
        refuse("captured with x 2-d; re-capture with the ranks you need")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        refuse("x must be float32, float16, bfloat16 (float64: capture with --dtype)")
    num_tokens, hidden = x.shape
    x_given = x
    x = strided_as(x, (hidden, 1))
    out0 = torch.empty((num_tokens, hidden), dtype=x.dtype, device=x.device)
    out1 = torch.empty((), dtype=x.dtype, device=x.device)
    pdl = pdl_enabled(x.device)
    BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
        1, hidden * num_tokens, x.element_size(), row_tensors=0
    )
    kernel = return_input_and_view_kernel
    if BLOCK_COLS > MAX_FUSED_COLS:
        # Wide rows: stream the row in blocks, re-reading it from cache.
        BLOCK_ROWS = 1
        BLOCK_COLS, num_warps = looped_settings(
            1, hidden * num_tokens, x.element_size(), once=True
        )
        kernel = return_input_and_view_kernel_looped
    kernel[(triton.cdiv(1, BLOCK_ROWS),)](
        x_ptr=x,
        out0_ptr=out0,
        out1_ptr=out1,
        row_size=hidden * num_tokens,
        num_rows=1,
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        LAUNCH_PDL=pdl,
        num_warps=num_warps,
        launch_pdl=pdl,
    )
    return (
        x_given,
        out0.as_strided(
            (num_tokens, (1 + hidden) // 2), (hidden, 2), out0.storage_offset()
        ),
        out1.as_strided((num_tokens,), (0,), out1.storage_offset()),
    )


def register_op(namespace="porter"):
    """return_input_and_view as the custom op torch.ops.<namespace>.return_input_and_view, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    raise NotImplementedError(
        "return_input_and_view returns one of its arguments itself beside new tensors, which a custom op cannot (an op's outputs alias nothing); call the function instead"
    )
