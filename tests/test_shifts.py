"""bind.shifts: a shift by an amount held at run time gives torch's values
past the width (Triton's shl and ashr are undefined there)."""

import ast
from types import SimpleNamespace

from porter.port.bind.shifts import exact_shifts


def _port(src):
    return SimpleNamespace(tree=ast.parse(src).body[0], helpers=set(), notes=[])


def test_a_shift_by_a_runtime_amount_becomes_torchs():
    # Before: `hi << bits` as Triton's shl, 0 for the whole expression on an
    # H200 at bits = -4 (eager: lo). After: shift_left; a literal below 8
    # stays a plain shift, in range at every width.
    kp = _port(
        "def k(lo, hi, bits):\n"
        "    out = lo | (hi << bits)\n"
        "    down = hi >> (bits + 1)\n"
        "    nib = hi >> 4\n"
        "    far = hi << 40\n"
    )
    exact_shifts(kp)
    text = ast.unparse(kp.tree)
    assert "out = lo | shift_left(hi, bits)" in text
    assert "down = shift_right(hi, bits + 1)" in text
    assert "nib = hi >> 4" in text
    assert "far = shift_left(hi, 40)" in text
    assert kp.helpers == {"shift_left", "shift_right"}
