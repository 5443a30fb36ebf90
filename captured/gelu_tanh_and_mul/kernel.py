"""GeGLU with the tanh GELU, as in vLLM's gelu_tanh_and_mul: gelu(x[..., :d]) * x[..., d:].

Ported by porter 0.1.0 from gelu_tanh_and_mul.py::gelu_tanh_and_mul (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ..common import DECODE_BLOCK, define_op, exp_ftz, is_fake, laid_out_like
from ..common import pdl_enabled, pdl_release, pdl_wait, refuse, tile_settings


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
    pdl_wait(LAUNCH_PDL, EARLY_TRIGGER)
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_tokens) & (cols < x_size1_div_2)
    x_rows = x_ptr + rows * x_stride0
    out_rows = out_ptr + rows * (
        1 * (1 >= x_size1_div_2) + x_size1_div_2 * (x_size1_div_2 > 1)
    )
    x = tl.load(x_rows + cols, mask, eviction_policy="evict_last").to(tl.float32)
    x_2 = tl.load(x_rows + (x_size1_div_2 + cols), mask, eviction_policy="evict_last")
    x_2 = x_2.to(tl.float32)
    # a block over a long row lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, EARLY_TRIGGER)
    x_scaled = x * 0.5
    val = (x + x * x * x * 0.044715) * 0.7978845608028654
    fast_dividef = libdevice.fast_dividef(2.0, 1.0 + exp_ftz(-2.0 * val))
    out = x_scaled * fast_dividef * x_2
    tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty), mask)


def gelu_tanh_and_mul(x: torch.Tensor):
    """Same arguments and outputs as the reference gelu_tanh_and_mul."""
    if x.dim() != 2:
        refuse("captured with x 2-d; re-capture with the ranks you need")
    num_tokens = x.shape[0]
    x_given = x
    x = x if x.stride(-1) == 1 else x.contiguous()
    out = torch.empty((num_tokens, x.shape[1] // 2), dtype=x.dtype, device=x.device)
    if is_fake(x):  # torch.compile tracing: outputs only
        return laid_out_like(out, x_given)
    pdl = pdl_enabled(x.device)
    BLOCK_ROWS, BLOCK_COLS, num_warps = tile_settings(
        num_tokens, x.shape[1] // 2, x.element_size(), heavy=True
    )
    COL_BLOCKS = triton.cdiv(x.shape[1] // 2, BLOCK_COLS)
    gelu_tanh_and_mul_kernel[(triton.cdiv(num_tokens, BLOCK_ROWS) * COL_BLOCKS,)](
        x_ptr=x,
        out_ptr=out,
        num_tokens=num_tokens,
        x_stride0=x.stride(0),
        x_size1_div_2=x.shape[1] // 2,
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        COL_BLOCKS=COL_BLOCKS,
        LAUNCH_PDL=pdl,
        EARLY_TRIGGER=BLOCK_COLS <= DECODE_BLOCK,
        num_warps=num_warps,
        launch_pdl=pdl,
    )
    return laid_out_like(out, x_given)


def register_op(namespace="porter"):
    """gelu_tanh_and_mul as the custom op torch.ops.<namespace>.gelu_tanh_and_mul, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "gelu_tanh_and_mul(Tensor x) -> Tensor"
    return define_op(namespace, schema, gelu_tanh_and_mul)
