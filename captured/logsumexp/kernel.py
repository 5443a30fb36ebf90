"""Row logsumexp in fp32, as used for log-probabilities over a vocabulary.

Ported by porter 0.1.0 from logsumexp.py::logsumexp (torch 2.13.0+cpu, triton 3.9.0, 2026-11-30); README.md says what porter changed.
"""

import torch
import triton
import triton.language as tl

from ..common import define_op, exp_ftz, is_fake, max_nan, maximum_nan, pdl_enabled
from ..common import pdl_release, pdl_wait, refuse, rescale_sum, row_launch, split_cols
from ..common import split_partial, split_rows


@triton.jit(do_not_specialize=["num_tokens"])
def logsumexp_kernel(
    out_ptr,
    logits_ptr,
    num_tokens,
    logits_stride0: tl.int64,
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
    logits_rows = logits_ptr + rows * logits_stride0
    if num_tokens < STREAM_ROWS:
        logits = tl.load(
            logits_rows + cols, mask, other=0.0, eviction_policy="evict_first"
        ).to(tl.float32)
    else:
        logits = tl.load(logits_rows + cols, mask, other=0.0).to(tl.float32)
    # a program of several rows lets the next kernel launch once its loads are issued
    pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)
    logits_masked = tl.where(mask, logits, float("-inf"))
    row_max = max_nan(logits_masked, 1)[:, None]
    abs_row_max_is_inf = tl.abs(row_max) == tl.full([1, 1], float("inf"), tl.float32)
    exp = exp_ftz(logits - tl.where(abs_row_max_is_inf, 0.0, row_max))
    row_sum = tl.sum(tl.where(mask, exp, 0), 1)[:, None]
    log_row_sum = tl.log(row_sum)
    abs_row_max_is_inf_2 = tl.abs(row_max) == tl.full([1, 1], float("inf"), tl.float32)
    out = log_row_sum + tl.where(abs_row_max_is_inf_2, 0.0, row_max)
    tl.store(out_ptr + rows, out.to(out_ptr.dtype.element_ty), row_mask)


@split_rows(phases=3, partials=2)
@triton.jit(do_not_specialize=["num_tokens", "SPLITS"])
def logsumexp_kernel_looped(
    out_ptr,
    logits_ptr,
    partials_ptr,
    num_tokens,
    logits_stride0: tl.int64,
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
    logits_rows = logits_ptr + rows * logits_stride0
    if PHASE <= 0:
        for col_start in tl.range(start, stop, BLOCK_COLS, loop_unroll_factor=UNROLL):
            cols = col_start + col_base
            mask = (cols < vocab) & row_mask
            logits = tl.load(
                logits_rows + cols, mask, eviction_policy="evict_last", other=0.0
            ).to(tl.float32)
            maximum_nan_acc = maximum_nan(acc, logits)
            acc = tl.where(mask, maximum_nan_acc, acc)
    acc = split_partial(acc, "max", partials, 0, 0, row_mask, SPLITS, PHASE)
    row_max = max_nan(acc, 1)[:, None]
    acc_2 = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    if PHASE < 0 or PHASE == 1:
        for col_start in tl.range(start, stop, BLOCK_COLS, loop_unroll_factor=UNROLL):
            cols = col_start + col_base
            mask = (cols < vocab) & row_mask
            logits_2 = tl.load(
                logits_rows + cols, mask, eviction_policy="evict_first", other=0.0
            ).to(tl.float32)
            abs_row_max_is_inf_2 = tl.abs(row_max) == tl.full(
                [1, 1], float("inf"), tl.float32
            )
            exp = exp_ftz(logits_2 - tl.where(abs_row_max_is_inf_2, 0.0, row_max))
            acc_2_plus_exp = acc_2 + exp
            acc_2 = tl.where(mask, acc_2_plus_exp, acc_2)
    acc_2 = split_partial(acc_2, "sum", partials, 1, 1, row_mask, SPLITS, PHASE)
    row_sum = tl.sum(acc_2, 1)[:, None]
    log_row_sum = tl.log(row_sum)
    abs_row_max_is_inf = tl.abs(row_max) == tl.full([1, 1], float("inf"), tl.float32)
    out = log_row_sum + tl.where(abs_row_max_is_inf, 0.0, row_max)
    if PHASE < 0 or PHASE == 2:
        if start == 0:
            tl.store(out_ptr + rows, out.to(out_ptr.dtype.element_ty), row_mask)


@triton.jit(do_not_specialize=["num_tokens"])
def logsumexp_kernel_online(
    out_ptr,
    logits_ptr,
    num_tokens,
    logits_stride0: tl.int64,
    vocab: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
    LAUNCH_PDL: tl.constexpr,
):
    pdl_wait(LAUNCH_PDL)
    row_start = tl.program_id(0).to(tl.int64) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < num_tokens
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    acc = tl.full([BLOCK_ROWS, 1], float("-inf"), tl.float32)
    acc_2 = tl.full([BLOCK_ROWS, 1], 0, tl.float32)
    abs_acc_is_inf_run = tl.abs(acc) == tl.full([1, 1], float("inf"), tl.float32)
    safe_acc_run = tl.where(abs_acc_is_inf_run, 0.0, acc)
    # LLVM leaves loops with exp_ftz rolled: unroll a row of two blocks
    UNROLL: tl.constexpr = 2 if (vocab + BLOCK_COLS - 1) // BLOCK_COLS == 2 else 1
    logits_rows = logits_ptr + rows * logits_stride0
    for col_start in tl.range(0, vocab, BLOCK_COLS, loop_unroll_factor=UNROLL):
        cols = col_start + col_base
        mask = (cols < vocab) & row_mask
        logits = tl.load(
            logits_rows + cols, mask, eviction_policy="evict_first", other=0.0
        ).to(tl.float32)
        maximum_nan_acc = maximum_nan(
            acc, max_nan(tl.where(mask, logits, float("-inf")), 1)[:, None]
        )
        val_new = tl.abs(maximum_nan_acc) == tl.full([1, 1], float("inf"), tl.float32)
        safe_maximum_nan_acc_new = tl.where(val_new, 0.0, maximum_nan_acc)
        exp = exp_ftz(logits - safe_maximum_nan_acc_new)
        block_sum = tl.sum(tl.where(mask, exp, 0.0), 1)[:, None]
        acc_2 = rescale_sum(acc_2, safe_acc_run, safe_maximum_nan_acc_new) + block_sum
        acc = maximum_nan_acc
        safe_acc_run = safe_maximum_nan_acc_new
    row_max = acc
    row_sum = acc_2
    log_row_sum = tl.log(row_sum)
    abs_row_max_is_inf = tl.abs(row_max) == tl.full([1, 1], float("inf"), tl.float32)
    out = log_row_sum + tl.where(abs_row_max_is_inf, 0.0, row_max)
    tl.store(out_ptr + rows, out.to(out_ptr.dtype.element_ty), row_mask)


def logsumexp(logits: torch.Tensor):
    """Same arguments and outputs as the reference logsumexp."""
    if logits.dim() != 2:
        refuse("captured with logits 2-d; re-capture with the ranks you need")
    num_tokens, vocab = logits.shape
    logits = logits if logits.stride(-1) == 1 else logits.contiguous()
    out = torch.empty((num_tokens,), dtype=torch.float32, device=logits.device)
    if is_fake(logits):  # torch.compile tracing: outputs only
        return out
    pdl = pdl_enabled(logits.device)
    form, launch = row_launch(
        num_tokens,
        vocab,
        logits.element_size(),
        row_tensors=1,
        row_only=True,
        online=True,
        split=True,
        stream=True,
    )
    kernel = {
        "persistent": logsumexp_kernel,
        "looped": logsumexp_kernel_looped,
        "online": logsumexp_kernel_online,
        "split": logsumexp_kernel_looped,
    }[form]
    kernel[(triton.cdiv(num_tokens, launch["BLOCK_ROWS"]),)](
        out_ptr=out,
        logits_ptr=logits,
        num_tokens=num_tokens,
        logits_stride0=logits.stride(0),
        vocab=vocab,
        LAUNCH_PDL=pdl,
        launch_pdl=pdl,
        **launch,
    )
    return out


def register_op(namespace="porter"):
    """logsumexp as the custom op torch.ops.<namespace>.logsumexp, which
    torch.compile (fullgraph=True) and CUDA graphs take as one op (docs/engine.md)."""
    schema = "logsumexp(Tensor logits) -> Tensor"
    return define_op(namespace, schema, logsumexp)
