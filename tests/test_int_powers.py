"""finish.int_powers: Inductor's float64 pow of an int argument becomes an exact int64 shift."""

import ast

from porter.port.finish.int_powers import _Exact, _int_casts, _python


def _cast(text: str) -> ast.Call:
    fn = ast.parse(f"def k(ids_ptr, bits):\n    val = {text}\n").body[0]
    (cast,) = _int_casts(fn)
    return cast


INDUCTOR = (
    "(-1 + libdevice.pow(tl.full([], 2.0, tl.float64), "
    "tl.cast(bits, tl.float64))).to(tl.int64)"
)


def test_a_power_of_two_of_an_int_argument_reads_as_python_and_shifts():
    # Before: (1 << bits) - 1 stayed libdevice.pow(2.0, bits) in float64,
    # 2 ** 54 at bits = 54. After: the launcher spells it in Python's ints
    # and the kernel shifts an int64.
    cast = _cast(INDUCTOR)
    assert ast.unparse(_python(cast.func.value, {"bits": "bits"})) == "-1 + 2 ** bits"
    exact = ast.unparse(_Exact().visit(cast.func.value))
    assert exact == "-1 + (tl.full([], 1, tl.int64) << bits)"


def test_an_expression_of_anything_but_int_arguments_is_not_spelled():
    # a tensor (ids) in the expression: the launcher cannot compute it
    cast = _cast(
        "(ids + libdevice.pow(tl.full([], 2.0, tl.float64), "
        "tl.cast(bits, tl.float64))).to(tl.int64)"
    )
    assert _python(cast.func.value, {"bits": "bits"}) is None
    # a fraction is no integer
    cast = _cast(
        "(0.5 * libdevice.pow(tl.full([], 2.0, tl.float64), "
        "tl.cast(bits, tl.float64))).to(tl.int64)"
    )
    assert _python(cast.func.value, {"bits": "bits"}) is None
