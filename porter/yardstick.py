"""Copies of a point's bytes, timed beside a ported kernel as yardsticks of
what moving that many bytes takes (GPU only).

torch's `copy_` of contiguous bytes is a cudaMemcpyAsync, captured as a memcpy
node in a CUDA graph: from about 50 MB the fastest copy on an H200, but at a
few MB it took up to 1.5x the time of a plain Triton copy launched as the
scaffolds are (lab/NOTES.md, "Calls DM-DP"). porter bench times
both, and a point's copy is the faster.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr, PDL: tl.constexpr):
    # A plain streaming copy, launched as a scaffold is: with PDL it waits for
    # the kernel before it and lets the next one launch at once.
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    data = tl.load(src_ptr + offs, mask, eviction_policy="evict_first")
    tl.store(dst_ptr + offs, data, mask)


# The launches porter bench times, (words a program, warps, PDL), the point's
# Triton copy being the fastest of them. On an H200, 20 calls a graph over
# rotated inputs, 8 KB a program with 4 warps was the fastest of 8, 16 and 32
# KB a program at 3-84 MB (within 0.2%), with PDL or without, but at 17 MB,
# where 32 KB with 8 warps and PDL took 0.92 of its time; with PDL it took
# 0.78-0.98 of its time without, except at 17-21 MB (1.06-1.13x)
# (lab/NOTES.md, "Calls DM-DP", call DM).
COPY_LAUNCHES = ((2048, 4, False), (2048, 4, True), (8192, 8, True))
COPY_BLOCK, COPY_WARPS = COPY_LAUNCHES[0][:2]


def triton_copy(
    nbytes: int,
    block: int = COPY_BLOCK,
    warps: int = COPY_WARPS,
    pdl: bool = False,
    device: str = "cuda",
) -> Callable[[], Any] | None:
    """A copy moving `nbytes` (half read, half written) as a Triton kernel of
    int32 words, with programmatic dependent launch where `pdl`; None where its
    buffers do not fit. The call returns the destination (and the source as
    `.src` of the callable)."""
    words = max(nbytes // 8, 1)
    try:
        src = torch.empty(words, dtype=torch.int32, device=device)
        dst = torch.empty_like(src)
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return None
    grid = (triton.cdiv(words, block),)

    def copy():
        copy_kernel[grid](
            src, dst, words, BLOCK=block, PDL=pdl, num_warps=warps, launch_pdl=pdl
        )
        return dst

    copy.src = src
    return copy
