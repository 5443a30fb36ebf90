"""Residual add then LayerNorm, returning the normalized value and the new residual."""

import torch
import torch.nn.functional as F

DIMS = {"num_tokens": 32, "hidden": 768}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    residual = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = 1.0 + 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    bias = 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    return x, residual, weight, bias


def add_layernorm(x, residual, weight, bias, eps: float = 1e-5):
    hidden = x + residual
    out = F.layer_norm(hidden, (hidden.shape[-1],), weight, bias, eps)
    return out, hidden


REFERENCE = add_layernorm
