"""PT009 bad: // and % on values that can be negative (Triton truncates, Python floors)."""

import triton
import triton.language as tl


@triton.jit
def window_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr, WINDOW: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    rel = offs - shift
    bucket = rel // WINDOW  # PT009 (info): a runtime subtraction
    x = tl.load(x_ptr + offs).to(tl.float32)
    tl.store(out_ptr + bucket * WINDOW, x.to(out_ptr.dtype.element_ty))


@triton.jit
def padded_slot_kernel(slot_ptr, page_ptr, valid_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    slot = tl.load(slot_ptr + offs)
    slot = tl.where(tl.load(valid_ptr + offs) != 0, slot, -1)
    tl.store(page_ptr + offs, slot // 16)  # PT009: -1 // 16 is 0 here, -1 in Python
