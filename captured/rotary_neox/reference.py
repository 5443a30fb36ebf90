"""NeoX-style rotary embedding on queries: tokens x heads x head_dim, cos/sin per token."""

import torch

DIMS = {"num_tokens": 16, "num_heads": 4, "head_dim": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, num_heads, head_dim, dtype=torch.float32, device="cpu"):
    q = torch.randn(num_tokens, num_heads, head_dim, dtype=dtype, device=device)
    angle = torch.rand(num_tokens, head_dim // 2, device=device) * 6.28
    return q, angle.cos().to(dtype), angle.sin().to(dtype)


def rotary_neox(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = q.shape[-1] // 2
    q1, q2 = q[..., :half].float(), q[..., half:].float()
    c, s = cos[:, None, :].float(), sin[:, None, :].float()
    return torch.cat([q1 * c - q2 * s, q2 * c + q1 * s], dim=-1).to(q.dtype)


REFERENCE = rotary_neox
