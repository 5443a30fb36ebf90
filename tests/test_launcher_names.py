"""A launcher never binds a reference argument's name to a value of its own
(porter.render._refuse_clobbered_arguments): the lines after it would read
porter's value where the argument was meant, and compute wrong numbers."""

import ast
import textwrap

import pytest

from porter.errors import PorterError
from porter.render import _refuse_clobbered_arguments


def _check(source: str) -> None:
    _refuse_clobbered_arguments(ast.parse(textwrap.dedent(source)), "f")


@pytest.mark.parametrize(
    "source, name",
    [
        # the PDL switch over a float argument named pdl
        ("def f(x, pdl=1.0):\n    pdl = pdl_enabled(x.device)\n", "pdl"),
        # an output allocated with the argument's dtype and device only
        (
            "def f(out, w):\n"
            "    out = torch.empty((4,), dtype=out.dtype, device=out.device)\n",
            "out",
        ),
        # the form and launch keywords of a row kernel
        ("def f(x, launch):\n    form, launch = row_launch(4, 8, 2)\n", "launch"),
        # a loop over repeated launches naming its tensor like another argument
        ("def f(q, k, x):\n    for x, buf in ((q, 1), (k, 2)):\n        pass\n", "x"),
    ],
)
def test_a_launcher_value_under_an_arguments_name_is_refused(source, name):
    with pytest.raises(PorterError, match=f"argument `{name}`.*rename the argument"):
        _check(source)


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    x = x if x.stride(-1) == 1 else x.contiguous()\n",
        "def f(out, x):\n    out_given = out\n    out = strided_as(out_given, (4, 1))\n",
        "def f(self, x):\n    self = x\n",  # a KernelBench module's self is not an argument
        # a kernel's own parameters are its business, and so is the
        # reference's code the scaffold keeps (a module's __init__)
        "@triton.jit\ndef k(x_ptr, pdl):\n    pdl = 1\n",
        "def __init__(self, eps=None):\n    eps = 1e-05\n",
    ],
)
def test_a_relayout_of_an_argument_is_the_argument(source):
    _check(source)


def test_a_reference_argument_named_like_an_output_keeps_its_name(tmp_path):
    # `out` read as an input beside the output porter allocates as `out`: the
    # kernel had read the new, empty output in place of the argument; then
    # the capture refused the name; now the output is called result.
    from porter.pipeline import capture
    from porter.testing import check_parity, load_case
    from porter.testing.parity import Scenario

    src = tmp_path / "rms_out.py"
    src.write_text(
        '"""RMSNorm of an input named out."""\n\nimport torch\n\n'
        'DIMS = {"num_tokens": 4, "hidden": 64}\nDYNAMIC = ["num_tokens"]\n'
        'DTYPES = ["float32"]\n\n\n'
        "def make_inputs(num_tokens, hidden, dtype=torch.float32, device='cpu'):\n"
        "    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)\n\n\n"
        "def rms_out(out, eps: float = 1e-6):\n"
        "    v = out.float().pow(2).mean(-1, keepdim=True)\n"
        "    return (out.float() * torch.rsqrt(v + eps)).to(out.dtype)\n\n\n"
        "REFERENCE = rms_out\n"
    )
    result = capture(
        src, out=tmp_path / "cases", device="cpu", progress=lambda *_: None
    )
    case = load_case(result.case)
    assert "result = torch.empty(" in (case.folder / "kernel.py").read_text()
    check_parity(case, Scenario("float32", {"num_tokens": 3, "hidden": 64}), "cpu", 0)
