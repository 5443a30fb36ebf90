"""finish.masked_where: a where its masked loads already make the fallback drops."""

import ast

from porter.ast_tools import bindings
from porter.port.finish.masked_where import _drop, is_identity


def _fn(body: str) -> ast.FunctionDef:
    lines = "".join(f"    {line}\n" for line in body.strip().splitlines())
    return ast.parse(f"def k(x_ptr, w_ptr, s, mask, col_mask):\n{lines}").body[0]


def _identity(body: str) -> bool:
    fn = _fn(body)
    where = next(
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "tl.where"
    )
    bound = bindings(fn)
    once = {n: v[0] for n, v in bound.items() if len(v) == 1}
    return is_identity(where, once, bound)


def test_a_sum_of_squares_of_a_zero_filled_load_needs_no_where():
    # Before: Inductor's guard stayed (x_sq_masked, acc = tl.where(mask, val,
    # acc)). After: the sum reads x * x, the loop adds it to acc.
    fn = _fn("""
x = tl.load(x_ptr + offsets, mask, other=0.0)
x = x.to(tl.float32)
x_sq = x * x
x_sq_masked = tl.where(mask, x_sq, 0)
row_sum = tl.sum(x_sq_masked, 1)
val = acc + x * x
acc = tl.where(mask, val, acc)
""")
    assert _drop(fn) == 2
    text = ast.unparse(fn)
    assert "tl.where" not in text
    assert "row_sum = tl.sum(x_sq, 1)" in text
    assert "acc = acc + x * x" in text and "val" not in text


def test_wheres_the_fill_does_not_make_the_fallback_stay():
    # exp(0) is 1, not 0: a softmax's sum over a zero-filled load keeps it
    assert not _identity("""
x = tl.load(x_ptr + offsets, mask, other=0.0).to(tl.float32)
e = tl.where(mask, tl.exp(x), 0)
""")
    # 0 * s is NaN for an infinite s: a scale read besides keeps it
    assert not _identity("""
x = tl.load(x_ptr + offsets, mask, other=0.0).to(tl.float32)
e = tl.where(mask, x * s, 0)
""")
    # a load under another mask fills no lane of this one
    assert not _identity("""
x = tl.load(x_ptr + offsets, col_mask, other=0.0).to(tl.float32)
e = tl.where(mask, x * x, 0)
""")
    # without other the masked lanes hold anything
    assert not _identity("""
x = tl.load(x_ptr + offsets, mask).to(tl.float32)
e = tl.where(mask, x * x, 0)
""")
    # a max over a zero-filled load: 0 is not the fallback -inf
    assert not _identity("""
x = tl.load(x_ptr + offsets, mask, other=0.0).to(tl.float32)
e = tl.where(mask, x, float("-inf"))
""")


def test_a_fill_that_is_the_fallback_of_a_max_drops_it():
    assert _identity("""
x = tl.load(x_ptr + offsets, mask, other=float("-inf")).to(tl.float32)
w = tl.load(w_ptr + cols, col_mask, other=0.0)
e = tl.where(mask, x, float("-inf"))
""")
