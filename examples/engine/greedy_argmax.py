"""Greedy sampling: the argmax token id of each row of logits, as int64."""

import torch

DIMS = {"num_tokens": 4, "vocab": 1000}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, vocab, dtype=dtype, device=device),)


def greedy(logits):
    return logits.argmax(dim=-1)


REFERENCE = greedy
