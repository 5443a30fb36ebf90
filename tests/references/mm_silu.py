"""x @ w.T through SiLU, no bias."""

import torch
import torch.nn.functional as F

DIMS = {"num_tokens": 32, "in_features": 96, "out_features": 160}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "bfloat16"]


def make_inputs(num_tokens, in_features, out_features, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, in_features, dtype=dtype, device=device)
    w = torch.randn(out_features, in_features, dtype=dtype, device=device) / in_features**0.5
    return x, w


def mm_silu(x, w):
    return F.silu(x @ w.t())


REFERENCE = mm_silu
