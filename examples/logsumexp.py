"""Row logsumexp in fp32, as used for log-probabilities over a vocabulary."""

import torch

DIMS = {"num_tokens": 8, "vocab": 4096}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    return (4.0 * torch.randn(num_tokens, vocab, dtype=dtype, device=device),)


def logsumexp(logits: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(logits.float(), dim=-1)


REFERENCE = logsumexp
