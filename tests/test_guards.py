"""Before/after tests for drop_finite_row_guard (porter.port.speed.guards)."""

import ast
import textwrap

import pytest

from porter.port.speed.guards import drop_finite_row_guard
from porter.port.model import KernelPort
from porter.records import KernelRecord
from porter.render import todo_comments

# softmax(x / 0.7) as Inductor lowers it on the CPU, after porter's earlier
# passes (persistent form: one block, the accumulators already folded).
GUARDED = """\
rows = tl.program_id(0) + tl.arange(0, 1)[:, None]
cols = tl.arange(0, BLOCK_COLS)[None, :]
col_mask = cols < vocab
_flag = tl.full([1, BLOCK_COLS], False, tl.int1)
_max1 = tl.full([1, BLOCK_COLS], float('-inf'), tl.float32)
_max2 = tl.full([1, BLOCK_COLS], float('-inf'), tl.float32)
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < vocab
    x = tl.load(x_ptr + (cols + rows * vocab), col_mask, other=0.0).to(tl.float32)
    tmp1 = 0.7
    tmp2 = x * (1.0 / tmp1)
    tmp3 = tmp2 == tmp2
    tmp4 = tl.abs(tmp2)
    tmp5 = tl.full([1, 1], float('inf'), tl.float32)
    tmp6 = tmp4 != tmp5
    tmp7 = tmp3 & tmp6
    tmp8 = tmp7 == 0
    tmp11 = _flag | tmp8
    _flag = tl.where(col_mask, tmp11, _flag)
    tmp13 = 1.0
    tmp14 = x * tmp13
    tmp17 = maximum_nan(_max1, tmp14)
    _max1 = tl.where(col_mask, tmp17, _max1)
    tmp20 = maximum_nan(_max2, tmp2)
    _max2 = tl.where(col_mask, tmp20, _max2)
tmp12 = _flag.to(tl.int8)
tmp10 = any_true(tmp12, 1)[:, None]
row_max = max_nan(_max1, 1)[:, None]
row_max_2 = max_nan(_max2, 1)[:, None]
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < vocab
    x_2 = tl.load(x_ptr + (cols + rows * vocab), col_mask, other=0.0).to(tl.float32)
    tmp21 = tmp10 == 0
    tmp23 = 1.0
    tmp24 = x_2 * tmp23
    tmp25 = tmp24 - row_max
    tmp26 = 0.7
    tmp27 = tmp25 * (1.0 / tmp26)
    tmp28 = x_2 * (1.0 / tmp26)
    tmp29 = tmp28 - row_max_2
    tmp30 = tl.where(tmp21, tmp27, tmp29)
    e = tl.exp(tmp30)
    tl.store(out_ptr + (cols + rows * vocab), e.to(out_ptr.dtype.element_ty), col_mask)
"""


def _kp(body: str) -> KernelPort:
    src = "def k(x_ptr, out_ptr, n, vocab: tl.constexpr, BLOCK_COLS: tl.constexpr):\n"
    src += textwrap.indent(body, "    ")
    kp = KernelPort(KernelRecord("k", src, "reduction", [], {}, None, None, 0), None)
    kp.tree = ast.parse(src).body[0]
    kp.helpers = {"maximum_nan", "max_nan", "any_true"}
    return kp


def _src(kp: KernelPort) -> str:
    return ast.unparse(kp.tree)


def test_the_guarded_softmax_keeps_the_form_exact_at_the_max_with_a_row_test():
    kp = _kp(GUARDED)
    drop_finite_row_guard(kp)
    src = _src(kp)
    # no per-element finiteness test, no max of x / c, no select
    for gone in ("tl.abs", "any_true", "_flag", "_max2", "row_max_2", "tmp28"):
        assert gone not in src
    assert "tl.where(tmp21" not in src
    # one row max of x; the exponent is (x - shift) * (1 / c), shifted by the
    # row max, or by NaN where max(x) / c overflows
    assert "row_max = max_nan(_max1, 1)[:, None]" in src
    guard = "row_shift = tl.where(row_max * (1.0 / 0.7) < float('inf'), row_max, float('nan'))"
    assert guard in src
    assert src.index("row_max = max_nan") < src.index("row_shift =")
    assert "tmp25 = tmp24 - row_shift" in src and "e = tl.exp(tmp27)" in src
    assert kp.helpers == {"maximum_nan", "max_nan"}
    assert any("one test a row" in n for n in kp.notes)


def test_the_guard_explains_itself_in_a_comment():
    kp = _kp(GUARDED)
    drop_finite_row_guard(kp)
    text = todo_comments(_src(kp))
    line = next(ln for ln in text.splitlines() if "row_shift = " in ln)
    above = text.splitlines()[text.splitlines().index(line) - 1].strip()
    assert above.startswith("# where max(x) / c overflows")


def test_a_taken_name_is_not_reused():
    src = "row_shift = 1\n" + GUARDED
    kp = _kp(src)
    drop_finite_row_guard(kp)
    assert "row_shift_2 = tl.where(row_max" in _src(kp)
    assert "tmp25 = tmp24 - row_shift_2" in _src(kp)


def test_a_negative_divisor_is_left_alone():
    # max(x / c) is min(x) / c when c < 0: the two forms are not the same
    src = GUARDED.replace("tmp1 = 0.7", "tmp1 = -0.7").replace(
        "tmp26 = 0.7", "tmp26 = -0.7"
    )
    kp = _kp(src)
    drop_finite_row_guard(kp)
    assert _src(kp) == ast.unparse(_kp(src).tree) and not kp.notes


def test_a_fast_form_that_is_not_the_same_softmax_is_left_alone():
    src = GUARDED.replace("tmp25 = tmp24 - row_max", "tmp25 = tmp24 - row_max_2")
    kp = _kp(src)
    drop_finite_row_guard(kp)
    assert "tl.where(tmp21, tmp27, tmp29)" in _src(kp)


def test_a_different_guard_is_left_alone():
    # the flag tests NaN only, not infinity: the select stays
    src = GUARDED.replace("tmp7 = tmp3 & tmp6", "tmp7 = tmp3")
    kp = _kp(src)
    drop_finite_row_guard(kp)
    assert "tl.where(tmp21, tmp27, tmp29)" in _src(kp)


@pytest.mark.parametrize(
    "scale, fast, general",
    [
        # before reciprocal_divisors: x / c rather than x * (1.0 / c)
        ("x / tmp1", "tmp25 / tmp26", "x_2 / tmp26"),
        # softmax(x * 0.125): the scale is a factor, not a divisor
        ("x * tmp1", "tmp25 * tmp26", "x_2 * tmp26"),
    ],
)
def test_other_spellings_of_the_scale_match_too(scale, fast, general):
    kp = _kp(
        GUARDED.replace("tmp2 = x * (1.0 / tmp1)", f"tmp2 = {scale}")
        .replace("tmp27 = tmp25 * (1.0 / tmp26)", f"tmp27 = {fast}")
        .replace("tmp28 = x_2 * (1.0 / tmp26)", f"tmp28 = {general}")
    )
    drop_finite_row_guard(kp)
    assert "tl.abs" not in _src(kp) and "e = tl.exp(tmp27)" in _src(kp)
    assert "tmp25 = tmp24 - row_shift" in _src(kp)
