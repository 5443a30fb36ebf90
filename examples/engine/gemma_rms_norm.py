"""Gemma's RMSNorm (vLLM GemmaRMSNorm): the weight is stored as an offset from one, x * rsqrt(mean(x^2) + eps) * (1 + w), all in fp32."""

import torch

DIMS = {"num_tokens": 8, "hidden": 120}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    return x, weight


def gemma_rms_norm(x, weight, eps: float = 1e-6):
    orig = x.dtype
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * (1.0 + weight.float())).to(orig)


REFERENCE = gemma_rms_norm
