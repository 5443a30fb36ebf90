"""A token embedding lookup (vLLM VocabParallelEmbedding on one rank): int64 ids into a (vocab, hidden) table."""

import torch

DIMS = {"num_tokens": 10, "vocab": 50, "hidden": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float16", "float32"]


def make_inputs(num_tokens, vocab, hidden, dtype=torch.float32, device="cpu"):
    ids = torch.randint(0, vocab, (num_tokens,), dtype=torch.int64, device=device)
    table = torch.randn(vocab, hidden, dtype=dtype, device=device)
    return ids, table


def embedding(ids, table):
    return torch.nn.functional.embedding(ids, table)


REFERENCE = embedding
