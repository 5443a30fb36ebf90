"""ALiBi (HF bloom / vLLM): per-head slopes 2^(-8 h / H) and a bias slope * (k - q) added to attention scores, scaled by a float."""

import math
import torch

DIMS = {"batch": 2, "num_heads": 6, "q_len": 5, "k_len": 7}
DYNAMIC = ["batch"]
DTYPES = ["float32", "float16"]


def make_inputs(batch, num_heads, q_len, k_len, dtype=torch.float32, device="cpu"):
    scores = torch.randn(batch, num_heads, q_len, k_len, dtype=dtype, device=device)
    return (scores,)


def alibi_scores(scores, scale: float = 0.125, max_bias: float = 8.0):
    num_heads = scores.shape[1]
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2.0 ** (-(max_bias / closest))
    powers = torch.arange(1, closest + 1, device=scores.device, dtype=torch.float32)
    slopes = torch.pow(torch.tensor(base, device=scores.device), powers)
    if closest != num_heads:
        extra_base = 2.0 ** (-(max_bias / (2 * closest)))
        n_extra = num_heads - closest
        extra_powers = torch.arange(1, 1 + 2 * n_extra, 2, device=scores.device, dtype=torch.float32)
        slopes = torch.cat([slopes, torch.pow(torch.tensor(extra_base, device=scores.device), extra_powers)])
    q_len, k_len = scores.shape[-2], scores.shape[-1]
    rel = (torch.arange(k_len, device=scores.device)[None, :]
           - torch.arange(q_len, device=scores.device)[:, None] - (k_len - q_len))
    bias = slopes[:, None, None] * rel[None].float()
    return (scores.float() * scale + bias[None]).to(scores.dtype)


REFERENCE = alibi_scores
