"""RMS normalization with a learned scale, in the KernelBench format.

Ported by porter 0.1.0 from kb_scaled_rmsnorm.py::Model (torch 2.13.0+cpu, triton 3.9.0, 2026-12-04); README.md says what porter changed.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

from ..common import laid_out_like, launch_settings, pdl_enabled, pdl_release, pdl_wait
from ..common import refuse


@triton.jit(do_not_specialize=["batch_size"])
def model_kernel(
    x_ptr,
    weight_ptr,
    out_ptr,
    eps,
    batch_size,
    x_stride0: tl.int64,
    out_stride0: tl.int64,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < batch_size
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    x_rows = x_ptr + rows * x_stride0
    out_rows = out_ptr + rows * out_stride0
    x = tl.load(x_rows + cols, row_mask, other=0.0).to(tl.float32)
    weight = tl.load(weight_ptr + cols, None, eviction_policy="evict_last")
    weight = weight.to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_sum = tl.sum(x * x, 1)[:, None].to(tl.float32)
    out = x / tl.sqrt_rn(row_sum / 512.0 + eps) * weight
    tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty), row_mask)


class ModelNew(nn.Module):
    """Drop-in for the reference's Model: same constructor, parameters and buffers."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(
            torch.ones(num_features) + 0.1 * torch.randn(num_features)
        )

    @torch.no_grad()  # kernels for inference: an extern matmul's out= refuses autograd
    def forward(self, x: torch.Tensor):
        if not isinstance(self.eps, (int, float)):
            refuse(
                "captured with self.eps a number; re-capture with the value you need"
            )
        if x.dim() != 2:
            refuse("captured with x 2-d; re-capture with the ranks you need")
        if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            refuse(
                "x must be float32, float16, bfloat16 (the kernels compute in fp32, not float64)"
            )
        if self.weight is None or self.weight.dtype != x.dtype:
            refuse("self.weight must be a tensor of x's dtype, as at capture")
        batch_size = x.shape[0]
        if x.shape[1] != 512 or self.weight.shape != (512,):
            refuse(
                "captured for shapes x (_, 512), self.weight (512,); re-capture for other sizes"
            )
        x_given = x
        x = x if x.stride(-1) == 1 else x.contiguous()
        weight = (
            self.weight if self.weight.stride(-1) == 1 else self.weight.contiguous()
        )
        out = torch.empty((batch_size, 512), dtype=x.dtype, device=x.device)
        pdl = pdl_enabled(x.device)
        BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings(
            batch_size, 512, x.element_size(), row_tensors=2
        )
        model_kernel[(triton.cdiv(batch_size, BLOCK_ROWS),)](
            x_ptr=x,
            weight_ptr=weight,
            out_ptr=out,
            eps=self.eps,
            batch_size=batch_size,
            x_stride0=x.stride(0),
            out_stride0=out.stride(0),
            BLOCK_ROWS=BLOCK_ROWS,
            BLOCK_COLS=BLOCK_COLS,
            LAUNCH_PDL=pdl,
            num_warps=num_warps,
            launch_pdl=pdl,
        )
        return laid_out_like(out, x_given)

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
        lib.define(name + "(Tensor x, Tensor weight) -> Tensor")

        def impl(x, weight):
            state = {"weight": weight}
            return torch.func.functional_call(model, state, (x,))

        lib.impl(name, impl, "CompositeExplicitAutograd")

        @torch.library.register_fake(f"{namespace}::{name}", lib=lib)
        def _(x, weight):
            batch_size = x.shape[0]
            x_given = x
            out = torch.empty((batch_size, 512), dtype=x.dtype, device=x.device)
            return laid_out_like(out, x_given)

        _OPS[key] = model, getattr(getattr(torch.ops, namespace), name)
    return _OPS[key][1]


class OpModel(nn.Module):
    """A ModelNew called through its custom op (ModelNew.as_op)."""

    def __init__(self, model, op):
        super().__init__()
        self.model, self.op = model, op

    def state(self):
        """The tensors the op takes after the inputs."""
        return [self.model.weight]

    def forward(self, x):
        return self.op(x, *self.state())
