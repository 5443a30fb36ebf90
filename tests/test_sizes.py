"""porter.port.finish.sizes: the launcher's sizes as written by hand."""

from types import SimpleNamespace

from porter.port.finish.sizes import tidy_arithmetic, tidy_launcher_sizes
from porter.port.launch.launcher import Alloc, Dim, Launcher, LaunchStep


def _launcher(**fields) -> Launcher:
    base = dict(
        name="launch",
        signature="(x, w)",
        checks=[],
        prelude=[],
        dims=[],
        allocs=[],
        steps=[],
        returns="out",
    )
    return Launcher(**(base | fields))


def test_size_arithmetic_reads_as_written_by_hand():
    # Before: Inductor's `(head_dim + -1 * (head_dim // 2))`. After:
    # `head_dim - head_dim // 2`, no parentheses around a whole argument;
    # `-1 * b // 2` (not `-(b // 2)`) and arithmetic over strings stay.
    assert (
        tidy_arithmetic("n = max((head_dim // 2), (head_dim + -1 * (head_dim // 2)))")
        == "n = max(head_dim // 2, head_dim - head_dim // 2)"
    )
    assert (
        tidy_arithmetic(
            "k[(triton.cdiv(n * b, 4) * 2,)](size=(h + -1 * b), m=(n + 1) * 2)"
        )
        == "k[(triton.cdiv(n * b, 4) * 2,)](size=h - b, m=(n + 1) * 2)"
    )
    assert tidy_arithmetic("(h + -1 * b)") == "h - b"
    for same in (
        "1 + -1 * b // 2",
        "refuse('n + -1 * b' + s)",
        "if x.dim() != 2:\n    f(a)",
    ):
        assert tidy_arithmetic(same) == same


def test_the_launcher_drops_the_sizes_nothing_reads_and_tidies_every_line():
    # Before: `features = x.shape[1]` bound for no check or launch, and
    # `(hidden + -1 * 1)` in a grid and an allocation. After: features gone,
    # the arithmetic tidied wherever the launcher holds it.
    launcher = _launcher(
        dims=[
            Dim("num_tokens", "x.shape[0]"),
            Dim("features", "x.shape[1]"),
            Dim("hidden", "w.shape[0]"),
        ],
        allocs=[
            Alloc(
                "out",
                ["num_tokens", "(hidden + -1 * 1)"],
                ["(hidden + -1 * 1)", "1"],
                "x.dtype",
                "x.device",
            )
        ],
        steps=[
            LaunchStep(
                "kernel",
                kernel="k",
                grid="(triton.cdiv(num_tokens, (hidden + -1 * 2)),)",
                args=[("n", "(hidden + -1 * 1)")],
            )
        ],
    )
    tidy_launcher_sizes(SimpleNamespace(launcher=launcher))
    assert [d.name for d in launcher.dims] == ["num_tokens", "hidden"]
    assert launcher.allocs[0].sizes == ["num_tokens", "hidden - 1"]
    assert launcher.steps[0].grid == "(triton.cdiv(num_tokens, hidden - 2),)"
    assert launcher.steps[0].args == [("n", "hidden - 1")]


def test_sizes_naming_every_axis_of_a_rank_checked_tensor_unpack_its_shape():
    # Before: `num_tokens = x.shape[0]`, `hidden = x.shape[1]`. After:
    # `num_tokens, hidden = x.shape` where x's rank is checked; not for a
    # tensor whose rank is not, nor where an axis goes unnamed.
    dims = [
        Dim("num_tokens", "x.shape[0]"),
        Dim("hidden", "x.shape[1]"),
        Dim("rows", "w.shape[0]"),
        Dim("a", "q.shape[0]"),
        Dim("b", "q.shape[1]"),
        Dim("n", "v.shape[0]"),
        Dim("m", "v.shape[1]"),
    ]
    launcher = _launcher(dims=dims, ranks={"x": 2, "w": 2, "q": 3})
    assert launcher.dim_lines() == [
        "num_tokens, hidden = x.shape",
        "rows = w.shape[0]",
        "a = q.shape[0]",
        "b = q.shape[1]",
        "n = v.shape[0]",
        "m = v.shape[1]",
    ]
