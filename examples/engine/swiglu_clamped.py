"""gpt-oss's clamped SwiGLU (vLLM swigluoai_and_mul): gate clamped above at limit, up clamped to [-limit, limit], out = (up + 1) * gate * sigmoid(alpha * gate); gate and up interleaved."""

import torch

DIMS = {"num_tokens": 6, "intermediate": 88}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, intermediate, dtype=torch.float32, device="cpu"):
    return (4 * torch.randn(num_tokens, 2 * intermediate, dtype=dtype, device=device),)


def swiglu_oai(x, alpha: float = 1.702, limit: float = 7.0):
    gate, up = x[..., ::2].float(), x[..., 1::2].float()
    gate = gate.clamp(max=limit)
    up = up.clamp(min=-limit, max=limit)
    return ((up + 1) * gate * torch.sigmoid(alpha * gate)).to(x.dtype)


REFERENCE = swiglu_oai
