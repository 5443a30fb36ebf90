"""DeepSeek-V3 style routing scores: sigmoid of the router logits plus a per-expert correction bias picks the experts; the weights are the plain sigmoid scores, renormalized and scaled."""

import torch

DIMS = {"num_tokens": 8, "num_experts": 32}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]
TOP_K = 4


def make_inputs(num_tokens, num_experts, dtype=torch.float32, device="cpu"):
    logits = torch.randn(num_tokens, num_experts, dtype=dtype, device=device)
    bias = 0.1 * torch.randn(num_experts, dtype=torch.float32, device=device)
    return logits, bias


def sigmoid_bias_routing(logits, bias, scale: float = 2.5):
    scores = torch.sigmoid(logits.float())
    _, ids = torch.topk(scores + bias, TOP_K, dim=-1)
    weights = scores.gather(1, ids)
    weights = weights / weights.sum(dim=-1, keepdim=True) * scale
    return weights, ids.to(torch.int32)


REFERENCE = sigmoid_bias_routing
