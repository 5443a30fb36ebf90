"""Dynamic per-token symmetric int8 quantization: int8 values and one fp32 scale per token.

Ported by porter 0.1.0 from quant_int8.py::quant_int8 (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ..common import define_op, is_fake, laid_out_like, max_nan, maximum_nan
from ..common import minimum_nan, pdl_enabled, pdl_release, pdl_wait, refuse, row_launch
from ..common import split_cols, split_partial, split_rows


@triton.jit(do_not_specialize=["num_tokens"])
def quant_int8_kernel(
    out1_ptr,
    x_ptr,
    out0_ptr,
    num_tokens,
    x_stride0: tl.int64,
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
    mask = (cols < hidden) & row_mask
    x_rows = x_ptr + rows * x_stride0
    out0_rows = out0_ptr + rows * out0_stride0
    if num_tokens < STREAM_ROWS:
        x = tl.load(x_rows + cols, mask, other=0.0, eviction_policy="evict_first")
        x = x.to(tl.float32)
    else:
        x = tl.load(x_rows + cols, mask, other=0.0).to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    abs_x = tl.abs(x)
    abs_x_masked = tl.where(mask, abs_x, float("-inf"))
    row_max = max_nan(abs_x_masked, 1)[:, None]
    out1 = maximum_nan(row_max, 1e-10) / 127.0
    tl.store(out1_ptr + rows, out1.to(out1_ptr.dtype.element_ty), row_mask)
    maximum_nan_2 = maximum_nan(libdevice.nearbyint(x / out1), -128.0)
    out0 = minimum_nan(maximum_nan_2, 127.0).to(tl.int8)
    tl.store(out0_rows + cols, out0, mask)


@split_rows(phases=2, partials=1)
@triton.jit(do_not_specialize=["num_tokens", "SPLITS"])
def quant_int8_kernel_looped(
    out1_ptr,
    x_ptr,
    out0_ptr,
    partials_ptr,
    num_tokens,
    x_stride0: tl.int64,
    out0_stride0: tl.int64,
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
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], float("-inf"), tl.float32)
    x_rows = x_ptr + rows * x_stride0
    out0_rows = out0_ptr + rows * out0_stride0
    if PHASE <= 0:
        for col_start in tl.range(start, stop, BLOCK_COLS):
            cols = col_start + col_base
            mask = (cols < hidden) & row_mask
            x = tl.load(x_rows + cols, mask, eviction_policy="evict_last", other=0.0)
            x = x.to(tl.float32)
            maximum_nan_acc = maximum_nan(acc, tl.abs(x))
            acc = tl.where(mask, maximum_nan_acc, acc)
    acc = split_partial(acc, "max", partials, 0, 0, row_mask, SPLITS, PHASE)
    row_max = max_nan(acc, 1)[:, None]
    out1 = maximum_nan(row_max, 1e-10) / 127.0
    if PHASE < 0 or PHASE == 1:
        if start == 0:
            tl.store(out1_ptr + rows, out1.to(out1_ptr.dtype.element_ty), row_mask)
        for col_start in tl.range(start, stop, BLOCK_COLS):
            cols = col_start + col_base
            mask = (cols < hidden) & row_mask
            x_2 = tl.load(x_rows + cols, mask, eviction_policy="evict_first", other=0.0)
            x_2 = x_2.to(tl.float32)
            maximum_nan_2 = maximum_nan(libdevice.nearbyint(x_2 / out1), -128.0)
            out0 = minimum_nan(maximum_nan_2, 127.0).to(tl.int8)
            tl.store(out0_rows + cols, out0, mask)


def quant_int8(x: torch.Tensor):
    """Same arguments and outputs as the reference quant_int8."""
    if x.dim() != 2:
        refuse("captured with x 2-d; re-capture with the ranks you need")
    num_tokens, hidden = x.shape
    if hidden == 0:
        refuse("amax over an empty axis (x.shape[1] == 0) has no value; eager raises")
    x_given = x
    x = x if x.stride(-1) == 1 else x.contiguous()
    out1 = torch.empty((num_tokens, 1), dtype=torch.float32, device=x.device)
    out0 = torch.empty((num_tokens, hidden), dtype=torch.int8, device=x.device)
    if is_fake(x):  # torch.compile tracing: outputs only
        return laid_out_like(out0, x_given), laid_out_like(out1, x_given)
    pdl = pdl_enabled(x.device)
    form, launch = row_launch(
        num_tokens,
        hidden,
        x.element_size(),
        row_tensors=2,
        row_only=True,
        reread=True,
        reads=(2, 1),
        split=True,
        stream=True,
    )
    kernel = quant_int8_kernel if form == "persistent" else quant_int8_kernel_looped
    kernel[(triton.cdiv(num_tokens, launch["BLOCK_ROWS"]),)](
        out1_ptr=out1,
        x_ptr=x,
        out0_ptr=out0,
        num_tokens=num_tokens,
        x_stride0=x.stride(0),
        out0_stride0=out0.stride(0),
        hidden=hidden,
        LAUNCH_PDL=pdl,
        launch_pdl=pdl,
        **launch,
    )
    return laid_out_like(out0, x_given), laid_out_like(out1, x_given)


def register_op(namespace="porter"):
    """quant_int8 as the custom op torch.ops.<namespace>.quant_int8, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "quant_int8(Tensor x) -> (Tensor, Tensor)"
    return define_op(namespace, schema, quant_int8)
