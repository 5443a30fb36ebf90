"""porter.port.finish.tidy: Inductor's tmpN temporaries folded and named, ops kept in order."""

import ast
import textwrap

from porter.port.finish.tidy import tidy_temporaries


def _tidy(src: str) -> str:
    fn = ast.parse(textwrap.dedent(src)).body[0]
    tidy_temporaries(fn)
    return ast.unparse(fn)


def _same(a: str, b: str) -> bool:
    return ast.unparse(ast.parse(textwrap.dedent(a))) == ast.unparse(
        ast.parse(textwrap.dedent(b))
    )


def test_constants_and_a_chain_of_single_uses_fold_into_one_statement():
    before = """
        def k(x_ptr, out_ptr, hidden):
            x = tl.load(x_ptr)
            row_sum = tl.sum(x * x, 1)
            tmp6 = tl.cast(hidden, tl.float32)
            tmp8 = row_sum / tmp6
            tmp9 = 1e-06
            tmp10 = tmp8 + tmp9
            rstd = tl.rsqrt(tmp10)
            tl.store(out_ptr, x * rstd)
        """
    after = """
        def k(x_ptr, out_ptr, hidden):
            x = tl.load(x_ptr)
            row_sum = tl.sum(x * x, 1)
            rstd = tl.rsqrt(row_sum / tl.cast(hidden, tl.float32) + 1e-06)
            tl.store(out_ptr, x * rstd)
        """
    assert _same(_tidy(before), after)


def test_a_value_stays_put_where_other_ops_would_run_first():
    before = """
        def k(x_ptr, out_ptr, n):
            x = tl.load(x_ptr)
            tmp4 = x * x
            acc = tl.where(x > n, tmp4, 0.0)
            tl.store(out_ptr, acc)
        """
    # `x > n` runs before tmp4 is read: folding would compute it first.
    assert "x_sq = x * x" in _tidy(before)


def test_nothing_folds_across_other_work_or_a_load():
    before = """
        def k(x_ptr, w_ptr, out_ptr):
            x = tl.load(x_ptr)
            tmp2 = x * 0.5
            tmp3 = x * x
            w = tl.load(w_ptr)
            tmp4 = tmp2 * w
            tl.store(out_ptr, tmp4 + tmp3)
        """
    out = _tidy(before)
    # tmp2 is used after other statements ran: it stays a statement of its own.
    assert "x_scaled = x * 0.5" in out
    assert "x_sq = x * x" in out
    assert "tmp" not in out


def test_a_value_is_not_folded_into_a_loop_that_would_recompute_it():
    before = """
        def k(x_ptr, n):
            tmp1 = tl.load(x_ptr) * 2.0
            for i in range(n):
                tl.store(x_ptr + i, tmp1)
        """
    out = _tidy(before)
    assert "for i in range(n):" in out and "tl.store(x_ptr + i, tl.load" not in out


def test_stored_values_accumulators_and_suffixed_names():
    before = """
        def k(x_ptr, out_ptr, n):
            _tmp3 = tl.full([1, 4], 0, tl.float32)
            tmp4_mean = tl.zeros([1, 4], tl.float32)
            for i in range(n):
                x = tl.load(x_ptr + i)
                _tmp3 = tl.where(x > 0, _tmp3 + x, _tmp3)
                tmp4_mean = tmp4_mean + x
            tmp14 = tl.sum(_tmp3, 1) * tl.sum(tmp4_mean, 1)
            tl.store(out_ptr + (rows * 4), tmp14.to(out_ptr.dtype.element_ty))
        """
    out = _tidy(before)
    assert "acc = tl.full" in out and "mean = tl.zeros" in out
    assert "out = tl.sum(acc, 1) * tl.sum(mean, 1)" in out
    assert "tmp" not in out


def test_names_never_clash_with_what_the_kernel_already_uses():
    before = """
        def k(x_ptr, acc):
            tmp1 = tl.full([4], 0, tl.float32)
            tmp2 = tl.full([4], 1, tl.float32)
            tl.store(x_ptr, tmp1 + tmp2 + acc)
            tl.store(x_ptr + 4, tmp1 * tmp2)
        """
    out = _tidy(before)
    assert "acc_2 = " in out and "acc_3 = " in out


def test_a_constant_whose_method_is_called_stays_a_name():
    # KernelBench 92 (exclusive cumsum) stores a zero: `(0.0).to(...)` is no
    # Triton code, a Python float has no .to
    before = """
        def k(out_ptr, offsets, mask):
            tmp0 = 0.0
            tl.store(out_ptr + offsets, tmp0.to(out_ptr.dtype.element_ty), mask)
        """
    after = _tidy(before)
    assert ".to(" in after and "(0.0).to" not in after
    assert "= 0.0" in after


def test_welford_results_and_its_weight_read_as_counts():
    before = """
        def k(x_ptr, out_ptr, n):
            tmp4_mean = tl.zeros([1, 4], tl.float32)
            tmp4_m2 = tl.zeros([1, 4], tl.float32)
            tmp4_weight = tl.zeros([1, 4], tl.float32)
            for i in range(n):
                x = tl.load(x_ptr + i)
                tmp4_mean_next, tmp4_m2_next, tmp4_weight_next = welford_accumulate(
                    x, tmp4_mean, tmp4_m2, tmp4_weight, i == 0
                )
                tmp4_mean = tmp4_mean_next
                tmp4_m2 = tmp4_m2_next
                tmp4_weight = tmp4_weight_next
            tmp5, tmp6, tmp7 = welford_finish(tmp4_mean, tmp4_m2, tmp4_weight, 1)
            tl.store(out_ptr, tmp5 + tmp6 + tmp7)
        """
    out = _tidy(before)
    assert "count = tl.zeros" in out
    assert "mean_next, m2_next, count_next = welford_accumulate(" in out
    assert "row_mean, row_m2, row_count = welford_finish(mean, m2, count, 1)" in out
    assert "tmp" not in out and "weight" not in out
