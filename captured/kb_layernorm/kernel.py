"""LayerNorm with a learned weight and bias over the last dim (KernelBench format).

Ported by porter 0.1.0 from kb_layernorm.py::Model (torch 2.13.0+cpu, triton 3.9.0, 2026-12-04); README.md says what porter changed.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

from ..common import launch_settings, pdl_enabled, pdl_release, pdl_wait, refuse


@triton.jit(do_not_specialize=["batch_size"])
def model_kernel(
    x_ptr,
    ln_weight_ptr,
    ln_bias_ptr,
    out_ptr,
    batch_size,
    x_stride0: tl.int64,
    out_stride0: tl.int64,
    row_size: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < batch_size
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    col_mask = cols < row_size
    mask = col_mask & row_mask
    x_rows = x_ptr + rows * x_stride0
    out_rows = out_ptr + rows * out_stride0
    x = tl.load(x_rows + cols, mask, other=0.0).to(tl.float32)
    ln_weight = tl.load(
        ln_weight_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    ln_bias = tl.load(
        ln_bias_ptr + cols, col_mask, eviction_policy="evict_last", other=0.0
    ).to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_sum = tl.sum(x, 1)[:, None].to(tl.float32)
    val = x - row_sum / 768.0
    val_sq = val * val
    row_sum_2 = tl.sum(tl.where(mask, val_sq, 0), 1)[:, None].to(tl.float32)
    rstd = tl.rsqrt(row_sum_2 / 768.0 + 1e-05)
    out = val * rstd * ln_weight + ln_bias
    tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty), mask)


class ModelNew(nn.Module):
    """Drop-in for the reference's Model: same constructor, parameters and buffers."""

    def __init__(self, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=eps)
        with torch.no_grad():
            self.ln.weight.add_(0.1 * torch.randn(normalized_shape))
            self.ln.bias.add_(0.1 * torch.randn(normalized_shape))

    @torch.no_grad()  # kernels for inference: an extern matmul's out= refuses autograd
    def forward(self, x: torch.Tensor):
        if self.ln.eps != 1e-05:
            refuse(
                "captured with self.ln.eps == 1e-05; re-capture with the value you need"
            )
        if self.ln.normalized_shape != (768,):
            refuse(
                "captured with self.ln.normalized_shape == (768,); re-capture with the value you need"
            )
        if x.dim() != 2:
            refuse("captured with x 2-d; re-capture with the ranks you need")
        if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            refuse(
                "x must be float32, float16, bfloat16 (the kernels compute in fp32, not float64)"
            )
        if any(t is None or t.dtype != x.dtype for t in (self.ln.weight, self.ln.bias)):
            refuse(
                "self.ln.weight, self.ln.bias must be tensors of x's dtype, as at capture"
            )
        batch_size = x.shape[0]
        if (
            x.shape[1] != 768
            or self.ln.weight.shape != (768,)
            or self.ln.bias.shape != (768,)
        ):
            refuse(
                "captured for shapes x (_, 768), self.ln.weight (768,), self.ln.bias (768,); re-capture for other sizes"
            )
        ln_weight = (
            self.ln.weight
            if self.ln.weight.stride(-1) == 1
            else self.ln.weight.contiguous()
        )
        ln_bias = (
            self.ln.bias if self.ln.bias.stride(-1) == 1 else self.ln.bias.contiguous()
        )
        x = x if x.stride(-1) == 1 else x.contiguous()
        out = torch.empty((batch_size, 768), dtype=x.dtype, device=x.device)
        pdl = pdl_enabled(x.device)
        BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
            batch_size, 768, x.element_size(), row_tensors=2
        )
        model_kernel[(triton.cdiv(batch_size, BLOCK_ROWS),)](
            x_ptr=x,
            ln_weight_ptr=ln_weight,
            ln_bias_ptr=ln_bias,
            out_ptr=out,
            batch_size=batch_size,
            x_stride0=x.stride(0),
            out_stride0=out.stride(0),
            row_size=768,
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=BLOCK_COLS,
            LAUNCH_PDL=pdl,
            num_warps=num_warps,
            launch_pdl=pdl,
        )
        return out

    def as_op(self, namespace="porter"):
        """This module as one custom op (its settings fixed, its parameters and
        buffers passed in), which torch.compile (fullgraph=True) and CUDA graphs
        take whole: a module that calls it (docs/engine.md)."""
        return OpModel(self, register_op(self, namespace))


_LIBS = {}  # namespace -> the torch.library.Library that holds its ops
_OPS = {}  # (namespace, id of the module) -> (the module, its op)


def register_op(model, namespace="porter"):
    """model's forward as the custom op torch.ops.<namespace>.model_<n>: its
    settings (sizes, flags) fixed, its parameters and buffers passed after the
    inputs."""
    key = (namespace, id(model))
    if key not in _OPS:
        if namespace not in _LIBS:
            _LIBS[namespace] = torch.library.Library(namespace, "FRAGMENT")
        lib, name = _LIBS[namespace], f"model_{len(_OPS)}"
        lib.define(name + "(Tensor x, Tensor ln_weight, Tensor ln_bias) -> Tensor")

        def impl(x, ln_weight, ln_bias):
            state = {"ln.weight": ln_weight, "ln.bias": ln_bias}
            return torch.func.functional_call(model, state, (x,))

        lib.impl(name, impl, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::{name}", lib=lib)
        def _(x, ln_weight, ln_bias):
            batch_size = x.shape[0]
            out = torch.empty((batch_size, 768), dtype=x.dtype, device=x.device)
            return out

        _OPS[key] = model, getattr(getattr(torch.ops, namespace), name)
    return _OPS[key][1]


class OpModel(nn.Module):
    """A ModelNew called through its custom op (ModelNew.as_op)."""

    def __init__(self, model, op):
        super().__init__()
        self.model, self.op = model, op

    def state(self):
        """The tensors the op takes after the inputs."""
        return [self.model.ln.weight, self.model.ln.bias]

    def forward(self, x):
        return self.op(x, *self.state())
