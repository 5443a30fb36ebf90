"""porter.port.finish.int_width: an int argument is read at the width
Triton passes it, not cut to int32."""

import ast
import textwrap

from porter.port.finish.int_width import plain_int_casts


def _plain(src: str, ints=("start", "end")) -> tuple[str, int]:
    fn = ast.parse(textwrap.dedent(src)).body[0]
    n = plain_int_casts(fn, set(ints))
    return ast.unparse(fn), n


def test_an_int_argument_cast_to_int32_is_read_as_itself():
    before = """
        def k(ids_ptr, start: tl.constexpr, end: tl.constexpr):
            ids = tl.load(ids_ptr)
            cast_start = tl.cast(start, tl.int32)
            local = (ids - cast_start) * ((ids >= cast_start) & (ids < tl.cast(end, tl.int32)))
        """
    after = """
        def k(ids_ptr, start: tl.constexpr, end: tl.constexpr):
            ids = tl.load(ids_ptr)
            cast_start = start
            local = (ids - cast_start) * ((ids >= cast_start) & (ids < end))
        """
    text, n = _plain(before)
    assert n == 2
    assert text == ast.unparse(ast.parse(textwrap.dedent(after)))


def test_other_casts_stay():
    before = """
        def k(x_ptr, start: tl.constexpr, n):
            a = tl.cast(start, tl.int64)
            b = tl.cast(n, tl.int32)
            c = tl.cast(tl.load(x_ptr), tl.int32)
        """
    text, n = _plain(before)
    assert n == 0
    assert text == ast.unparse(ast.parse(textwrap.dedent(before)))
