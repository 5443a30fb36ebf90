"""tools/port_variant.py: a case's kernel.py ported again under another launch
rule; the rule off gives the committed scaffold back."""

import ast
import subprocess
import sys
from pathlib import Path

import torch

from porter.port.finish.pdl import is_pdl_block
from porter.testing.parity import (
    Scenario,
    import_kernel,
    as_tuple,
    load_case,
    make_inputs,
    scaffold_entry,
)

ROOT = Path(__file__).resolve().parents[1]
port_variant = import_kernel(ROOT / "tools" / "port_variant.py", "port_variant_tool")
CASE = ROOT / "captured" / "linear_gelu"


def test_the_rule_off_ports_the_committed_scaffold():
    assert port_variant.kernel_py(CASE, False) == (CASE / "kernel.py").read_text()


def test_pdl_after_extern_launches_the_epilogue_with_pdl(tmp_path, porter_device):
    text = port_variant.kernel_py(CASE, True)
    tree = ast.parse(text)
    kernel = next(
        f for f in tree.body if getattr(f, "name", "") == "linear_gelu_kernel"
    )
    assert is_pdl_block(kernel.body[0])
    launcher = ast.unparse(
        next(f for f in tree.body if getattr(f, "name", "") == "linear_gelu")
    )
    assert "launch_pdl=pdl" in launcher and "torch.addmm" in launcher
    assert "No programmatic dependent launch" not in text
    # Same outputs as the scaffold (PDL is off on the CPU and the interpreter).
    path = tmp_path / "variant.py"
    path.write_text(text)
    variant = import_kernel(path, "linear_gelu_pdl_variant", CASE.parent / "common.py")
    case = load_case(CASE)
    sizes = {"num_tokens": 3, "in_features": 16, "out_features": 40}
    inputs = make_inputs(case, Scenario("float32", sizes), porter_device, seed=0)
    want = as_tuple(scaffold_entry(case, "float32", porter_device)(*inputs))
    got = as_tuple(
        scaffold_entry(case, "float32", porter_device, kernel=variant)(*inputs)
    )
    for w, g in zip(want, got, strict=True):
        assert torch.equal(w, g)


def test_a_rule_that_changes_nothing_writes_nothing(tmp_path):
    out = tmp_path / "v.py"
    run = subprocess.run(
        [
            sys.executable,
            "tools/port_variant.py",
            "captured/rmsnorm",
            "--pdl-after-extern",
            "-o",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and "changes nothing" in run.stderr
    assert "Traceback" not in run.stderr and not out.exists()


def test_the_generator_takes_fp32_into_the_one_kernel_and_the_variant_names_it():
    # The generator's precision is tf32x3: naming it writes kernel.py again,
    # which the tool refuses as a variant that changes nothing.
    text = port_variant.kernel_py(CASE, False, "tf32x3")
    assert text == (CASE / "kernel.py").read_text()
    assert 'DOT_PRECISION="tf32x3" if out.element_size() == 4 else "tf32"' in text
    ieee = port_variant.kernel_py(CASE, False, "ieee")
    assert 'DOT_PRECISION="ieee" if out.element_size() == 4 else "tf32"' in ieee


def test_matmul_fp32_cublas_leaves_fp32_to_cublas(
    tmp_path, porter_device, matmul_calls, gelu_linear_reference
):
    text = port_variant.kernel_py(CASE, False, "cublas")
    assert "out = tl.dot(lhs_tile, rhs_tile, out)" in text
    assert "DOT_PRECISION" not in text
    assert "out.element_size())\n        and out.element_size() == 2\n" in text
    path = tmp_path / "variant.py"
    path.write_text(text)
    variant = import_kernel(path, "linear_gelu_cublas_variant", CASE.parent / "common.py")
    case = load_case(CASE)
    sizes = {"num_tokens": 5, "in_features": 24, "out_features": 40}
    x, weight, bias = make_inputs(case, Scenario("float32", sizes), porter_device, 4)
    bias = bias + 4  # a bias left out cannot pass
    (got,) = as_tuple(
        scaffold_entry(case, "float32", porter_device, kernel=variant)(x, weight, bias)
    )
    assert matmul_calls == ["addmm"]
    want = gelu_linear_reference(x, weight, bias)
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)
    # The 2-byte dtypes keep the one kernel.
    x, weight, bias = make_inputs(case, Scenario("bfloat16", sizes), porter_device, 4)
    scaffold_entry(case, "bfloat16", porter_device, kernel=variant)(x, weight, bias)
    assert matmul_calls == ["addmm"]
