"""Before/after tests for exp_ftz (porter.port.finish.fastexp), the scaffolds that
take it, and its numerics against float64: on a GPU the PTX (results under
2^-126 flushed to 0), under Triton's interpreter tl.exp itself; and for the
unroll of rows of two blocks (unroll_two_blocks): the pass, the loops it
removes when compiled for the H200's target, and softmax's looped kernel
against float64 with and without it."""

import ast
import textwrap
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from porter.port.finish.fastexp import HELPER, NOTE, UNROLL, exp_ftz, unroll_two_blocks
from porter.testing.apart import json_lines_apart
from porter.testing.parity import load_case

ROOT = Path(__file__).resolve().parents[1]
CAPTURED = ROOT / "captured"


def _fn(src: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(src)).body[0]


def test_swaps_each_exp_of_a_value_less_the_row_max_for_the_helper():
    fn = _fn("""
        def k(x_ptr):
            x = tl.load(x_ptr)
            m = max_nan(x, 0)
            shifted = (x - m) * 1.5
            e = tl.exp(x - m)
            s = tl.sum(tl.exp(shifted), 0)
            t = tl.exp2(x)
        """)
    assert exp_ftz(fn) == 2
    text = ast.unparse(fn)
    assert "e = exp_ftz(x - m)" in text
    assert "s = tl.sum(exp_ftz(shifted), 0)" in text
    assert "tl.exp(" not in text and "t = tl.exp2(x)" in text


def test_leaves_an_unshifted_exp_alone():
    # exp(x) summed with no max taken: every term may be under 2^-126, and
    # the flush would make the sum 0 (log of it -inf; eager -90).
    src = """
        def k(x_ptr):
            x = tl.load(x_ptr)
            s = tl.sum(tl.exp(x - 1.0), 0)
        """
    fn = _fn(src)
    assert exp_ftz(fn) == 0
    assert ast.unparse(fn) == ast.unparse(_fn(src))


def test_leaves_the_exp_of_a_kernel_that_logs_its_terms_alone():
    # log(softmax(x)) fused in one kernel (a sampler's logprobs): a term
    # exp(-100) flushed to 0 gave log -inf on an H100 where eager gives -101.3.
    src = """
        def k(x_ptr, out_ptr):
            x = tl.load(x_ptr)
            row_max = max_nan(x, 0)
            e = tl.exp(x - row_max)
            row_sum = tl.sum(e, 0)
            p = e * (1.0 / row_sum)
            tl.store(out_ptr, tl.log(p))
        """
    fn = _fn(src)
    assert exp_ftz(fn) == 0
    # the same kernel storing p alone: the flush is invisible there
    fn = _fn(src.replace("tl.log(p)", "p"))
    assert exp_ftz(fn) == 1


def test_leaves_a_kernel_without_exp_alone():
    src = """
        def k(x_ptr):
            x = tl.load(x_ptr)
            y = tl.sqrt(x) * libdevice.exp(x)
        """
    fn = _fn(src)
    assert exp_ftz(fn) == 0
    assert ast.unparse(fn) == ast.unparse(_fn(src))


@pytest.mark.parametrize("case", ["logsumexp", "softmax"])
def test_scaffolds_call_exp_only_through_the_helper(case):
    source = (CAPTURED / case / "kernel.py").read_text()
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    # The helper comes from common.py, which defines it once.
    imported = {
        a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names
    }
    assert HELPER in imported and all(f.name != HELPER for f in functions)
    common = ast.parse((CAPTURED / "common.py").read_text())
    assert [n.name for n in common.body if getattr(n, "name", "") == HELPER] == [HELPER]
    others = [ast.unparse(f) for f in functions]
    assert not any("tl.exp(" in text for text in others)
    assert any(f"{HELPER}(" in text for text in others)
    assert NOTE in (CAPTURED / case / "README.md").read_text()  # what porter changed


@pytest.mark.parametrize("case", ["rmsnorm", "silu_and_mul"])
def test_a_scaffold_without_exp_in_a_reduction_has_no_helper(case):
    # silu_and_mul's pointwise kernel keeps tl.exp (KINDS).
    source = (CAPTURED / case / "kernel.py").read_text()
    assert HELPER not in source and "EXP_FTZ" not in source


_exp_ftz = load_case(CAPTURED / "logsumexp").kernel.exp_ftz


@triton.jit
def _exp_both_kernel(x_ptr, ftz_ptr, exp_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask)
    tl.store(ftz_ptr + offsets, _exp_ftz(x), mask)
    tl.store(exp_ptr + offsets, tl.exp(x), mask)


def test_exp_ftz_is_tl_exp_but_for_subnormal_results(porter_device):
    specials = [float("-inf"), float("inf"), float("nan"), 0.0, -0.0, -87.3, -87.4]
    x = torch.cat(
        [
            torch.linspace(-104.0, 88.0, 4093, dtype=torch.float64),
            torch.tensor(specials),
        ]
    ).to(torch.float32)
    x = x.to(porter_device)
    # Poisoned: an element the kernel does not write stays NaN and fails below.
    ftz = torch.full_like(x, float("nan"))
    exp = torch.full_like(x, float("nan"))
    _exp_both_kernel[(triton.cdiv(x.numel(), 1024),)](
        ftz_ptr=ftz, exp_ptr=exp, x_ptr=x, n=x.numel(), BLOCK=1024
    )
    ftz, exp, x = ftz.cpu(), exp.cpu(), x.cpu()
    want = torch.exp(x.to(torch.float64))
    normal = (want >= 2.0**-126) & want.isfinite()
    # Where the result is a normal float: tl.exp's own result, bit for bit,
    # within tl.exp's approximation of float64's.
    assert torch.equal(ftz[normal], exp[normal])
    rel = ((ftz[normal].to(torch.float64) - want[normal]) / want[normal]).abs()
    assert rel.max() < 1e-5
    tiny = (want < 2.0**-126) & ~x.isnan()
    assert tiny.sum() > 100
    if porter_device == "cuda":
        # Flushed: 0 where tl.exp gives a subnormal (or 0) result.
        assert (ftz[tiny] == 0).all()
        assert (exp[tiny] > 0).any()
    else:
        # The interpreter runs no inline PTX: the helper is tl.exp.
        assert torch.equal(ftz[tiny], exp[tiny])
    assert ftz[x.isnan()].isnan().all() and not ftz[~x.isnan()].isnan().any()
    assert ftz[x == float("inf")].eq(float("inf")).all()
    assert ftz[x == float("-inf")].eq(0).all()


_LOOPED = """
    def k(out_ptr, x_ptr, row: tl.constexpr, BLOCK_COLS: tl.constexpr):
        acc = tl.full([1, BLOCK_COLS], 0, tl.float32)
        for col_start in tl.range(0, row, BLOCK_COLS):
            x = tl.load(x_ptr + col_start)
            acc = acc + exp_ftz(x)
        total = tl.sum(acc, 1)
        for col_start in tl.range(0, row, BLOCK_COLS):
            tl.store(out_ptr + col_start, total)
    """


def test_unroll_marks_every_column_loop_of_a_kernel_with_exp_ftz_in_one():
    fn = _fn(_LOOPED)
    assert unroll_two_blocks(fn) == 2
    text = ast.unparse(fn)
    lines = [line.strip() for line in text.splitlines()]
    decide = (
        f"{UNROLL}: tl.constexpr = "
        "2 if (row + BLOCK_COLS - 1) // BLOCK_COLS == 2 else 1"
    )
    # Decided once, before the first loop; both loops take it, the store
    # loop (no exp) too.
    assert (
        lines.index(decide)
        == lines.index(
            "for col_start in tl.range(0, row, BLOCK_COLS, "
            f"loop_unroll_factor={UNROLL}):"
        )
        - 1
    )
    assert text.count(f"loop_unroll_factor={UNROLL}") == 2
    # Applied once: a second run changes nothing.
    assert unroll_two_blocks(fn) == 0 and ast.unparse(fn) == text


@pytest.mark.parametrize(
    "change",
    [
        ("acc + exp_ftz(x)", "acc + tl.exp2(x)"),  # no exp_ftz in a loop
        ("row: tl.constexpr", "row"),  # a runtime row size: no trip count
        ("BLOCK_COLS: tl.constexpr", "BLOCK_COLS"),  # nor a runtime block
        (
            "tl.range(0, row, BLOCK_COLS):\n            tl.store",
            "tl.range(0, 2 * row, BLOCK_COLS):\n            tl.store",
        ),
    ],
    ids=["no-exp-ftz", "runtime-row", "runtime-block", "two-row-sizes"],
)
def test_unroll_leaves_other_kernels_alone(change):
    src = _LOOPED.replace(*change)
    assert src != _LOOPED
    fn = _fn(src)
    assert unroll_two_blocks(fn) == 0
    assert ast.unparse(fn) == ast.unparse(_fn(src))


def test_unroll_leaves_a_loop_inside_a_branch_alone():
    src = _LOOPED.replace(
        "        total = tl.sum(acc, 1)\n",
        "        total = tl.sum(acc, 1)\n        if BLOCK_COLS > 1:\n"
        "            for c in tl.range(0, row, BLOCK_COLS):\n"
        "                total += exp_ftz(total)\n",
    )
    fn = _fn(src)
    assert unroll_two_blocks(fn) == 0


@pytest.mark.parametrize("case", ["logsumexp", "softmax"])
def test_looped_scaffolds_unroll_and_persistent_ones_do_not(case):
    tree = ast.parse((CAPTURED / case / "kernel.py").read_text())
    kernels = {
        f.name: ast.unparse(f) for f in tree.body if isinstance(f, ast.FunctionDef)
    }
    for name, text in kernels.items():
        loops = text.count("for col_start in tl.range(")
        if name.endswith(("_looped", "_online")):
            assert loops and text.count(f"loop_unroll_factor={UNROLL}") == loops, name
        else:
            assert f"{UNROLL}" not in text, name


_softmax = load_case(CAPTURED / "softmax").kernel

# Compiles softmax's looped kernel for sm_90 with the wheel's compiler (no GPU)
# over fp32 rows of each (vocab, block) in argv, 32 warps, and prints the
# scf.for loops left in its TTGIR, as JSON.
_SCF_SCRIPT = """
import inspect, json, sys
from pathlib import Path
import torch, triton
from triton.backends.compiler import GPUTarget
from porter.testing.parity import import_kernel, load_case
regcount = import_kernel(Path("tools/regcount.py"), "regcount_tool")
kernel = load_case(Path("captured/softmax")).kernel.softmax_kernel_looped
left = []
for vocab, block in zip(*[iter(map(int, sys.argv[1:]))] * 2):
    x = torch.empty(4096, vocab)
    bound = inspect.signature(kernel.fn).bind(
        out_ptr=torch.empty_like(x), logits_ptr=x, partials_ptr=x, num_tokens=4096,
        logits_stride0=vocab, out_stride0=vocab, SPLITS=1, vocab=vocab,
        BLOCK_ROWS=1, BLOCK_COLS=block, PHASE=-1, LAUNCH_PDL=True,
    )
    src, _ = regcount.source_of(kernel, bound)
    compiled = triton.compile(
        src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 32}
    )
    left.append(compiled.asm["ttgir"].count("scf.for"))
print(json.dumps(left))
"""


def test_a_row_of_two_blocks_compiles_without_loops():
    argv = ["32768", "16384", "8192", "4096", "32768", "8192"]
    (left,) = json_lines_apart("-c", _SCF_SCRIPT, *argv, cwd=ROOT)
    # fp32 over 32768 in blocks of 16384 (the launch that lost with exp_ftz,
    # from 4096 rows) and over 8192 in blocks of 4096: unrolled, no loop
    # left. Four blocks of 8192 keep the three loops (an unroll by two lost
    # there).
    assert left == [0, 0, 3]


@pytest.mark.parametrize("vocab", [64, 96], ids=["two-blocks", "three-blocks"])
def test_softmax_looped_kernel_matches_float64_unrolled_or_not(vocab, porter_device):
    # Blocks of 32: a row of 64 is unrolled (UNROLL 2), one of 96 not.
    gen = torch.Generator().manual_seed(vocab)
    x = 4.0 * torch.randn(5, vocab, generator=gen)
    x[1, 7] = float("-inf")
    x[2, :] = -1e30  # one constant row
    x[3, 40] = 80.0  # one large logit: the rest of its row underflows
    want = torch.softmax(x.to(torch.float64) / 0.7, dim=-1)
    x = x.to(porter_device)
    # Poisoned: an element the kernel does not write stays NaN and fails below.
    out = torch.full_like(x, float("nan"))
    pdl = _softmax.pdl_enabled(x.device)
    _softmax.softmax_kernel_looped[(x.shape[0],)](
        out_ptr=out,
        logits_ptr=x,
        num_tokens=x.shape[0],
        logits_stride0=x.stride(0),
        out_stride0=out.stride(0),
        vocab=vocab,
        BLOCK_ROWS=1,
        BLOCK_COLS=32,
        LAUNCH_PDL=pdl,
        num_warps=1,
        launch_pdl=pdl,
    )
    out = out.cpu().to(torch.float64)
    assert not out.isnan().any()
    assert torch.allclose(out, want, rtol=1e-5, atol=1e-7)
    assert torch.allclose(out.sum(-1), torch.ones(5, dtype=torch.float64), atol=1e-5)
