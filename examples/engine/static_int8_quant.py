"""vLLM's static_scaled_int8_quant: round(x / scale) clamped to [-128, 127], one fp32 scale."""

import torch

DIMS = {"num_tokens": 8, "hidden": 100}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = 3 * torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    scale = torch.tensor([0.03], dtype=torch.float32, device=device)
    return x, scale


def static_int8_quant(x, scale):
    return torch.round(x.float() / scale).clamp(-128, 127).to(torch.int8)


REFERENCE = static_int8_quant
