"""Partial rotary (GPT-NeoX / Phi rotary_dim < head_dim): the first rotary_dim channels of each head rotate NeoX-style, the rest pass through."""

import torch

DIMS = {"num_tokens": 6, "num_heads": 2, "head_dim": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]
ROTARY_FRACTION = 4  # rotary_dim = head_dim // 4


def make_inputs(num_tokens, num_heads, head_dim, dtype=torch.float32, device="cpu"):
    q = torch.randn(num_tokens, num_heads, head_dim, dtype=dtype, device=device)
    rot = head_dim // ROTARY_FRACTION
    angle = torch.rand(num_tokens, rot // 2, device=device) * 6.28
    return q, angle.cos().to(dtype), angle.sin().to(dtype)


def rotary_partial(q, cos, sin):
    rot = 2 * cos.shape[-1]
    q_rot, q_pass = q[..., :rot].float(), q[..., rot:]
    half = rot // 2
    x1, x2 = q_rot[..., :half], q_rot[..., half:]
    c, s = cos[:, None, :].float(), sin[:, None, :].float()
    rotated = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(q.dtype)
    return torch.cat([rotated, q_pass], dim=-1)


REFERENCE = rotary_partial
