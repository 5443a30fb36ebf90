"""Row softmax with a temperature over vocabulary-wide rows, in fp32 as samplers do."""

import torch

DIMS = {"num_tokens": 4, "vocab": 32768}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "float16", "bfloat16"]


def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    return (4.0 * torch.randn(num_tokens, vocab, dtype=dtype, device=device),)


def softmax(logits: torch.Tensor, temperature: float = 0.7) -> torch.Tensor:
    return torch.softmax(logits.float() / temperature, dim=-1).to(logits.dtype)


REFERENCE = softmax
