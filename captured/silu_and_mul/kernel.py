"""SwiGLU activation as in vLLM's silu_and_mul: silu(x[..., :d]) * x[..., d:].

Ported by porter 0.1.0 from silu_and_mul.py::silu_and_mul (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import os

import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_tokens"])
def silu_and_mul_kernel(
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
    exp = tl.exp(-x)
    out = x / (exp + 1.0) * x_2
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


def silu_and_mul(x: torch.Tensor):
    """Same arguments and outputs as the reference silu_and_mul."""
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
        num_tokens, (x.shape[1] // 2), x.element_size()
    )
    COL_BLOCKS = triton.cdiv((x.shape[1] // 2), BLOCK_COLS)
    silu_and_mul_kernel[(triton.cdiv(num_tokens, BLOCK_ROWS) * COL_BLOCKS,)](
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
    """silu_and_mul as the custom op torch.ops.<namespace>.silu_and_mul, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    if namespace not in _LIBS:
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define("silu_and_mul(Tensor x) -> Tensor")
        # one Python impl for every device, called straight from the dispatcher
        lib.impl("silu_and_mul", silu_and_mul, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::silu_and_mul", lib=lib)
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
    return getattr(torch.ops, namespace).silu_and_mul
