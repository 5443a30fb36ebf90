"""A linear layer with a fused bias + tanh-GELU epilogue (Inductor leaves the matmul to cuBLAS).

Ported by porter 0.1.0 from linear_gelu.py::linear_gelu (torch 2.13.0+cpu, triton 3.9.0, 2026-12-02); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ..common import define_op, exp_ftz, is_fake, matmul_in_one_kernel, matmul_settings
from ..common import pdl_enabled, pdl_wait, refuse, reinterpret, tile_settings


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
    pdl_wait(LAUNCH_PDL)
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


def linear_gelu(x, weight, bias):
    """Same arguments and outputs as the reference linear_gelu."""
    if (weight.dim(), x.dim(), bias.dim()) != (2, 2, 1):
        refuse(
            "captured with weight 2-d, x 2-d, bias 1-d; re-capture with the ranks you need"
        )
    if (x.dtype, bias.dtype) != (weight.dtype, weight.dtype):
        refuse("x and bias must have weight's dtype, as at capture")
    num_tokens, in_features = x.shape
    out_features = weight.shape[0]
    if weight.shape[1] != in_features or bias.shape != (out_features,):
        refuse(
            "captured for shapes weight (_, x.shape[1]), bias (weight.shape[0],); re-capture for other sizes"
        )
    x = x if x.stride(-1) == 1 else x.contiguous()
    bias = bias if bias.stride(-1) == 1 else bias.contiguous()
    out = torch.empty(
        (num_tokens, out_features), dtype=weight.dtype, device=weight.device
    )
    if is_fake(weight):  # torch.compile tracing: outputs only
        return out
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


def register_op(namespace="porter"):
    """linear_gelu as the custom op torch.ops.<namespace>.linear_gelu, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "linear_gelu(Tensor x, Tensor weight, Tensor bias) -> Tensor"
    return define_op(namespace, schema, linear_gelu)
