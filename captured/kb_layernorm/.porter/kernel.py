"""LayerNorm with a learned weight and bias over the last dim (KernelBench format).

Ported by porter 0.1.0 from kb_layernorm.py::Model.
Inductor kernel(s): triton_per_fused_native_layer_norm_0.
Captured with torch 2.13.0+cpu, triton 3.9.0 on codegen-only Triton target cuda:90 (no GPU; nothing executed by Inductor), 2026-11-30.

What porter changed:
- dropped Inductor's @triton_heuristics decorator and its meta
- replaced 1 Inductor helper/libdevice call(s) by core ops or porter helpers
- turned 2 tl.full constant(s) into typed literals
- removed 2 no-op cast(s) / broadcast(s)
- folded 7 plain copies
- removed 2 dead alias(es) and unused value(s)
- widened the program id to int64 before any offset arithmetic
- named arguments after what they are bound to; per-call sizes are runtime ints in do_not_specialize, per-model sizes constexpr, row strides int64 arguments
- loads upcast to fp32, stores cast to the output's element type (fp32/fp16/bf16 alike)
- renamed index variables and temporaries after what they hold
- the rows' loads carry no evict_first hint, as Inductor's kernel compiled for a GPU has none
- on Hopper and later GPUs the kernels launch with programmatic dependent launch: each waits for the kernel before it, then lets the next one launch (a reduction's programs of several rows once their loads are issued)
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["batch"])
def model_kernel(
    x_ptr,
    ln_weight_ptr,
    ln_bias_ptr,
    out_ptr,
    batch,
    x_stride0: tl.int64,
    out_stride0: tl.int64,
    row_size: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
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
    row_mask = rows < batch
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    col_mask = cols < row_size
    x = tl.load(x_ptr + (cols + rows * x_stride0), col_mask & row_mask, other=0.0).to(
        tl.float32
    )
    ln_weight = tl.load(
        ln_weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    ln_bias = tl.load(
        ln_bias_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    if LAUNCH_PDL:
        if not EARLY_TRIGGER:
            # a program of several rows lets the next kernel launch once its loads are issued
            tl.extra.cuda.gdc_launch_dependents()
    tmp3 = tl.where(col_mask & row_mask, x, 0)
    row_sum = tl.sum(tmp3, 1)[:, None].to(tl.float32)
    tmp5 = 768.0
    tmp6 = row_sum / tmp5
    tmp7 = x - tmp6
    tmp8 = tmp7 * tmp7
    tmp11 = tl.where(col_mask & row_mask, tmp8, 0)
    row_sum_2 = tl.sum(tmp11, 1)[:, None].to(tl.float32)
    tmp13 = row_sum_2 / tmp5
    tmp14 = 1e-05
    tmp15 = tmp13 + tmp14
    rstd = tl.rsqrt(tmp15)
    tmp17 = tmp7 * rstd
    tmp19 = tmp17 * ln_weight
    tmp21 = tmp19 + ln_bias
    tl.store(
        out_ptr + (cols + rows * out_stride0),
        tmp21.to(out_ptr.dtype.element_ty),
        col_mask & row_mask,
    )


# Rows of 4096 that a row_only kernel reading them twice (reread: quant_int8)
# holds in registers keep 32 bytes a thread (8 warps in bf16, 16 in fp32) up
# to this many rows, 4 warps past them: on an H200 quant_int8 over 4096 held
# with 4 warps took 1.14-1.15 of the looped kernel's time at 1024 rows, with 8
# and 16 warps 0.94-0.98 at 1024-2048 (docs/benchmarks/NOTES.md). logsumexp
# fp32 over 4096, which reads its row twice but writes one value a row, took
# 1.10x with 16 warps at 4096 rows, and keeps the split at 512.
REREAD_MANY_WARPS_MAX_ROWS = 2048


def launch_settings(
    num_rows, row_size, elem_bytes=2, row_tensors=2, row_only=False, reread=False
):
    """(rows a program, block, warps) for a reduction over rows of row_size
    elements of elem_bytes each, of which the kernel reads and writes
    row_tensors (fused_add_rmsnorm: x, residual and its two outputs, 4).
    Narrow rows are packed to 4 KB a program (2048 bf16 elements) and at least
    two rows, as many warps as rows (Triton lays them out: over two rows of
    1024 both warps span each row, whose sums meet in shared memory), twice as
    many where the kernel reads nothing beside its rows (row_only: quant_int8
    fp32 1024 took 0.84-0.995 of the time of two warps at 1024-65536 rows,
    where kernels that also read a weight lost up to 13% or gained at most 3%
    that way), except at
    decode sizes (256 rows or fewer): one row a program, 512 bytes of it a
    warp; and except where a row moves 16 KB or more (all row_tensors
    together): one row a program and one warp, as Inductor runs them, with no
    shared memory (from 4096 rows the faster; at 1024 rows 5% slower, but one
    compiled variant fewer past the decode sizes). Programs of one warp start
    at most one every 1.2 ns on an H200 (65536 took 80 us over rows of
    512-1024 elements, bf16 or fp32), the time 5 KB take at the copy rate.
    Wider rows: one row, 32 bytes of it a thread up to 32 warps, except rows of
    4096 when there are many (4 warps: from 513 rows; where reread, from
    REREAD_MANY_WARPS_MAX_ROWS + 1). Measured fastest on an H200 with
    tools/launch_probe.py; the figures are in docs/benchmarks/NOTES.md."""
    block = triton.next_power_of_2(max(row_size, 1))  # an empty row: one masked block
    if block <= 1024 and num_rows <= 256:
        return 1, block, min(8, max(1, block * elem_bytes // 512))
    if block <= 1024 and row_size * elem_bytes * row_tensors >= 16384:
        return 1, block, 1
    if block <= 1024:
        rows = max(2, 4096 // (block * elem_bytes))
        return rows, block, min(rows * (2 if row_only else 1), 8)
    if block == 4096 and num_rows > (REREAD_MANY_WARPS_MAX_ROWS if reread else 512):
        return 1, block, 4
    return 1, block, min(32, block * elem_bytes // 1024)


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


class ModelNew(nn.Module):
    """Drop-in for the reference's Model: same constructor, parameters and buffers."""

    def __init__(self, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=eps)
        with torch.no_grad():
            self.ln.weight.add_(0.1 * torch.randn(normalized_shape))
            self.ln.bias.add_(0.1 * torch.randn(normalized_shape))

    def forward(self, x: torch.Tensor):
        if (x.dim(),) != (2,):
            raise NotImplementedError(
                "captured with x 2-d; re-capture with the ranks you need"
            )
        batch = x.shape[0]
        if (
            x.shape[1] != 768
            or self.ln.weight.shape != (768,)
            or self.ln.bias.shape != (768,)
        ):
            raise NotImplementedError(
                "captured for shapes x (_, 768), self.ln.weight (768,), self.ln.bias (768,); re-capture for other sizes"
            )
        ln_weight = (
            self.ln.weight
            if self.ln.weight.stride(-1) == 1
            else self.ln.weight.contiguous()
        )
        ln_bias = (
            self.ln.bias if self.ln.bias.stride(-1) == 1 else self.ln.bias.contiguous()
        )
        x = x if x.stride(-1) == 1 else x.contiguous()
        out = torch.empty_strided(
            (batch, 768), (768, 1), dtype=x.dtype, device=x.device
        )
        pdl = pdl_enabled(x.device)
        BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
            batch, 768, x.element_size(), row_tensors=2
        )
        model_kernel[(triton.cdiv(batch, BLOCK_ROWS),)](
            x_ptr=x,
            ln_weight_ptr=ln_weight,
            ln_bias_ptr=ln_bias,
            out_ptr=out,
            batch=batch,
            x_stride0=x.stride(0),
            out_stride0=out.stride(0),
            row_size=768,
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=BLOCK_COLS,
            LAUNCH_PDL=pdl,
            EARLY_TRIGGER=BLOCK_ROWS == 1,
            num_warps=num_warps,
            launch_pdl=pdl,
        )
        return out
