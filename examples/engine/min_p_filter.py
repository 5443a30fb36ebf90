"""min-p sampling (vLLM's apply_min_p): tokens whose probability is under min_p times the row's largest are masked to -inf."""

import torch

DIMS = {"num_tokens": 4, "vocab": 500}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    logits = 2 * torch.randn(num_tokens, vocab, dtype=dtype, device=device)
    min_p = 0.05 + 0.2 * torch.rand(num_tokens, dtype=torch.float32, device=device)
    return logits, min_p


def apply_min_p(logits, min_p):
    probs = torch.softmax(logits.float(), dim=-1)
    top = probs.amax(dim=-1, keepdim=True)
    keep = probs >= min_p[:, None] * top
    return logits.masked_fill(~keep, float("-inf"))


REFERENCE = apply_min_p
