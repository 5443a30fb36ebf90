"""Row logsumexp in fp32, as used for log-probabilities over a vocabulary.

Ported by porter 0.1.0 from logsumexp.py::logsumexp.
Inductor kernel(s): triton_red_fused_logsumexp_0.
Captured with torch 2.13.0+cpu, triton 3.9.0 on codegen-only Triton target cuda:90 (no GPU; nothing executed by Inductor), 2026-11-30.

What porter changed:
- dropped Inductor's @triton_heuristics decorator and its meta
- replaced 6 Inductor helper/libdevice call(s) by core ops or porter helpers
- turned 4 tl.full constant(s) into typed literals
- removed 2 no-op cast(s) / broadcast(s)
- folded 5 plain copies
- removed 5 dead alias(es) and unused value(s)
- widened the program id to int64 before any offset arithmetic
- named arguments after what they are bound to; per-call sizes are runtime ints in do_not_specialize, per-model sizes constexpr, row strides int64 arguments
- loads upcast to fp32, stores cast to the output's element type (fp32/fp16/bf16 alike)
- renamed index variables and temporaries after what they hold
- derived a persistent kernel for rows that fit in registers (x read once); the looped kernel serves wider rows
- derived a single-pass looped kernel (a running max and sum of exp per row) for many very wide rows
- exp as ex2.approx.ftz.f32 on NVIDIA GPUs (exp_ftz): tl.exp's own approximation, with results under 2^-126 flushed to 0
- on Hopper and later GPUs the kernels launch with programmatic dependent launch: each waits for the kernel before it, then lets the next one launch (a reduction's programs of several rows once their loads are issued)
"""

import torch
import triton
import triton.language as tl

# exp_ftz's PTX where the kernels compile for an NVIDIA GPU. Triton's
# interpreter runs no inline assembly, and other GPUs take other assembly:
# there it is tl.exp. Read when the module is imported, as @triton.jit itself
# reads TRITON_INTERPRET.
EXP_FTZ = tl.constexpr(not triton.knobs.runtime.interpret and torch.version.hip is None)


@triton.jit
def exp_ftz(x):
    # tl.exp's own approximation (ex2.approx of x * log2(e)) with results under
    # 2^-126 flushed to 0: tl.exp keeps them at a compare and two multiplies an
    # element. Over 32768 columns on an H200 this took 0.91-0.96 of tl.exp's
    # time in bf16 and fp16; LLVM then leaves loops that call it rolled, so
    # a looped kernel unrolls a row of two blocks itself (docs/benchmarks/NOTES.md).
    if EXP_FTZ and x.dtype == tl.float32:
        return tl.inline_asm_elementwise(
            "ex2.approx.ftz.f32 $0, $1;",
            "=f,f",
            [x * 1.4426950408889634],
            dtype=tl.float32,
            is_pure=True,
            pack=1,
        )
    else:
        return tl.exp(x)


@triton.jit
def maximum_nan(a, b):
    # Like torch.maximum: a NaN on either side wins. One max.NaN instruction on
    # the GPU; with a tl.where of compares, row maxima took up to 1.2x as long
    # on an H200.
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def max_nan(x, axis):
    # tl.max drops NaN on some targets; torch.amax keeps it.
    return tl.reduce(x, axis, maximum_nan)


@triton.jit
def rescale_sum(acc, shift_old, shift_new):
    # acc holds sum(exp(x - shift_old)): the same sum against shift_new. An
    # empty sum stays 0 (0 * exp(inf) would be NaN); a NaN sum stays NaN.
    return tl.where(acc == 0, 0.0, acc * exp_ftz(shift_old - shift_new))


@triton.jit(do_not_specialize=["num_tokens"])
def logsumexp_kernel(
    out_ptr,
    logits_ptr,
    num_tokens,
    logits_stride0: tl.int64,
    vocab: tl.constexpr,
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
    col_mask = cols < vocab
    if num_tokens < STREAM_ROWS:
        logits = tl.load(
            logits_ptr + (cols + rows * logits_stride0),
            col_mask & row_mask,
            other=0.0,
            eviction_policy="evict_first",
        ).to(tl.float32)
    else:
        logits = tl.load(
            logits_ptr + (cols + rows * logits_stride0), col_mask & row_mask, other=0.0
        ).to(tl.float32)
    if LAUNCH_PDL:
        if not EARLY_TRIGGER:
            # a program of several rows lets the next kernel launch once its loads are issued
            tl.extra.cuda.gdc_launch_dependents()
    _tmp2 = tl.where(col_mask & row_mask, logits, float("-inf"))
    row_max = max_nan(_tmp2, 1)[:, None]
    tmp5 = tl.abs(row_max)
    tmp6 = tl.full([1, 1], float("inf"), tl.float32)
    tmp7 = tmp5 == tmp6
    tmp8 = 0.0
    tmp9 = tl.where(tmp7, tmp8, row_max)
    tmp10 = logits - tmp9
    exp = exp_ftz(tmp10)
    _tmp13 = tl.where(col_mask & row_mask, exp, 0)
    row_sum = tl.sum(_tmp13, 1)[:, None]
    tmp15 = tl.log(row_sum)
    tmp16 = tl.abs(row_max)
    tmp17 = tl.full([1, 1], float("inf"), tl.float32)
    tmp18 = tmp16 == tmp17
    tmp19 = 0.0
    tmp20 = tl.where(tmp18, tmp19, row_max)
    tmp21 = tmp15 + tmp20
    tl.store(out_ptr + rows, tmp21.to(out_ptr.dtype.element_ty), row_mask)


@triton.jit(do_not_specialize=["num_tokens"])
def logsumexp_kernel_looped(
    out_ptr,
    logits_ptr,
    num_tokens,
    logits_stride0: tl.int64,
    vocab: tl.constexpr,
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
    _tmp2 = tl.full([BLOCK_ROWS, BLOCK_COLS], float("-inf"), tl.float32)
    # LLVM leaves loops with exp_ftz rolled: unroll a row of two blocks
    LOOP_UNROLL: tl.constexpr = 2 if (vocab + BLOCK_COLS - 1) // BLOCK_COLS == 2 else 1
    for col_start in tl.range(0, vocab, BLOCK_COLS, loop_unroll_factor=LOOP_UNROLL):
        cols = col_start + col_base
        col_mask = cols < vocab
        logits = tl.load(
            logits_ptr + (cols + rows * logits_stride0),
            col_mask & row_mask,
            eviction_policy="evict_last",
            other=0.0,
        ).to(tl.float32)
        tmp3 = maximum_nan(_tmp2, logits)
        _tmp2 = tl.where(col_mask & row_mask, tmp3, _tmp2)
    row_max = max_nan(_tmp2, 1)[:, None]
    _tmp13 = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, vocab, BLOCK_COLS, loop_unroll_factor=LOOP_UNROLL):
        cols = col_start + col_base
        col_mask = cols < vocab
        logits_2 = tl.load(
            logits_ptr + (cols + rows * logits_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        tmp5 = tl.abs(row_max)
        tmp6 = tl.full([1, 1], float("inf"), tl.float32)
        tmp7 = tmp5 == tmp6
        tmp8 = 0.0
        tmp9 = tl.where(tmp7, tmp8, row_max)
        tmp10 = logits_2 - tmp9
        exp = exp_ftz(tmp10)
        tmp14 = _tmp13 + exp
        _tmp13 = tl.where(col_mask & row_mask, tmp14, _tmp13)
    row_sum = tl.sum(_tmp13, 1)[:, None]
    tmp15 = tl.log(row_sum)
    tmp16 = tl.abs(row_max)
    tmp17 = tl.full([1, 1], float("inf"), tl.float32)
    tmp18 = tmp16 == tmp17
    tmp19 = 0.0
    tmp20 = tl.where(tmp18, tmp19, row_max)
    tmp21 = tmp15 + tmp20
    tl.store(out_ptr + rows, tmp21.to(out_ptr.dtype.element_ty), row_mask)


@triton.jit(do_not_specialize=["num_tokens"])
def logsumexp_kernel_online(
    out_ptr,
    logits_ptr,
    num_tokens,
    logits_stride0: tl.int64,
    vocab: tl.constexpr,
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
    _tmp2 = tl.full([BLOCK_ROWS, 1], float("-inf"), tl.float32)
    _tmp13 = tl.full([BLOCK_ROWS, 1], 0, tl.float32)
    tmp5_run = tl.abs(_tmp2)
    tmp6_run = tl.full([1, 1], float("inf"), tl.float32)
    tmp7_run = tmp5_run == tmp6_run
    tmp8_run = 0.0
    tmp9_run = tl.where(tmp7_run, tmp8_run, _tmp2)
    # LLVM leaves loops with exp_ftz rolled: unroll a row of two blocks
    LOOP_UNROLL: tl.constexpr = 2 if (vocab + BLOCK_COLS - 1) // BLOCK_COLS == 2 else 1
    for col_start in tl.range(0, vocab, BLOCK_COLS, loop_unroll_factor=LOOP_UNROLL):
        cols = col_start + col_base
        col_mask = cols < vocab
        logits = tl.load(
            logits_ptr + (cols + rows * logits_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        tmp3 = maximum_nan(
            _tmp2,
            max_nan(tl.where(col_mask & row_mask, logits, float("-inf")), 1)[:, None],
        )
        tmp5_new = tl.abs(tmp3)
        tmp6_new = tl.full([1, 1], float("inf"), tl.float32)
        tmp7_new = tmp5_new == tmp6_new
        tmp8_new = 0.0
        tmp9_new = tl.where(tmp7_new, tmp8_new, tmp3)
        exp = exp_ftz(logits - tmp9_new)
        tmp14 = tl.sum(tl.where(col_mask & row_mask, exp, 0.0), 1)[:, None]
        _tmp13 = rescale_sum(_tmp13, tmp9_run, tmp9_new) + tmp14
        _tmp2 = tmp3
        tmp9_run = tmp9_new
    row_max = _tmp2
    row_sum = _tmp13
    tmp15 = tl.log(row_sum)
    tmp16 = tl.abs(row_max)
    tmp17 = tl.full([1, 1], float("inf"), tl.float32)
    tmp18 = tmp16 == tmp17
    tmp19 = 0.0
    tmp20 = tl.where(tmp18, tmp19, row_max)
    tmp21 = tmp15 + tmp20
    tl.store(out_ptr + rows, tmp21.to(out_ptr.dtype.element_ty), row_mask)


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


# Rows of ONLINE_MIN_COLS or more, ONLINE_MIN_ROWS of them or more, take the
# single-pass kernel in blocks of ONLINE_BLOCK_BYTES: one 32-warp program per SM
# holding such a row in registers hides memory latency worse than many small
# programs streaming it. With few rows the single pass's per-block reductions
# cost more than a second read (from cache), so wider rows take the two-pass
# looped kernel (logsumexp on an H200, docs/benchmarks/NOTES.md).
ONLINE_MIN_COLS = 32768
ONLINE_MIN_ROWS = 1024
ONLINE_BLOCK_BYTES = 8192


def online_block_cols(elem_bytes=4):
    """The single-pass kernel's block: ONLINE_BLOCK_BYTES of elem_bytes
    elements, 2048 fp32 or 4096 bf16/fp16 ones. Over 32768 columns on an H200,
    2-byte blocks of 4096 took 0.91-0.95 of 2048's time from 4096 rows, 8192
    1.15-1.18 (docs/benchmarks/NOTES.md)."""
    return ONLINE_BLOCK_BYTES // elem_bytes


def online_min_rows(elem_bytes=2):
    """ONLINE_MIN_ROWS for rows of elem_bytes elements. 2-byte rows read half
    the bytes a block, so the looped kernel keeps them up to four times as many
    rows: over 32768 columns on an H200 it took 0.75-0.78 of the single pass's
    time at 1024 rows and 0.94-0.95 at 2048 in bf16 and fp16, but 1.03-1.05
    at 4096; in fp32 1.07-1.14 at 1024-2048 rows (docs/benchmarks/NOTES.md)."""
    return ONLINE_MIN_ROWS * (4 if elem_bytes <= 2 else 1)


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


def logsumexp(logits: torch.Tensor):
    """Same arguments and outputs as the reference logsumexp."""
    if (logits.dim(),) != (2,):
        raise NotImplementedError(
            "captured with logits 2-d; re-capture with the ranks you need"
        )
    num_tokens = logits.shape[0]
    vocab = logits.shape[1]
    logits = logits if logits.stride(-1) == 1 else logits.contiguous()
    out = torch.empty_strided(
        (num_tokens,), (1,), dtype=torch.float32, device=logits.device
    )
    pdl = pdl_enabled(logits.device)
    BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
        num_tokens, vocab, logits.element_size(), row_tensors=1, row_only=True
    )
    kernel = logsumexp_kernel
    persistent_args = {
        "STREAM_ROWS": stream_rows(vocab, logits.element_size()),
        "EARLY_TRIGGER": BLOCK_ROWS == 1,
    }
    if BLOCK_COLS >= ONLINE_MIN_COLS and num_tokens >= online_min_rows(
        logits.element_size()
    ):
        # Many very wide rows: one pass over each row, in blocks.
        BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
            num_tokens, online_block_cols(logits.element_size()), logits.element_size()
        )
        kernel = logsumexp_kernel_online
        persistent_args = {}
    elif BLOCK_COLS > MAX_FUSED_COLS:
        # Wide rows: stream the row in blocks, re-reading it from cache.
        BLOCK_ROWS = 1
        BLOCK_COLS, num_warps = looped_settings(
            num_tokens, vocab, logits.element_size()
        )
        kernel = logsumexp_kernel_looped
        persistent_args = {}
    kernel[(triton.cdiv(num_tokens, BLOCK_ROWS),)](
        out_ptr=out,
        logits_ptr=logits,
        num_tokens=num_tokens,
        logits_stride0=logits.stride(0),
        vocab=vocab,
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        LAUNCH_PDL=pdl,
        num_warps=num_warps,
        launch_pdl=pdl,
        **persistent_args,
    )
    return out
