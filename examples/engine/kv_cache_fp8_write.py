"""vLLM's reshape_and_cache with an fp8 KV cache (kv_cache_dtype="fp8"): keys divided by k_scale, stored as float8_e4m3fn at their slots, in place."""

import torch

DIMS = {"num_tokens": 6, "num_kv_heads": 2, "head_dim": 32, "num_slots": 24}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, num_kv_heads, head_dim, num_slots, dtype=torch.float32, device="cpu"):
    key = torch.randn(num_tokens, num_kv_heads, head_dim, dtype=dtype, device=device)
    cache = torch.zeros(num_slots, num_kv_heads, head_dim, dtype=torch.float8_e4m3fn, device=device)
    slots = torch.randperm(num_slots, device=device)[: min(num_tokens, num_slots)]
    slots = torch.cat([slots, torch.arange(num_tokens - slots.numel(), device=device) % num_slots])
    k_scale = torch.tensor([0.5], dtype=torch.float32, device=device)
    return key, cache, slots.to(torch.int64), k_scale


def cache_fp8(key, cache, slot_mapping, k_scale):
    quant = (key.float() / k_scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    # fp8 has no index_copy_ on the CPU: the same bytes, moved as uint8
    cache.view(torch.uint8).index_copy_(0, slot_mapping, quant.view(torch.uint8))
    return cache


REFERENCE = cache_fp8
