"""vLLM apply_top_p: sort, softmax, cumsum, mask tokens past top-p, scatter back."""
import torch
DIMS = {"num_tokens": 4, "vocab": 256}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "bfloat16"]
def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    logits = torch.randn(num_tokens, vocab, dtype=dtype, device=device)
    p = 0.5 + 0.4 * torch.rand(num_tokens, dtype=torch.float32, device=device)
    return logits, p
def top_p(logits, p):
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    top_p_mask = probs_sum <= 1 - p.unsqueeze(dim=1)
    top_p_mask[:, -1] = False
    logits_sort = logits_sort.masked_fill(top_p_mask, -float("inf"))
    return logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)
REFERENCE = top_p
