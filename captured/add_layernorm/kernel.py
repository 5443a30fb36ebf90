"""Residual add then LayerNorm, returning the normalized value and the new residual.

Ported by porter 0.1.0 from add_layernorm.py::add_layernorm (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl

from ..common import define_op, is_fake, laid_out_like, pdl_enabled, pdl_release
from ..common import pdl_wait, refuse, row_launch, row_mean_m2, welford_accumulate
from ..common import welford_finish


@triton.jit(do_not_specialize=["num_tokens"])
def add_layernorm_kernel(
    x_ptr,
    residual_ptr,
    weight_ptr,
    bias_ptr,
    out1_ptr,
    out0_ptr,
    num_tokens,
    x_stride0: tl.int64,
    residual_stride0: tl.int64,
    out1_stride0: tl.int64,
    out0_stride0: tl.int64,
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
    weight = tl.load(
        weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    bias = tl.load(bias_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0)
    bias = bias.to(tl.float32)
    x_rows = x_ptr + rows * x_stride0
    residual_rows = residual_ptr + rows * residual_stride0
    out1_rows = out1_ptr + rows * out1_stride0
    out0_rows = out0_ptr + rows * out0_stride0
    if num_tokens < STREAM_ROWS:
        x = tl.load(x_rows + cols, mask, eviction_policy="evict_first", other=0.0)
        x = x.to(tl.float32)
        residual = tl.load(
            residual_rows + cols, mask, eviction_policy="evict_first", other=0.0
        ).to(tl.float32)
    else:
        x = tl.load(x_rows + cols, mask, other=0.0).to(tl.float32)
        residual = tl.load(residual_rows + cols, mask, other=0.0).to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    out1_2 = x + residual
    tl.store(out1_rows + cols, out1_2.to(out1_ptr.dtype.element_ty), mask)
    mean, m2, count = row_mean_m2(out1_2, mask, 1, hidden)
    mean_2 = mean[:, None]
    m2_2 = m2[:, None]
    out1 = out1_2.to(out1_ptr.dtype.element_ty).to(tl.float32)
    out1_minus_mean_2 = out1 - mean_2
    val = m2_2 * (1.0 / tl.cast(hidden, tl.float32)) + 1e-05
    rstd = tl.rsqrt(val)
    out0 = out1_minus_mean_2 * rstd * weight + bias
    tl.store(out0_rows + cols, out0.to(out0_ptr.dtype.element_ty), mask)


@triton.jit(do_not_specialize=["num_tokens"])
def add_layernorm_kernel_looped(
    x_ptr,
    residual_ptr,
    weight_ptr,
    bias_ptr,
    out1_ptr,
    out0_ptr,
    num_tokens,
    x_stride0: tl.int64,
    residual_stride0: tl.int64,
    out1_stride0: tl.int64,
    out0_stride0: tl.int64,
    hidden: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_tokens
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    mean = tl.zeros([BLOCK_ROWS, BLOCK_COLS], tl.float32)
    m2 = tl.zeros([BLOCK_ROWS, BLOCK_COLS], tl.float32)
    count = tl.zeros([BLOCK_ROWS, BLOCK_COLS], tl.float32)
    x_rows = x_ptr + rows * x_stride0
    residual_rows = residual_ptr + rows * residual_stride0
    out1_rows = out1_ptr + rows * out1_stride0
    out0_rows = out0_ptr + rows * out0_stride0
    for col_start in tl.range(0, hidden, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < hidden
        mask = col_mask & row_mask
        x = tl.load(x_rows + cols, mask, eviction_policy="evict_first", other=0.0)
        x = x.to(tl.float32)
        residual = tl.load(
            residual_rows + cols, mask, eviction_policy="evict_first", other=0.0
        ).to(tl.float32)
        out1_2 = x + residual
        mean_next, m2_next, count_next = welford_accumulate(
            out1_2, mean, m2, count, col_start == 0
        )
        mean = tl.where(mask, mean_next, mean)
        m2 = tl.where(mask, m2_next, m2)
        count = tl.where(mask, count_next, count)
        tl.store(out1_rows + cols, out1_2.to(out1_ptr.dtype.element_ty), mask)
    row_mean, row_m2, row_count = welford_finish(mean, m2, count, 1)
    row_mean_2 = row_mean[:, None]
    row_m2_2 = row_m2[:, None]
    tl.debug_barrier()
    for col_start in tl.range(0, hidden, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < hidden
        mask = col_mask & row_mask
        out1 = tl.load(out1_rows + cols, mask, eviction_policy="evict_first", other=0.0)
        out1 = out1.to(tl.float32)
        weight = tl.load(
            weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
        ).to(tl.float32)
        bias = tl.load(
            bias_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
        ).to(tl.float32)
        out1_minus_row_mean_2 = out1 - row_mean_2
        val = row_m2_2 * (1.0 / tl.cast(hidden, tl.float32)) + 1e-05
        rstd = tl.rsqrt(val)
        out0 = out1_minus_row_mean_2 * rstd * weight + bias
        tl.store(out0_rows + cols, out0.to(out0_ptr.dtype.element_ty), mask)


def add_layernorm(x, residual, weight, bias, eps: float = 1e-05):
    """Same arguments and outputs as the reference add_layernorm."""
    if eps != 1e-05:
        refuse("captured with eps == 1e-05; re-capture with the value you need")
    if (x.dim(), residual.dim(), weight.dim(), bias.dim()) != (2, 2, 1, 1):
        refuse(
            "captured with x 2-d, residual 2-d, weight 1-d, bias 1-d; re-capture with the ranks you need"
        )
    if (residual.dtype, weight.dtype, bias.dtype) != (x.dtype, x.dtype, x.dtype):
        refuse("residual, weight and bias must have x's dtype, as at capture")
    num_tokens, hidden = x.shape
    if (
        residual.shape != (num_tokens, hidden)
        or weight.shape != (hidden,)
        or bias.shape != (hidden,)
    ):
        refuse(
            "captured for shapes residual (x.shape[0], x.shape[1]), weight (x.shape[1],), bias (x.shape[1],); re-capture for other sizes"
        )
    x_given = x
    x = x if x.stride(-1) == 1 else x.contiguous()
    residual = residual if residual.stride(-1) == 1 else residual.contiguous()
    weight = weight if weight.stride(-1) == 1 else weight.contiguous()
    bias = bias if bias.stride(-1) == 1 else bias.contiguous()
    out1 = torch.empty((num_tokens, hidden), dtype=x.dtype, device=x.device)
    out0 = torch.empty((num_tokens, hidden), dtype=x.dtype, device=x.device)
    if is_fake(x):  # torch.compile tracing: outputs only
        return out0, laid_out_like(out1, x_given)
    pdl = pdl_enabled(x.device)
    form, launch = row_launch(
        num_tokens,
        hidden,
        x.element_size(),
        row_tensors=4,
        reduced_twice=True,
        stream=True,
    )
    kernel = add_layernorm_kernel_looped if form == "looped" else add_layernorm_kernel
    kernel[(triton.cdiv(num_tokens, launch["BLOCK_ROWS"]),)](
        x_ptr=x,
        residual_ptr=residual,
        weight_ptr=weight,
        bias_ptr=bias,
        out1_ptr=out1,
        out0_ptr=out0,
        num_tokens=num_tokens,
        x_stride0=x.stride(0),
        residual_stride0=residual.stride(0),
        out1_stride0=out1.stride(0),
        out0_stride0=out0.stride(0),
        hidden=hidden,
        LAUNCH_PDL=pdl,
        launch_pdl=pdl,
        **launch,
    )
    return out0, laid_out_like(out1, x_given)


def register_op(namespace="porter"):
    """add_layernorm as the custom op torch.ops.<namespace>.add_layernorm, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "add_layernorm(Tensor x, Tensor residual, Tensor weight, Tensor bias, float eps=1e-05) -> (Tensor, Tensor)"
    return define_op(namespace, schema, add_layernorm)
