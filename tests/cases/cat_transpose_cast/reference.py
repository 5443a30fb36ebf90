"""Two scaled tensors concatenated in fp32, transposed, then cast back."""
import torch

DIMS = {"num_tokens": 5, "hidden": 16}
DYNAMIC = ["num_tokens"]
DTYPES = ["bfloat16", "float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    a = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    b = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    return a, b


def cat_transpose_cast(a, b):
    both = torch.cat([a.float() * 2, b.float() * 3], dim=-1)
    return both.t().contiguous().to(a.dtype)


REFERENCE = cat_transpose_cast
