"""Token-id arithmetic for a vocab-parallel layout: owning rank (floor div), local id (mod), offset id, on int32 ids with an int shard size and offset."""
import torch
DIMS = {"num_tokens": 8}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32"]
def make_inputs(num_tokens, dtype=torch.float32, device="cpu"):
    ids = torch.randint(-300, 300, (num_tokens,), dtype=torch.int32, device=device)
    return (ids,)
def id_math(ids, shard: int = 64, offset: int = 1000):
    return ids // shard, ids % shard, ids + offset
REFERENCE = id_math
