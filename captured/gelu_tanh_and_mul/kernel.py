"""GeGLU with the tanh GELU, as in vLLM's gelu_tanh_and_mul: gelu(x[..., :d]) * x[..., d:].

Ported by porter 0.1.0 from gelu_tanh_and_mul.py::gelu_tanh_and_mul (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import os

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

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


@triton.jit(do_not_specialize=["num_tokens"])
def gelu_tanh_and_mul_kernel(
    x_ptr,
    out_ptr,
    num_tokens,
    x_stride0: tl.int64,
    x_size1_div_2: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    COL_BLOCKS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
    EARLY_TRIGGER: tl.constexpr,
):
    if LAUNCH_PDL:
        # wait for the kernel before this one; a block of a few columns lets the next one launch now
        tl.extra.cuda.gdc_wait()
        if EARLY_TRIGGER:
            tl.extra.cuda.gdc_launch_dependents()
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_tokens) & (cols < x_size1_div_2)
    x = tl.load(
        x_ptr + (cols + rows * x_stride0), mask, eviction_policy="evict_last"
    ).to(tl.float32)
    x_2 = tl.load(
        x_ptr + (x_size1_div_2 + cols + rows * x_stride0),
        mask,
        eviction_policy="evict_last",
    ).to(tl.float32)
    if LAUNCH_PDL:
        if not EARLY_TRIGGER:
            # a block over a long row lets the next kernel launch once its loads are issued
            tl.extra.cuda.gdc_launch_dependents()
    x_scaled = x * 0.5
    val = (x + x * x * x * 0.044715) * 0.7978845608028654
    fast_dividef = libdevice.fast_dividef(2.0, 1.0 + exp_ftz(-2.0 * val))
    out = x_scaled * fast_dividef * x_2
    tl.store(
        out_ptr
        + (
            cols
            + rows * (1 * (1 >= x_size1_div_2) + x_size1_div_2 * (x_size1_div_2 > 1))
        ),
        out.to(out_ptr.dtype.element_ty),
        mask,
    )


# Blocks of at most DECODE_BLOCK elements let the next kernel launch right after
# their wait; longer ones after their loads (docs/benchmarks/launch-rules.md#pdl).
DECODE_BLOCK = 512


# A column block pads the row at most this much more than blocks of 256 would.
PAD_MAX = 33 / 32


def tile_settings(num_rows, row_size, elem_bytes=2, heavy=False):
    """(rows, columns, warps) of a block of a (rows, column blocks) pointwise
    launch: up to 4096 columns, 16 bytes a thread; at decode sizes blocks of 512;
    heavy (libdevice) kernels two elements a thread (docs/benchmarks/launch-rules.md#tile).
    """
    block_cols = triton.next_power_of_2(max(row_size, 1))
    elements = num_rows * row_size
    if elements <= (1 << 19 if heavy else 1 << 18):
        block_cols = min(block_cols, DECODE_BLOCK)
        return DECODE_BLOCK // block_cols, block_cols, 8 if heavy else 4
    block_cols = min(block_cols, 1024 if heavy and elem_bytes <= 2 else 4096)
    # Masked lanes cost as much as live ones: halve a block that pads the row
    # past PAD_MAX (docs/benchmarks/launch-rules.md#tile).
    least = 256 * triton.cdiv(row_size, 256)
    while (
        block_cols > 256
        and block_cols * triton.cdiv(row_size, block_cols) > PAD_MAX * least
    ):
        block_cols //= 2
    block_rows = max(1, 1024 // block_cols)
    warps = block_rows * block_cols * elem_bytes // 512
    return block_rows, block_cols, min(32, max(4, warps))


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


def gelu_tanh_and_mul(x: torch.Tensor):
    """Same arguments and outputs as the reference gelu_tanh_and_mul."""
    if (x.dim(),) != (2,):
        raise NotImplementedError(
            "captured with x 2-d; re-capture with the ranks you need"
        )
    num_tokens = x.shape[0]
    x = x if x.stride(-1) == 1 else x.contiguous()
    out = torch.empty_strided(
        (num_tokens, x.shape[1] // 2),
        (max(1, x.shape[1] // 2), 1),
        dtype=x.dtype,
        device=x.device,
    )
    pdl = pdl_enabled(x.device)
    BLOCK_ROWS, BLOCK_COLS, num_warps = tile_settings(
        num_tokens, (x.shape[1] // 2), x.element_size(), heavy=True
    )
    COL_BLOCKS = triton.cdiv((x.shape[1] // 2), BLOCK_COLS)
    gelu_tanh_and_mul_kernel[(triton.cdiv(num_tokens, BLOCK_ROWS) * COL_BLOCKS,)](
        x_ptr=x,
        out_ptr=out,
        num_tokens=num_tokens,
        x_stride0=x.stride(0),
        x_size1_div_2=(x.shape[1] // 2),
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        COL_BLOCKS=COL_BLOCKS,
        LAUNCH_PDL=pdl,
        EARLY_TRIGGER=BLOCK_COLS <= DECODE_BLOCK,
        num_warps=num_warps,
        launch_pdl=pdl,
    )
    return out


_LIBS = {}  # namespace -> the torch.library.Library that holds the op


def register_op(namespace="porter"):
    """gelu_tanh_and_mul as the custom op torch.ops.<namespace>.gelu_tanh_and_mul, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    if namespace not in _LIBS:
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define("gelu_tanh_and_mul(Tensor x) -> Tensor")
        # one Python impl for every device, called straight from the dispatcher
        lib.impl("gelu_tanh_and_mul", gelu_tanh_and_mul, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::gelu_tanh_and_mul", lib=lib)
        def _(x: torch.Tensor):
            num_tokens = x.shape[0]
            out = torch.empty_strided(
                (num_tokens, x.shape[1] // 2),
                (max(1, x.shape[1] // 2), 1),
                dtype=x.dtype,
                device=x.device,
            )
            return out

        _LIBS[namespace] = lib
    return getattr(torch.ops, namespace).gelu_tanh_and_mul
