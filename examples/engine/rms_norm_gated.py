"""Gated RMSNorm as in Mamba2 / Qwen3-Next (vLLM layernorm_gated, norm_before_gate): RMSNorm(x) * weight * silu(z)."""

import torch

DIMS = {"num_tokens": 8, "hidden": 112}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    z = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = 1.0 + 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    return x, z, weight


def rms_norm_gated(x, z, weight, eps: float = 1e-5):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    return (y * torch.nn.functional.silu(z.float())).to(x.dtype)


REFERENCE = rms_norm_gated
