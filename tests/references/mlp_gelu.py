"""Two linear layers, tanh-GELU between them and SiLU after."""

import torch
import torch.nn.functional as F

DIMS = {"num_tokens": 32, "hidden": 64, "inter": 128}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "bfloat16"]


def make_inputs(num_tokens, hidden, inter, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    w1 = torch.randn(inter, hidden, dtype=dtype, device=device) / hidden**0.5
    b1 = 0.1 * torch.randn(inter, dtype=dtype, device=device)
    w2 = torch.randn(hidden, inter, dtype=dtype, device=device) / inter**0.5
    return x, w1, b1, w2


def mlp_gelu(x, w1, b1, w2):
    return F.silu(F.gelu(x @ w1.t() + b1, approximate="tanh") @ w2.t())


REFERENCE = mlp_gelu
