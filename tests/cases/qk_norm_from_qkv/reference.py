"""Per-head RMSNorm of q and k taken as slices of a fused qkv projection (Qwen3 / OLMo2 q_norm, k_norm): q and k are views with a row stride of the whole qkv."""

import torch

DIMS = {"num_tokens": 6, "num_heads": 4, "num_kv_heads": 2, "head_dim": 32}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, num_heads, num_kv_heads, head_dim, dtype=torch.float32, device="cpu"):
    width = (num_heads + 2 * num_kv_heads) * head_dim
    qkv = torch.randn(num_tokens, width, dtype=dtype, device=device)
    q = qkv[:, : num_heads * head_dim].view(num_tokens, num_heads, head_dim)
    k = qkv[:, num_heads * head_dim : (num_heads + num_kv_heads) * head_dim].view(
        num_tokens, num_kv_heads, head_dim
    )
    q_weight = 1.0 + 0.1 * torch.randn(head_dim, dtype=dtype, device=device)
    k_weight = 1.0 + 0.1 * torch.randn(head_dim, dtype=dtype, device=device)
    return q, k, q_weight, k_weight


def _rms(t, w, eps):
    tf = t.float()
    return (tf * torch.rsqrt(tf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(t.dtype)


def qk_norm(q, k, q_weight, k_weight, eps: float = 1e-6):
    return _rms(q, q_weight, eps), _rms(k, k_weight, eps)


REFERENCE = qk_norm
