"""vLLM's rotary_embedding (NeoX style) with a cos_sin_cache indexed by positions: query and key of tokens x (heads * head_dim), rotated in place and returned."""

import torch

DIMS = {"num_tokens": 6, "num_heads": 4, "num_kv_heads": 2, "head_dim": 32, "max_position": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, num_heads, num_kv_heads, head_dim, max_position, dtype=torch.float32, device="cpu"):
    positions = torch.randint(0, max_position, (num_tokens,), dtype=torch.int64, device=device)
    query = torch.randn(num_tokens, num_heads * head_dim, dtype=dtype, device=device)
    key = torch.randn(num_tokens, num_kv_heads * head_dim, dtype=dtype, device=device)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    freqs = torch.arange(max_position, device=device).float()[:, None] * inv_freq[None, :]
    cos_sin_cache = torch.cat([freqs.cos(), freqs.sin()], dim=-1).to(dtype)
    return positions, query, key, cos_sin_cache


def _rotate(x, cos, sin, head_dim):
    x = x.view(x.shape[0], -1, head_dim)
    half = head_dim // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    return out.to(x.dtype).view(x.shape[0], -1)


def rotary_embedding(positions, query, key, cos_sin_cache):
    head_dim = cos_sin_cache.shape[1]
    cos, sin = cos_sin_cache[positions].float().chunk(2, dim=-1)
    cos, sin = cos[:, None, :], sin[:, None, :]
    query.copy_(_rotate(query, cos, sin, head_dim))
    key.copy_(_rotate(key, cos, sin, head_dim))
    return query, key


REFERENCE = rotary_embedding
