"""Sampling probabilities with a temperature per request (vLLM's Sampler): logits divided by each row's temperature, softmax in fp32."""

import torch

DIMS = {"num_tokens": 4, "vocab": 1000}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    logits = 3 * torch.randn(num_tokens, vocab, dtype=dtype, device=device)
    temperature = 0.5 + torch.rand(num_tokens, dtype=torch.float32, device=device)
    return logits, temperature


def temperature_softmax(logits, temperature):
    return torch.softmax(logits.float() / temperature[:, None], dim=-1)


REFERENCE = temperature_softmax
