"""Stage: exp without subnormal results (`exp_ftz`).

`tl.exp(x)` on fp32 compiles to `ex2.approx.f32` of `x * log2(e)`. That
instruction keeps subnormal results, and ptxas pays for it on every element: a
compare of the input and two scaling multiplies around the MUFU.EX2 (the SASS
of logsumexp's single-pass kernel: 304 instructions, 248 with the flushing
form). `ex2.approx.ftz.f32` is the same approximation with results under
2^-126 flushed to 0, and the same result everywhere else; softmax and
logsumexp only ever add such terms to a sum of at least 1, or write them as
outputs smaller than any tolerance can see. On an H200 over 32768 columns it
took 0.91-0.96 of tl.exp's time in bf16 and fp16 (lab/NOTES.md).
One launch lost: softmax's looped kernel in fp32 blocks of 16384 took 1.05x
its time with tl.exp. There LLVM no longer fully unrolls the two-trip loops
(the PTX under triton 3.6 and 3.9 holds 16 row loads, not 20), so fewer loads
are in flight. The second pass here (`unroll_two_blocks`) asks Triton for the
unroll where a row is two blocks: that launch then took 0.88-0.89 of its time
at 4096-32768 rows, 0.93-0.94 of tl.exp's. An unroll by two of longer loops
lost (1.02-1.06x over four blocks of 8192, bf16 and fp32), so it is only for
two.

Reductions only (KINDS): there exp is most of the work an element, after a
load of two bytes. In silu_and_mul, a pointwise kernel at the copy rate, it
took 0.95 of tl.exp's time at one token and 1.00 at 256-65536 (bf16 over 512
columns), so pointwise kernels keep tl.exp.

A kernel that logs, divides by or compares a value made of those terms
(log(softmax(x)): exp(-100) flushed gave log -inf on an H100) keeps tl.exp.
The pass swaps each `tl.exp(x)` of a kernel whose x is a value less its row's
maximum (so the row's sum holds exp(0) = 1; a sum of unshifted exp(x) keeps
tl.exp, as its terms may all be subnormal) for the helper `exp_ftz(x)`
(templates/helpers.py.j2). The helper holds the inline PTX behind a constexpr
(EXP_FTZ) set where the kernels are compiled for an NVIDIA GPU, and falls back
to tl.exp under Triton's interpreter (which runs no inline assembly), on other
GPUs and for fp64 values.
"""

from __future__ import annotations

import ast

from porter.ast_tools import comment_stmt, is_call, names_in, bindings
from porter.port.model import PortState
from porter.port.speed.reciprocal import takes_row_max
from porter.port.forms.persist import is_col_loop

HELPER = "exp_ftz"
# The kernels (KernelRecord.kind) it applies to.
KINDS = ("reduction", "persistent_reduction")
NOTE = (
    "exp as ex2.approx.ftz.f32 on NVIDIA GPUs (exp_ftz): tl.exp's own "
    "approximation, with results under 2^-126 flushed to 0"
)


def _less_a_max(fn: ast.FunctionDef, arg: ast.AST) -> bool:
    """arg is `a - m` (or a name bound once to one) in a kernel that takes a
    row maximum: a softmax's or logsumexp's shifted exponent. An exp of any
    other value (a sum of exp(x) with no shift) may be all subnormal terms,
    which the flush would make 0."""
    if not takes_row_max(fn):
        return False
    bound = bindings(fn)
    for _ in range(8):
        if isinstance(arg, ast.Name):
            if len(bound.get(arg.id, [])) != 1:
                return False
            arg = bound[arg.id][0]
        elif isinstance(arg, ast.BinOp) and isinstance(arg.op, (ast.Mult, ast.Div)):
            arg = arg.left  # a temperature's scale keeps the max's term at 0
        else:
            return isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Sub)
    return False


# Where a flushed term shows: a log of it (-inf for -90), a division by it,
# a comparison of it with 0.
_SEES_TINY = ("log", "log2", "log10", "log1p", "rsqrt", "pow")


def _tiny_shows(fn: ast.FunctionDef) -> bool:
    """Some value computed from a shifted exp, not through a row's sum (at
    least 1: a flushed term moves it by nothing), is logged, divided by or
    compared: there a term under 2^-126 and 0 differ (log(softmax(x)), a
    sampler's logprobs)."""
    tainted: set[str] = set()
    sums = ("tl.sum", "sum_rows", "tl.reduce")

    def through(node: ast.AST) -> bool:
        """node reads a tainted value other than inside a row's sum."""
        if isinstance(node, ast.Call) and any(is_call(node, f) for f in sums):
            return False
        if isinstance(node, ast.Name):
            return node.id in tainted
        if is_call(node, "tl.exp") and node.args and _less_a_max(fn, node.args[0]):
            return True
        return any(through(c) for c in ast.iter_child_nodes(node))

    for _ in range(4):  # loops carry values backwards: a few sweeps
        for stmt in ast.walk(fn):
            if isinstance(stmt, (ast.Assign, ast.AugAssign)) and through(stmt.value):
                targets = (
                    stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                )
                tainted |= {
                    n.id
                    for t in targets
                    for n in ast.walk(t)
                    if isinstance(n, ast.Name)
                }
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func).rsplit(".", 1)[-1]
            if name in _SEES_TINY and any(through(a) for a in node.args):
                return True
        elif isinstance(node, ast.BinOp) and isinstance(
            node.op, (ast.Div, ast.FloorDiv)
        ):
            if through(node.right):
                return True
        elif isinstance(node, ast.Compare):
            if any(through(x) for x in [node.left, *node.comparators]):
                return True
    return False


def exp_ftz(fn: ast.FunctionDef) -> int:
    """Swap each `tl.exp(x)` in fn of a value less a row maximum for
    `exp_ftz(x)`, in place; how many. None where the kernel logs, divides by
    or compares a value made of such terms."""
    if _tiny_shows(fn):
        return 0
    swapped = 0

    class Swap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal swapped
            if (
                is_call(node, "tl.exp")
                and len(node.args) == 1
                and not node.keywords
                and _less_a_max(fn, node.args[0])
            ):
                swapped += 1
                return ast.Call(ast.Name(HELPER, ast.Load()), node.args, [])
            return node

    Swap().visit(fn)
    return swapped


# The constexpr a kernel computes for its column loops' loop_unroll_factor.
UNROLL = "UNROLL"
UNROLL_WHY = "LLVM leaves loops with exp_ftz rolled: unroll a row of two blocks"


def _is_constexpr_param(fn: ast.FunctionDef, name: str) -> bool:
    return any(
        a.arg == name
        and a.annotation is not None
        and ast.unparse(a.annotation) == "tl.constexpr"
        for a in fn.args.args
    )


def unroll_two_blocks(fn: ast.FunctionDef) -> int:
    """Where a column loop of fn calls exp_ftz and the row size is a
    constexpr, have Triton unroll every column loop fully when the row is two
    blocks (an UNROLL constexpr computed before the first of them); how
    many loops it marked. Only loops at the kernel's top level."""
    loops = [s for s in fn.body if is_col_loop(s)]
    if len(loops) != sum(1 for n in ast.walk(fn) if is_col_loop(n)):
        return 0
    calls_exp = any(is_call(c, HELPER) for loop in loops for c in ast.walk(loop))
    if (
        not calls_exp
        or UNROLL in names_in(fn)
        or any(a.arg == UNROLL for a in fn.args.args)
    ):
        return 0
    bounds = {ast.unparse(loop.iter.args[1]) for loop in loops}
    row = bounds.pop()
    if bounds or not all(_is_constexpr_param(fn, n) for n in (row, "BLOCK_COLS")):
        # A runtime row size or block gives no trip count to decide on.
        return 0
    for loop in loops:
        loop.iter.func = ast.parse("tl.range", mode="eval").body
        loop.iter.keywords.append(
            ast.keyword("loop_unroll_factor", ast.Name(UNROLL, ast.Load()))
        )
    decide = ast.parse(
        f"{UNROLL}: tl.constexpr = "
        f"2 if ({row} + BLOCK_COLS - 1) // BLOCK_COLS == 2 else 1"
    ).body
    i = fn.body.index(loops[0])
    fn.body[i:i] = [comment_stmt(UNROLL_WHY), *decide]
    return len(loops)


def fast_exp(port: PortState) -> None:
    """A reduction's exp of a value less its row's max becomes exp_ftz, with
    no subnormal results, unless the kernel logs, divides by or compares its
    terms; a loop of it unrolls two blocks."""
    for kp, form, _ in port.forms():
        if form is not kp.matmul and kp.record.kind in KINDS and exp_ftz(form):
            kp.helpers.add(HELPER)
            unroll_two_blocks(form)
