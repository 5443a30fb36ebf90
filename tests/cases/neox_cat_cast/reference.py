"""Neox rotary computed in fp32 and concatenated, then cast back."""
import torch

DIMS = {"num_tokens": 5, "num_heads": 3, "head_dim": 16}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, num_heads, head_dim, dtype=torch.float32, device="cpu"):
    q = torch.randn(num_tokens, num_heads, head_dim, dtype=dtype, device=device)
    angle = torch.rand(num_tokens, head_dim // 2, device=device) * 6.28
    return q, angle.cos().to(dtype), angle.sin().to(dtype)


def neox_cat_cast(q, cos, sin):
    half = q.shape[-1] // 2
    x1, x2 = q[..., :half].float(), q[..., half:].float()
    c, s = cos[:, None, :].float(), sin[:, None, :].float()
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(q.dtype)


REFERENCE = neox_cat_cast
