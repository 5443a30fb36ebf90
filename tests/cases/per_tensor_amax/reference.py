"""vLLM's dynamic_scaled_fp8_quant: one fp32 scale for the whole tensor (its absmax / 448), then x / scale in float8_e4m3fn."""

import torch

DIMS = {"num_tokens": 8, "hidden": 96}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)


def per_tensor_fp8_quant(x):
    xf = x.float()
    scale = (xf.abs().amax() / 448.0).clamp(min=1e-12)
    q = (xf / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return q, scale.reshape(1)


REFERENCE = per_tensor_fp8_quant
