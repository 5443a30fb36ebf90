"""Reduced: cache.index_copy_(0, slots, x): a slot of -1 (vLLM padding) makes eager raise IndexError; the scaffold wraps it to the last slot and writes there."""
import torch

DIMS = {"num_tokens": 4, "hidden": 16, "num_slots": 8}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32"]


def make_inputs(num_tokens, hidden, num_slots, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    cache = torch.zeros(num_slots, hidden, dtype=dtype, device=device)
    slots = torch.arange(num_tokens, device=device) % num_slots
    return x, cache, slots.to(torch.int64)


def index_copy_rows(x, cache, slots):
    cache.index_copy_(0, slots, x)
    return cache


REFERENCE = index_copy_rows
