"""Integer outputs (a quantizer's codes): one step of tolerance, and unwritten
elements told apart from written ones that hold the poison value."""

import pytest
import torch

from porter.testing.parity import (
    INT_SENTINEL,
    ParityError,
    _compare,
    _unwritten,
)


def _codes(*values):
    return torch.tensor(values, dtype=torch.int8)


def test_a_written_poison_value_one_step_from_eager_passes():
    # Seen on the H200 (fp16, 32768 x 4096): the kernel wrote -123, eager -122.
    # Only the second run, poisoned differently, can say it was written.
    got, again = _codes(5, INT_SENTINEL), _codes(5, INT_SENTINEL)
    eager = _codes(5, INT_SENTINEL + 1)
    (mask,) = _unwritten((got,), (again,))
    assert not mask.any()
    assert _compare(0, eager.double(), eager, got, "float16", "w", mask) == 1.0


def test_an_unwritten_element_fails_even_where_eager_holds_the_poison():
    got, again = _codes(5, INT_SENTINEL), _codes(5, 77)
    eager = _codes(5, INT_SENTINEL)
    (mask,) = _unwritten((got,), (again,))
    assert mask.tolist() == [False, True]
    with pytest.raises(ParityError, match=r"output 0\[1\] was never written"):
        _compare(0, eager.double(), eager, got, "float16", "w", mask)


def test_integers_more_than_one_step_apart_fail():
    got, eager = _codes(5, 9), _codes(5, 7)
    with pytest.raises(ParityError, match=r"= 9, eager 7"):
        _compare(0, eager.double(), eager, got, "float16", "w")


def test_outputs_without_the_poison_value_need_no_second_run():
    floats, codes = torch.zeros(3), _codes(1, 2, 3)
    assert _unwritten((floats, codes), (floats, codes)) == [None, None]
