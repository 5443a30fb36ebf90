"""Softmax over the channel axis (dim=1) of a 4-d tensor, with a temperature attribute.

Ported by porter 0.1.0 from softmax_dim1_4d_temp.py::Model (torch 2.13.0+cpu, triton 3.9.0, 2026-12-04); README.md says what porter changed.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

from ..common import (
    DECODE_BLOCK,
    MAX_FUSED_COLS,
    any_true,
    launch_settings,
    looped_settings,
    max_nan,
    maximum_nan,
    pdl_enabled,
    pdl_release,
    pdl_wait,
    refuse,
    strided_as,
    tile_settings,
)


@triton.jit(do_not_specialize=["num_rows"])
def model_kernel_0(
    x_ptr,
    scratch_buf0_ptr,
    scratch_buf1_ptr,
    scratch_buf2_ptr,
    temperature,
    num_rows,
    x_stride1: tl.int64,
    x_stride0: tl.int64,
    width_times_height: tl.constexpr,
    width: tl.constexpr,
    channels: tl.constexpr,
    height: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_rows
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    x0 = rows % width_times_height
    x1 = rows // width_times_height
    col_mask = cols < channels
    mask = col_mask & row_mask
    x_x0 = x_ptr + x0
    x = tl.load(
        x_x0 + (cols * x_stride1 + x1 * x_stride0),
        mask,
        eviction_policy="evict_last",
        other=0.0,
    ).to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    cast_temperature = tl.cast(temperature, tl.float32)
    x_over_temperature = x / temperature
    x_over_temperature_test = x_over_temperature == x_over_temperature
    val = tl.abs(x_over_temperature) != tl.full([1, 1], float("inf"), tl.float32)
    cond = x_over_temperature_test & val == 0
    cond_masked = tl.where(mask, cond, False)
    val_2 = x * tl.where(cast_temperature >= 0.0, 1.0, -1.0)
    val_2_masked = tl.where(mask, val_2, float("-inf"))
    val_3 = tl.where(mask, x_over_temperature, float("-inf"))
    scratch_buf0 = any_true(cond_masked.to(tl.int8), 1)[:, None]
    row_max = max_nan(val_2_masked, 1)[:, None]
    row_max_2 = max_nan(val_3, 1)[:, None]
    tl.store(scratch_buf0_ptr + rows, scratch_buf0, row_mask)
    tl.store(
        scratch_buf1_ptr + rows, row_max.to(scratch_buf1_ptr.dtype.element_ty), row_mask
    )
    tl.store(
        scratch_buf2_ptr + rows,
        row_max_2.to(scratch_buf2_ptr.dtype.element_ty),
        row_mask,
    )


@triton.jit(do_not_specialize=["num_rows"])
def model_kernel_0_looped(
    x_ptr,
    scratch_buf0_ptr,
    scratch_buf1_ptr,
    scratch_buf2_ptr,
    temperature,
    num_rows,
    x_stride1: tl.int64,
    x_stride0: tl.int64,
    width_times_height: tl.constexpr,
    width: tl.constexpr,
    channels: tl.constexpr,
    height: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_rows
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    x0 = rows % width_times_height
    x1 = rows // width_times_height
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], False, tl.int1)
    acc_2 = tl.full([BLOCK_ROWS, BLOCK_COLS], float("-inf"), tl.float32)
    acc_3 = tl.full([BLOCK_ROWS, BLOCK_COLS], float("-inf"), tl.float32)
    x_x0 = x_ptr + x0
    for col_start in tl.range(0, channels, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < channels
        mask = col_mask & row_mask
        x = tl.load(
            x_x0 + (cols * x_stride1 + x1 * x_stride0),
            mask,
            eviction_policy="evict_last",
            other=0.0,
        ).to(tl.float32)
        cast_temperature = tl.cast(temperature, tl.float32)
        x_over_temperature = x / temperature
        x_over_temperature_test = x_over_temperature == x_over_temperature
        val = tl.abs(x_over_temperature) != tl.full([1, 1], float("inf"), tl.float32)
        val_2 = acc | (x_over_temperature_test & val == 0)
        acc = tl.where(mask, val_2, acc)
        maximum_nan_acc_2 = maximum_nan(
            acc_2, x * tl.where(cast_temperature >= 0.0, 1.0, -1.0)
        )
        acc_2 = tl.where(mask, maximum_nan_acc_2, acc_2)
        maximum_nan_acc_3 = maximum_nan(acc_3, x_over_temperature)
        acc_3 = tl.where(mask, maximum_nan_acc_3, acc_3)
    scratch_buf0 = any_true(acc.to(tl.int8), 1)[:, None]
    row_max = max_nan(acc_2, 1)[:, None]
    row_max_2 = max_nan(acc_3, 1)[:, None]
    tl.store(scratch_buf0_ptr + rows, scratch_buf0, row_mask)
    tl.store(
        scratch_buf1_ptr + rows, row_max.to(scratch_buf1_ptr.dtype.element_ty), row_mask
    )
    tl.store(
        scratch_buf2_ptr + rows,
        row_max_2.to(scratch_buf2_ptr.dtype.element_ty),
        row_mask,
    )


@triton.jit(do_not_specialize=["num_rows"])
def model_kernel_1(
    scratch_buf0_ptr,
    x_ptr,
    scratch_buf1_ptr,
    scratch_buf2_ptr,
    out_ptr,
    temperature,
    num_rows,
    scratch_buf0_stride0: tl.int64,
    scratch_buf1_stride0: tl.int64,
    scratch_buf2_stride0: tl.int64,
    width_times_height: tl.constexpr,
    channels: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    COL_BLOCKS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
    EARLY_TRIGGER: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, EARLY_TRIGGER)
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_rows) & (cols < width_times_height)
    offsets = rows * width_times_height + cols
    x2 = rows // channels
    scratch_buf0_x2 = scratch_buf0_ptr + x2 * scratch_buf0_stride0
    scratch_buf1_x2 = scratch_buf1_ptr + x2 * scratch_buf1_stride0
    scratch_buf2_x2 = scratch_buf2_ptr + x2 * scratch_buf2_stride0
    scratch_buf0 = tl.load(scratch_buf0_x2 + cols, mask, eviction_policy="evict_last")
    scratch_buf0 = scratch_buf0.to(tl.int1)
    x = tl.load(x_ptr + offsets, mask, eviction_policy="evict_last").to(tl.float32)
    scratch_buf1 = tl.load(scratch_buf1_x2 + cols, mask, eviction_policy="evict_last")
    scratch_buf1 = scratch_buf1.to(tl.float32)
    scratch_buf2 = tl.load(scratch_buf2_x2 + cols, mask, eviction_policy="evict_last")
    scratch_buf2 = scratch_buf2.to(tl.float32)
    # a block over a long row lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, EARLY_TRIGGER)
    scratch_buf0_test = scratch_buf0 == 0
    cast_temperature = tl.cast(temperature, tl.float32)
    val = tl.where(cast_temperature >= 0.0, 1.0, -1.0)
    val_2 = tl.where(
        scratch_buf0_test,
        (x * val - scratch_buf1) / (val * cast_temperature),
        x * (1.0 / cast_temperature) - scratch_buf2,
    )
    exp = tl.exp(val_2)
    tl.store(out_ptr + offsets, exp.to(out_ptr.dtype.element_ty), mask)


@triton.jit(do_not_specialize=["num_rows"])
def model_kernel_2(
    out_ptr,
    scratch_buf2_ptr,
    num_rows,
    out_stride1: tl.int64,
    out_stride0: tl.int64,
    width_times_height: tl.constexpr,
    width: tl.constexpr,
    channels: tl.constexpr,
    height: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_rows
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    x0 = rows % width_times_height
    x1 = rows // width_times_height
    col_mask = cols < channels
    mask = col_mask & row_mask
    out_x0 = out_ptr + x0
    out = tl.load(
        out_x0 + (cols * out_stride1 + x1 * out_stride0),
        mask,
        eviction_policy="evict_last",
        other=0.0,
    ).to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_sum = tl.sum(tl.where(mask, out, 0), 1)[:, None]
    tl.store(
        scratch_buf2_ptr + rows, row_sum.to(scratch_buf2_ptr.dtype.element_ty), row_mask
    )


@triton.jit(do_not_specialize=["num_rows"])
def model_kernel_2_looped(
    out_ptr,
    scratch_buf2_ptr,
    num_rows,
    out_stride1: tl.int64,
    out_stride0: tl.int64,
    width_times_height: tl.constexpr,
    width: tl.constexpr,
    channels: tl.constexpr,
    height: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_rows
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    x0 = rows % width_times_height
    x1 = rows // width_times_height
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    out_x0 = out_ptr + x0
    for col_start in tl.range(0, channels, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < channels
        mask = col_mask & row_mask
        out = tl.load(
            out_x0 + (cols * out_stride1 + x1 * out_stride0),
            mask,
            eviction_policy="evict_last",
            other=0.0,
        ).to(tl.float32)
        acc_plus_out = acc + out
        acc = tl.where(mask, acc_plus_out, acc)
    row_sum = tl.sum(acc, 1)[:, None]
    tl.store(
        scratch_buf2_ptr + rows, row_sum.to(scratch_buf2_ptr.dtype.element_ty), row_mask
    )


@triton.jit(do_not_specialize=["num_rows"])
def model_kernel_3(
    out_ptr,
    scratch_buf2_ptr,
    num_rows,
    scratch_buf2_stride0: tl.int64,
    width_times_height: tl.constexpr,
    channels: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    COL_BLOCKS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
    EARLY_TRIGGER: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, EARLY_TRIGGER)
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_rows) & (cols < width_times_height)
    offsets = rows * width_times_height + cols
    x2 = rows // channels
    out = tl.load(out_ptr + offsets, mask, eviction_policy="evict_last").to(tl.float32)
    scratch_buf2_x2 = scratch_buf2_ptr + x2 * scratch_buf2_stride0
    scratch_buf2 = tl.load(scratch_buf2_x2 + cols, mask, eviction_policy="evict_last")
    scratch_buf2 = scratch_buf2.to(tl.float32)
    # a block over a long row lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, EARLY_TRIGGER)
    out_2 = out / scratch_buf2
    tl.store(out_ptr + offsets, out_2.to(out_ptr.dtype.element_ty), mask)


class ModelNew(nn.Module):
    """Drop-in for the reference's Model: same constructor, parameters and buffers."""

    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, x):
        if not isinstance(self.temperature, (int, float)):
            refuse(
                "captured with self.temperature a number; re-capture with the value you need"
            )
        if x.dim() != 4:
            refuse("captured with x 4-d; re-capture with the ranks you need")
        if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            refuse(
                "x must be float32, float16, bfloat16 (float64: capture with --dtype)"
            )
        batch_size, channels, height, width = x.shape
        x = strided_as(x, (width * channels * height, width * height, width, 1))
        scratch_buf0 = torch.empty_strided(
            (batch_size, 1, height, width),
            (width * height, width * height * batch_size, width, 1),
            dtype=torch.bool,
            device=x.device,
        )
        scratch_buf1 = torch.empty_strided(
            (batch_size, 1, height, width),
            (width * height, width * height * batch_size, width, 1),
            dtype=torch.float32,
            device=x.device,
        )
        scratch_buf2 = torch.empty_strided(
            (batch_size, 1, height, width),
            (width * height, width * height * batch_size, width, 1),
            dtype=torch.float32,
            device=x.device,
        )
        out = torch.empty(
            (batch_size, channels, height, width), dtype=x.dtype, device=x.device
        )
        pdl = pdl_enabled(x.device)
        BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
            width * height * batch_size,
            channels,
            x.element_size(),
            row_tensors=1,
            row_only=True,
        )
        kernel = model_kernel_0
        if BLOCK_COLS > MAX_FUSED_COLS:
            # Wide rows: stream the row in blocks, re-reading it from cache.
            BLOCK_ROWS = 1
            BLOCK_COLS, num_warps = looped_settings(
                width * height * batch_size, channels, x.element_size(), once=True
            )
            kernel = model_kernel_0_looped
        kernel[(triton.cdiv(width * height * batch_size, BLOCK_ROWS),)](
            x_ptr=x,
            scratch_buf0_ptr=scratch_buf0,
            scratch_buf1_ptr=scratch_buf1,
            scratch_buf2_ptr=scratch_buf2,
            temperature=self.temperature,
            num_rows=width * height * batch_size,
            x_stride1=x.stride(1),
            x_stride0=x.stride(0),
            width_times_height=width * height,
            width=width,
            channels=channels,
            height=height,
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=BLOCK_COLS,
            LAUNCH_PDL=pdl,
            num_warps=num_warps,
            launch_pdl=pdl,
        )
        BLOCK_ROWS, BLOCK_COLS, num_warps = tile_settings(
            batch_size * channels, width * height, x.element_size()
        )
        COL_BLOCKS = triton.cdiv(width * height, BLOCK_COLS)
        model_kernel_1[(triton.cdiv(batch_size * channels, BLOCK_ROWS) * COL_BLOCKS,)](
            scratch_buf0_ptr=scratch_buf0,
            x_ptr=x,
            scratch_buf1_ptr=scratch_buf1,
            scratch_buf2_ptr=scratch_buf2,
            out_ptr=out,
            temperature=self.temperature,
            num_rows=batch_size * channels,
            scratch_buf0_stride0=scratch_buf0.stride(0),
            scratch_buf1_stride0=scratch_buf1.stride(0),
            scratch_buf2_stride0=scratch_buf2.stride(0),
            width_times_height=width * height,
            channels=channels,
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=BLOCK_COLS,
            COL_BLOCKS=COL_BLOCKS,
            LAUNCH_PDL=pdl,
            EARLY_TRIGGER=BLOCK_COLS <= DECODE_BLOCK,
            num_warps=num_warps,
            launch_pdl=pdl,
        )
        BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
            width * height * batch_size,
            channels,
            out.element_size(),
            row_tensors=1,
            row_only=True,
        )
        kernel = model_kernel_2
        if BLOCK_COLS > MAX_FUSED_COLS:
            # Wide rows: stream the row in blocks, re-reading it from cache.
            BLOCK_ROWS = 1
            BLOCK_COLS, num_warps = looped_settings(
                width * height * batch_size, channels, out.element_size(), once=True
            )
            kernel = model_kernel_2_looped
        kernel[(triton.cdiv(width * height * batch_size, BLOCK_ROWS),)](
            out_ptr=out,
            scratch_buf2_ptr=scratch_buf2,
            num_rows=width * height * batch_size,
            out_stride1=out.stride(1),
            out_stride0=out.stride(0),
            width_times_height=width * height,
            width=width,
            channels=channels,
            height=height,
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=BLOCK_COLS,
            LAUNCH_PDL=pdl,
            num_warps=num_warps,
            launch_pdl=pdl,
        )
        BLOCK_ROWS, BLOCK_COLS, num_warps = tile_settings(
            batch_size * channels, width * height, out.element_size()
        )
        COL_BLOCKS = triton.cdiv(width * height, BLOCK_COLS)
        model_kernel_3[(triton.cdiv(batch_size * channels, BLOCK_ROWS) * COL_BLOCKS,)](
            out_ptr=out,
            scratch_buf2_ptr=scratch_buf2,
            num_rows=batch_size * channels,
            scratch_buf2_stride0=scratch_buf2.stride(0),
            width_times_height=width * height,
            channels=channels,
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=BLOCK_COLS,
            COL_BLOCKS=COL_BLOCKS,
            LAUNCH_PDL=pdl,
            EARLY_TRIGGER=BLOCK_COLS <= DECODE_BLOCK,
            num_warps=num_warps,
            launch_pdl=pdl,
        )
        return out

    def as_op(self, namespace="porter"):
        """This module as one custom op (its settings fixed, its parameters and
        buffers passed in), which torch.compile (fullgraph=True) and CUDA graphs
        take whole: a module that calls it (docs/engine.md)."""
        return OpModel(self, register_op(self, namespace))


_LIBS = {}  # namespace -> the torch.library.Library that holds its ops
_OPS = {}  # (namespace, id of the module) -> (the module, its op)


def register_op(model, namespace="porter"):
    """model's forward as the custom op torch.ops.<namespace>.model_<n>: its
    settings (sizes, flags) fixed, its parameters and buffers passed after the
    inputs."""
    key = (namespace, id(model))
    if key not in _OPS:
        if namespace not in _LIBS:
            _LIBS[namespace] = torch.library.Library(namespace, "FRAGMENT")
        lib, name = _LIBS[namespace], f"model_{len(_OPS)}"
        lib.define(name + "(Tensor x) -> Tensor")

        def impl(x):
            state = {}
            return torch.func.functional_call(model, state, (x,))

        lib.impl(name, impl, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::{name}", lib=lib)
        def _(x):
            batch_size = x.shape[0]
            channels = x.shape[1]
            height = x.shape[2]
            width = x.shape[3]
            scratch_buf0 = torch.empty_strided(
                (batch_size, 1, height, width),
                (width * height, width * height * batch_size, width, 1),
                dtype=torch.bool,
                device=x.device,
            )
            scratch_buf1 = torch.empty_strided(
                (batch_size, 1, height, width),
                (width * height, width * height * batch_size, width, 1),
                dtype=torch.float32,
                device=x.device,
            )
            scratch_buf2 = torch.empty_strided(
                (batch_size, 1, height, width),
                (width * height, width * height * batch_size, width, 1),
                dtype=torch.float32,
                device=x.device,
            )
            out = torch.empty(
                (batch_size, channels, height, width), dtype=x.dtype, device=x.device
            )
            return out

        _OPS[key] = model, getattr(getattr(torch.ops, namespace), name)
    return _OPS[key][1]


class OpModel(nn.Module):
    """A ModelNew called through its custom op (ModelNew.as_op)."""

    def __init__(self, model, op):
        super().__init__()
        self.model, self.op = model, op

    def state(self):
        """The tensors the op takes after the inputs."""
        return []

    def forward(self, x):
        return self.op(x, *self.state())
