"""Before/after tests for exp_ftz (porter.port.fastexp), the scaffolds that
take it, and its numerics against float64: on a GPU the PTX (results under
2^-126 flushed to 0), under Triton's interpreter tl.exp itself."""

import ast
import textwrap
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from porter.port.fastexp import HELPER, NOTE, exp_ftz
from porter.testing.parity import load_case

CAPTURED = Path(__file__).resolve().parents[1] / "captured"


def _fn(src: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(src)).body[0]


def test_swaps_each_tl_exp_for_the_helper():
    fn = _fn("""
        def k(x_ptr):
            x = tl.load(x_ptr)
            e = tl.exp(x - 1.0)
            s = tl.sum(tl.exp(e), 0)
            t = tl.exp2(x)
        """)
    assert exp_ftz(fn) == 2
    text = ast.unparse(fn)
    assert "e = exp_ftz(x - 1.0)" in text
    assert "s = tl.sum(exp_ftz(e), 0)" in text
    assert "tl.exp(" not in text and "t = tl.exp2(x)" in text


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
    helper = [f for f in functions if f.name == HELPER]
    assert len(helper) == 1
    others = [ast.unparse(f) for f in functions if f.name != HELPER]
    assert not any("tl.exp(" in text for text in others)
    assert any(f"{HELPER}(" in text for text in others)
    assert NOTE in ast.get_docstring(tree)


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
