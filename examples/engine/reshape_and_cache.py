"""vLLM's reshape_and_cache_flash: write each token's key and value into a paged KV cache at the slot slot_mapping gives (block * block_size + offset), in place."""

import torch

DIMS = {"num_tokens": 6, "num_kv_heads": 2, "head_dim": 32, "num_blocks": 4, "block_size": 8}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]


def make_inputs(num_tokens, num_kv_heads, head_dim, num_blocks, block_size, dtype=torch.float32, device="cpu"):
    key = torch.randn(num_tokens, num_kv_heads, head_dim, dtype=dtype, device=device)
    value = torch.randn(num_tokens, num_kv_heads, head_dim, dtype=dtype, device=device)
    shape = (num_blocks, block_size, num_kv_heads, head_dim)
    key_cache = torch.randn(shape, dtype=dtype, device=device)
    value_cache = torch.randn(shape, dtype=dtype, device=device)
    slots = num_blocks * block_size
    slot_mapping = torch.randperm(slots, device=device)[:num_tokens] if num_tokens <= slots else None
    if slot_mapping is None:
        slot_mapping = torch.arange(num_tokens, device=device) % slots
    return key, value, key_cache, value_cache, slot_mapping.to(torch.int64)


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping):
    heads, dim = key.shape[1], key.shape[2]
    key_cache.view(-1, heads, dim).index_copy_(0, slot_mapping, key)
    value_cache.view(-1, heads, dim).index_copy_(0, slot_mapping, value)
    return key_cache, value_cache


REFERENCE = reshape_and_cache
