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


def test_a_cast_meeting_an_int32_value_stays_for_eagers_wrap():
    # fairseq's position ids: mask.int() + past; eager adds in int32 and wraps
    # at past = 2**31, as the cast does; read whole, Triton added in int64.
    before = """
        def k(ids_ptr, past: tl.constexpr, start: tl.constexpr):
            ids = tl.load(ids_ptr)
            val = tl.cast(past, tl.int32)
            out = (ids.to(tl.int32) + val).to(tl.int64)
            local = ids - tl.cast(start, tl.int32)
        """
    text, n = _plain(before, ints=("past", "start"))
    assert n == 1
    assert "val = tl.cast(past, tl.int32)" in text
    assert "local = ids - start" in text
