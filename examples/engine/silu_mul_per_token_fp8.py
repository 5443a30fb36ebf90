"""vLLM's fused silu_and_mul + per-token fp8 quant (the MLP's activation feeding an fp8 down projection): silu(gate) * up, then a per-token absmax scale."""

import torch

DIMS = {"num_tokens": 6, "intermediate": 96}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, intermediate, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, 2 * intermediate, dtype=dtype, device=device),)


def silu_mul_fp8(x):
    d = x.shape[-1] // 2
    y = (torch.nn.functional.silu(x[..., :d]) * x[..., d:]).float()
    scale = (y.abs().amax(dim=-1, keepdim=True) / 448.0).clamp(min=1e-12)
    return (y / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale


REFERENCE = silu_mul_fp8
