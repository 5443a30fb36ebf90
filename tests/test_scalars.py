"""porter.port.finish.scalars: a size or float argument beside an fp32 value
needs no cast to fp32."""

import ast
import textwrap

from porter.port.finish.scalars import plain_number_casts


def _plain(src: str, numbers=("hidden", "eps", "n")) -> tuple[str, int]:
    fn = ast.parse(textwrap.dedent(src)).body[0]
    n = plain_number_casts(fn, set(numbers))
    return ast.unparse(fn), n


def _same(a: str, b: str) -> bool:
    return a == ast.unparse(ast.parse(textwrap.dedent(b)))


def test_a_row_statistic_divides_by_the_size_and_adds_eps_uncast():
    before = """
        def k(x_ptr, eps, hidden: tl.constexpr):
            if hidden > 4:
                x = tl.load(x_ptr).to(tl.float32)
            else:
                x = tl.load(x_ptr, eviction_policy="evict_first").to(tl.float32)
            row_sum = tl.sum(tl.where(x > 0, x * x, 0), 1)[:, None]
            tmp6 = tl.cast(hidden, tl.float32)
            rstd = tl.rsqrt(row_sum / tmp6 + tl.cast(eps, tl.float32))
        """
    after = """
        def k(x_ptr, eps, hidden: tl.constexpr):
            if hidden > 4:
                x = tl.load(x_ptr).to(tl.float32)
            else:
                x = tl.load(x_ptr, eviction_policy="evict_first").to(tl.float32)
            row_sum = tl.sum(tl.where(x > 0, x * x, 0), 1)[:, None]
            rstd = tl.rsqrt(row_sum / hidden + eps)
        """
    text, n = _plain(before)
    assert n == 2 and _same(text, after), text


def test_a_loop_accumulator_is_fp32_through_its_own_update():
    src = """
        def k(x_ptr, n, BLOCK: tl.constexpr):
            acc = tl.zeros([BLOCK], tl.float32)
            for i in tl.range(0, n, BLOCK):
                acc = acc + tl.load(x_ptr + i).to(tl.float32)
            mean = tl.sum(acc, 0) / tl.cast(n, tl.float32)
        """
    text, n = _plain(src)
    assert n == 1 and "mean = tl.sum(acc, 0) / n" in text


def test_casts_stay_beside_a_literal_an_int_or_another_cast():
    # 1.0 / hidden would divide in Python's float64 for a constexpr; an int
    # index times n would stay an int; two sizes divide as ints.
    src = """
        def k(x_ptr, n, hidden: tl.constexpr):
            inv = 1.0 / tl.cast(hidden, tl.float32)
            rows = tl.arange(0, 4)
            scaled = rows * tl.cast(n, tl.float32)
            ratio = tl.cast(n, tl.float32) / tl.cast(hidden, tl.float32)
            loaded = tl.load(x_ptr + rows)
            mixed = loaded * tl.cast(n, tl.float32)
        """
    text, n = _plain(src)
    assert n == 0 and _same(text, src)
