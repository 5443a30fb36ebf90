"""Per-row statistics returned beside the normalized rows: torch.var_mean over the hidden size (biased), then (x - mean) * rsqrt(var + eps)."""

import torch

DIMS = {"num_tokens": 6, "hidden": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)


def var_mean_rows(x, eps: float = 1e-5):
    var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps), mean, var


REFERENCE = var_mean_rows
