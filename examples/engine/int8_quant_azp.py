"""vLLM's dynamic asymmetric int8 quantization (scaled_int8_quant with azp): per token, scale = (max - min) / 255 and an int32 zero point."""

import torch

DIMS = {"num_tokens": 8, "hidden": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device) + 0.5,)


def int8_quant_azp(x):
    xf = x.float()
    hi = xf.amax(dim=-1, keepdim=True)
    lo = xf.amin(dim=-1, keepdim=True)
    scale = ((hi - lo) / 255.0).clamp(min=1e-10)
    azp = torch.round(-128.0 - lo / scale).to(torch.int32)
    q = (torch.round(xf / scale) + azp).clamp(-128, 127).to(torch.int8)
    return q, scale, azp


REFERENCE = int8_quant_azp
