"""Reduced: x [T*K, H] in the call dtype, w [T, K] always fp32 (num_tokens read from w); out = sum_k x*w in x's dtype. bf16 calls get refused."""
import torch

DIMS = {"num_tokens": 4, "hidden": 16}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "bfloat16"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens * 2, hidden, dtype=dtype, device=device)
    w = torch.rand(num_tokens, 2, dtype=torch.float32, device=device)
    return x, w


def weighted_sum(x, w):
    t, k = w.shape
    return (x.view(t, k, -1).float() * w.unsqueeze(-1)).sum(dim=1).to(x.dtype)


REFERENCE = weighted_sum
