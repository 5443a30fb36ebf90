"""PT011 bad: one program per (token, head) in launchers that serve prefill too."""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_tokens"])
def rotary_kernel(q_ptr, num_tokens, token_stride: tl.int64, HEAD_DIM: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    cols = tl.arange(0, HEAD_DIM)
    ptrs = q_ptr + token * token_stride + head * HEAD_DIM + cols
    q = tl.load(ptrs).to(tl.float32)
    tl.store(ptrs, (q * 0.5).to(q_ptr.dtype.element_ty))


def rotary(q, num_heads):
    num_tokens = q.shape[0]
    rotary_kernel[(num_tokens, num_heads)](q, num_tokens, q.stride(0), 128)  # PT011


class Rotary:
    def forward(self, q):
        n_tok = q.shape[0]
        grid = (n_tok, self.num_kv_heads)
        rotary_kernel[grid](q, n_tok, q.stride(0), HEAD_DIM=128)  # PT011
