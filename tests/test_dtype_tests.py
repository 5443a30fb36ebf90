"""clean.dtype_tests: Inductor's `x.dtype is tl.float32` compares by value."""

import ast

from porter.port.clean.dtype_tests import compare_dtypes_by_value
from porter.port.model import KernelPort
from porter.records import KernelRecord

SIGNBIT = """
def k(out_ptr, x_ptr):
    r = libdevice.fmod(tl.load(x_ptr), 3.0)
    s = libdevice.signbit(r) != 0 if r.dtype is tl.float32 else r < 0
    t = r if r.dtype is not tl.int64 else r
    u = r is None
"""


def test_a_dtype_identity_test_becomes_a_comparison_by_value():
    # Before: `r.dtype is tl.float32` was False for fmod's result, whose dtype
    # is an equal object of its own, so signbit(-0.0) read False. After: ==.
    kp = KernelPort(KernelRecord("k", SIGNBIT, "pointwise", [], {}, None, None, 0), None)
    kp.tree = ast.parse(SIGNBIT).body[0]
    compare_dtypes_by_value(kp)
    text = ast.unparse(kp.tree)
    assert "if r.dtype == tl.float32 else" in text
    assert "if r.dtype != tl.int64 else" in text
    assert "u = r is None" in text  # not a dtype: left alone
