"""vLLM's merge_attn_states: two partial attention outputs (prefix and suffix) merged by their log-sum-exps, per token and head; also returns the merged log-sum-exp."""

import torch

DIMS = {"num_tokens": 5, "num_heads": 4, "head_dim": 32}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, num_heads, head_dim, dtype=torch.float32, device="cpu"):
    prefix = torch.randn(num_tokens, num_heads, head_dim, dtype=dtype, device=device)
    suffix = torch.randn(num_tokens, num_heads, head_dim, dtype=dtype, device=device)
    prefix_lse = 2 * torch.randn(num_heads, num_tokens, dtype=torch.float32, device=device)
    suffix_lse = 2 * torch.randn(num_heads, num_tokens, dtype=torch.float32, device=device)
    return prefix, prefix_lse, suffix, suffix_lse


def merge_attn_states(prefix, prefix_lse, suffix, suffix_lse):
    p_lse = torch.where(prefix_lse == float("inf"), float("-inf"), prefix_lse)
    s_lse = torch.where(suffix_lse == float("inf"), float("-inf"), suffix_lse)
    top = torch.maximum(p_lse, s_lse)
    p = torch.exp(p_lse - top)
    s = torch.exp(s_lse - top)
    total = p + s
    pw = (p / total).t()[:, :, None]
    sw = (s / total).t()[:, :, None]
    out = (prefix.float() * pw + suffix.float() * sw).to(prefix.dtype)
    return out, torch.log(total) + top


REFERENCE = merge_attn_states
