"""Gemma 2's final logit soft-capping: cap * tanh(logits / cap) over the vocabulary."""

import torch

DIMS = {"num_tokens": 4, "vocab": 1000}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    return (20 * torch.randn(num_tokens, vocab, dtype=dtype, device=device),)


def softcap(logits, cap: float = 30.0):
    return (torch.tanh(logits.float() / cap) * cap).to(logits.dtype)


REFERENCE = softcap
