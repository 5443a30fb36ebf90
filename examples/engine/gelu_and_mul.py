"""vLLM's gelu_and_mul (exact, erf GELU): gelu(x[:, :d]) * x[:, d:]."""

import torch

DIMS = {"num_tokens": 6, "intermediate": 72}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]


def make_inputs(num_tokens, intermediate, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, 2 * intermediate, dtype=dtype, device=device),)


def gelu_and_mul(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.gelu(x[..., :d]) * x[..., d:]


REFERENCE = gelu_and_mul
