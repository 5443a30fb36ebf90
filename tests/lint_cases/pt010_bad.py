"""PT010 bad: autotune on an elementwise kernel."""

import triton
import triton.language as tl


@triton.autotune(  # PT010
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n_cols"],
)
@triton.jit
def scale_kernel(x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(
        x_ptr + row * n_cols + cols, (x * 2.0).to(x_ptr.dtype.element_ty), mask=mask
    )


def _scale(x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0).to(
        tl.float32
    )
    tl.store(
        x_ptr + row * n_cols + cols,
        (x * 2.0).to(x_ptr.dtype.element_ty),
        mask=cols < n_cols,
    )


configs = [triton.Config({"BLOCK": 1024})]
scale_functional = triton.autotune(configs, key=["n_cols"])(triton.jit(_scale))  # PT010
