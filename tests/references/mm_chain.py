"""Two matmuls back to back, the second with a bias and GELU."""

import torch
import torch.nn.functional as F

DIMS = {"num_tokens": 32, "hidden": 64, "inter": 96}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "bfloat16"]


def make_inputs(num_tokens, hidden, inter, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    w1 = torch.randn(hidden, hidden, dtype=dtype, device=device) / hidden**0.5
    w2 = torch.randn(inter, hidden, dtype=dtype, device=device) / hidden**0.5
    b2 = 0.1 * torch.randn(inter, dtype=dtype, device=device)
    return x, w1, w2, b2


def mm_chain(x, w1, w2, b2):
    return F.gelu((x @ w1.t()) @ w2.t() + b2, approximate="tanh")


REFERENCE = mm_chain
