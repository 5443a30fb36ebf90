"""A linear layer with a fused bias + tanh-GELU epilogue (Inductor leaves the matmul to cuBLAS)."""

import torch
import torch.nn.functional as F

DIMS = {"num_tokens": 32, "in_features": 128, "out_features": 256}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, in_features, out_features, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, in_features, dtype=dtype, device=device)
    weight = torch.randn(out_features, in_features, dtype=dtype, device=device) / in_features**0.5
    bias = 0.1 * torch.randn(out_features, dtype=dtype, device=device)
    return x, weight, bias


def linear_gelu(x, weight, bias):
    return F.gelu(x @ weight.t() + bias, approximate="tanh")


REFERENCE = linear_gelu
