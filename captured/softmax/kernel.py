"""Row softmax with a temperature over vocabulary-wide rows, in fp32 as samplers do.

Ported by porter 0.1.0 from softmax.py::softmax (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
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


@triton.jit(do_not_specialize=["num_tokens"])
def softmax_kernel(
    out_ptr,
    logits_ptr,
    num_tokens,
    logits_stride0: tl.int64,
    out_stride0: tl.int64,
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
    logits_scaled = logits * 1.0
    logits_scaled_masked = tl.where(col_mask & row_mask, logits_scaled, float("-inf"))
    row_max = max_nan(logits_scaled_masked, 1)[:, None]
    # where max(x) / c overflows, torch's row is NaN (inf - inf): a NaN shift keeps it so
    row_shift = tl.where(row_max * (1.0 / 0.7) < float("inf"), row_max, float("nan"))
    exp = exp_ftz((logits * 1.0 - row_shift) * (1.0 / 0.7))
    row_sum = tl.sum(tl.where(col_mask & row_mask, exp, 0), 1)[:, None]
    out = exp.to(tl.float32)
    out_2 = out * (1.0 / row_sum)
    tl.store(
        out_ptr + (cols + rows * out_stride0),
        out_2.to(out_ptr.dtype.element_ty),
        col_mask & row_mask,
    )


@triton.jit(do_not_specialize=["num_tokens"])
def softmax_kernel_looped(
    out_ptr,
    logits_ptr,
    num_tokens,
    logits_stride0: tl.int64,
    out_stride0: tl.int64,
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
        maximum_nan_acc = maximum_nan(acc, logits * 1.0)
        acc = tl.where(col_mask & row_mask, maximum_nan_acc, acc)
    row_max = max_nan(acc, 1)[:, None]
    # where max(x) / c overflows, torch's row is NaN (inf - inf): a NaN shift keeps it so
    row_shift = tl.where(row_max * (1.0 / 0.7) < float("inf"), row_max, float("nan"))
    acc_2 = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, vocab, BLOCK_COLS, loop_unroll_factor=LOOP_UNROLL):
        cols = col_start + col_base
        col_mask = cols < vocab
        logits_2 = tl.load(
            logits_ptr + (cols + rows * logits_stride0),
            col_mask & row_mask,
            eviction_policy="evict_last",
            other=0.0,
        ).to(tl.float32)
        exp = exp_ftz((logits_2 * 1.0 - row_shift) * (1.0 / 0.7))
        acc_2_plus_exp = acc_2 + exp
        acc_2 = tl.where(col_mask & row_mask, acc_2_plus_exp, acc_2)
    row_sum = tl.sum(acc_2, 1)[:, None]
    for col_start in tl.range(0, vocab, BLOCK_COLS, loop_unroll_factor=LOOP_UNROLL):
        cols = col_start + col_base
        col_mask = cols < vocab
        logits_3 = tl.load(
            logits_ptr + (cols + rows * logits_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        exp_2 = exp_ftz((logits_3 * 1.0 - row_shift) * (1.0 / 0.7))
        out = exp_2.to(tl.float32)
        out_2 = out * (1.0 / row_sum)
        tl.store(
            out_ptr + (cols + rows * out_stride0),
            out_2.to(out_ptr.dtype.element_ty),
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


# Rows of LOOPED_MIN_ROW_BYTES[reads, inputs] bytes or more take the looped kernel:
# it re-reads them from cache instead of holding them (docs/benchmarks/launch-rules.md#persistent-or-looped).
LOOPED_MIN_ROW_BYTES = {(2, 1): 8192, (3, 1): 16384, (2, 2): 16384}


def looped_min_row_bytes(key, num_rows, elem_bytes=2, row_only=False):
    """LOOPED_MIN_ROW_BYTES[key] for num_rows rows of elem_bytes elements."""
    if key[0] >= 3 and elem_bytes <= 2:
        return float("inf")
    return LOOPED_MIN_ROW_BYTES[key]


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


def softmax(logits: torch.Tensor, temperature: float = 0.7):
    """Same arguments and outputs as the reference softmax."""
    if temperature != 0.7:
        raise NotImplementedError(
            "captured with temperature == 0.7; re-capture with the value you need"
        )
    if (logits.dim(),) != (2,):
        raise NotImplementedError(
            "captured with logits 2-d; re-capture with the ranks you need"
        )
    num_tokens = logits.shape[0]
    vocab = logits.shape[1]
    logits = logits if logits.stride(-1) == 1 else logits.contiguous()
    out = torch.empty_strided(
        (num_tokens, vocab), (vocab, 1), dtype=logits.dtype, device=logits.device
    )
    pdl = pdl_enabled(logits.device)
    BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
        num_tokens, vocab, logits.element_size(), row_tensors=2, row_only=True
    )
    kernel = softmax_kernel
    persistent_args = {
        "STREAM_ROWS": stream_rows(vocab, logits.element_size()),
        "EARLY_TRIGGER": BLOCK_ROWS == 1,
    }
    if (
        BLOCK_COLS > MAX_FUSED_COLS
        or BLOCK_COLS * logits.element_size()
        >= looped_min_row_bytes(
            (3, 1), num_tokens, logits.element_size(), row_only=True
        )
    ):
        # Wide rows: stream the row in blocks, re-reading it from cache.
        BLOCK_ROWS = 1
        BLOCK_COLS, num_warps = looped_settings(
            num_tokens, vocab, logits.element_size()
        )
        kernel = softmax_kernel_looped
        persistent_args = {}
    kernel[(triton.cdiv(num_tokens, BLOCK_ROWS),)](
        out_ptr=out,
        logits_ptr=logits,
        num_tokens=num_tokens,
        logits_stride0=logits.stride(0),
        out_stride0=out.stride(0),
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
    """softmax as the custom op torch.ops.<namespace>.softmax, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    if namespace not in _LIBS:
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define("softmax(Tensor logits, float temperature=0.7) -> Tensor")
        # one Python impl for every device, called straight from the dispatcher
        lib.impl("softmax", softmax, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::softmax", lib=lib)
        def _(logits: torch.Tensor, temperature: float = 0.7):
            num_tokens = logits.shape[0]
            vocab = logits.shape[1]
            out = torch.empty_strided(
                (num_tokens, vocab),
                (vocab, 1),
                dtype=logits.dtype,
                device=logits.device,
            )
            return out

        _LIBS[namespace] = lib
    return getattr(torch.ops, namespace).softmax
