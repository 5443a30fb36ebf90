"""vLLM's fatrelu_and_mul (MiniCPM): gate values at or below a threshold become zero, then gate * up."""

import torch

DIMS = {"num_tokens": 6, "intermediate": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, intermediate, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, 2 * intermediate, dtype=dtype, device=device),)


def fatrelu_and_mul(x, threshold: float = 0.1):
    d = x.shape[-1] // 2
    gate = x[..., :d]
    gate = torch.where(gate > threshold, gate, torch.zeros_like(gate))
    return gate * x[..., d:]


REFERENCE = fatrelu_and_mul
