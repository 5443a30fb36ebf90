"""Hash-style int32 math on gathered int32 values: table[ids] * 1000003 + 12345 wraps in int32, as eager's does."""
import torch

DIMS = {"num_tokens": 6, "vocab": 64}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32"]

def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, dtype=dtype, device=device)
    ids = torch.randint(0, vocab, (num_tokens,), device=device, dtype=torch.int64)
    table = torch.randint(0, 2**31 - 1, (vocab,), device=device, dtype=torch.int32)
    return x, ids, table

def repro_int32_wrap_gather2(x, ids, table):
    h = table[ids] * 1000003 + 12345
    return h, x * 2.0

REFERENCE = repro_int32_wrap_gather2
