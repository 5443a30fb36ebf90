"""Fused residual add + RMSNorm, as in vLLM's fused_add_rms_norm: returns the normalized output and the new residual.

Ported by porter 0.1.0 from fused_add_rmsnorm.py::fused_add_rmsnorm.
Inductor kernel(s): triton_red_fused_add_mean_mul_pow_rsqrt_0.
Captured with torch 2.13.0+cpu, triton 3.9.0 on codegen-only Triton target cuda:90 (no GPU; nothing executed by Inductor), 2026-11-30.

What porter changed:
- dropped Inductor's @triton_heuristics decorator and its meta
- replaced 1 Inductor helper/libdevice call(s) by core ops or porter helpers
- turned 1 tl.full constant(s) into typed literals
- removed 2 no-op cast(s) / broadcast(s)
- folded 5 plain copies
- removed 5 dead alias(es) and unused value(s)
- added 1 tl.debug_barrier() between a store and a later load of the same pointer
- widened the program id to int64 before any offset arithmetic
- named arguments after what they are bound to; per-call sizes are runtime ints in do_not_specialize, per-model sizes constexpr, row strides int64 arguments
- loads upcast to fp32, stores cast to the output's element type (fp32/fp16/bf16 alike)
- renamed index variables and temporaries after what they hold
- derived a persistent kernel for rows that fit in registers (x read once); the looped kernel serves wider rows
- on Hopper and later GPUs the kernels launch with programmatic dependent launch: each waits for the kernel before it, then lets the next one launch (a reduction's programs of several rows once their loads are issued)
"""

import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_tokens"])
def fused_add_rmsnorm_kernel(
    x_ptr,
    residual_ptr,
    weight_ptr,
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
    tmp2 = x + residual
    tmp3 = tmp2 * tmp2
    _tmp5 = tl.where(col_mask & row_mask, tmp3, 0)
    tl.store(
        out1_ptr + (cols + rows * out1_stride0),
        tmp2.to(out1_ptr.dtype.element_ty),
        col_mask & row_mask,
    )
    row_sum = tl.sum(_tmp5, 1)[:, None]
    out1 = tmp2.to(out1_ptr.dtype.element_ty).to(tl.float32)
    tmp8 = tl.cast(hidden, tl.float32)
    tmp10 = row_sum / tmp8
    tmp11 = 1e-06
    tmp12 = tmp10 + tmp11
    rstd = tl.rsqrt(tmp12)
    tmp14 = out1 * rstd
    tmp16 = tmp14 * weight
    tl.store(
        out0_ptr + (cols + rows * out0_stride0),
        tmp16.to(out0_ptr.dtype.element_ty),
        col_mask & row_mask,
    )


@triton.jit(do_not_specialize=["num_tokens"])
def fused_add_rmsnorm_kernel_looped(
    x_ptr,
    residual_ptr,
    weight_ptr,
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
    _tmp5 = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, hidden, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < hidden
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
        tmp2 = x + residual
        tmp3 = tmp2 * tmp2
        tmp6 = _tmp5 + tmp3
        _tmp5 = tl.where(col_mask & row_mask, tmp6, _tmp5)
        tl.store(
            out1_ptr + (cols + rows * out1_stride0),
            tmp2.to(out1_ptr.dtype.element_ty),
            col_mask & row_mask,
        )
    row_sum = tl.sum(_tmp5, 1)[:, None]
    tl.debug_barrier()
    for col_start in tl.range(0, hidden, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < hidden
        out1 = tl.load(
            out1_ptr + (cols + rows * out1_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        weight = tl.load(
            weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
        ).to(tl.float32)
        tmp8 = tl.cast(hidden, tl.float32)
        tmp10 = row_sum / tmp8
        tmp11 = 1e-06
        tmp12 = tmp10 + tmp11
        rstd = tl.rsqrt(tmp12)
        tmp14 = out1 * rstd
        tmp16 = tmp14 * weight
        tl.store(
            out0_ptr + (cols + rows * out0_stride0),
            tmp16.to(out0_ptr.dtype.element_ty),
            col_mask & row_mask,
        )


# A row up to MAX_FUSED_COLS elements is held in registers by one program (x
# read once); wider rows take the looped kernel, which walks the row
# LOOPED_BLOCK_COLS at a time with LOOPED_WARPS warps and reads it again from
# cache. One program holding a row of 32768 hides memory latency worse: the
# looped kernel took 0.74-0.94 of its time for softmax over 32768 columns at 1
# to 16384 rows (H200, docs/benchmarks/NOTES.md).
MAX_FUSED_COLS = 8192
LOOPED_BLOCK_COLS = 4096
LOOPED_WARPS = 16


def looped_settings(num_rows, row_size, elem_bytes=2):
    """(block, warps) of the looped kernel: rows under 16 KB (those it takes
    from LOOPED_MIN_ROW_BYTES) in blocks of LOOPED_BLOCK_COLS with half of
    LOOPED_WARPS; rows of 32768 elements or more with 32 warps, in blocks of
    8192 2-byte elements, or of 4-byte ones 16384 from 4096 rows and 2048 below;
    others in blocks of LOOPED_BLOCK_COLS with LOOPED_WARPS.
    Measured on an H200 with tools/launch_probe.py (docs/benchmarks/NOTES.md):
    rmsnorm bf16 4096 took 0.87 of the time of 16 warps from 4096 rows;
    softmax over 32768 columns 0.80-0.94 of 4096 x 16 in bf16 from 1024 rows,
    and 0.84-0.87 in fp32 in blocks of 2048; fp32 blocks of 16384 took
    0.97-0.99 of 2048's time from 1024 rows, but 1.03-1.11 at 1-64 rows (and
    logsumexp's 1.11 at 1024)."""
    if row_size >= 32768:
        if elem_bytes <= 2:
            return 8192, 32
        return (16384 if num_rows >= 4096 else 2048), 32
    if row_size * elem_bytes < 16384:
        return LOOPED_BLOCK_COLS, LOOPED_WARPS // 2
    return LOOPED_BLOCK_COLS, LOOPED_WARPS


# Rows of LOOPED_MIN_ROW_BYTES[reads, inputs] bytes or more take the looped
# kernel even where the persistent one could hold them. reads: how many times
# the looped kernel reads the row (rmsnorm 2, softmax 3); inputs: how many
# row-shaped tensors it reads (fused_add_rmsnorm 2). It does not hold the row
# in registers across the reduction, and its re-reads come from cache. On an
# H200, against the persistent kernel: rmsnorm in bf16 at 4096 (8 KB) took
# 0.91-0.96 of its time from 16 rows, in fp32 at 4096 0.91-0.92 from 16384;
# softmax in fp32 at 4096 (16 KB) 0.91-0.97 from 4096 rows, but in bf16 at
# 4096 (8 KB) 1.06-1.34; fused_add_rmsnorm in bf16 at 4096 (8 KB) lost 2-3%
# from 4096 rows; softmax in fp32 at 8192 (32 KB) held in registers took
# 1.03-1.05 of the looped kernel's time from 16384 rows, at 4 to 32 warps
# (docs/benchmarks/NOTES.md).
LOOPED_MIN_ROW_BYTES = {(2, 1): 8192, (3, 1): 16384, (2, 2): 16384}
# A kernel that reads its rows twice and nothing beside them (row_only: no
# weight's row to hold too) keeps rows of up to HELD_MAX_BYTES in registers at
# every row count. On an H200, quant_int8 over 4096 (8 KB bf16, 16 KB fp32)
# held in registers took 0.94-0.98 of the looped kernel's time from 4096
# rows, and with the warps of REREAD_MANY_WARPS_MAX_ROWS 0.91-0.98 at
# 1-2048; over 8192 in fp32 (32 KB) 1.07-1.10 from 4096. rmsnorm, which holds
# its weight's row as well, took 1.01-1.05 of the looped kernel's time that
# way from 16384 rows, but 0.79-0.99 at 1-256 rows: a kernel reading its row
# twice and a weight holds rows of up to HELD_MAX_BYTES at
# HELD_DECODE_MAX_ROWS rows or fewer. Not a row_only one: the looped kernel
# between its two regimes would compile only mid-prefill
# (docs/benchmarks/NOTES.md).
HELD_DECODE_MAX_ROWS = 256
HELD_MAX_BYTES = 16384


def looped_min_row_bytes(key, num_rows, elem_bytes=2, row_only=False):
    """LOOPED_MIN_ROW_BYTES[key] for num_rows rows of elem_bytes elements.
    2-byte rows that the kernel reads three times stay in registers up to
    MAX_FUSED_COLS: softmax in bf16 at 8192 (16 KB) held in registers took
    0.86-0.96 of the looped kernel's time from 16 rows (1.03 at one), though
    fp32 at 4096 (16 KB too) lost. Rows of 16 KB from two inputs stay in
    registers at 64 rows or fewer and from 1024: add_layernorm and
    fused_add_rmsnorm in fp32 at 4096 took 0.78-0.91 of the looped kernel's
    time at 1-64 rows and 0.96-0.97 from 1024, in bf16 at 8192 0.87-0.98 from
    1024, but 1.01-1.10 at 256 rows. Rows read twice: see HELD_DECODE_MAX_ROWS."""
    if key[0] >= 3 and elem_bytes <= 2:
        return float("inf")
    if key == (2, 2) and (num_rows <= 64 or num_rows >= 1024):
        return 2 * LOOPED_MIN_ROW_BYTES[key]
    if key == (2, 1) and (row_only or num_rows <= HELD_DECODE_MAX_ROWS):
        return max(LOOPED_MIN_ROW_BYTES[key], 2 * HELD_MAX_BYTES)
    return LOOPED_MIN_ROW_BYTES[key]


# The persistent kernel reads each row once; while a tensor fits well inside
# the L2 cache (50 MB on an H200) its loads are marked evict_first, and from
# STREAM_MIN_BYTES on they carry no hint. On an H200, without the hint from 32
# MB: fused_add_rmsnorm fp16 4096 and add_layernorm bf16 4096 took 0.95-0.98
# of the hinted time, softmax bf16 4096 0.96 at 32768 rows; under 32 MB the
# hint was worth 2-8% (fused_add_rmsnorm fp32 1024 at 4096 rows, and every
# case at 16 rows; docs/benchmarks/NOTES.md). The kernel branches on its row
# count: a constexpr hint would compile one more variant mid-prefill.
STREAM_MIN_BYTES = 32 << 20


def stream_rows(row_size, elem_bytes=2):
    """Rows from which a tensor of them is STREAM_MIN_BYTES or more: the
    persistent kernel's row loads drop their hint there (its STREAM_ROWS)."""
    return triton.cdiv(STREAM_MIN_BYTES, max(row_size, 1) * elem_bytes)


# Rows of 4096 that a row_only kernel reading them twice (reread: quant_int8)
# holds in registers keep 32 bytes a thread (8 warps in bf16, 16 in fp32) up
# to this many rows, 4 warps past them: on an H200 quant_int8 over 4096 held
# with 4 warps took 1.14-1.15 of the looped kernel's time at 1024 rows, with 8
# and 16 warps 0.94-0.98 at 1024-2048 (docs/benchmarks/NOTES.md). logsumexp
# fp32 over 4096, which reads its row twice but writes one value a row, took
# 1.10x with 16 warps at 4096 rows, and keeps the split at 512.
REREAD_MANY_WARPS_MAX_ROWS = 2048


def launch_settings(
    num_rows, row_size, elem_bytes=2, row_tensors=2, row_only=False, reread=False
):
    """(rows a program, block, warps) for a reduction over rows of row_size
    elements of elem_bytes each, of which the kernel reads and writes
    row_tensors (fused_add_rmsnorm: x, residual and its two outputs, 4).
    Narrow rows are packed to 4 KB a program (2048 bf16 elements) and at least
    two rows, as many warps as rows (Triton lays them out: over two rows of
    1024 both warps span each row, whose sums meet in shared memory), twice as
    many where the kernel reads nothing beside its rows (row_only: quant_int8
    fp32 1024 took 0.84-0.995 of the time of two warps at 1024-65536 rows,
    where kernels that also read a weight lost up to 13% or gained at most 3%
    that way), except at
    decode sizes (256 rows or fewer): one row a program, 512 bytes of it a
    warp; and except where a row moves 16 KB or more (all row_tensors
    together): one row a program and one warp, as Inductor runs them, with no
    shared memory (from 4096 rows the faster; at 1024 rows 5% slower, but one
    compiled variant fewer past the decode sizes). Programs of one warp start
    at most one every 1.2 ns on an H200 (65536 took 80 us over rows of
    512-1024 elements, bf16 or fp32), the time 5 KB take at the copy rate.
    Wider rows: one row, 32 bytes of it a thread up to 32 warps, except rows of
    4096 when there are many (4 warps: from 513 rows; where reread, from
    REREAD_MANY_WARPS_MAX_ROWS + 1). Measured fastest on an H200 with
    tools/launch_probe.py; the figures are in docs/benchmarks/NOTES.md."""
    block = triton.next_power_of_2(max(row_size, 1))  # an empty row: one masked block
    if block <= 1024 and num_rows <= 256:
        return 1, block, min(8, max(1, block * elem_bytes // 512))
    if block <= 1024 and row_size * elem_bytes * row_tensors >= 16384:
        return 1, block, 1
    if block <= 1024:
        rows = max(2, 4096 // (block * elem_bytes))
        return rows, block, min(rows * (2 if row_only else 1), 8)
    if block == 4096 and num_rows > (REREAD_MANY_WARPS_MAX_ROWS if reread else 512):
        return 1, block, 4
    return 1, block, min(32, block * elem_bytes // 1024)


# Kernels on a GPU of compute capability 9.0 or later (Hopper) launch with
# programmatic dependent launch (launch_pdl=True, LAUNCH_PDL): each may start
# while the kernel before it in the stream drains, and waits for that kernel's
# writes before touching memory. Inside a CUDA graph of 20 calls on an H200,
# decode-sized calls took 0.66-0.85 of their time without it at 1-256 tokens
# (docs/benchmarks/NOTES.md). Triton's interpreter and older GPUs launch
# without it, and set_pdl turns it off.
_PDL_BY_DEVICE = {}
# What set_pdl asked for, by device; None: every device not named.
_PDL_WANTED = {None: True}


def set_pdl(enabled, device=None):
    """Launch this module's kernels with programmatic dependent launch (the
    default, where the GPU has it) or without, on one GPU ("cuda:0", or a
    tensor's .device) or, with device None, on every GPU, from the next call.
    Turn it off where an engine runs these kernels behind ones that never let
    the next kernel launch early (torch's elementwise kernels): there PDL only
    adds its wait, 0.21-0.32 µs a call on an H200 (docs/benchmarks/NOTES.md).
    Set it before warming up: LAUNCH_PDL is a constexpr, so each kernel
    compiles once more the first time it runs the other way."""
    if device is None:
        _PDL_WANTED.clear()
    else:
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            raise ValueError(
                "set_pdl: name the GPU with its index ('cuda:0'), or pass "
                "device=None for every GPU"
            )
    _PDL_WANTED[device] = bool(enabled)
    _PDL_BY_DEVICE.clear()


def pdl_enabled(device):
    """Whether kernels on this device launch with programmatic dependent launch
    (asked once a device: the launcher runs on every call). Never under
    Triton's interpreter (TRITON_INTERPRET=1), which has no gdc_wait, even for
    tensors on a Hopper GPU, nor where set_pdl turned it off."""
    if triton.knobs.runtime.interpret:
        return False
    if device not in _PDL_BY_DEVICE:
        where = torch.device(device)
        _PDL_BY_DEVICE[device] = (
            _PDL_WANTED.get(where, _PDL_WANTED[None])
            and where.type == "cuda"
            and torch.version.hip is None
            and torch.cuda.get_device_capability(where)[0] >= 9
        )
    return _PDL_BY_DEVICE[device]


def fused_add_rmsnorm(x, residual, weight, eps: float = 1e-06):
    """Same arguments and outputs as the reference fused_add_rmsnorm."""
    if eps != 1e-06:
        raise NotImplementedError(
            "captured with eps == 1e-06; re-capture with the value you need"
        )
    if (x.dim(), residual.dim(), weight.dim()) != (2, 2, 1):
        raise NotImplementedError(
            "captured with x 2-d, residual 2-d, weight 1-d; re-capture with the ranks you need"
        )
    num_tokens = x.shape[0]
    hidden = x.shape[1]
    if residual.shape != (num_tokens, hidden) or weight.shape != (hidden,):
        raise NotImplementedError(
            "captured for shapes residual (x.shape[0], x.shape[1]), weight (x.shape[1],); re-capture for other sizes"
        )
    x = x if x.stride(-1) == 1 else x.contiguous()
    residual = residual if residual.stride(-1) == 1 else residual.contiguous()
    weight = weight if weight.stride(-1) == 1 else weight.contiguous()
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
    kernel = fused_add_rmsnorm_kernel
    persistent_args = {
        "STREAM_ROWS": stream_rows(hidden, x.element_size()),
        "EARLY_TRIGGER": BLOCK_ROWS == 1,
    }
    if (
        BLOCK_COLS > MAX_FUSED_COLS
        or BLOCK_COLS * x.element_size()
        >= looped_min_row_bytes((2, 2), num_tokens, x.element_size())
    ):
        # Wide rows: stream the row in blocks, re-reading it from cache.
        BLOCK_ROWS = 1
        BLOCK_COLS, num_warps = looped_settings(num_tokens, hidden, x.element_size())
        kernel = fused_add_rmsnorm_kernel_looped
        persistent_args = {}
    kernel[(triton.cdiv(num_tokens, BLOCK_ROWS),)](
        x_ptr=x,
        residual_ptr=residual,
        weight_ptr=weight,
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
