"""NeoX-style rotary embedding on queries: tokens x heads x head_dim, cos/sin per token.

Ported by porter 0.1.0 from rotary_neox.py::rotary_neox (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl

from ..common import DECODE_BLOCK, define_op, is_fake, pdl_enabled, pdl_release
from ..common import pdl_wait, refuse, tile_settings


@triton.jit(do_not_specialize=["num_rows"])
def rotary_neox_kernel(
    q_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    num_rows,
    q_stride0: tl.int64,
    q_stride1: tl.int64,
    cos_stride0: tl.int64,
    sin_stride0: tl.int64,
    out_stride1: tl.int64,
    head_dim_div_2: tl.constexpr,
    num_heads: tl.constexpr,
    out_ptr_2,
    out_stride1_2: tl.int64,
    head_dim_minus_head_dim_div_2: tl.constexpr,
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
    mask = (rows < num_rows) & (cols < head_dim_div_2)
    x2 = rows // num_heads
    q_rows = q_ptr + (x2 * q_stride0 + rows % num_heads * q_stride1)
    cos_x2 = cos_ptr + x2 * cos_stride0
    sin_x2 = sin_ptr + x2 * sin_stride0
    out_rows = out_ptr + rows * out_stride1
    out_2_rows = out_ptr_2 + rows * out_stride1_2
    q = tl.load(q_rows + cols, mask, eviction_policy="evict_last").to(tl.float32)
    cos = tl.load(cos_x2 + cols, mask, eviction_policy="evict_last").to(tl.float32)
    q_2 = tl.load(q_rows + (head_dim_div_2 + cols), mask, eviction_policy="evict_last")
    q_2 = q_2.to(tl.float32)
    sin = tl.load(sin_x2 + cols, mask, eviction_policy="evict_last").to(tl.float32)
    out = q * cos - q_2 * sin
    mask_2 = (rows < num_rows) & (cols < head_dim_minus_head_dim_div_2)
    q_3 = tl.load(
        q_rows + (head_dim_div_2 + cols), mask_2, eviction_policy="evict_last"
    ).to(tl.float32)
    cos_2 = tl.load(cos_x2 + cols, mask_2, eviction_policy="evict_last").to(tl.float32)
    q_4 = tl.load(q_rows + cols, mask_2, eviction_policy="evict_last").to(tl.float32)
    sin_2 = tl.load(sin_x2 + cols, mask_2, eviction_policy="evict_last").to(tl.float32)
    # a block over a long row lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, EARLY_TRIGGER)
    tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty), mask)
    out_2 = q_3 * cos_2 + q_4 * sin_2
    tl.store(out_2_rows + cols, out_2.to(out_ptr_2.dtype.element_ty), mask_2)


def rotary_neox(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """Same arguments and outputs as the reference rotary_neox."""
    if (q.dim(), cos.dim(), sin.dim()) != (3, 2, 2):
        refuse(
            "captured with q 3-d, cos 2-d, sin 2-d; re-capture with the ranks you need"
        )
    if (cos.dtype, sin.dtype) != (q.dtype, q.dtype):
        refuse("cos and sin must have q's dtype, as at capture")
    num_tokens, num_heads, head_dim = q.shape
    if not (head_dim % 2 == 0):
        refuse(
            "the kernels assume q.shape[2] % 2 == 0, as the reference's view of it does"
        )
    if not (head_dim // 2 == cos.shape[1]):
        refuse(
            "the kernels assume q.shape[2] // 2 == cos.shape[1], as the reference's view of it does"
        )
    if not (head_dim // 2 == sin.shape[1]):
        refuse(
            "the kernels assume q.shape[2] // 2 == sin.shape[1], as the reference's view of it does"
        )
    if cos.shape[0] != num_tokens or sin.shape[0] != num_tokens:
        refuse(
            "captured for shapes cos (q.shape[0], _), sin (q.shape[0], _); re-capture for other sizes"
        )
    if num_heads == 0:
        refuse(
            "q.shape[1] is 0, and a kernel divides by it as a compile-time constant, which does not compile at 0"
        )
    q = q if q.stride(-1) == 1 else q.contiguous()
    cos = cos if cos.stride(-1) == 1 else cos.contiguous()
    sin = sin if sin.stride(-1) == 1 else sin.contiguous()
    out = torch.empty((num_tokens, num_heads, head_dim), dtype=q.dtype, device=q.device)
    if is_fake(q):  # torch.compile tracing: outputs only
        return out
    pdl = pdl_enabled(q.device)
    out_view0 = out.as_strided(
        (num_tokens, num_heads, head_dim - head_dim // 2),
        (head_dim * num_heads, head_dim, 1),
        out.storage_offset() + head_dim // 2,
    )
    BLOCK_ROWS, BLOCK_COLS, num_warps = tile_settings(
        num_heads * num_tokens,
        max(head_dim // 2, head_dim - head_dim // 2),
        q.element_size(),
    )
    COL_BLOCKS = triton.cdiv(max(head_dim // 2, head_dim - head_dim // 2), BLOCK_COLS)
    rotary_neox_kernel[(triton.cdiv(num_heads * num_tokens, BLOCK_ROWS) * COL_BLOCKS,)](
        q_ptr=q,
        cos_ptr=cos,
        sin_ptr=sin,
        out_ptr=out,
        num_rows=num_heads * num_tokens,
        q_stride0=q.stride(0),
        q_stride1=q.stride(1),
        cos_stride0=cos.stride(0),
        sin_stride0=sin.stride(0),
        out_stride1=out.stride(1),
        head_dim_div_2=head_dim // 2,
        num_heads=num_heads,
        out_ptr_2=out_view0,
        out_stride1_2=out_view0.stride(1),
        head_dim_minus_head_dim_div_2=head_dim - head_dim // 2,
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        COL_BLOCKS=COL_BLOCKS,
        LAUNCH_PDL=pdl,
        EARLY_TRIGGER=BLOCK_COLS <= DECODE_BLOCK,
        num_warps=num_warps,
        launch_pdl=pdl,
    )
    return out


def register_op(namespace="porter"):
    """rotary_neox as the custom op torch.ops.<namespace>.rotary_neox, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "rotary_neox(Tensor q, Tensor cos, Tensor sin) -> Tensor"
    return define_op(namespace, schema, rotary_neox)
