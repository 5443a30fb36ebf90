"""A linear layer with a fused bias + tanh-GELU epilogue (Inductor leaves the matmul to cuBLAS).

Ported by porter 0.1.0 from linear_gelu.py::linear_gelu (torch 2.13.0+cpu, triton 3.9.0, 2026-12-02); README.md says what porter changed.
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
def linear_gelu_kernel(
    out_ptr,
    bias_ptr,
    num_tokens,
    out_features: tl.constexpr,
    ADD_BIAS: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    COL_BLOCKS: tl.constexpr,
):
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_tokens) & (cols < out_features)
    offsets = rows * out_features + cols
    out = tl.load(out_ptr + offsets, mask).to(tl.float32)
    if ADD_BIAS:
        # the matmul's bias, one per column (kept in cache)
        out = out + tl.load(
            bias_ptr + cols, cols < out_features, eviction_policy="evict_last"
        ).to(tl.float32)
    out_scaled = out * 0.5
    val = (out + out * out * out * 0.044715) * 0.7978845608028654
    fast_dividef = libdevice.fast_dividef(2.0, 1.0 + exp_ftz(-2.0 * val))
    out_2 = out_scaled * fast_dividef
    tl.store(out_ptr + offsets, out_2.to(out_ptr.dtype.element_ty), mask)


@triton.jit(do_not_specialize=["num_tokens"])
def linear_gelu_matmul_kernel(
    lhs_ptr,
    rhs_ptr,
    out_ptr,
    bias_ptr,
    num_tokens,
    lhs_row_stride: tl.int64,
    rhs_k_stride,
    rhs_col_stride,
    in_features: tl.constexpr,
    out_features: tl.constexpr,
    ADD_BIAS: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    BLOCK_K: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    COL_BLOCKS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    if LAUNCH_PDL:
        # wait for the kernel before this one, then let the next one launch
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_tokens) & (cols < out_features)
    offsets = rows * out_features + cols
    # the matmul's tile in fp32, BLOCK_K of the inner dimension a step
    out = tl.zeros((BLOCK_ROWS, BLOCK_COLS), dtype=tl.float32)
    for k_start in range(0, in_features, BLOCK_K):
        k_cols = (k_start + tl.arange(0, BLOCK_K)).to(tl.int64)
        lhs_tile = tl.load(
            lhs_ptr + rows * lhs_row_stride + k_cols[None, :],
            (rows < num_tokens) & (k_cols[None, :] < in_features),
            other=0.0,
        )
        rhs_tile = tl.load(
            rhs_ptr
            + k_cols[:, None] * rhs_k_stride
            + cols.to(tl.int64) * rhs_col_stride,
            (k_cols[:, None] < in_features) & (cols < out_features),
            other=0.0,
        )
        out = tl.dot(lhs_tile, rhs_tile, out, input_precision=DOT_PRECISION)
    if ADD_BIAS:
        # the matmul's bias, one per column (kept in cache)
        out = out + tl.load(
            bias_ptr + cols, cols < out_features, eviction_policy="evict_last"
        ).to(tl.float32)
    out_scaled = out * 0.5
    val = (out + out * out * out * 0.044715) * 0.7978845608028654
    fast_dividef = libdevice.fast_dividef(2.0, 1.0 + exp_ftz(-2.0 * val))
    out_2 = out_scaled * fast_dividef
    tl.store(out_ptr + offsets, out_2.to(out_ptr.dtype.element_ty), mask)


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
        block_cols = min(block_cols, 512)
        return 512 // block_cols, block_cols, 8 if heavy else 4
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


# Small matmuls run with their epilogue as one Triton kernel instead of cuBLAS and a
# second kernel (docs/benchmarks/launch-rules.md#matmul).
MATMUL_EPILOGUE_MAX_ROWS = 1024
MATMUL_EPILOGUE_MAX_MACS = 1 << 28
# Past those rows, by output element bytes: the widest inner size measured to win.
MATMUL_WIDE_MAX_INNER = {2: 512, 4: 128}
# fp32 goes through tl.dot as three TF32 products; one row only up to this size,
# past which cuBLAS's matrix-vector kernel wins.
MATMUL_FP32_ONE_ROW_MAX_MACS = 1 << 15


def matmul_in_one_kernel(num_rows, inner_size, num_cols, elem_bytes):
    """Whether a num_rows x inner_size x num_cols matmul and its epilogue run as one kernel."""
    if num_rows > MATMUL_EPILOGUE_MAX_ROWS:
        return inner_size <= MATMUL_WIDE_MAX_INNER.get(elem_bytes, 0)
    if num_rows * inner_size * num_cols > MATMUL_EPILOGUE_MAX_MACS:
        return False
    if elem_bytes == 4:
        return num_rows > 1 or inner_size * num_cols <= MATMUL_FP32_ONE_ROW_MAX_MACS
    return elem_bytes == 2


def matmul_settings(num_rows, inner_size, elem_bytes=2):
    """(rows, columns, inner block, warps, stages) of a block of the matmul kernel (docs/benchmarks/launch-rules.md#matmul)."""
    k_block = max(16, triton.next_power_of_2(inner_size))
    if num_rows > MATMUL_EPILOGUE_MAX_ROWS:
        if elem_bytes == 4:
            return 64, 64, min(k_block, 32), 4, 3
        return 64, 128, min(k_block, 64), 8, (2 if inner_size <= 128 else 3)
    block_rows = 16 if num_rows <= 16 else 32
    if elem_bytes == 4:
        return block_rows, 32, min(k_block, 64), 4, 3
    return block_rows, 32, min(k_block, 128), 4, 4


def reinterpret(t, size, stride, offset):
    """A view of t's elements as Inductor's wrapper laid them out (it assumed a
    contiguous tensor); offset counts from t's first element, not its storage."""
    t = t.contiguous()
    return t.as_strided(size, stride, t.storage_offset() + offset)


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


def linear_gelu(x, weight, bias):
    """Same arguments and outputs as the reference linear_gelu."""
    if (weight.dim(), x.dim(), bias.dim()) != (2, 2, 1):
        raise NotImplementedError(
            "captured with weight 2-d, x 2-d, bias 1-d; re-capture with the ranks you need"
        )
    num_tokens = x.shape[0]
    in_features = x.shape[1]
    out_features = weight.shape[0]
    if weight.shape[1] != in_features or bias.shape != (out_features,):
        raise NotImplementedError(
            "captured for shapes weight (_, x.shape[1]), bias (weight.shape[0],); re-capture for other sizes"
        )
    x = x if x.stride(-1) == 1 else x.contiguous()
    bias = bias if bias.stride(-1) == 1 else bias.contiguous()
    out = torch.empty_strided(
        (num_tokens, out_features),
        (out_features, 1),
        dtype=weight.dtype,
        device=weight.device,
    )
    pdl = pdl_enabled(weight.device)
    if matmul_in_one_kernel(num_tokens, in_features, out_features, out.element_size()):
        # A small matmul: one kernel for the matmul and what follows it, no
        # cuBLAS call and no round trip of its output (matmul_in_one_kernel
        # says where it wins).
        x = x if x.stride(-1) == 1 else x.contiguous()
        rhs = reinterpret(weight, (in_features, out_features), (1, in_features), 0)
        BLOCK_ROWS, BLOCK_COLS, BLOCK_K, num_warps, num_stages = matmul_settings(
            num_tokens, in_features, out.element_size()
        )
        COL_BLOCKS = triton.cdiv(out_features, BLOCK_COLS)
        linear_gelu_matmul_kernel[(triton.cdiv(num_tokens, BLOCK_ROWS) * COL_BLOCKS,)](
            lhs_ptr=x,
            rhs_ptr=rhs,
            out_ptr=out,
            bias_ptr=bias,
            num_tokens=num_tokens,
            lhs_row_stride=x.stride(0),
            rhs_k_stride=rhs.stride(0),
            rhs_col_stride=rhs.stride(1),
            in_features=in_features,
            out_features=out_features,
            ADD_BIAS=True,
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=BLOCK_COLS,
            BLOCK_K=BLOCK_K,
            DOT_PRECISION="tf32x3" if out.element_size() == 4 else "tf32",
            COL_BLOCKS=COL_BLOCKS,
            LAUNCH_PDL=pdl,
            num_warps=num_warps,
            launch_pdl=pdl,
            num_stages=num_stages,
        )
        return out
    # 2-byte outputs: the bias is added in the kernel below, as Inductor does on
    # a GPU; cuBLAS's bias epilogue took up to 1.1x the time on an H200. fp32
    # keeps addmm: cuBLAS's plain fp32 matmul took 7.7x its time at 16 rows
    # (lab/NOTES.md).
    add_bias = out.element_size() == 2
    if add_bias:
        torch.mm(
            x,
            reinterpret(weight, (in_features, out_features), (1, in_features), 0),
            out=out,
        )
    else:
        torch.addmm(
            bias,
            x,
            reinterpret(weight, (in_features, out_features), (1, in_features), 0),
            alpha=1,
            beta=1,
            out=out,
        )
    # No programmatic dependent launch right after the extern call: behind a
    # cuBLAS matmul it took 0.92-1.10x the time at 1-256 tokens on an H200,
    # less only at 1-16 tokens of 4096 -> 4096 (lab/NOTES.md).
    BLOCK_ROWS, BLOCK_COLS, num_warps = tile_settings(
        num_tokens, out_features, out.element_size(), heavy=True
    )
    COL_BLOCKS = triton.cdiv(out_features, BLOCK_COLS)
    linear_gelu_kernel[(triton.cdiv(num_tokens, BLOCK_ROWS) * COL_BLOCKS,)](
        out_ptr=out,
        bias_ptr=bias,
        num_tokens=num_tokens,
        out_features=out_features,
        ADD_BIAS=add_bias,
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        COL_BLOCKS=COL_BLOCKS,
        num_warps=num_warps,
    )
    return out


_LIBS = {}  # namespace -> the torch.library.Library that holds the op


def register_op(namespace="porter"):
    """linear_gelu as the custom op torch.ops.<namespace>.linear_gelu, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    if namespace not in _LIBS:
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define("linear_gelu(Tensor x, Tensor weight, Tensor bias) -> Tensor")
        # one Python impl for every device, called straight from the dispatcher
        lib.impl("linear_gelu", linear_gelu, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::linear_gelu", lib=lib)
        def _(x, weight, bias):
            num_tokens = x.shape[0]
            in_features = x.shape[1]
            out_features = weight.shape[0]
            x = x if x.stride(-1) == 1 else x.contiguous()
            bias = bias if bias.stride(-1) == 1 else bias.contiguous()
            out = torch.empty_strided(
                (num_tokens, out_features),
                (out_features, 1),
                dtype=weight.dtype,
                device=weight.device,
            )
            # 2-byte outputs: the bias is added in the kernel below, as Inductor does on
            # a GPU; cuBLAS's bias epilogue took up to 1.1x the time on an H200. fp32
            # keeps addmm: cuBLAS's plain fp32 matmul took 7.7x its time at 16 rows
            # (lab/NOTES.md).
            add_bias = out.element_size() == 2
            if add_bias:
                torch.mm(
                    x,
                    reinterpret(
                        weight, (in_features, out_features), (1, in_features), 0
                    ),
                    out=out,
                )
            else:
                torch.addmm(
                    bias,
                    x,
                    reinterpret(
                        weight, (in_features, out_features), (1, in_features), 0
                    ),
                    alpha=1,
                    beta=1,
                    out=out,
                )
            return out

        _LIBS[namespace] = lib
    return getattr(torch.ops, namespace).linear_gelu
