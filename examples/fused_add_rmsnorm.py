"""Fused residual add + RMSNorm, as in vLLM's fused_add_rms_norm: returns the normalized output and the new residual."""

import torch

DIMS = {"num_tokens": 32, "hidden": 1024}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    residual = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = 1.0 + 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    return x, residual, weight


def fused_add_rmsnorm(x, residual, weight, eps: float = 1e-6):
    hidden = x + residual
    h = hidden.float()
    out = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return out.to(x.dtype) * weight, hidden


REFERENCE = fused_add_rmsnorm
