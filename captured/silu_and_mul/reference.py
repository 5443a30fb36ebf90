"""SwiGLU activation as in vLLM's silu_and_mul: silu(x[..., :d]) * x[..., d:]."""

import torch
import torch.nn.functional as F

DIMS = {"num_tokens": 32, "intermediate": 512}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, intermediate, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, 2 * intermediate, dtype=dtype, device=device),)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


REFERENCE = silu_and_mul
