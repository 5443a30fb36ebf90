"""vLLM's rms_norm_static_fp8_quant (the fused norm + quant pass): RMSNorm(x) * weight, divided by a static scale and stored as float8_e4m3fn."""

import torch

DIMS = {"num_tokens": 8, "hidden": 128}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = 1.0 + 0.1 * torch.randn(hidden, dtype=dtype, device=device)
    scale = torch.tensor([0.02], dtype=torch.float32, device=device)
    return x, weight, scale


def rms_norm_static_fp8(x, weight, scale, eps: float = 1e-6):
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight
    return (y.float() / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)


REFERENCE = rms_norm_static_fp8
