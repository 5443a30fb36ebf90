"""GeGLU with the tanh GELU, as in vLLM's gelu_tanh_and_mul: gelu(x[..., :d]) * x[..., d:]."""

import torch
import torch.nn.functional as F

DIMS = {"num_tokens": 32, "intermediate": 512}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, intermediate, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, 2 * intermediate, dtype=dtype, device=device),)


def gelu_tanh_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.gelu(x[..., :d], approximate="tanh") * x[..., d:]


REFERENCE = gelu_tanh_and_mul
