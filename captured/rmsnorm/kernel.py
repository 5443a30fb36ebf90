"""RMSNorm as in Llama-style models: y = x / sqrt(mean(x^2) + eps) * weight.

Ported by porter 0.1.0 from rmsnorm.py::rmsnorm (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl

from ..common import define_op, is_fake, laid_out_like, pdl_enabled, pdl_release
from ..common import pdl_wait, refuse, row_launch, split_cols, split_partial, split_rows


@triton.jit(do_not_specialize=["num_tokens"])
def rmsnorm_kernel(
    x_ptr,
    weight_ptr,
    out_ptr,
    num_tokens,
    x_stride0: tl.int64,
    out_stride0: tl.int64,
    hidden: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    STREAM_ROWS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_tokens
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    col_mask = cols < hidden
    mask = col_mask & row_mask
    x_rows = x_ptr + rows * x_stride0
    out_rows = out_ptr + rows * out_stride0
    if num_tokens < STREAM_ROWS:
        x = tl.load(x_rows + cols, mask, other=0.0, eviction_policy="evict_first")
        x = x.to(tl.float32)
    else:
        x = tl.load(x_rows + cols, mask, other=0.0).to(tl.float32)
    x_sq = x * x
    weight = tl.load(
        weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_sum = tl.sum(x_sq, 1)[:, None]
    rstd = tl.rsqrt(row_sum / hidden + 1e-06)
    out = x * rstd * weight
    tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty), mask)


@split_rows(phases=2, partials=1)
@triton.jit(do_not_specialize=["num_tokens", "SPLITS"])
def rmsnorm_kernel_looped(
    x_ptr,
    weight_ptr,
    out_ptr,
    partials_ptr,
    num_tokens,
    x_stride0: tl.int64,
    out_stride0: tl.int64,
    SPLITS,
    hidden: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    PHASE: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_tokens
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    # PHASE -1 runs every loop over whole rows; PHASE j, loop j over a slice
    start, stop = split_cols(hidden, BLOCK_COLS, SPLITS, PHASE)
    partials = partials_ptr + rows * (1 * SPLITS)
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    x_rows = x_ptr + rows * x_stride0
    out_rows = out_ptr + rows * out_stride0
    if PHASE <= 0:
        for col_start in tl.range(start, stop, BLOCK_COLS):
            cols = col_start + col_base
            col_mask = cols < hidden
            x = tl.load(
                x_rows + cols,
                col_mask & row_mask,
                eviction_policy="evict_last",
                other=0.0,
            ).to(tl.float32)
            acc = acc + x * x
    acc = split_partial(acc, "sum", partials, 0, 0, row_mask, SPLITS, PHASE)
    row_sum = tl.sum(acc, 1)[:, None]
    if PHASE < 0 or PHASE == 1:
        for col_start in tl.range(start, stop, BLOCK_COLS):
            cols = col_start + col_base
            col_mask = cols < hidden
            mask = col_mask & row_mask
            x_2 = tl.load(x_rows + cols, mask, eviction_policy="evict_first", other=0.0)
            x_2 = x_2.to(tl.float32)
            weight = tl.load(
                weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
            ).to(tl.float32)
            rstd = tl.rsqrt(row_sum / tl.cast(hidden, tl.float32) + 1e-06)
            out = x_2 * rstd * weight
            tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty), mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-06):
    """Same arguments and outputs as the reference rmsnorm."""
    if eps != 1e-06:
        refuse("captured with eps == 1e-06; re-capture with the value you need")
    if (x.dim(), weight.dim()) != (2, 1):
        refuse("captured with x 2-d, weight 1-d; re-capture with the ranks you need")
    if weight.dtype != x.dtype:
        refuse("weight must have x's dtype, as at capture")
    num_tokens, hidden = x.shape
    if weight.shape != (hidden,):
        refuse("captured for shapes weight (x.shape[1],); re-capture for other sizes")
    x_given = x
    x = x if x.stride(-1) == 1 else x.contiguous()
    weight = weight if weight.stride(-1) == 1 else weight.contiguous()
    out = torch.empty((num_tokens, hidden), dtype=x.dtype, device=x.device)
    if is_fake(x):  # torch.compile tracing: outputs only
        return laid_out_like(out, x_given)
    pdl = pdl_enabled(x.device)
    form, launch = row_launch(
        num_tokens,
        hidden,
        x.element_size(),
        row_tensors=2,
        reads=(2, 1),
        split=True,
        stream=True,
    )
    kernel = rmsnorm_kernel if form == "persistent" else rmsnorm_kernel_looped
    kernel[(triton.cdiv(num_tokens, launch["BLOCK_ROWS"]),)](
        x_ptr=x,
        weight_ptr=weight,
        out_ptr=out,
        num_tokens=num_tokens,
        x_stride0=x.stride(0),
        out_stride0=out.stride(0),
        hidden=hidden,
        LAUNCH_PDL=pdl,
        launch_pdl=pdl,
        **launch,
    )
    return laid_out_like(out, x_given)


def register_op(namespace="porter"):
    """rmsnorm as the custom op torch.ops.<namespace>.rmsnorm, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "rmsnorm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor"
    return define_op(namespace, schema, rmsnorm)
