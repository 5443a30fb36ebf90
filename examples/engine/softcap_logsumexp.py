"""Soft-capped logits and their log-sum-exp (a sampler's log-probability normalizer after Gemma 2's cap)."""

import torch

DIMS = {"num_tokens": 4, "vocab": 1000}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    return (20 * torch.randn(num_tokens, vocab, dtype=dtype, device=device),)


def softcap_logsumexp(logits, cap: float = 30.0):
    capped = torch.tanh(logits.float() / cap) * cap
    return capped, torch.logsumexp(capped, dim=-1)


REFERENCE = softcap_logsumexp
