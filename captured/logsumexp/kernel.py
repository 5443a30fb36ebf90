"""Row logsumexp in fp32, as used for log-probabilities over a vocabulary.

Ported by porter 0.1.0 from logsumexp.py::logsumexp (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import os

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
    # a looped kernel unrolls a row of two blocks itself (lab/NOTES.md).
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
    logits_masked = tl.where(col_mask & row_mask, logits, float("-inf"))
    row_max = max_nan(logits_masked, 1)[:, None]
    abs_row_max_is_inf = tl.abs(row_max) == tl.full([1, 1], float("inf"), tl.float32)
    exp = exp_ftz(logits - tl.where(abs_row_max_is_inf, 0.0, row_max))
    row_sum = tl.sum(tl.where(col_mask & row_mask, exp, 0), 1)[:, None]
    log_row_sum = tl.log(row_sum)
    abs_row_max_is_inf_2 = tl.abs(row_max) == tl.full([1, 1], float("inf"), tl.float32)
    out = log_row_sum + tl.where(abs_row_max_is_inf_2, 0.0, row_max)
    tl.store(out_ptr + rows, out.to(out_ptr.dtype.element_ty), row_mask)


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
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], float("-inf"), tl.float32)
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
        maximum_nan_acc = maximum_nan(acc, logits)
        acc = tl.where(col_mask & row_mask, maximum_nan_acc, acc)
    row_max = max_nan(acc, 1)[:, None]
    acc_2 = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, vocab, BLOCK_COLS, loop_unroll_factor=LOOP_UNROLL):
        cols = col_start + col_base
        col_mask = cols < vocab
        logits_2 = tl.load(
            logits_ptr + (cols + rows * logits_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        abs_row_max_is_inf_2 = tl.abs(row_max) == tl.full(
            [1, 1], float("inf"), tl.float32
        )
        exp = exp_ftz(logits_2 - tl.where(abs_row_max_is_inf_2, 0.0, row_max))
        acc_2_plus_exp = acc_2 + exp
        acc_2 = tl.where(col_mask & row_mask, acc_2_plus_exp, acc_2)
    row_sum = tl.sum(acc_2, 1)[:, None]
    log_row_sum = tl.log(row_sum)
    abs_row_max_is_inf = tl.abs(row_max) == tl.full([1, 1], float("inf"), tl.float32)
    out = log_row_sum + tl.where(abs_row_max_is_inf, 0.0, row_max)
    tl.store(out_ptr + rows, out.to(out_ptr.dtype.element_ty), row_mask)


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
    acc = tl.full([BLOCK_ROWS, 1], float("-inf"), tl.float32)
    acc_2 = tl.full([BLOCK_ROWS, 1], 0, tl.float32)
    abs_acc_is_inf_run = tl.abs(acc) == tl.full([1, 1], float("inf"), tl.float32)
    safe_acc_run = tl.where(abs_acc_is_inf_run, 0.0, acc)
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
        maximum_nan_acc = maximum_nan(
            acc,
            max_nan(tl.where(col_mask & row_mask, logits, float("-inf")), 1)[:, None],
        )
        val_new = tl.abs(maximum_nan_acc) == tl.full([1, 1], float("inf"), tl.float32)
        safe_maximum_nan_acc_new = tl.where(val_new, 0.0, maximum_nan_acc)
        exp = exp_ftz(logits - safe_maximum_nan_acc_new)
        block_sum = tl.sum(tl.where(col_mask & row_mask, exp, 0.0), 1)[:, None]
        acc_2 = rescale_sum(acc_2, safe_acc_run, safe_maximum_nan_acc_new) + block_sum
        acc = maximum_nan_acc
        safe_acc_run = safe_maximum_nan_acc_new
    row_max = acc
    row_sum = acc_2
    log_row_sum = tl.log(row_sum)
    abs_row_max_is_inf = tl.abs(row_max) == tl.full([1, 1], float("inf"), tl.float32)
    out = log_row_sum + tl.where(abs_row_max_is_inf, 0.0, row_max)
    tl.store(out_ptr + rows, out.to(out_ptr.dtype.element_ty), row_mask)


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


# Many wide rows take the single-pass kernel: small programs streaming a row hide
# memory latency better than one holding it (docs/benchmarks/launch-rules.md#online).
ONLINE_MIN_COLS = 32768
ONLINE_MIN_ROWS = 1024
ONLINE_BLOCK_BYTES = 8192


def online_block_cols(elem_bytes=4):
    """The single-pass kernel's block: ONLINE_BLOCK_BYTES of elem_bytes elements."""
    return ONLINE_BLOCK_BYTES // elem_bytes


def online_min_rows(elem_bytes=2):
    """ONLINE_MIN_ROWS for rows of elem_bytes elements (2-byte rows: four times as many)."""
    return ONLINE_MIN_ROWS * (4 if elem_bytes <= 2 else 1)


# Row loads are marked evict_first while the tensor fits well in L2, and carry no
# hint from STREAM_MIN_BYTES on; a runtime branch, so no variant compiles mid-prefill
# (docs/benchmarks/launch-rules.md#stream).
STREAM_MIN_BYTES = 32 << 20


def stream_rows(row_size, elem_bytes=2):
    """Rows from which the tensor is STREAM_MIN_BYTES or more (the kernel's STREAM_ROWS)."""
    return triton.cdiv(STREAM_MIN_BYTES, max(row_size, 1) * elem_bytes)


def launch_settings(num_rows, row_size, elem_bytes=2, row_tensors=2, row_only=False):
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
        return rows, block, min(rows * (2 if row_only else 1), 8)
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


_LIBS = {}  # namespace -> the torch.library.Library that holds the op


def register_op(namespace="porter"):
    """logsumexp as the custom op torch.ops.<namespace>.logsumexp, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    if namespace not in _LIBS:
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define("logsumexp(Tensor logits) -> Tensor")
        # one Python impl for every device, called straight from the dispatcher
        lib.impl("logsumexp", logsumexp, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::logsumexp", lib=lib)
        def _(logits: torch.Tensor):
            num_tokens = logits.shape[0]
            out = torch.empty_strided(
                (num_tokens,), (1,), dtype=torch.float32, device=logits.device
            )
            return out

        _LIBS[namespace] = lib
    return getattr(torch.ops, namespace).logsumexp
