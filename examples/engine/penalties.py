"""vLLM's apply_penalties for presence and frequency: logits minus frequency * count minus presence * (count > 0), per request."""

import torch

DIMS = {"num_tokens": 4, "vocab": 300}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    logits = torch.randn(num_tokens, vocab, dtype=dtype, device=device)
    counts = torch.randint(0, 3, (num_tokens, vocab), dtype=torch.int32, device=device)
    presence = torch.rand(num_tokens, dtype=torch.float32, device=device)
    frequency = torch.rand(num_tokens, dtype=torch.float32, device=device)
    return logits, counts, presence, frequency


def apply_penalties(logits, counts, presence, frequency):
    out = logits.float() - frequency[:, None] * counts
    out = out - presence[:, None] * (counts > 0)
    return out.to(logits.dtype)


REFERENCE = apply_penalties
