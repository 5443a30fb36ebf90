"""MoE routing as vLLM's fused_topk: softmax over the experts' logits in fp32, the top k weights renormalized to sum to one, and their expert ids as int32."""

import torch

DIMS = {"num_tokens": 8, "num_experts": 16}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]
TOP_K = 2


def make_inputs(num_tokens, num_experts, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, num_experts, dtype=dtype, device=device),)


def fused_topk(gating_output):
    probs = torch.softmax(gating_output.float(), dim=-1)
    weights, ids = torch.topk(probs, TOP_K, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)


REFERENCE = fused_topk
