"""Stage: exp without subnormal results (`exp_ftz`).

`tl.exp(x)` on fp32 compiles to `ex2.approx.f32` of `x * log2(e)`. That
instruction keeps subnormal results, and ptxas pays for it on every element: a
compare of the input and two scaling multiplies around the MUFU.EX2 (the SASS
of logsumexp's single-pass kernel: 304 instructions, 248 with the flushing
form). `ex2.approx.ftz.f32` is the same approximation with results under
2^-126 flushed to 0, and the same result everywhere else; softmax and
logsumexp only ever add such terms to a sum of at least 1, or write them as
outputs smaller than any tolerance can see. On an H200 over 32768 columns it
took 0.91-0.96 of tl.exp's time in bf16 and fp16 (docs/benchmarks/NOTES.md).
One launch lost: softmax's looped kernel in fp32 blocks of 16384 took 1.05x
its time with tl.exp. There LLVM no longer fully unrolls both two-trip loops
(the PTX under triton 3.6 and 3.9 holds 16 row loads, not 20), so fewer loads are in
flight; an explicit unroll or other blocks are yet to be timed.

Reductions only (KINDS): there exp is most of the work an element, after a
load of two bytes. In silu_and_mul, a pointwise kernel at the copy rate, it
took 0.95 of tl.exp's time at one token and 1.00 at 256-65536 (bf16 over 512
columns), so pointwise kernels keep tl.exp.

The pass swaps each `tl.exp(x)` of a kernel for the helper `exp_ftz(x)`
(templates/helpers.py.j2). The helper holds the inline PTX behind a constexpr
(EXP_FTZ) set where the kernels are compiled for an NVIDIA GPU, and falls back
to tl.exp under Triton's interpreter (which runs no inline assembly), on other
GPUs and for fp64 values.
"""

from __future__ import annotations

import ast

from porter.port.passes import _is_call

HELPER = "exp_ftz"
# The kernels (KernelRecord.kind) it applies to.
KINDS = ("reduction", "persistent_reduction")
NOTE = (
    "exp as ex2.approx.ftz.f32 on NVIDIA GPUs (exp_ftz): tl.exp's own "
    "approximation, with results under 2^-126 flushed to 0"
)


def exp_ftz(fn: ast.FunctionDef) -> int:
    """Swap each `tl.exp(x)` in fn for `exp_ftz(x)`, in place; how many."""
    swapped = 0

    class Swap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal swapped
            if _is_call(node, "tl.exp") and len(node.args) == 1 and not node.keywords:
                swapped += 1
                return ast.Call(ast.Name(HELPER, ast.Load()), node.args, [])
            return node

    Swap().visit(fn)
    return swapped
