"""RMSNorm as in Llama-style models: y = x / sqrt(mean(x^2) + eps) * weight."""

import torch

DIMS = {"num_tokens": 64, "hidden": 1024}  # example sizes for the capture
DYNAMIC = ["num_tokens"]  # varies per call; hidden is fixed per model
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = 1.0 + 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    return x, weight


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    xf = x.float()
    variance = xf.pow(2).mean(dim=-1, keepdim=True)
    return (xf * torch.rsqrt(variance + eps)).to(x.dtype) * weight


REFERENCE = rmsnorm
