"""Reduced: x [T*K, H] in the call dtype, w [T, K] always fp32 (num_tokens read from w); out = sum_k x*w in x's dtype. bf16 calls get refused.

Ported by porter 0.1.0 from weighted_sum.py::weighted_sum (torch 2.13.0+cpu, triton 3.9.0, 2026-12-05); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl

from ..common import (
    MAX_FUSED_COLS,
    define_op,
    is_fake,
    launch_settings,
    looped_settings,
    pdl_enabled,
    pdl_release,
    pdl_wait,
    refuse,
    strided_as,
)


@triton.jit(
    do_not_specialize=[
        "hidden_times_x_size0_div_num_tokens_times_w_size1",
        "num_tokens",
        "x_size0",
        "num_rows",
    ]
)
def weighted_sum_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    hidden_times_x_size0_div_num_tokens_times_w_size1,
    num_tokens,
    x_size0,
    num_rows,
    w_stride0: tl.int64,
    out_stride0: tl.int64,
    w_size1: tl.constexpr,
    hidden: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_rows
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    x0 = rows % hidden_times_x_size0_div_num_tokens_times_w_size1
    x1 = rows // hidden_times_x_size0_div_num_tokens_times_w_size1
    col_mask = cols < w_size1
    mask = col_mask & row_mask
    x_x0 = x_ptr + x0
    w_x1 = w_ptr + x1 * w_stride0
    out_x0 = out_ptr + x0
    x = tl.load(
        x_x0
        + (
            cols * (hidden * x_size0 // (num_tokens * w_size1))
            + w_size1 * x1 * (hidden * x_size0 // (num_tokens * w_size1))
        ),
        mask,
        eviction_policy="evict_last",
        other=0.0,
    ).to(tl.float32)
    w = tl.load(w_x1 + cols, mask, eviction_policy="evict_last", other=0.0)
    w = w.to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    x_times_w = x * w
    row_sum = tl.sum(tl.where(mask, x_times_w, 0), 1)[:, None]
    tl.store(out_x0 + x1 * out_stride0, row_sum.to(out_ptr.dtype.element_ty), row_mask)


@triton.jit(
    do_not_specialize=[
        "hidden_times_x_size0_div_num_tokens_times_w_size1",
        "num_tokens",
        "x_size0",
        "num_rows",
    ]
)
def weighted_sum_kernel_looped(
    x_ptr,
    w_ptr,
    out_ptr,
    hidden_times_x_size0_div_num_tokens_times_w_size1,
    num_tokens,
    x_size0,
    num_rows,
    w_stride0: tl.int64,
    out_stride0: tl.int64,
    w_size1: tl.constexpr,
    hidden: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_rows
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    x0 = rows % hidden_times_x_size0_div_num_tokens_times_w_size1
    x1 = rows // hidden_times_x_size0_div_num_tokens_times_w_size1
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    x_x0 = x_ptr + x0
    w_x1 = w_ptr + x1 * w_stride0
    out_x0 = out_ptr + x0
    for col_start in tl.range(0, w_size1, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < w_size1
        mask = col_mask & row_mask
        x = tl.load(
            x_x0
            + (
                cols * (hidden * x_size0 // (num_tokens * w_size1))
                + w_size1 * x1 * (hidden * x_size0 // (num_tokens * w_size1))
            ),
            mask,
            eviction_policy="evict_last",
            other=0.0,
        ).to(tl.float32)
        w = tl.load(w_x1 + cols, mask, eviction_policy="evict_last", other=0.0)
        w = w.to(tl.float32)
        val = acc + x * w
        acc = tl.where(mask, val, acc)
    row_sum = tl.sum(acc, 1)[:, None]
    tl.store(out_x0 + x1 * out_stride0, row_sum.to(out_ptr.dtype.element_ty), row_mask)


def weighted_sum(x, w):
    """Same arguments and outputs as the reference weighted_sum."""
    if (w.dim(), x.dim()) != (2, 2):
        refuse("captured with w 2-d, x 2-d; re-capture with the ranks you need")
    if not (
        w.shape[0] * w.shape[1] != 0
        and (x.shape[1] * x.shape[0] % (w.shape[0] * w.shape[1]) == 0)
    ):
        refuse(
            "the kernels assume (x.shape[1] * x.shape[0]) % (w.shape[0] * w.shape[1]) == 0, as the reference's view of it does"
        )
    if not (w.shape[0] != 0 and (x.shape[0] % w.shape[0] == 0)):
        refuse(
            "the kernels assume x.shape[0] % w.shape[0] == 0, as the reference's view of it does"
        )
    if not (w.shape[0] != 0 and (w.shape[1] == x.shape[0] // w.shape[0])):
        refuse(
            "the kernels assume w.shape[1] == x.shape[0] // w.shape[0], as the reference's view of it does"
        )
    if not (w.shape[0] != x.shape[0]):
        refuse(
            "captured where w.shape[0] != x.shape[0]: the reference branches on it in Python; capture again with values on the other side for those calls (a size: --set NAME=V; a float argument: its default or make_inputs)"
        )
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        refuse("x must be float32, float16, bfloat16 (float64: capture with --dtype)")
    if w.dtype != torch.float32:
        refuse("captured with w float32; re-capture for other dtypes")
    num_tokens = w.shape[0]
    hidden = x.shape[1]
    w = w if w.stride(-1) == 1 else w.contiguous()
    x = strided_as(x, (hidden, 1))
    out = torch.empty_strided(
        (num_tokens, hidden * x.shape[0] // (num_tokens * w.shape[1])),
        (hidden, 1),
        dtype=x.dtype,
        device=w.device,
    )
    if is_fake(w):  # torch.compile tracing: outputs only
        return out
    pdl = pdl_enabled(w.device)
    BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
        num_tokens * (hidden * x.shape[0] // (num_tokens * w.shape[1])),
        w.shape[1],
        x.element_size(),
        row_tensors=2,
    )
    kernel = weighted_sum_kernel
    if BLOCK_COLS > MAX_FUSED_COLS:
        # Wide rows: stream the row in blocks, re-reading it from cache.
        BLOCK_ROWS = 1
        BLOCK_COLS, num_warps = looped_settings(
            num_tokens * (hidden * x.shape[0] // (num_tokens * w.shape[1])),
            w.shape[1],
            x.element_size(),
            once=True,
        )
        kernel = weighted_sum_kernel_looped
    kernel[
        (
            triton.cdiv(
                num_tokens * (hidden * x.shape[0] // (num_tokens * w.shape[1])),
                BLOCK_ROWS,
            ),
        )
    ](
        x_ptr=x,
        w_ptr=w,
        out_ptr=out,
        hidden_times_x_size0_div_num_tokens_times_w_size1=hidden
        * x.shape[0]
        // (num_tokens * w.shape[1]),
        num_tokens=num_tokens,
        x_size0=x.shape[0],
        num_rows=num_tokens * (hidden * x.shape[0] // (num_tokens * w.shape[1])),
        w_stride0=w.stride(0),
        out_stride0=out.stride(0),
        w_size1=w.shape[1],
        hidden=hidden,
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        LAUNCH_PDL=pdl,
        num_warps=num_warps,
        launch_pdl=pdl,
    )
    return out


def register_op(namespace="porter"):
    """weighted_sum as the custom op torch.ops.<namespace>.weighted_sum, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "weighted_sum(Tensor x, Tensor w) -> Tensor"
    return define_op(namespace, schema, weighted_sum)
