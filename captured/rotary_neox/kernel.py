"""NeoX-style rotary embedding on queries: tokens x heads x head_dim, cos/sin per token.

Ported by porter 0.1.0 from rotary_neox.py::rotary_neox.
Inductor kernel(s): triton_poi_fused_mul_slice_sub_unsqueeze_0, triton_poi_fused_add_mul_slice_unsqueeze_1.
Captured with torch 2.13.0+cpu, triton 3.9.0 on codegen-only Triton target cuda:90 (no GPU; nothing executed by Inductor), 2026-11-30.

What porter changed:
- dropped Inductor's @triton_heuristics decorator and its meta
- widened the program id to int64 before any offset arithmetic
- named arguments after what they are bound to; per-call sizes are runtime ints in do_not_specialize, per-model sizes constexpr, row strides int64 arguments
- loads upcast to fp32, stores cast to the output's element type (fp32/fp16/bf16 alike)
- renamed index variables and temporaries after what they hold
- pointwise kernels run on (rows, column blocks) tiles: no 64-bit % and // per element, contiguous columns the compiler can vectorize
- fused 2 pointwise kernels that read the same inputs into one launch (each input read once from memory)
- issued the fused kernels' loads before their stores, so that loads of one address under one mask compile to one
- on Hopper and later GPUs the kernels launch with programmatic dependent launch: each waits for the kernel before it, then lets the next one launch (a pointwise kernel's blocks over long rows once their loads are issued)
"""

import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_rows"])
def rotary_neox_kernel(
    q_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    num_rows,
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
    if LAUNCH_PDL:
        # wait for the kernel before this one; a block of a few columns lets the next one launch now
        tl.extra.cuda.gdc_wait()
        if EARLY_TRIGGER:
            tl.extra.cuda.gdc_launch_dependents()
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_rows) & (cols < head_dim_div_2)
    x2 = rows // num_heads
    q = tl.load(
        q_ptr + (cols + rows * q_stride1), mask, eviction_policy="evict_last"
    ).to(tl.float32)
    cos = tl.load(
        cos_ptr + (cols + x2 * cos_stride0), mask, eviction_policy="evict_last"
    ).to(tl.float32)
    q_2 = tl.load(
        q_ptr + (head_dim_div_2 + cols + rows * q_stride1),
        mask,
        eviction_policy="evict_last",
    ).to(tl.float32)
    sin = tl.load(
        sin_ptr + (cols + x2 * sin_stride0), mask, eviction_policy="evict_last"
    ).to(tl.float32)
    tmp2 = q * cos
    tmp5 = q_2 * sin
    tmp6 = tmp2 - tmp5
    mask_2 = (rows < num_rows) & (cols < head_dim_minus_head_dim_div_2)
    q_3 = tl.load(
        q_ptr + (head_dim_div_2 + cols + rows * q_stride1),
        mask_2,
        eviction_policy="evict_last",
    ).to(tl.float32)
    cos_2 = tl.load(
        cos_ptr + (cols + x2 * cos_stride0), mask_2, eviction_policy="evict_last"
    ).to(tl.float32)
    q_4 = tl.load(
        q_ptr + (cols + rows * q_stride1), mask_2, eviction_policy="evict_last"
    ).to(tl.float32)
    sin_2 = tl.load(
        sin_ptr + (cols + x2 * sin_stride0), mask_2, eviction_policy="evict_last"
    ).to(tl.float32)
    if LAUNCH_PDL:
        if not EARLY_TRIGGER:
            # a block over a long row lets the next kernel launch once its loads are issued
            tl.extra.cuda.gdc_launch_dependents()
    tl.store(
        out_ptr + (cols + rows * out_stride1), tmp6.to(out_ptr.dtype.element_ty), mask
    )
    tmp2_2 = q_3 * cos_2
    tmp5_2 = q_4 * sin_2
    tmp6_2 = tmp2_2 + tmp5_2
    tl.store(
        out_ptr_2 + (cols + rows * out_stride1_2),
        tmp6_2.to(out_ptr_2.dtype.element_ty),
        mask_2,
    )


# Elements of a block at decode sizes (tile_settings). A tile kernel launched
# with programmatic dependent launch lets the next kernel launch right after
# its wait where its block spans at most this many columns, and after its
# loads where it spans a longer row. Inside a CUDA graph of 20 calls on an
# H200, silu_and_mul and gelu_tanh_and_mul (bf16, 4096 columns) took 0.81-0.84
# of the time of triggering first that way at 256 tokens; triggering after the
# loads took 1.12-1.21 of it at 64 tokens (decode-sized blocks), and 1.17 for
# rotary_neox's blocks of 16 rows of 64 at 4096 tokens in bf16
# (docs/benchmarks/NOTES.md).
DECODE_BLOCK = 512


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
        block_cols = min(block_cols, DECODE_BLOCK)
        return DECODE_BLOCK // block_cols, block_cols, 8 if heavy else 4
    block_cols = min(block_cols, 1024 if heavy and elem_bytes <= 2 else 4096)
    block_rows = max(1, 1024 // block_cols)
    warps = block_rows * block_cols * elem_bytes // 512
    return block_rows, block_cols, min(32, max(4, warps))


def strided_as(t, strides):
    """t where its strides are those the kernels index it with (None: any) on
    every axis longer than one, else a contiguous copy of it. `strides` may
    be a function of the tensor (strides given by its own other strides)."""
    want = strides(t) if callable(strides) else strides
    if t.numel() == 0 or all(
        s is None or n <= 1 or t.stride(i) == s
        for i, (n, s) in enumerate(zip(t.shape, want))
    ):
        return t
    t = t.contiguous()
    want = strides(t) if callable(strides) else strides
    if not all(
        s is None or n <= 1 or t.stride(i) == s
        for i, (n, s) in enumerate(zip(t.shape, want))
    ):
        raise NotImplementedError(
            f"the kernels index a tensor with strides {strides}, which a "
            f"{tuple(t.shape)} tensor cannot have; re-capture with this layout"
        )
    return t


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


def rotary_neox(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """Same arguments and outputs as the reference rotary_neox."""
    if (q.dim(), cos.dim(), sin.dim()) != (3, 2, 2):
        raise NotImplementedError(
            "captured with q 3-d, cos 2-d, sin 2-d; re-capture with the ranks you need"
        )
    num_tokens = q.shape[0]
    num_heads = q.shape[1]
    head_dim = q.shape[2]
    if cos.shape[0] != num_tokens or sin.shape[0] != num_tokens:
        raise NotImplementedError(
            "captured for shapes cos (q.shape[0], _), sin (q.shape[0], _); re-capture for other sizes"
        )
    q = strided_as(q, (head_dim * num_heads, None, 1))
    cos = cos if cos.stride(-1) == 1 else cos.contiguous()
    sin = sin if sin.stride(-1) == 1 else sin.contiguous()
    out = torch.empty_strided(
        (num_tokens, num_heads, head_dim),
        (head_dim * num_heads, head_dim, 1),
        dtype=q.dtype,
        device=q.device,
    )
    pdl = pdl_enabled(q.device)
    out_view0 = out.as_strided(
        (
            num_tokens,
            num_heads,
            head_dim + -1 * (head_dim // 2),
        ),
        (
            head_dim * num_heads,
            head_dim,
            1,
        ),
        out.storage_offset() + head_dim // 2,
    )
    BLOCK_ROWS, BLOCK_COLS, num_warps = tile_settings(
        num_heads * num_tokens,
        max((head_dim // 2), (head_dim + -1 * (head_dim // 2))),
        q.element_size(),
    )
    COL_BLOCKS = triton.cdiv(
        max((head_dim // 2), (head_dim + -1 * (head_dim // 2))), BLOCK_COLS
    )
    rotary_neox_kernel[(triton.cdiv(num_heads * num_tokens, BLOCK_ROWS) * COL_BLOCKS,)](
        q_ptr=q,
        cos_ptr=cos,
        sin_ptr=sin,
        out_ptr=out,
        num_rows=num_heads * num_tokens,
        q_stride1=q.stride(1),
        cos_stride0=cos.stride(0),
        sin_stride0=sin.stride(0),
        out_stride1=out.stride(1),
        head_dim_div_2=(head_dim // 2),
        num_heads=num_heads,
        out_ptr_2=out_view0,
        out_stride1_2=out_view0.stride(1),
        head_dim_minus_head_dim_div_2=(head_dim + -1 * (head_dim // 2)),
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
        COL_BLOCKS=COL_BLOCKS,
        LAUNCH_PDL=pdl,
        EARLY_TRIGGER=BLOCK_COLS <= DECODE_BLOCK,
        num_warps=num_warps,
        launch_pdl=pdl,
    )
    return out
