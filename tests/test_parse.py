"""porter.parse: the launcher's record of Inductor's wrapper code."""

import ast
from pathlib import Path

import pytest
import torch

from porter.parse import parse_module
from porter.records import GraphInput
from porter.testing.parity import (
    Scenario,
    _tuple,
    load_case,
    make_inputs,
    scaffold_entry,
)

ROOT = Path(__file__).resolve().parents[1]

# Inductor's wrapper reuses a buffer under a new name (`buf1 = buf0; del buf0
# # reuse`) and views another (`reinterpret_tensor`), then calls a matmul on
# both names.
WRAPPER = """
def call(args):
    arg0_1, arg1_1 = args
    buf0 = empty_strided_cuda((4, 8), (8, 1), torch.float32)
    extern_kernels.mm(arg0_1, arg1_1, out=buf0)
    buf1 = buf0; del buf0  # reuse
    buf2 = reinterpret_tensor(buf1, (8, 4), (1, 8), 0)
    buf3 = empty_strided_cuda((4, 4), (4, 1), torch.float32)
    extern_kernels.mm(buf1, buf2, out=buf3)
    return (buf3, )
"""


def test_an_extern_call_names_buffers_by_their_allocation():
    inputs = [
        GraphInput(f"arg{i}_1", f"L['{name}']", "tensor", name, ["4", "8"], ["8", "1"])
        for i, name in enumerate(("x", "w"))
    ]
    module, _ = parse_module(WRAPPER, 0, inputs)
    first, second = [s.text for s in module.steps if s.kind == "extern"]
    assert first == "extern_kernels.mm(arg0_1, arg1_1, out=buf0)"
    assert ast.unparse(ast.parse(second)) == (
        "extern_kernels.mm(buf0, reinterpret_tensor(buf0, (8, 4), (1, 8), 0), "
        "out=buf3)"
    )


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    from porter.pipeline import capture

    out = tmp_path_factory.mktemp("mlp")
    capture(
        ROOT / "tests" / "references" / "mlp_gelu.py",
        out=out,
        device="cpu",
        progress=lambda _: None,
    )
    return out / "mlp_gelu"


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_an_mlp_reads_its_first_layers_output_by_the_buffers_name(
    mlp, dtype, porter_device
):
    # Two matmuls: the second reads the first's buffer, which Inductor renamed
    # when the GELU kernel reused it in place.
    text = (mlp / "kernel.py").read_text()
    assert "torch.mm(scratch_buf0, " in text
    case = load_case(mlp)
    sizes = {"num_tokens": 5, "hidden": 16, "inter": 48}
    x, w1, b1, w2 = make_inputs(case, Scenario(dtype, sizes), porter_device, seed=0)
    (got,) = _tuple(scaffold_entry(case, dtype, porter_device)(x, w1, b1, w2))
    h = x.double() @ w1.double().T + b1.double()
    h = 0.5 * h * (1 + torch.tanh(0.7978845608028654 * (h + 0.044715 * h**3)))
    want = h @ w2.double().T
    tol = 1e-5 if dtype == "float32" else 3e-2
    assert not got.isnan().any()
    torch.testing.assert_close(got.double(), want, atol=tol, rtol=tol)
