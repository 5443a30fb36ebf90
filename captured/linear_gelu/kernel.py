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
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit(do_not_specialize=["numel"])
def linear_gelu_kernel(out_ptr, numel, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    mask = offsets < numel
    out = tl.load(out_ptr + offsets, mask).to(tl.float32)
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


def flat_settings(numel, block, warps, heavy=False):
    """(block, warps) of a 1-D pointwise launch over numel elements: the
    capture's choice (block, warps) above decode sizes; up to them
    (tile_settings' bound) blocks of 512, with 8 warps where the kernel calls
    libdevice, so that a few hundred elements do not leave most lanes of a
    larger block computing masked ones. On the H200 linear_gelu's epilogue
    over 256 elements in blocks of 1024 (8 a thread, 29 registers) ran 1.6 us
    against Inductor's 1.08 with blocks of 256 (profiler, call AK); the 2-D
    gelu launch took 0.88-0.97 of its time with tile_settings' rule
    (docs/benchmarks/NOTES.md; the rule is not yet timed on 1-D launches).
    One switch: a warmup at decode sizes and at the largest batch compiles
    both sides."""
    if numel <= (1 << 19 if heavy else 1 << 18):
        return 512, 8 if heavy else 4
    return block, warps


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
    torch.addmm(
        bias,
        x,
        reinterpret(weight, (in_features, out_features), (1, in_features), 0),
        alpha=1,
        beta=1,
        out=out,
    )
    BLOCK_SIZE, num_warps = flat_settings(
        (out_features * num_tokens), 1024, 4, heavy=True
    )
    linear_gelu_kernel[(triton.cdiv((out_features * num_tokens), BLOCK_SIZE),)](
        out_ptr=out,
        numel=(out_features * num_tokens),
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return out
