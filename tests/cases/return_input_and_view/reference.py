"""Returns the input itself unchanged, a strided slice view of a new tensor, and a 0-d sum expanded to [T]."""
import torch

DIMS = {"num_tokens": 6, "hidden": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "bfloat16"]

def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)

def return_input_and_view(x):
    y = torch.sigmoid(x)
    total = y.sum()
    return x, y[:, ::2], total.expand(x.shape[0])

REFERENCE = return_input_and_view
