"""vLLM's fused_add_rms_norm, in place: residual += x, then x = RMSNorm(residual) * weight; both tensors are updated and returned."""

import torch

DIMS = {"num_tokens": 8, "hidden": 96}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    residual = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = 1.0 + 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    return x, residual, weight


def fused_add_rms_norm_(x, residual, weight, eps: float = 1e-6):
    residual.add_(x)
    h = residual.float()
    normed = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    x.copy_(normed.to(x.dtype) * weight)
    return x, residual


REFERENCE = fused_add_rms_norm_
