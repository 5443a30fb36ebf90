"""Dynamic per-token symmetric int8 quantization: int8 values and one fp32 scale per token."""

import torch

DIMS = {"num_tokens": 16, "hidden": 1024}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)


def quant_int8(x: torch.Tensor):
    xf = x.float()
    scale = xf.abs().amax(dim=-1, keepdim=True).clamp(min=1e-10) / 127.0
    q = torch.round(xf / scale).clamp(-128, 127).to(torch.int8)
    return q, scale


REFERENCE = quant_int8
