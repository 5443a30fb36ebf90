"""PT009 good: // and % on program ids, aranges, sizes, and clamped differences."""

import triton
import triton.language as tl


@triton.jit
def window_kernel(
    x_ptr, out_ptr, start, num_heads, n_cols, BLOCK: tl.constexpr, WINDOW: tl.constexpr
):
    pid = tl.program_id(0).to(tl.int64)
    token = pid // num_heads
    head = pid % num_heads
    n_blocks = (n_cols + BLOCK - 1) // BLOCK
    offs = token * BLOCK + tl.arange(0, BLOCK)
    lane = tl.arange(0, BLOCK) % 2
    rel = tl.maximum(offs - start, 0) // WINDOW
    x = tl.load(x_ptr + offs + lane + head * n_blocks).to(tl.float32)
    tl.store(out_ptr + rel, x.to(out_ptr.dtype.element_ty))
