"""LayerNorm with weight and bias over an odd width (1000 features, as the issue's slow case), fp32 statistics."""

import torch

DIMS = {"num_tokens": 6, "hidden": 1000}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = 1.0 + 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    bias = 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    return x, weight, bias


def layer_norm(x, weight, bias, eps: float = 1e-5):
    return torch.nn.functional.layer_norm(
        x.float(), (x.shape[-1],), weight.float(), bias.float(), eps
    ).to(x.dtype)


REFERENCE = layer_norm
