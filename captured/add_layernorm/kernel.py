"""Residual add then LayerNorm, returning the normalized value and the new residual.

Ported by porter 0.1.0 from add_layernorm.py::add_layernorm (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import os

import torch
import triton
import triton.language as tl


@triton.jit
def welford_accumulate(value, mean, m2, count, first_block):
    # One step of Welford's running mean/variance per lane: numerically
    # stable where sum(x^2) - sum(x)^2 cancels.
    if first_block:
        new_mean = value
        new_m2 = tl.zeros_like(m2)
        new_count = tl.full(count.shape, 1, count.dtype)
    else:
        delta = value - mean
        new_count = count + 1
        new_mean = mean + delta / new_count
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_count


@triton.jit
def welford_merge(mean_a, m2_a, count_a, mean_b, m2_b, count_b):
    # Chan et al.'s pairwise merge; equal means give delta 0 so inf - inf
    # cannot turn an overflowed row into NaN.
    count = count_a + count_b
    delta = tl.where(mean_a == mean_b, 0.0, mean_b - mean_a)
    frac_b = tl.where(count == 0.0, 0.0, count_b / count)
    mean = mean_a + delta * frac_b
    m2 = m2_a + m2_b + delta * delta * count_a * frac_b
    return mean, m2, count


@triton.jit
def welford_finish(mean, m2, count, axis):
    # Merge the per-lane partial statistics into one (mean, m2, count) per row.
    return tl.reduce((mean, m2, count), axis, welford_merge)


@triton.jit
def row_mean_m2(value, mask, axis, count):
    # The whole row is in registers: mean, then the sum of squared deviations
    # from it (as exact as Welford, without its per-step divisions). count:
    # the elements mask keeps in a stored row; the row size, where known,
    # spares a reduction (and its barriers) counting them.
    mean = tl.sum(tl.where(mask, value, 0.0), axis) / count
    delta = tl.where(mask, value - tl.expand_dims(mean, axis), 0.0)
    return mean, tl.sum(delta * delta, axis), tl.zeros_like(mean) + count


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
    EARLY_TRIGGER: tl.constexpr,
):
    if LAUNCH_PDL:
        # wait for the kernel before this one; a program of one row lets the next one launch now
        tl.extra.cuda.gdc_wait()
        if EARLY_TRIGGER:
            tl.extra.cuda.gdc_launch_dependents()
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_tokens
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    col_mask = cols < hidden
    weight = tl.load(
        weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    bias = tl.load(
        bias_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    if num_tokens < STREAM_ROWS:
        x = tl.load(
            x_ptr + (cols + rows * x_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        residual = tl.load(
            residual_ptr + (cols + rows * residual_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
    else:
        x = tl.load(
            x_ptr + (cols + rows * x_stride0), col_mask & row_mask, other=0.0
        ).to(tl.float32)
        residual = tl.load(
            residual_ptr + (cols + rows * residual_stride0),
            col_mask & row_mask,
            other=0.0,
        ).to(tl.float32)
    if LAUNCH_PDL:
        if not EARLY_TRIGGER:
            # a program of several rows lets the next kernel launch once its loads are issued
            tl.extra.cuda.gdc_launch_dependents()
    out1_2 = x + residual
    tl.store(
        out1_ptr + (cols + rows * out1_stride0),
        out1_2.to(out1_ptr.dtype.element_ty),
        col_mask & row_mask,
    )
    mean, m2, count = row_mean_m2(out1_2, col_mask & row_mask, 1, hidden)
    mean_2 = mean[:, None]
    m2_2 = m2[:, None]
    out1 = out1_2.to(out1_ptr.dtype.element_ty).to(tl.float32)
    out1_minus_mean_2 = out1 - mean_2
    val = m2_2 * (1.0 / tl.cast(hidden, tl.float32)) + 1e-05
    rstd = tl.rsqrt(val)
    out0 = out1_minus_mean_2 * rstd * weight + bias
    tl.store(
        out0_ptr + (cols + rows * out0_stride0),
        out0.to(out0_ptr.dtype.element_ty),
        col_mask & row_mask,
    )


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
    if LAUNCH_PDL:
        # wait for the kernel before this one, then let the next one launch
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_tokens
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    mean = tl.zeros([BLOCK_ROWS, BLOCK_COLS], tl.float32)
    m2 = tl.zeros([BLOCK_ROWS, BLOCK_COLS], tl.float32)
    weight_2 = tl.zeros([BLOCK_ROWS, BLOCK_COLS], tl.float32)
    for col_start in tl.range(0, hidden, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < hidden
        roffset = col_start
        x = tl.load(
            x_ptr + (cols + rows * x_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        residual = tl.load(
            residual_ptr + (cols + rows * residual_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        out1_2 = x + residual
        welford_accumulate_0, welford_accumulate_1, welford_accumulate_2 = (
            welford_accumulate(out1_2, mean, m2, weight_2, roffset == 0)
        )
        mean = tl.where(col_mask & row_mask, welford_accumulate_0, mean)
        m2 = tl.where(col_mask & row_mask, welford_accumulate_1, m2)
        weight_2 = tl.where(col_mask & row_mask, welford_accumulate_2, weight_2)
        tl.store(
            out1_ptr + (cols + rows * out1_stride0),
            out1_2.to(out1_ptr.dtype.element_ty),
            col_mask & row_mask,
        )
    mean_2, m2_2, count = welford_finish(mean, m2, weight_2, 1)
    mean_2_2 = mean_2[:, None]
    m2_2_2 = m2_2[:, None]
    tl.debug_barrier()
    for col_start in tl.range(0, hidden, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < hidden
        roffset = col_start
        out1 = tl.load(
            out1_ptr + (cols + rows * out1_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        weight = tl.load(
            weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
        ).to(tl.float32)
        bias = tl.load(
            bias_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
        ).to(tl.float32)
        out1_minus_mean_2_2 = out1 - mean_2_2
        val = m2_2_2 * (1.0 / tl.cast(hidden, tl.float32)) + 1e-05
        rstd = tl.rsqrt(val)
        out0 = out1_minus_mean_2_2 * rstd * weight + bias
        tl.store(
            out0_ptr + (cols + rows * out0_stride0),
            out0.to(out0_ptr.dtype.element_ty),
            col_mask & row_mask,
        )


# Rows up to MAX_FUSED_COLS stay in one program's registers; wider rows take the
# looped kernel (docs/benchmarks/launch-rules.md#persistent-or-looped).
MAX_FUSED_COLS = 8192
LOOPED_BLOCK_COLS = 4096
LOOPED_WARPS = 16


def looped_settings(num_rows, row_size, elem_bytes=2):
    """(block, warps) of the looped kernel."""
    if row_size >= 32768:
        if elem_bytes <= 2:
            return 8192, 32
        return (16384 if num_rows >= 4096 else 2048), 32
    if row_size * elem_bytes < 16384:
        return LOOPED_BLOCK_COLS, LOOPED_WARPS // 2
    return LOOPED_BLOCK_COLS, LOOPED_WARPS


# Row loads are marked evict_first while the tensor fits well in L2, and carry no
# hint from STREAM_MIN_BYTES on; a runtime branch, so no variant compiles mid-prefill
# (docs/benchmarks/launch-rules.md#stream).
STREAM_MIN_BYTES = 32 << 20


def stream_rows(row_size, elem_bytes=2):
    """Rows from which the tensor is STREAM_MIN_BYTES or more (the kernel's STREAM_ROWS)."""
    return triton.cdiv(STREAM_MIN_BYTES, max(row_size, 1) * elem_bytes)


def launch_settings(num_rows, row_size, elem_bytes=2, row_tensors=2):
    """(rows a program, block, warps) for a reduction over rows of row_size
    elements: narrow rows packed 4 KB a program, one row a program at decode sizes
    or where a row moves 16 KB, 32 bytes a thread for wide rows
    (docs/benchmarks/launch-rules.md#row-launch)."""
    block = triton.next_power_of_2(max(row_size, 1))  # an empty row: one masked block
    if block <= 1024 and num_rows <= 256:
        return 1, block, min(8, max(1, block * elem_bytes // 512))
    if block <= 1024 and row_size * elem_bytes * row_tensors >= 16384:
        return 1, block, 1
    if block <= 1024:
        rows = max(2, 4096 // (block * elem_bytes))
        return rows, block, min(rows, 8)
    if block == 4096 and num_rows > 512:
        return 1, block, 4
    return 1, block, min(32, block * elem_bytes // 1024)


# Kernels launch with programmatic dependent launch on Hopper and later: each may
# start while the one before drains (docs/benchmarks/launch-rules.md#pdl). PORTER_PDL=0
# turns it off for every scaffold in the process, PDL = False for this one (before
# warmup: LAUNCH_PDL is a constexpr).
PDL = os.environ.get("PORTER_PDL", "1") != "0"
_HOPPER = {}  # device -> compute capability 9.0 or later, asked once


def pdl_enabled(device):
    """Whether kernels on this device launch with PDL (never under the interpreter)."""
    if not PDL or triton.knobs.runtime.interpret or device.type != "cuda":
        return False
    if device not in _HOPPER:
        _HOPPER[device] = (
            torch.version.hip is None
            and torch.cuda.get_device_capability(device)[0] >= 9
        )
    return _HOPPER[device]


def add_layernorm(x, residual, weight, bias, eps: float = 1e-05):
    """Same arguments and outputs as the reference add_layernorm."""
    if eps != 1e-05:
        raise NotImplementedError(
            "captured with eps == 1e-05; re-capture with the value you need"
        )
    if (x.dim(), residual.dim(), weight.dim(), bias.dim()) != (2, 2, 1, 1):
        raise NotImplementedError(
            "captured with x 2-d, residual 2-d, weight 1-d, bias 1-d; re-capture with the ranks you need"
        )
    num_tokens = x.shape[0]
    hidden = x.shape[1]
    if (
        residual.shape != (num_tokens, hidden)
        or weight.shape != (hidden,)
        or bias.shape != (hidden,)
    ):
        raise NotImplementedError(
            "captured for shapes residual (x.shape[0], x.shape[1]), weight (x.shape[1],), bias (x.shape[1],); re-capture for other sizes"
        )
    x = x if x.stride(-1) == 1 else x.contiguous()
    residual = residual if residual.stride(-1) == 1 else residual.contiguous()
    weight = weight if weight.stride(-1) == 1 else weight.contiguous()
    bias = bias if bias.stride(-1) == 1 else bias.contiguous()
    out1 = torch.empty_strided(
        (num_tokens, hidden), (hidden, 1), dtype=x.dtype, device=x.device
    )
    out0 = torch.empty_strided(
        (num_tokens, hidden), (hidden, 1), dtype=x.dtype, device=x.device
    )
    pdl = pdl_enabled(x.device)
    BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
        num_tokens, hidden, x.element_size(), row_tensors=4
    )
    kernel = add_layernorm_kernel
    persistent_args = {
        "STREAM_ROWS": stream_rows(hidden, x.element_size()),
        "EARLY_TRIGGER": BLOCK_ROWS == 1,
    }
    if BLOCK_COLS > MAX_FUSED_COLS:
        # Wide rows: stream the row in blocks, re-reading it from cache.
        BLOCK_ROWS = 1
        BLOCK_COLS, num_warps = looped_settings(num_tokens, hidden, x.element_size())
        kernel = add_layernorm_kernel_looped
        persistent_args = {}
    kernel[(triton.cdiv(num_tokens, BLOCK_ROWS),)](
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
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        LAUNCH_PDL=pdl,
        num_warps=num_warps,
        launch_pdl=pdl,
        **persistent_args,
    )
    return out0, out1


_LIBS = {}  # namespace -> the torch.library.Library that holds the op


def register_op(namespace="porter"):
    """add_layernorm as the custom op torch.ops.<namespace>.add_layernorm, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    if namespace not in _LIBS:
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define(
            "add_layernorm(Tensor x, Tensor residual, Tensor weight, Tensor bias, float eps=1e-05) -> (Tensor, Tensor)"
        )
        # one Python impl for every device, called straight from the dispatcher
        lib.impl("add_layernorm", add_layernorm, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::add_layernorm", lib=lib)
        def _(x, residual, weight, bias, eps: float = 1e-05):
            num_tokens = x.shape[0]
            hidden = x.shape[1]
            out1 = torch.empty_strided(
                (num_tokens, hidden), (hidden, 1), dtype=x.dtype, device=x.device
            )
            out0 = torch.empty_strided(
                (num_tokens, hidden), (hidden, 1), dtype=x.dtype, device=x.device
            )
            return out0, out1

        _LIBS[namespace] = lib
    return getattr(torch.ops, namespace).add_layernorm
