"""Gemma's input embedding: the looked-up rows scaled by sqrt(hidden), rounded to the table's dtype first as the model does."""

import torch

DIMS = {"num_tokens": 10, "vocab": 40, "hidden": 48}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, vocab, hidden, dtype=torch.float32, device="cpu"):
    ids = torch.randint(0, vocab, (num_tokens,), dtype=torch.int64, device=device)
    table = torch.randn(vocab, hidden, dtype=dtype, device=device)
    return ids, table


def scaled_embedding(ids, table):
    normalizer = torch.tensor(table.shape[1] ** 0.5, dtype=table.dtype, device=table.device)
    return torch.nn.functional.embedding(ids, table) * normalizer


REFERENCE = scaled_embedding
