"""Kernel parameters named like a Triton launch keyword (rename_launch_keywords)."""

import ast
import textwrap

from porter.port.bind import keywords
from porter.port.model import KernelPort, Param
from porter.records import KernelRecord


def _kp(src: str, params: list[Param]) -> KernelPort:
    src = textwrap.dedent(src)
    kp = KernelPort(KernelRecord("k", src, "pointwise", [], {}, None, None, 0), None)
    kp.tree = ast.parse(src).body[0]
    kp.params = params
    return kp


def test_a_parameter_named_like_a_launch_keyword_is_renamed_in_kernel_and_launch():
    # Before: `def k(x_ptr, warmup, grid)`, launched as k[g](..., warmup=warmup):
    # Triton's run() took warmup and grid as its own keywords.
    kp = _kp(
        """
        def k(x_ptr, warmup, grid, warmup_value):
            y = tl.load(x_ptr) * warmup + grid + warmup_value
        """,
        [
            Param("x_ptr", "pointer", "x"),
            Param("warmup", "runtime", "warmup"),
            Param("grid", "model", "grid"),
            Param("warmup_value", "runtime", "warmup_value"),
        ],
    )
    keywords.rename_launch_keywords(kp)
    assert [p.name for p in kp.params] == [
        "x_ptr",
        "warmup_value_2",
        "grid_value",
        "warmup_value",
    ]
    assert [p.value for p in kp.params][1:3] == [
        "warmup",
        "grid",
    ]  # what the launcher passes
    text = ast.unparse(kp.tree)
    assert "def k(x_ptr, warmup_value_2, grid_value, warmup_value):" in text
    assert "* warmup_value_2 + grid_value + warmup_value" in text


def test_other_parameters_are_left_alone():
    kp = _kp(
        "def k(x_ptr, alpha):\n    y = alpha\n", [Param("alpha", "runtime", "alpha")]
    )
    keywords.rename_launch_keywords(kp)
    assert kp.params[0].name == "alpha" and not kp.notes
