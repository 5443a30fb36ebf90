"""TensorRT-LLM's add-bias-residual LayerNorm: x + bias + residual, then LayerNorm; returns the normalized output and the pre-norm sum."""

import torch

DIMS = {"num_tokens": 6, "hidden": 80}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    residual = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    bias = 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    gamma = 1.0 + 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    beta = 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    return x, residual, bias, gamma, beta


def add_bias_residual_layernorm(x, residual, bias, gamma, beta, eps: float = 1e-5):
    summed = x + bias + residual
    y = torch.nn.functional.layer_norm(
        summed.float(), (summed.shape[-1],), gamma.float(), beta.float(), eps
    )
    return y.to(x.dtype), summed


REFERENCE = add_bias_residual_layernorm
