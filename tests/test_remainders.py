"""finish.remainders: sizes the launcher computes are checked not negative,
and not 0 where it divides by them."""

import ast
from types import SimpleNamespace

from porter.port.finish.remainders import (
    maybe_zero,
    refuse_zero_constant_divisors,
    refuse_zero_size_divisors,
    size_divisors,
)


def test_a_size_divisor_that_sizes_can_make_zero_is_found():
    # pixel_shuffle then pixel_unshuffle: rows of c // (2 * (c // 4))
    expr = "x.shape[3] * (x.shape[1] // (2 * (x.shape[1] // 4))) // 2"
    assert size_divisors(expr) == ["2 * (x.shape[1] // 4)"]  # // 4, // 2: numbers
    assert maybe_zero("2 * (x.shape[1] // 4)")  # below 4 channels
    assert maybe_zero("num_heads")
    assert not maybe_zero("hidden + 1")
    assert not maybe_zero("4")  # a number: no size makes it anything else


def test_the_launcher_refuses_a_zero_divisor_before_dividing():
    # Before: ZeroDivisionError in the launcher at 0 channels. After: one
    # line before the sizes are computed.
    kp = SimpleNamespace(
        params=[
            SimpleNamespace(kind="runtime", value="n * (c // (2 * (c // 4)))"),
            SimpleNamespace(kind="model", value="hidden // 8"),
        ]
    )
    launcher = SimpleNamespace(
        dims=[SimpleNamespace(name="c", expr="x.shape[1]")],
        allocs=[SimpleNamespace(sizes=["n", "c"])],
        shape_checks=[],
    )
    port = SimpleNamespace(kernels=[kp], launcher=launcher, notes=[])
    refuse_zero_size_divisors(port)
    assert len(launcher.shape_checks) == 1
    check = launcher.shape_checks[0]
    assert check.startswith("if 2 * (c // 4) == 0:")
    assert "x.shape[1]" in check and "divide by it" in check


def test_a_size_a_kernel_divides_by_as_a_constant_is_refused_at_0():
    # Before: no check, and at l = 0 Triton 3.6 failed to compile `cols % l`
    # on a GPU. After: one line each; a constant the kernel only multiplies
    # by (c) and a number are left alone.
    fn = ast.parse(
        "def k(x_ptr, l: tl.constexpr, c: tl.constexpr, BLOCK: tl.constexpr):\n"
        "    cols = tl.arange(0, BLOCK)\n"
        "    r = cols % l + (cols // l) * c\n"
        "    q = cols // 4\n"
        "    w = cols % floor_div(hw, window)\n"
    ).body[0]
    kp = SimpleNamespace(
        tree=fn,
        persistent=None,
        online=None,
        params=[
            SimpleNamespace(name="l", kind="model", value="l"),
            SimpleNamespace(name="c", kind="model", value="c"),
            SimpleNamespace(name="hw", kind="model", value="hw"),
            SimpleNamespace(name="window", kind="model", value="window"),
        ],
    )
    launcher = SimpleNamespace(
        dims=[
            SimpleNamespace(name="l", expr="x.shape[2]"),
            SimpleNamespace(name="c", expr="x.shape[1]"),
        ],
        shape_checks=[],
    )
    port = SimpleNamespace(
        kernels=[kp],
        launcher=launcher,
        notes=[],
        cap=SimpleNamespace(input_names=["x"]),
        module=SimpleNamespace(inputs=[]),
    )
    refuse_zero_constant_divisors(port)
    # Swin's window partition: `x2 % floor_div(hw, window)` divides by
    # hw // window (0 below a window) and floor_div by window; one check
    checks = launcher.shape_checks
    assert len(checks) == 1
    assert checks[0].startswith("if 0 in (")
    assert set(checks[0].split(":")[0][len("if 0 in (") : -1].split(", ")) == {
        "l",
        "hw // window",
        "window",
    }
    assert "x.shape[2]" in checks[0] and "compile-time constant" in checks[0]
