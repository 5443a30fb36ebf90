"""Before/after tests for the sigmoid form of 1 + tanh(u) (porter.port.finish.tanh),
the scaffolds that take it, and its numerics against float64: on a GPU the
PTX (exp_ftz, div.approx.f32), under Triton's interpreter numpy's."""

import ast
import textwrap
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from porter.port.finish.tanh import NOTE, one_plus_tanh
from porter.testing.parity import load_case

CAPTURED = Path(__file__).resolve().parents[1] / "captured"
SIGMOID = "libdevice.fast_dividef(2.0, 1.0 + exp_ftz(-2.0 * u))"


def _fn(src: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(src)).body[0]


# Inductor's tanh GELU, as it writes it.
_GELU = """
    def k(x_ptr):
        x = tl.load(x_ptr)
        half = x * 0.5
        u = x * 0.7978845608028654
        t = libdevice.tanh(u)
        one = 1.0
        s = t + one
        y = half * s
    """


@pytest.mark.parametrize(
    "src",
    [
        _GELU,
        _GELU.replace("s = t + one", "s = one + t"),
        _GELU.replace("        one = 1.0\n", "").replace("t + one", "t + 1.0"),
    ],
    ids=["named-one", "one-first", "literal-one"],
)
def test_rewrites_one_plus_tanh_in_the_sigmoid_form(src):
    fn = _fn(src)
    assert one_plus_tanh(fn) == 1
    text = ast.unparse(fn)
    assert f"s = {SIGMOID}" in text
    # The tanh and the name bound to 1.0 are read nowhere else: both go.
    assert "tanh" not in text and "one" not in text
    assert "y = half * s" in text


def test_keeps_a_one_that_is_read_elsewhere():
    fn = _fn(_GELU.replace("y = half * s", "y = half * s + one"))
    assert one_plus_tanh(fn) == 1
    text = ast.unparse(fn)
    assert f"s = {SIGMOID}" in text and "one = 1.0" in text


@pytest.mark.parametrize(
    "change",
    [
        ("s = t + one", "s = t + 2.0"),  # not 1 + tanh
        ("y = half * s", "y = half * s * t"),  # tanh read elsewhere
        ("one = 1.0", "one = 1.5"),  # a name bound to another value
        ("s = t + one", "s = t * one"),  # not a sum
        ("libdevice.tanh(u)", "libdevice.tanh(u * 2.0)"),  # not a name
        (
            "        t = libdevice",
            "        u = u + 1.0\n        t = libdevice",
        ),  # u rebound
    ],
    ids=[
        "two",
        "tanh-read-twice",
        "one-is-not-1",
        "product",
        "expression",
        "u-rebound",
    ],
)
def test_leaves_other_uses_of_tanh_alone(change):
    src = _GELU.replace(*change)
    assert src != _GELU
    fn = _fn(src)
    assert one_plus_tanh(fn) == 0
    assert ast.unparse(fn) == ast.unparse(_fn(src))


@pytest.mark.parametrize("case", ["gelu_tanh_and_mul", "linear_gelu"])
def test_gelu_scaffolds_take_the_sigmoid_form_in_every_kernel(case):
    source = (CAPTURED / case / "kernel.py").read_text()
    tree = ast.parse(source)
    kernels = [
        ast.unparse(f)
        for f in tree.body
        if isinstance(f, ast.FunctionDef) and "fast_dividef(" in ast.unparse(f)
    ]
    # gelu_tanh_and_mul: one kernel; linear_gelu: its epilogue and its matmul.
    assert len(kernels) == (2 if case == "linear_gelu" else 1)
    for text in kernels:
        assert "libdevice.tanh" not in text
        assert "libdevice.fast_dividef(2.0, 1.0 + exp_ftz(-2.0 * val))" in text
    assert NOTE in (CAPTURED / case / "README.md").read_text()  # what porter changed


_exp_ftz = load_case(CAPTURED / "gelu_tanh_and_mul").kernel.exp_ftz


@triton.jit
def _both_forms_kernel(u_ptr, sigmoid_ptr, tanh_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    u = tl.load(u_ptr + offsets, mask)
    tl.store(
        sigmoid_ptr + offsets,
        libdevice.fast_dividef(2.0, 1.0 + _exp_ftz(-2.0 * u)),
        mask,
    )
    tl.store(tanh_ptr + offsets, libdevice.tanh(u) + 1.0, mask)


def test_the_sigmoid_form_is_one_plus_tanh_and_closer_to_float64(porter_device):
    specials = [float("-inf"), float("inf"), float("nan"), 0.0, -0.0, 1e-30]
    u = torch.cat(
        [torch.linspace(-60.0, 20.0, 8187, dtype=torch.float64), torch.tensor(specials)]
    ).to(torch.float32)
    u = u.to(porter_device)
    # Poisoned: an element the kernel does not write stays NaN and fails below.
    sigmoid = torch.full_like(u, float("nan"))
    plus_tanh = torch.full_like(u, float("nan"))
    _both_forms_kernel[(triton.cdiv(u.numel(), 1024),)](
        u, sigmoid, plus_tanh, u.numel(), BLOCK=1024
    )
    u, sigmoid, plus_tanh = u.cpu(), sigmoid.cpu(), plus_tanh.cpu()
    want = 1.0 + torch.tanh(u.to(torch.float64))
    # 2 / (1 + exp(-2u)) in float64, where 1 + tanh(u) cancels to 0 first.
    want = torch.where(
        want < 1e-3, 2.0 * torch.sigmoid(2.0 * u.to(torch.float64)), want
    )
    # div.approx gives 0 for divisors from 2^126: results under 2^-125 (the
    # bottom of the normal range, next to exp_ftz's flush) may become 0.
    normal = want >= 2.0**-124
    rel = ((sigmoid[normal].to(torch.float64) - want[normal]) / want[normal]).abs()
    # exp's argument rounded to fp32 (up to 2.6e-6 of the result at u = -43),
    # then a division within 2 ulps.
    assert rel.max() < 4e-6
    old = ((plus_tanh[normal].to(torch.float64) - want[normal]) / want[normal]).abs()
    assert old.max() > 0.5  # 1 + tanh(u) cancels to 0 from u = -9 or so
    assert (rel <= old + 1e-6).all()
    # Below: 0 or as small, never negative.
    tiny = ~normal & ~u.isnan()
    assert tiny.sum() > 100
    assert (sigmoid[tiny] >= 0).all() and (sigmoid[tiny] < 2.0**-123).all()
    # The limits and NaN.
    assert sigmoid[u.isnan()].isnan().all() and not sigmoid[~u.isnan()].isnan().any()
    assert sigmoid[u == float("inf")].eq(2.0).all()
    assert sigmoid[u == float("-inf")].eq(0.0).all()
