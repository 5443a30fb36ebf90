"""RMSNorm as in Llama-style models: y = x / sqrt(mean(x^2) + eps) * weight.

Ported by porter 0.1.0 from rmsnorm.py::rmsnorm (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import os

import torch
import triton
import triton.language as tl


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
    if num_tokens < STREAM_ROWS:
        x = tl.load(
            x_ptr + (cols + rows * x_stride0),
            col_mask & row_mask,
            other=0.0,
            eviction_policy="evict_first",
        ).to(tl.float32)
    else:
        x = tl.load(
            x_ptr + (cols + rows * x_stride0), col_mask & row_mask, other=0.0
        ).to(tl.float32)
    x_sq = x * x
    x_sq_masked = tl.where(col_mask & row_mask, x_sq, 0)
    weight = tl.load(
        weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    if LAUNCH_PDL:
        if not EARLY_TRIGGER:
            # a program of several rows lets the next kernel launch once its loads are issued
            tl.extra.cuda.gdc_launch_dependents()
    row_sum = tl.sum(x_sq_masked, 1)[:, None]
    rstd = tl.rsqrt(row_sum / tl.cast(hidden, tl.float32) + 1e-06)
    out = x * rstd * weight
    tl.store(
        out_ptr + (cols + rows * out_stride0),
        out.to(out_ptr.dtype.element_ty),
        col_mask & row_mask,
    )


@triton.jit(do_not_specialize=["num_tokens"])
def rmsnorm_kernel_looped(
    x_ptr,
    weight_ptr,
    out_ptr,
    num_tokens,
    x_stride0: tl.int64,
    out_stride0: tl.int64,
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
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, hidden, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < hidden
        x = tl.load(
            x_ptr + (cols + rows * x_stride0),
            col_mask & row_mask,
            eviction_policy="evict_last",
            other=0.0,
        ).to(tl.float32)
        val = acc + x * x
        acc = tl.where(col_mask & row_mask, val, acc)
    row_sum = tl.sum(acc, 1)[:, None]
    for col_start in tl.range(0, hidden, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < hidden
        x_2 = tl.load(
            x_ptr + (cols + rows * x_stride0),
            col_mask & row_mask,
            eviction_policy="evict_first",
            other=0.0,
        ).to(tl.float32)
        weight = tl.load(
            weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
        ).to(tl.float32)
        rstd = tl.rsqrt(row_sum / tl.cast(hidden, tl.float32) + 1e-06)
        out = x_2 * rstd * weight
        tl.store(
            out_ptr + (cols + rows * out_stride0),
            out.to(out_ptr.dtype.element_ty),
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
# Rows read twice stay held up to HELD_MAX_BYTES at decode sizes, or always
# where nothing but the row is read (row_only).
HELD_DECODE_MAX_ROWS = 256
HELD_MAX_BYTES = 16384


def looped_min_row_bytes(key, num_rows, elem_bytes=2, row_only=False):
    """LOOPED_MIN_ROW_BYTES[key] for num_rows rows of elem_bytes elements."""
    if key == (2, 1) and (row_only or num_rows <= HELD_DECODE_MAX_ROWS):
        return max(LOOPED_MIN_ROW_BYTES[key], 2 * HELD_MAX_BYTES)
    return LOOPED_MIN_ROW_BYTES[key]


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


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-06):
    """Same arguments and outputs as the reference rmsnorm."""
    if eps != 1e-06:
        raise NotImplementedError(
            "captured with eps == 1e-06; re-capture with the value you need"
        )
    if (x.dim(), weight.dim()) != (2, 1):
        raise NotImplementedError(
            "captured with x 2-d, weight 1-d; re-capture with the ranks you need"
        )
    num_tokens = x.shape[0]
    hidden = x.shape[1]
    if weight.shape != (hidden,):
        raise NotImplementedError(
            "captured for shapes weight (x.shape[1],); re-capture for other sizes"
        )
    x = x if x.stride(-1) == 1 else x.contiguous()
    weight = weight if weight.stride(-1) == 1 else weight.contiguous()
    out = torch.empty_strided(
        (num_tokens, hidden), (hidden, 1), dtype=x.dtype, device=x.device
    )
    pdl = pdl_enabled(x.device)
    BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
        num_tokens, hidden, x.element_size(), row_tensors=2
    )
    kernel = rmsnorm_kernel
    persistent_args = {
        "STREAM_ROWS": stream_rows(hidden, x.element_size()),
        "EARLY_TRIGGER": BLOCK_ROWS == 1,
    }
    if (
        BLOCK_COLS > MAX_FUSED_COLS
        or BLOCK_COLS * x.element_size()
        >= looped_min_row_bytes((2, 1), num_tokens, x.element_size())
    ):
        # Wide rows: stream the row in blocks, re-reading it from cache.
        BLOCK_ROWS = 1
        BLOCK_COLS, num_warps = looped_settings(num_tokens, hidden, x.element_size())
        kernel = rmsnorm_kernel_looped
        persistent_args = {}
    kernel[(triton.cdiv(num_tokens, BLOCK_ROWS),)](
        x_ptr=x,
        weight_ptr=weight,
        out_ptr=out,
        num_tokens=num_tokens,
        x_stride0=x.stride(0),
        out_stride0=out.stride(0),
        hidden=hidden,
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
    """rmsnorm as the custom op torch.ops.<namespace>.rmsnorm, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    if namespace not in _LIBS:
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define("rmsnorm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor")
        # one Python impl for every device, called straight from the dispatcher
        lib.impl("rmsnorm", rmsnorm, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::rmsnorm", lib=lib)
        def _(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-06):
            num_tokens = x.shape[0]
            hidden = x.shape[1]
            out = torch.empty_strided(
                (num_tokens, hidden), (hidden, 1), dtype=x.dtype, device=x.device
            )
            return out

        _LIBS[namespace] = lib
    return getattr(torch.ops, namespace).rmsnorm
