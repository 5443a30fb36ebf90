"""bind.float_mod: a float `a % b` becomes libdevice.fmod(a, b), exact on GPUs."""

import ast

from porter.port.bind.float_mod import exact_float_remainders
from porter.port.model import KernelPort
from porter.records import KernelRecord

REMAINDER = """
def k(x_ptr, y_ptr, i_ptr, out_ptr, n):
    x = tl.load(x_ptr + offsets, mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask).to(tl.float32)
    i = tl.load(i_ptr + offsets, mask)
    val = 2.5
    r = x % val
    s = x % y
    rows = offsets % n
    j = i % 7
"""


def test_a_float_remainder_becomes_fmod_and_an_int_one_stays():
    # Before: x % 2.5 stayed Triton's %, which the GPU computes as
    # x - trunc(x / 2.5) * 2.5 in fp32 (3.4e10 for eager's 0.5 on an H100,
    # +0.0 for -0.0). After: libdevice.fmod; index math keeps %.
    kp = KernelPort(KernelRecord("k", REMAINDER, "pointwise", [], {}, None, None, 0), None)
    kp.tree = ast.parse(REMAINDER).body[0]
    exact_float_remainders(kp)
    text = ast.unparse(kp.tree)
    assert "r = libdevice.fmod(x, val)" in text
    assert "s = libdevice.fmod(x, y)" in text
    assert "rows = offsets % n" in text and "j = i % 7" in text
    assert kp.uses_libdevice


def test_an_integer_libdevice_result_keeps_its_remainder():
    # popc's count is an int: fmod has no int variant, and a GPU would not
    # compile it
    src = "def k(i_ptr):\n    i = tl.load(i_ptr)\n    c = libdevice.popc(i) % 3\n"
    kp = KernelPort(KernelRecord("k", src, "pointwise", [], {}, None, None, 0), None)
    kp.tree = ast.parse(src).body[0]
    exact_float_remainders(kp)
    assert "c = libdevice.popc(i) % 3" in ast.unparse(kp.tree)
