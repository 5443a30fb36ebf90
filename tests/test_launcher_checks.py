"""Before/after tests for how the launcher spells its argument checks: one
line each where black would have given every element of a tuple its own."""

from types import SimpleNamespace

from porter.port.launch.launcher import _dtype_ties, _rank_check


def test_a_few_ranks_are_one_tuple_and_many_one_list():
    few = _rank_check([("x", 2), ("weight", 1)])
    assert few.startswith("if (x.dim(), weight.dim()) != (2, 1):")
    names = ["x", "bias", "residual", "gamma", "beta"]
    many = _rank_check(list(zip(names, [2, 1, 2, 1, 1])))
    test = many.split("\n")[0]
    assert test == (
        "if [t.dim() for t in (x, bias, residual, gamma, beta)] != [2, 1, 2, 1, 1]:"
    )
    assert "captured with x 2-d, bias 1-d, residual 2-d" in many


def test_many_dtypes_tied_to_the_first_are_one_any():
    names = ["residual", "bias", "gamma", "beta"]
    cap = SimpleNamespace(
        input_follows=["x", *names],
        input_dtypes={"x": "torch.float32", **{n: "torch.float32" for n in names}},
    )
    (check,) = _dtype_ties(cap, "x")
    assert check.startswith(
        "if any(t.dtype != x.dtype for t in (residual, bias, gamma, beta)):"
    )
    cap = SimpleNamespace(
        input_follows=["x", "weight"],
        input_dtypes={"x": "torch.float32", "weight": "torch.float32"},
    )
    (check,) = _dtype_ties(cap, "x")
    assert check.startswith("if weight.dtype != x.dtype:")


def test_int32_index_math_is_told_from_int64():
    # A constexpr past int32 meeting these fails in Triton ("Scalar ... is out
    # of range for type int32"); one meeting int64 rows or loads does not.
    import ast

    from porter.port.launch.launcher import _int32_only

    def int32(text, narrow=("num_rows",)):
        return _int32_only(ast.parse(text, mode="eval").body, set(narrow), {"BLOCK"})

    assert int32("tl.program_id(0) % BLOCK")
    assert int32("num_rows * BLOCK")
    assert int32("col_block * BLOCK + tl.arange(0, BLOCK)", ("col_block",))
    assert not int32("row_block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    assert not int32("tl.load(ids_ptr + num_rows)")
    assert not int32("rows * BLOCK")  # rows: not known to be int32
