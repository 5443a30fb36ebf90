"""porter.port.launch.bias: a linear layer's bias moved from cuBLAS's addmm into the
pointwise kernel after it, for 2-byte outputs."""

import ast
import copy
import textwrap
from pathlib import Path

import pytest
import torch

from porter.port import port_capture
from porter.render import render_kernel
from porter.port.launch.bias import _addmm, add_bias_after_load
from porter.records import Capture
from porter.reference import load_reference
from porter.store import read_manifest
from porter.testing.parity import (
    common_module,
    Scenario,
    as_tuple,
    load_case,
    make_inputs,
    scaffold_entry,
)

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "captured" / "linear_gelu"

TILE_KERNEL = """
def k(out_ptr, num_tokens, out_features: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_tokens) & (cols < out_features)
    offsets = rows * out_features + cols
    out = tl.load(out_ptr + offsets, mask).to(tl.float32)
    tmp1 = out * 0.5
    tl.store(out_ptr + offsets, tmp1.to(out_ptr.dtype.element_ty), mask)
"""


def _fn(src: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(src)).body[0]


def test_add_bias_after_load_adds_the_column_bias_under_the_constexpr():
    fn = _fn(TILE_KERNEL)
    before = [ast.unparse(s) for s in fn.body]
    assert add_bias_after_load(fn, "out_ptr", "out_features")
    assert [a.arg for a in fn.args.args] == [
        "out_ptr",
        "bias_ptr",
        "num_tokens",
        "out_features",
        "ADD_BIAS",
        "BLOCK_ROWS",
        "BLOCK_COLS",
    ]
    assert ast.unparse(fn.args.args[4].annotation) == "tl.constexpr"
    body = [ast.unparse(s) for s in fn.body]
    at = body.index("out = tl.load(out_ptr + offsets, mask).to(tl.float32)")
    added = fn.body[at + 1]
    assert ast.unparse(added.test) == "ADD_BIAS"
    assert ast.unparse(added.body[-1]) == (
        "out = out + tl.load(bias_ptr + cols, cols < out_features, "
        "eviction_policy='evict_last').to(tl.float32)"
    )
    # The rest reads the biased value: nothing else changed.
    assert before == body[: at + 1] + body[at + 2 :]
    # Once only.
    assert not add_bias_after_load(fn, "out_ptr", "out_features")


@pytest.mark.parametrize(
    "edit",
    [
        # The flat form: no column index to read the bias by.
        ("offsets = rows * out_features + cols", "offsets = rows + cols"),
        # A second read of the matmul's output: which one takes the bias?
        ("tmp1 = out * 0.5", "tmp1 = out * tl.load(out_ptr + offsets + 1, mask)"),
        # Not upcast: the sum would round in the output's dtype.
        (".to(tl.float32)\n    tmp1", "\n    tmp1"),
    ],
    ids=["flat-offsets", "read-twice", "not-upcast"],
)
def test_add_bias_after_load_leaves_other_kernels(edit):
    old, new = edit
    assert old in TILE_KERNEL
    fn = _fn(TILE_KERNEL.replace(old, new))
    before = ast.unparse(fn)
    assert not add_bias_after_load(fn, "out_ptr", "out_features")
    assert ast.unparse(fn) == before


def test_addmm_is_split_only_for_unit_scales():
    assert _addmm("torch.addmm(bias, x, w, alpha=1, beta=1, out=out)") == (
        "bias",
        "torch.mm(x, w, out=out)",
        "out",
    )
    assert _addmm("torch.addmm(bias, x, w, out=out)")[1] == "torch.mm(x, w, out=out)"
    assert _addmm("torch.addmm(bias, x, w, alpha=1, beta=2, out=out)") is None
    assert _addmm("torch.addmm(bias, x, w)") is None
    assert _addmm("torch.mm(x, w, out=out)") is None


@pytest.mark.parametrize(
    "dtype, matmul", [("bfloat16", "mm"), ("float16", "mm"), ("float32", "addmm")]
)
def test_the_scaffold_adds_the_bias_in_the_kernel_for_2_byte_outputs(
    dtype, matmul, monkeypatch, porter_device, matmul_calls, gelu_linear_reference
):
    case = load_case(CASE)
    # The cuBLAS path at any size (small matmuls otherwise take the
    # one-kernel form, porter.port.launch.matmul; tests/test_matmul.py).
    monkeypatch.setattr(common_module(case.kernel), "MATMUL_EPILOGUE_MAX_MACS", 0)
    sizes = {"num_tokens": 3, "in_features": 16, "out_features": 40}
    x, weight, bias = make_inputs(case, Scenario(dtype, sizes), porter_device, seed=0)
    # A large bias, so that leaving it out (or adding it twice) cannot pass.
    bias = (bias + 4).to(bias.dtype)
    (got,) = as_tuple(scaffold_entry(case, dtype, porter_device)(x, weight, bias))
    assert matmul_calls == [matmul]
    want = gelu_linear_reference(x, weight, bias)
    tol = 1e-5 if dtype == "float32" else 2e-2
    assert not got.isnan().any()
    torch.testing.assert_close(got.double(), want, atol=tol, rtol=tol)


def _ported(manifest: dict) -> str:
    cap = Capture.from_dict(manifest)
    return render_kernel(
        port_capture(cap, load_reference(CASE / "reference.py").module)
    )


def test_a_bias_of_another_length_stays_in_the_matmul():
    manifest = copy.deepcopy(read_manifest(CASE))
    assert "add_bias = out.element_size() == 2" in _ported(manifest)
    for gi in manifest["modules"][0]["inputs"]:
        if gi["target"] == "bias":
            gi["sizes"] = ["num_tokens", "out_features"]
    text = _ported(manifest)
    assert "add_bias" not in text and "bias_ptr" not in text
    assert "torch.addmm(" in text and "torch.mm(" not in text


KB_LINEAR = ROOT / "tests" / "references" / "kb_linear_gelu.py"


@pytest.fixture(scope="module")
def kb_linear(tmp_path_factory):
    # A KernelBench file: the feature sizes are literals and the bias a
    # module parameter (`self.fc.bias`, `fc_bias` in the launcher).
    from porter.pipeline import capture

    out = tmp_path_factory.mktemp("kb")
    capture(KB_LINEAR, out=out, device="cpu", progress=lambda _: None)
    return out / "kb_linear_gelu"


def test_a_kernelbench_linear_is_tiled_and_takes_its_bias_in_the_kernel(kb_linear):
    text = (kb_linear / "kernel.py").read_text()
    assert "row_size: tl.constexpr" in text
    assert "offsets = rows * row_size + cols" in text
    assert "bias_ptr=fc_bias" in text and "ADD_BIAS=add_bias" in text
    assert "model_matmul_kernel[" in text and "in_features: tl.constexpr" in text


# max_macs 0: the cuBLAS path; None: small matmuls in one kernel
# (porter.port.launch.matmul).
@pytest.mark.parametrize(
    "dtype, max_macs, matmul",
    [
        ("bfloat16", 0, ["mm"]),
        ("bfloat16", None, []),
        ("float32", None, []),
        ("float32", 0, ["addmm"]),
    ],
)
def test_the_kernelbench_scaffold_matches_the_reference(
    kb_linear,
    dtype,
    max_macs,
    matmul,
    monkeypatch,
    porter_device,
    matmul_calls,
    gelu_linear_reference,
):
    case = load_case(kb_linear)
    if max_macs is not None:
        monkeypatch.setattr(common_module(case.kernel), "MATMUL_EPILOGUE_MAX_MACS", max_macs)
    model = scaffold_entry(case, dtype, porter_device)
    with torch.no_grad():
        model.fc.bias.add_(4)  # so that a bias left out cannot pass
    x = torch.randn(5, 64, generator=torch.Generator().manual_seed(0))
    x = x.to(device=porter_device, dtype=getattr(torch, dtype))
    with torch.no_grad():
        got = model(x)
    assert matmul_calls == matmul
    want = gelu_linear_reference(x, model.fc.weight, model.fc.bias)
    tol = 1e-5 if dtype == "float32" else 2e-2
    assert not got.isnan().any()
    torch.testing.assert_close(got.double(), want, atol=tol, rtol=tol)
