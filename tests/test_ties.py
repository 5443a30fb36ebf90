"""fold_ties: the size ties a view leaves in Dynamo's guards, before and after."""

import pytest

from porter.ties import fold_ties, is_tie

H, G, T = "x.shape[1]", "group_size", "x.shape[0]"


@pytest.mark.parametrize(
    "before, after",
    [
        # x.view(t, h // g, g): four ties, one check
        (
            [
                f"{H} * {T} == {G} * {T} * ({H} // {G})",
                f"{H} % ({H} // {G}) == 0",
                f"{G} == {H} // ({H} // {G})",
                f"{H} == {H} // ({H} // {G}) * ({H} // {G})",
            ],
            [f"{H} % {G} == 0"],
        ),
        # halves at d = h // 2
        ([f"{H} // 2 == {H} + -1 * ({H} // 2)"], [f"{H} % 2 == 0"]),
        # a tie the divisibility does not say is kept as written
        ([f"({H} - 3) // 2 + 1 == {T}"], [f"({H} - 3) // 2 + 1 == {T}"]),
        # other conditions keep their place; the ties go where the first was
        (
            [
                "eps > 0",
                f"{H} % 4 == 0",
                "temperature < 1",
                f"4 * ({H} // 4) % {H} == 0",
            ],
            ["eps > 0", f"{H} % 4 == 0", "temperature < 1"],
        ),
        (["eps > 0"], ["eps > 0"]),
    ],
)
def test_fold_ties(before, after):
    assert fold_ties(before) == after


def test_a_tie_alone_is_not_widened_to_a_divisibility_it_does_not_imply():
    # 4 * (h // 4) % h == 0 holds at h = 2 (0 % 2), where h % 4 does not.
    tie = f"4 * ({H} // 4) % {H} == 0"
    assert fold_ties([tie]) == [tie]


@pytest.mark.parametrize(
    "cond, tie",
    [
        (f"{H} % 4 == 0", True),
        (f"{H} // 2 == {T}", True),
        (f"{H} == {T}", False),
        (f"{H} // 2 <= {T}", False),
        ("not valid (", False),
    ],
)
def test_is_tie(cond, tie):
    assert is_tie(cond) is tie


def test_ties_the_other_ties_imply_go_longest_first():
    # rotary over halves of head_dim with cos and sin of half width: Dynamo
    # ties both halves to both tables; two of the four say the rest.
    guards = [
        "q.shape[2] % 2 == 0",
        "q.shape[2] // 2 == cos.shape[1]",
        "q.shape[2] + -1 * (q.shape[2] // 2) == sin.shape[1]",
        "q.shape[2] + -1 * (q.shape[2] // 2) == cos.shape[1]",
        "q.shape[2] // 2 == sin.shape[1]",
    ]
    assert fold_ties(guards) == [
        "q.shape[2] % 2 == 0",
        "q.shape[2] // 2 == cos.shape[1]",
        "q.shape[2] // 2 == sin.shape[1]",
    ]


# x.chunk(2) of a width pinned by fixed sections (mrope's split((2, 3, 3))):
# Dynamo ties the ceil-halves to 8, a width no sampled size reaches.
C = "cache.shape[1]"
Q, K, P = "q.shape[1]", "k.shape[1]", "pos.shape[1]"
PINNED = [
    f"(-1 + {C} + (1 + {C}) // 2) // ((1 + {C}) // 2) == 2",
    f"(1 + {C}) // 2 == 8",
    f"{C} + -1 * ((1 + {C}) // 2) == 8",
    # heads of q and k over the cache's width: four names sample 1..8 each
    f"{P} * {Q} % ({P} * {C}) == 0",
    f"{K} // {C} == 1",
]


def test_ties_no_sampled_size_meets_are_kept_as_written():
    # Before: `(1 + w) % 2 == 0` held vacuously and refused w = 16, the
    # capture's own width.
    assert fold_ties(PINNED) == PINNED


def test_ties_fold_at_the_capture_sizes():
    def sizes(w, heads=2):
        return {
            "cache": _Sized(32, w),
            "q": _Sized(6, heads * w),
            "k": _Sized(6, w),
            "pos": _Sized(3, 6),
        }

    folded = fold_ties(PINNED, at=sizes(16))
    assert f"(1 + {C}) % 2 == 0" not in folded
    assert all(eval(c, {}, sizes(16, heads)) for c in folded for heads in (1, 2, 5))
    assert not all(eval(c, {}, sizes(18)) for c in folded)


class _Sized:
    def __init__(self, *shape):
        self.shape = shape


def test_a_divisibility_check_the_others_imply_goes():
    # rotary of query and key viewed as heads of the cache's width: Dynamo
    # kept (n * q) % (h * n) == 0 beside q % h == 0, and the scaffold checked
    # both (five lines of launcher each saying nothing more).
    n, q, k, h = "p.shape[0]", "q.shape[1]", "k.shape[1]", "c.shape[1]"
    guards = [
        f"{n} * {q} % ({h} * {n}) == 0",
        f"{q} % {h} == 0",
        f"{h} % 2 == 0",
        f"{k} * {n} % ({h} * {n}) == 0",
        f"{k} % {h} == 0",
    ]
    assert fold_ties(guards) == [f"{q} % {h} == 0", f"{h} % 2 == 0", f"{k} % {h} == 0"]


def test_a_tie_calling_int_and_float_on_a_size_folds():
    # DiT's unpatchify: h = int(t ** 0.5), then views of h rows. Every name of
    # the condition was lowered to a size, int and float too: "'int' object
    # is not callable" at capture.
    side = f"int(float({H}) ** 0.5)"
    tie = f"2 * ({H} // {side}) % (2 * {side}) == 0"
    folded = fold_ties([f"{T} % 2 == 0", tie], at={"x": _Sized(4, 9)})
    assert folded[0] == f"{T} % 2 == 0"
    assert all(eval(c, {}, {"x": _Sized(4, 9)}) for c in folded)


def test_size_names_sympy_knows_as_its_own_are_sizes():
    # KernelBench's matmuls size by N and M: sympify("N") is sympy's N()
    # function, and the capture's output-shape probe stopped with "'function'
    # object has no attribute 'subs'" on three level-1 references
    from porter.capture import _shape_at
    from porter.ties import sym_expr

    assert str(sym_expr("N * M + S")) == "M*N + S"
    assert sym_expr("N").is_Symbol and sym_expr("beta - 1").free_symbols
    assert _shape_at(["N", "M // 2"], {"N": 5, "M": 8}, {}) == (5, 4)
