"""Float floor division as torch computes it (porter.port.clean.core_math's
float_floor_divisions and common.py's floor_div_float)."""

import ast
import textwrap
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from porter.port.clean.core_math import float_floor_divisions
from porter.testing import load_case
from porter.testing.parity import common_module

CAPTURED = Path(__file__).resolve().parents[1] / "captured"


def test_floor_of_a_division_becomes_the_helper():
    # Before: Inductor's floor(a / b), kept as it was. After: the helper.
    fn = ast.parse(textwrap.dedent("""
        def k(a_ptr, b_ptr, out_ptr):
            tmp0 = tl.load(a_ptr)
            tmp1 = tl.load(b_ptr)
            tmp2 = triton.language.div_rn(tmp0, tmp1)
            tmp3 = libdevice.floor(tmp2)
            tl.store(out_ptr, tmp3)
        """)).body[0]
    assert float_floor_divisions(fn) == 1
    assert "tmp3 = floor_div_float(tmp0, tmp1)" in ast.unparse(fn)
    # a quotient read twice (its floor and itself) stays as it is
    twice = ast.parse(textwrap.dedent("""
        def k(a, b, out_ptr):
            q = a / b
            tl.store(out_ptr, libdevice.floor(q) + q)
        """)).body[0]
    assert float_floor_divisions(twice) == 0


_floor_div_float = common_module(load_case(CAPTURED / "rmsnorm").kernel).floor_div_float


@triton.jit
def _floor_div_kernel(a_ptr, b_ptr, out_ptr, n: tl.constexpr):
    i = tl.arange(0, n)
    a = tl.load(a_ptr + i)
    b = tl.load(b_ptr + i)
    tl.store(out_ptr + i, _floor_div_float(a, b))


def test_the_helper_gives_eagers_floor_division(porter_device):
    # 1.0 // 0.1 is 9 (floor(a / b): 10), 1 // -inf -1 (-0), inf // 1 NaN (inf).
    inf = float("inf")
    a = torch.tensor([1.0, 1.0, -1.0, inf, 5.0, 7.5, -7.5, -0.0], device=porter_device)
    b = torch.tensor([0.1, -inf, inf, 1.0, 0.0, 2.0, 2.0, 3.0], device=porter_device)
    out = torch.empty_like(a)
    _floor_div_kernel[(1,)](a, b, out, 8)
    want = torch.div(a.cpu(), b.cpu(), rounding_mode="floor")
    out = out.cpu()
    assert torch.equal(out.isnan(), want.isnan())
    assert torch.equal(out.nan_to_num(), want.nan_to_num())
    finite = ~want.isnan()  # a NaN's sign says nothing
    assert torch.equal(out.signbit()[finite], want.signbit()[finite])


@pytest.mark.parametrize("beside", ["aten.fmod", "aten.remainder"])
def test_a_floor_division_beside_an_fmod_becomes_the_helper(beside):
    # `torch.fmod(x, y), x // y` in one kernel: the kernel's aten ops name
    # fmod, and the floor(a / b) stayed: 1.0 // 0.1 gave 10 (eager 9); so
    # with a remainder (Inductor's is `a % b` with a sign fix)
    from porter.port.clean.core_math import core_math
    from porter.port.model import KernelPort
    from porter.records import KernelRecord

    source = textwrap.dedent("""
        def k(in_ptr0, in_ptr1, out_ptr0, out_ptr1):
            tmp0 = tl.load(in_ptr0)
            tmp1 = tl.load(in_ptr1)
            tmp2 = libdevice.fmod(tmp0, tmp1)
            tmp3 = triton.language.div_rn(tmp0, tmp1)
            tmp4 = libdevice.floor(tmp3)
            tl.store(out_ptr0, tmp2)
            tl.store(out_ptr1, tmp4)
        """)
    aten = [beside, "aten.floor_divide"]
    record = KernelRecord("k", source, "pointwise", [], {}, None, None, 0, aten=aten)
    kp = KernelPort(record, None)
    kp.tree = ast.parse(source).body[0]
    core_math(kp)
    assert "floor_div_float(tmp0, tmp1)" in ast.unparse(kp.tree)
    assert "floor_div_float" in kp.helpers


FMOD_FLOOR_DIV = """
import torch

DIMS = {"n": 24}
DYNAMIC = ["n"]
DTYPES = ["float32"]


def make_inputs(n, dtype=torch.float32, device="cpu"):
    return (
        torch.randn(n, dtype=dtype, device=device),
        torch.randn(n, dtype=dtype, device=device),
    )


def fmod_div(x, y):
    return torch.fmod(x, y), x // y


REFERENCE = fmod_div
"""


def test_the_difficult_values_reach_a_vector_activation(tmp_path):
    # floor(x / y) of two vectors passed random values (and the difficult
    # ones left a 1-d activation alone); its inf row shows floor(inf / y)
    from porter.pipeline import capture
    from porter.testing import check_parity
    from porter.testing.parity import ParityError, Scenario

    ref = tmp_path / "fmod_div.py"
    ref.write_text(FMOD_FLOOR_DIV)
    case = load_case(capture(ref, out=tmp_path / "c", device="cpu").case)
    difficult = Scenario("float32", {"n": 24}, values="difficult")
    check_parity(case, difficult, "cpu", 0)
    kernel = case.folder / "kernel.py"
    text = kernel.read_text()
    kernel.write_text(text.replace("floor_div_float(x, y)", "tl.floor(x / y)"))
    wrong = load_case(case.folder)
    check_parity(wrong, Scenario("float32", {"n": 24}), "cpu", 0)
    with pytest.raises(ParityError):
        check_parity(wrong, difficult, "cpu", 0)
