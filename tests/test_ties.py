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
            ["eps > 0", f"{H} % 4 == 0", "temperature < 1", f"4 * ({H} // 4) % {H} == 0"],
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
