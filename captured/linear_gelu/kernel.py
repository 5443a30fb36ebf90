"""A linear layer with a fused bias + tanh-GELU epilogue: the matmul stays an extern call.

Ported by porter 0.1.0 from linear_gelu.py::linear_gelu.
Inductor kernel(s): triton_poi_fused_gelu_0.
Captured with torch 2.13.0+cpu, triton 3.9.0 on codegen-only Triton target cuda:90 (no GPU; nothing executed by Inductor), 2026-11-30.

What porter changed:
- dropped Inductor's @triton_heuristics decorator and its meta
- turned 4 tl.full constant(s) into typed literals
- folded 1 plain copies
- widened the program id to int64 before any offset arithmetic
- named arguments after what they are bound to; per-call sizes are runtime ints in do_not_specialize, per-model sizes constexpr, row strides int64 arguments
- loads upcast to fp32, stores cast to the output's element type (fp32/fp16/bf16 alike)
- renamed index variables and temporaries after what they hold
- pointwise kernels run on (rows, column blocks) tiles: no 64-bit % and // per element, contiguous columns the compiler can vectorize
- 2-byte outputs: the matmul runs without its bias, which the kernel after it adds (as Inductor does on a GPU); fp32 keeps cuBLAS's addmm
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


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
    tmp1 = 0.5
    tmp2 = out * tmp1
    tmp3 = out * out
    tmp4 = tmp3 * out
    tmp5 = 0.044715
    tmp6 = tmp4 * tmp5
    tmp7 = out + tmp6
    tmp8 = 0.7978845608028654
    tmp9 = tmp7 * tmp8
    tmp10 = libdevice.tanh(tmp9)
    tmp11 = 1.0
    tmp12 = tmp10 + tmp11
    tmp13 = tmp2 * tmp12
    tl.store(out_ptr + offsets, tmp13.to(out_ptr.dtype.element_ty), mask)


def tile_settings(num_rows, row_size, elem_bytes=2, heavy=False):
    """(rows, columns, warps) of a block of a (rows, column blocks) pointwise
    launch: up to 4096 columns of a row, or several short rows making 1024
    elements, 16 bytes a thread (8 bf16 or 4 fp32 elements: fp32 rotary at
    16384-65536 tokens took 0.79-0.91 of the time with 8 elements a thread).
    At decode sizes (2^18 elements or fewer) blocks of 512 elements, 4 warps:
    more programs for few rows.
    heavy: the kernel calls libdevice (tanh, erf). Its threads wait on
    arithmetic more than on memory, so up to 2^19 elements it takes two
    elements a thread (blocks of 512, 8 warps); above that, in 2-byte dtypes,
    blocks of 1024 columns with 4 warps. One switch, as for the others: a
    warmup at decode sizes and at the largest batch compiles both sides.
    gelu_tanh_and_mul at 1-64 tokens of 4096 (bf16, fp16, fp32) and 1-32 of
    11008 (bf16) took 0.88-0.97 of the time of 512 with 4 warps, or of 1024
    with 4 above 2^18 (kernel time inside a CUDA graph of 20 launches); from
    4096 tokens, 1024 columns with 4 warps took 0.95-0.96 of 4096 columns'
    time in bf16 (silu_and_mul, which calls none, lost 2-4% that way).
    Measured on an H200, docs/benchmarks/NOTES.md."""
    block_cols = triton.next_power_of_2(row_size)
    elements = num_rows * row_size
    if elements <= (1 << 19 if heavy else 1 << 18):
        block_cols = min(block_cols, 512)
        return 512 // block_cols, block_cols, 8 if heavy else 4
    block_cols = min(block_cols, 1024 if heavy and elem_bytes <= 2 else 4096)
    block_rows = max(1, 1024 // block_cols)
    warps = block_rows * block_cols * elem_bytes // 512
    return block_rows, block_cols, min(32, max(4, warps))


def reinterpret(t, size, stride, offset):
    """A view of t's elements as Inductor's wrapper laid them out (it assumed a
    contiguous tensor); offset counts from t's first element, not its storage."""
    t = t.contiguous()
    return t.as_strided(size, stride, t.storage_offset() + offset)


def linear_gelu(x, weight, bias):
    """Same arguments and outputs as the reference linear_gelu."""
    weight = weight if weight.stride(-1) == 1 else weight.contiguous()
    x = x if x.stride(-1) == 1 else x.contiguous()
    bias = bias if bias.stride(-1) == 1 else bias.contiguous()
    num_tokens = x.shape[0]
    in_features = x.shape[1]
    out_features = weight.shape[0]
    out = torch.empty_strided(
        (num_tokens, out_features),
        (out_features, 1),
        dtype=weight.dtype,
        device=weight.device,
    )
    # 2-byte outputs: the bias is added in the kernel below, as Inductor does on
    # a GPU; cuBLAS's bias epilogue took up to 1.1x the time on an H200. fp32
    # keeps addmm: cuBLAS's plain fp32 matmul took 7.7x its time at 16 rows
    # (docs/benchmarks/NOTES.md).
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
    # less only at 1-16 tokens of 4096 -> 4096 (docs/benchmarks/NOTES.md).
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
