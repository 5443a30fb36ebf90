"""vLLM's static_scaled_fp8_quant: x / scale, clamped to float8_e4m3fn's range, with one fp32 scale for the tensor."""

import torch

DIMS = {"num_tokens": 8, "hidden": 128}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]

FP8_MAX = 448.0


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = 4 * torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    scale = torch.tensor([0.05], dtype=torch.float32, device=device)
    return x, scale


def static_fp8_quant(x, scale):
    q = (x.float() / scale).clamp(-FP8_MAX, FP8_MAX)
    return q.to(torch.float8_e4m3fn)


REFERENCE = static_fp8_quant
