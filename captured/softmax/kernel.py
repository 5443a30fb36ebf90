"""Row softmax with a temperature over vocabulary-wide rows, in fp32 as samplers do.

Ported by porter 0.1.0 from softmax.py::softmax (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl

from ..common import define_op, exp_ftz, is_fake, max_nan, maximum_nan, pdl_enabled
from ..common import pdl_release, pdl_wait, refuse, row_launch, split_cols
from ..common import split_partial, split_rows


@triton.jit(do_not_specialize=["num_tokens"])
def softmax_kernel(
    out_ptr,
    logits_ptr,
    num_tokens,
    logits_stride0: tl.int64,
    out_stride0: tl.int64,
    vocab: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    STREAM_ROWS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_tokens
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    mask = (cols < vocab) & row_mask
    out_rows = out_ptr + rows * out_stride0
    logits_rows = logits_ptr + rows * logits_stride0
    if num_tokens < STREAM_ROWS:
        logits = tl.load(
            logits_rows + cols, mask, other=0.0, eviction_policy="evict_first"
        ).to(tl.float32)
    else:
        logits = tl.load(logits_rows + cols, mask, other=0.0).to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    logits_scaled = logits * 1.0
    logits_scaled_masked = tl.where(mask, logits_scaled, float("-inf"))
    row_max = max_nan(logits_scaled_masked, 1)[:, None]
    # where max(x) / c overflows, torch's row is NaN (inf - inf): a NaN shift keeps it so
    row_shift = tl.where(row_max * (1.0 / 0.7) < float("inf"), row_max, float("nan"))
    exp = exp_ftz((logits * 1.0 - row_shift) * (1.0 / 0.7))
    row_sum = tl.sum(tl.where(mask, exp, 0), 1)[:, None]
    out = exp.to(tl.float32)
    out_2 = out * (1.0 / row_sum)
    tl.store(out_rows + cols, out_2.to(out_ptr.dtype.element_ty), mask)


@split_rows(phases=3, partials=2)
@triton.jit(do_not_specialize=["num_tokens", "SPLITS"])
def softmax_kernel_looped(
    out_ptr,
    logits_ptr,
    partials_ptr,
    num_tokens,
    logits_stride0: tl.int64,
    out_stride0: tl.int64,
    SPLITS,
    vocab: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    PHASE: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_tokens
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    # PHASE -1 runs every loop over whole rows; PHASE j, loop j over a slice
    start, stop = split_cols(vocab, BLOCK_COLS, SPLITS, PHASE)
    partials = partials_ptr + rows * (2 * SPLITS)
    acc = tl.full([BLOCK_ROWS, BLOCK_COLS], float("-inf"), tl.float32)
    # LLVM leaves loops with exp_ftz rolled: unroll a row of two blocks
    UNROLL: tl.constexpr = 2 if (vocab + BLOCK_COLS - 1) // BLOCK_COLS == 2 else 1
    out_rows = out_ptr + rows * out_stride0
    logits_rows = logits_ptr + rows * logits_stride0
    if PHASE <= 0:
        for col_start in tl.range(start, stop, BLOCK_COLS, loop_unroll_factor=UNROLL):
            cols = col_start + col_base
            mask = (cols < vocab) & row_mask
            logits = tl.load(
                logits_rows + cols, mask, eviction_policy="evict_last", other=0.0
            ).to(tl.float32)
            maximum_nan_acc = maximum_nan(acc, logits * 1.0)
            acc = tl.where(mask, maximum_nan_acc, acc)
    acc = split_partial(acc, "max", partials, 0, 0, row_mask, SPLITS, PHASE)
    row_max = max_nan(acc, 1)[:, None]
    # where max(x) / c overflows, torch's row is NaN (inf - inf): a NaN shift keeps it so
    row_shift = tl.where(row_max * (1.0 / 0.7) < float("inf"), row_max, float("nan"))
    acc_2 = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    if PHASE < 0 or PHASE == 1:
        for col_start in tl.range(start, stop, BLOCK_COLS, loop_unroll_factor=UNROLL):
            cols = col_start + col_base
            mask = (cols < vocab) & row_mask
            logits_2 = tl.load(
                logits_rows + cols, mask, eviction_policy="evict_last", other=0.0
            ).to(tl.float32)
            exp = exp_ftz((logits_2 * 1.0 - row_shift) * (1.0 / 0.7))
            acc_2_plus_exp = acc_2 + exp
            acc_2 = tl.where(mask, acc_2_plus_exp, acc_2)
    acc_2 = split_partial(acc_2, "sum", partials, 1, 1, row_mask, SPLITS, PHASE)
    row_sum = tl.sum(acc_2, 1)[:, None]
    if PHASE < 0 or PHASE == 2:
        for col_start in tl.range(start, stop, BLOCK_COLS, loop_unroll_factor=UNROLL):
            cols = col_start + col_base
            mask = (cols < vocab) & row_mask
            logits_3 = tl.load(
                logits_rows + cols, mask, eviction_policy="evict_first", other=0.0
            ).to(tl.float32)
            exp_2 = exp_ftz((logits_3 * 1.0 - row_shift) * (1.0 / 0.7))
            out = exp_2.to(tl.float32)
            out_2 = out * (1.0 / row_sum)
            tl.store(out_rows + cols, out_2.to(out_ptr.dtype.element_ty), mask)


def softmax(logits: torch.Tensor, temperature: float = 0.7):
    """Same arguments and outputs as the reference softmax."""
    if temperature != 0.7:
        refuse("captured with temperature == 0.7; re-capture with the value you need")
    if logits.dim() != 2:
        refuse("captured with logits 2-d; re-capture with the ranks you need")
    num_tokens, vocab = logits.shape
    logits = logits if logits.stride(-1) == 1 else logits.contiguous()
    out = torch.empty((num_tokens, vocab), dtype=logits.dtype, device=logits.device)
    if is_fake(logits):  # torch.compile tracing: outputs only
        return out
    pdl = pdl_enabled(logits.device)
    form, launch = row_launch(
        num_tokens,
        vocab,
        logits.element_size(),
        row_tensors=2,
        row_only=True,
        reads=(3, 1),
        split=True,
        stream=True,
    )
    kernel = softmax_kernel if form == "persistent" else softmax_kernel_looped
    kernel[(triton.cdiv(num_tokens, launch["BLOCK_ROWS"]),)](
        out_ptr=out,
        logits_ptr=logits,
        num_tokens=num_tokens,
        logits_stride0=logits.stride(0),
        out_stride0=out.stride(0),
        vocab=vocab,
        LAUNCH_PDL=pdl,
        launch_pdl=pdl,
        **launch,
    )
    return out


def register_op(namespace="porter"):
    """softmax as the custom op torch.ops.<namespace>.softmax, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "softmax(Tensor logits, float temperature=0.7) -> Tensor"
    return define_op(namespace, schema, softmax)
