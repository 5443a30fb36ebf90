"""porter.port.finish.refusals: a refusal made twice is made once."""

from porter.port.finish.refusals import first_refusals


def test_a_later_refusal_on_the_same_test_goes():
    checks = [
        "if hidden == 0:\n    refuse('amax over an empty axis')",
        "if hidden < 0:\n    refuse('negative')",
        "if hidden==0:\n    refuse('eager raises at hidden = 0')",
    ]
    assert first_refusals(checks) == checks[:2]


def test_checks_that_do_more_than_refuse_are_kept():
    # A check that binds or copies as well is not a refusal: it stays, and
    # a refusal after it on the same test stays too (its test was not seen).
    checks = [
        "if x.stride(-1) != 1:\n    x = x.contiguous()",
        "if x.stride(-1) != 1:\n    refuse('strided')",
        "if n == 1:\n    refuse('one')\n    n = 2",
        "if n == 1:\n    refuse('one')",
    ]
    assert first_refusals(checks) == checks
