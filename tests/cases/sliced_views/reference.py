"""Rows scaled by their max-abs, returned as three column slices of one result: the first 16 columns, columns 4 to 12, and the columns after 16."""

import torch

DIMS = {"num_tokens": 6, "hidden": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)


def sliced_views(x):
    y = x / (x.abs().amax(-1, keepdim=True) + 1e-6)
    return y[:, :16], y[:, 4:12], y[:, 16:]


REFERENCE = sliced_views
