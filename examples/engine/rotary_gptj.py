"""GPT-J style (interleaved) rotary embedding, as vLLM's is_neox_style=False: pairs (x[2i], x[2i+1]) rotated by cos/sin per token."""

import torch

DIMS = {"num_tokens": 6, "num_heads": 3, "head_dim": 32}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, num_heads, head_dim, dtype=torch.float32, device="cpu"):
    q = torch.randn(num_tokens, num_heads, head_dim, dtype=dtype, device=device)
    angle = torch.rand(num_tokens, head_dim // 2, device=device) * 6.28
    return q, angle.cos().to(dtype), angle.sin().to(dtype)


def rotary_gptj(q, cos, sin):
    x1 = q[..., 0::2].float()
    x2 = q[..., 1::2].float()
    c, s = cos[:, None, :].float(), sin[:, None, :].float()
    out = torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
    return out.flatten(-2).to(q.dtype)


REFERENCE = rotary_gptj
