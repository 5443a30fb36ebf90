"""A linear layer with a fused bias + tanh-GELU epilogue (Inductor leaves the matmul to cuBLAS).

Ported by porter 0.1.0 from linear_gelu.py::linear_gelu.
Inductor kernel(s): triton_poi_fused_gelu_0.
Captured with torch 2.13.0+cpu, triton 3.9.0 on codegen-only Triton target cuda:90 (no GPU; nothing executed by Inductor), 2026-12-02.

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
- small matmuls: a second kernel computes the matmul's tile with tl.dot and applies the epilogue to it in registers (one launch, no round trip of the matmul's output); larger ones keep cuBLAS
- 1 + tanh(u) as 2 / (1 + exp(-2u)) (the same value: 2 * sigmoid(2u)), with exp_ftz and a fast division in place of libdevice's tanh
- exp as ex2.approx.ftz.f32 on NVIDIA GPUs (exp_ftz): tl.exp's own approximation, with results under 2^-126 flushed to 0
- on Hopper and later GPUs the kernels launch with programmatic dependent launch: each waits for the kernel before it, then lets the next one launch
"""

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
    # a looped kernel unrolls a row of two blocks itself (docs/benchmarks/NOTES.md).
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
    tmp1 = 0.5
    tmp2 = out * tmp1
    tmp3 = out * out
    tmp4 = tmp3 * out
    tmp5 = 0.044715
    tmp6 = tmp4 * tmp5
    tmp7 = out + tmp6
    tmp8 = 0.7978845608028654
    tmp9 = tmp7 * tmp8
    tmp12 = libdevice.fast_dividef(2.0, 1.0 + exp_ftz(-2.0 * tmp9))
    tmp13 = tmp2 * tmp12
    tl.store(out_ptr + offsets, tmp13.to(out_ptr.dtype.element_ty), mask)


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
    tmp1 = 0.5
    tmp2 = out * tmp1
    tmp3 = out * out
    tmp4 = tmp3 * out
    tmp5 = 0.044715
    tmp6 = tmp4 * tmp5
    tmp7 = out + tmp6
    tmp8 = 0.7978845608028654
    tmp9 = tmp7 * tmp8
    tmp12 = libdevice.fast_dividef(2.0, 1.0 + exp_ftz(-2.0 * tmp9))
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
    block_cols = triton.next_power_of_2(max(row_size, 1))
    elements = num_rows * row_size
    if elements <= (1 << 19 if heavy else 1 << 18):
        block_cols = min(block_cols, 512)
        return 512 // block_cols, block_cols, 8 if heavy else 4
    block_cols = min(block_cols, 1024 if heavy and elem_bytes <= 2 else 4096)
    block_rows = max(1, 1024 // block_cols)
    warps = block_rows * block_cols * elem_bytes // 512
    return block_rows, block_cols, min(32, max(4, warps))


# Up to these many rows and multiply-adds (rows x inner x columns), a matmul and
# its epilogue run as one Triton kernel instead of a cuBLAS call and the
# epilogue's kernel. Inside a CUDA graph of 20 calls on an H200, inputs rotated
# past the L2 cache, the one kernel took 0.48-0.64 of Inductor's time at 1-1024
# tokens of 128 -> 256 features (bf16, fp16); 0.90-0.91 at 1-16 tokens of 4096
# -> 4096 (2^28 at 16 tokens) but 1.08-1.28 at 64 (2^30), where cuBLAS's larger
# blocks win.
MATMUL_EPILOGUE_MAX_ROWS = 1024
MATMUL_EPILOGUE_MAX_MACS = 1 << 28
# Past MATMUL_EPILOGUE_MAX_ROWS rows the one kernel, in blocks of 64 rows
# (matmul_settings), still wins where the inner dimension is a few blocks: at
# 4096-16384 tokens it took 0.64-0.73 of cuBLAS and the epilogue's time over
# 128 inner features (256 out), 0.74-0.83 over 256 and 0.88-0.94 over 512
# (bf16), 0.57-0.62 over 128 in fp32; over 2048 it took 1.4-1.5x. By the
# output's element bytes, the largest inner size measured to win.
MATMUL_WIDE_MAX_INNER = {2: 512, 4: 128}
# fp32 operands go through tl.dot as three TF32 products a term ("tf32x3",
# about fp32's accuracy): 0.67-0.88 of Inductor's time at 1, 64, 256 and 1024
# tokens of 128 -> 256 (0.08 at 16, where its cuBLAS call took 33 us), 0.69 at
# 16 tokens of 4096 -> 4096. At one token cuBLAS's matrix-vector kernel is
# faster from 1024 -> 1024 (the kernel took 2.0x its time; 1.6-3.0x at 1024 to
# 2048 features, 1.47x at 4096 -> 4096): one row in tiles of 32 columns is
# out_features / 32 programs. So one fp32 row takes the kernel up to
# MATMUL_FP32_ONE_ROW_MAX_MACS multiply-adds, 128 -> 256, where it was measured
# to win (docs/benchmarks/NOTES.md).
MATMUL_FP32_ONE_ROW_MAX_MACS = 1 << 15


def matmul_in_one_kernel(num_rows, inner_size, num_cols, elem_bytes):
    """Whether a matmul of num_rows x inner_size by inner_size x num_cols, out
    in elem_bytes elements, and its epilogue run as one Triton kernel."""
    if num_rows > MATMUL_EPILOGUE_MAX_ROWS:
        return inner_size <= MATMUL_WIDE_MAX_INNER.get(elem_bytes, 0)
    if num_rows * inner_size * num_cols > MATMUL_EPILOGUE_MAX_MACS:
        return False
    if elem_bytes == 4:
        return num_rows > 1 or inner_size * num_cols <= MATMUL_FP32_ONE_ROW_MAX_MACS
    return elem_bytes == 2


def matmul_settings(num_rows, inner_size, elem_bytes=2):
    """(rows, columns, inner block, warps, stages) of a block of the
    matmul-and-epilogue kernel, measured on an H200 (docs/benchmarks/NOTES.md).
    Up to MATMUL_EPILOGUE_MAX_ROWS rows: 16 or 32 rows (tl.dot's least is 16)
    by 32 columns with 4 warps; many small blocks keep every SM busy there
    (blocks of up to 64 rows took 1.20-1.25x the time at 64-1024 tokens of 128
    -> 256 features, 64 columns 1.4-1.7x). Past them: 64 rows by 128 columns
    with 8 warps in 2-byte types (32 by 32 took 1.45x its time at 4096 tokens,
    1.9x at 16384), 64 by 64 with 4 warps in fp32. The inner block in 2-byte
    types: up to 128 in 4 stages; past the rows 64, in 2 stages (3 where the
    inner dimension is over 128). In fp32: 64 in 3 stages, 32 past the rows,
    so that shared memory leaves room for several programs an SM (32 by 32
    blocks taking 128 in 4 stages took 1.13-1.2x the time at 64-1024 tokens,
    2.8-3.4x at 4096-16384). fp32 keeps 32 columns up to 1024 rows: 64 were
    faster at 1024 (0.76x) but would compile a third variant mid-prefill."""
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


# Kernels on a GPU of compute capability 9.0 or later (Hopper) launch with
# programmatic dependent launch (launch_pdl=True, LAUNCH_PDL): each may start
# while the kernel before it in the stream drains, and waits for that kernel's
# writes before touching memory. Inside a CUDA graph of 20 calls on an H200,
# decode-sized calls took 0.66-0.85 of their time without it at 1-256 tokens
# (docs/benchmarks/NOTES.md). Triton's interpreter and older GPUs launch
# without it, and set_pdl turns it off.
_PDL_BY_DEVICE = {}
# What set_pdl asked for, by device; None: every device not named.
_PDL_WANTED = {None: True}


def set_pdl(enabled, device=None):
    """Launch this module's kernels with programmatic dependent launch (the
    default, where the GPU has it) or without, on one GPU ("cuda:0", or a
    tensor's .device) or, with device None, on every GPU, from the next call.
    Turn it off where an engine runs these kernels behind ones that never let
    the next kernel launch early (torch's elementwise kernels): there PDL only
    adds its wait, 0.21-0.32 µs a call on an H200 (docs/benchmarks/NOTES.md).
    Set it before warming up: LAUNCH_PDL is a constexpr, so each kernel
    compiles once more the first time it runs the other way."""
    if device is None:
        _PDL_WANTED.clear()
    else:
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            raise ValueError(
                "set_pdl: name the GPU with its index ('cuda:0'), or pass "
                "device=None for every GPU"
            )
    _PDL_WANTED[device] = bool(enabled)
    _PDL_BY_DEVICE.clear()


def pdl_enabled(device):
    """Whether kernels on this device launch with programmatic dependent launch
    (asked once a device: the launcher runs on every call). Never under
    Triton's interpreter (TRITON_INTERPRET=1), which has no gdc_wait, even for
    tensors on a Hopper GPU, nor where set_pdl turned it off."""
    if triton.knobs.runtime.interpret:
        return False
    if device not in _PDL_BY_DEVICE:
        where = torch.device(device)
        _PDL_BY_DEVICE[device] = (
            _PDL_WANTED.get(where, _PDL_WANTED[None])
            and where.type == "cuda"
            and torch.version.hip is None
            and torch.cuda.get_device_capability(where)[0] >= 9
        )
    return _PDL_BY_DEVICE[device]


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
