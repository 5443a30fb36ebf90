"""porter.port.launch.matmul: a small matmul and its pointwise epilogue in one kernel."""

import ast
import re
import textwrap
from pathlib import Path

import pytest
import torch

from porter.port.launch.matmul import _mm, matmul_epilogue_form
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

# The epilogue's tile kernel as porter.port.speed.tile and porter.port.launch.bias leave it.
TILE_KERNEL = """
def k_kernel(out_ptr, bias_ptr, num_tokens, out_features: tl.constexpr, ADD_BIAS: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr, COL_BLOCKS: tl.constexpr):
    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_tokens) & (cols < out_features)
    offsets = rows * out_features + cols
    out = tl.load(out_ptr + offsets, mask).to(tl.float32)
    if ADD_BIAS:
        out = out + tl.load(bias_ptr + cols, cols < out_features).to(tl.float32)
    tmp1 = out * 0.5
    tl.store(out_ptr + offsets, tmp1.to(out_ptr.dtype.element_ty), mask)
"""


def _fn(src: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(src)).body[0]


def test_the_load_of_the_matmul_output_becomes_the_matmul():
    fn = _fn(TILE_KERNEL)
    before = ast.unparse(fn)
    new = matmul_epilogue_form(fn, "out_ptr", "in_features")
    assert ast.unparse(fn) == before  # the epilogue kernel stays for large calls
    assert new.name == "k_matmul_kernel"
    assert [a.arg for a in new.args.args] == [
        "lhs_ptr",
        "rhs_ptr",
        "out_ptr",
        "bias_ptr",
        "num_tokens",
        "lhs_row_stride",
        "rhs_k_stride",
        "rhs_col_stride",
        "in_features",
        "out_features",
        "ADD_BIAS",
        "BLOCK_ROWS",
        "BLOCK_COLS",
        "BLOCK_K",
        "COL_BLOCKS",
    ]
    ann = {a.arg: ast.unparse(a.annotation) for a in new.args.args if a.annotation}
    assert ann["in_features"] == "tl.constexpr" and ann["BLOCK_K"] == "tl.constexpr"
    assert ann["lhs_row_stride"] == "tl.int64"
    old = [ast.unparse(s) for s in fn.body]
    body = [ast.unparse(s) for s in new.body]
    at = old.index("out = tl.load(out_ptr + offsets, mask).to(tl.float32)")
    # Everything before and after the load as it was ...
    assert body[:at] == old[:at]
    assert body[-3:] == old[at + 1 :]
    # ... and in its place (after a comment) the accumulator and the loop over
    # the inner dimension.
    assert "the matmul's tile in fp32" in body[at]
    assert body[at + 1] == "out = tl.zeros((BLOCK_ROWS, BLOCK_COLS), dtype=tl.float32)"
    loop = new.body[at + 2]
    assert isinstance(loop, ast.For)
    assert ast.unparse(loop.iter) == "range(0, in_features, BLOCK_K)"
    assert ast.unparse(loop.body[-1]) == "out = tl.dot(lhs_tile, rhs_tile, out)"
    loads = [ast.unparse(s) for s in loop.body[1:3]]
    assert "lhs_ptr + rows * lhs_row_stride + k_cols[None, :]" in loads[0]
    assert "(rows < num_tokens) & (k_cols[None, :] < in_features)" in loads[0]
    assert "cols.to(tl.int64) * rhs_col_stride" in loads[1]
    assert "(k_cols[:, None] < in_features) & (cols < out_features)" in loads[1]
    assert "out_ptr" not in "".join(ast.unparse(s) for s in new.body[: at + 3])


@pytest.mark.parametrize(
    "edit",
    [
        # A second read of the matmul's output.
        ("tmp1 = out * 0.5", "tmp1 = out * tl.load(out_ptr + offsets + 1, mask)"),
        # The epilogue writes elsewhere than the tile it read.
        ("tl.store(out_ptr + offsets", "tl.store(out_ptr + offsets + 1"),
        # A flat kernel: no (rows, cols) tile to compute.
        ("offsets = rows * out_features + cols", "offsets = rows + cols"),
        # A name the matmul form would add.
        ("tmp1 = out * 0.5", "k_start = out * 0.5\n    tmp1 = k_start"),
        # Not upcast: the matmul's fp32 tile would replace a rounded value.
        (".to(tl.float32)\n    if ADD_BIAS", "\n    if ADD_BIAS"),
    ],
    ids=["read-twice", "stored-elsewhere", "flat", "name-taken", "not-upcast"],
)
def test_other_kernels_get_no_matmul_form(edit):
    old, new = edit
    assert old in TILE_KERNEL
    fn = _fn(TILE_KERNEL.replace(old, new))
    assert matmul_epilogue_form(fn, "out_ptr", "in_features") is None


def test_the_extern_matmul_is_found_in_unfuse_bias_form():
    call = (
        "add_bias = out.element_size() == 2\n"
        "if add_bias:\n    torch.mm(x, w, out=out)\n"
        "else:\n    torch.addmm(bias, x, w, alpha=1, beta=1, out=out)"
    )
    assert ast.unparse(_mm(call)) == "torch.mm(x, w, out=out)"
    assert ast.unparse(_mm("torch.mm(x, w, out=buf)")) == "torch.mm(x, w, out=buf)"
    assert _mm("torch.mm(x, w)") is None  # no output buffer to write
    assert _mm("torch.bmm(x, w, out=out)") is None
    assert _mm("torch.mm(x, w, out=a)\ntorch.mm(a, w, out=b)") is None


def test_the_launcher_takes_the_one_kernel_below_the_bound():
    text = (CASE / "kernel.py").read_text()
    assert "def linear_gelu_matmul_kernel(" in text
    launcher = text[text.index("def linear_gelu(") :]
    assert launcher.index("linear_gelu_matmul_kernel[") < launcher.index("torch.mm(")
    when = "matmul_in_one_kernel(num_tokens, in_features, out_features, out.element_size())"
    assert when in launcher.split("torch.mm(")[0]


def _bound(monkeypatch, case, name, value):
    """Set one of the scaffold's matmul bounds: ROWS and MACS are
    MATMUL_EPILOGUE_MAX_*, the others MATMUL_*."""
    prefix = "MATMUL_EPILOGUE_MAX_" if name in ("ROWS", "MACS") else "MATMUL_"
    monkeypatch.setattr(common_module(case.kernel), prefix + name, value)


# 37 tokens: two blocks of 32 rows, the second mostly masked; 40 inner and 40
# output features: neither a multiple of the blocks (BLOCK_K 64, 32 columns).
@pytest.mark.parametrize(
    "dtype, num_tokens, bounds, matmul",
    [
        ("bfloat16", 3, {}, []),
        ("float16", 37, {}, []),
        # At the bounds: one kernel; past either: cuBLAS.
        ("bfloat16", 37, {"MACS": 37 * 40 * 40, "ROWS": 37}, []),
        ("bfloat16", 37, {"MACS": 37 * 40 * 40 - 1}, ["mm"]),
        # Past the rows, an inner size up to the wide bound keeps the one kernel
        # (in blocks of 64 rows); past that too, cuBLAS.
        ("bfloat16", 37, {"ROWS": 36}, []),
        ("bfloat16", 37, {"ROWS": 36, "WIDE_MAX_INNER": {2: 40}}, []),
        ("bfloat16", 37, {"ROWS": 36, "WIDE_MAX_INNER": {2: 39}}, ["mm"]),
        # fp32 too (tl.dot in tf32x3); one row of a large weight keeps cuBLAS.
        ("float32", 3, {}, []),
        ("float32", 1, {}, []),
        ("float32", 1, {"FP32_ONE_ROW_MAX_MACS": 40 * 40}, []),
        ("float32", 1, {"FP32_ONE_ROW_MAX_MACS": 40 * 40 - 1}, ["addmm"]),
        ("float32", 2, {"FP32_ONE_ROW_MAX_MACS": 0}, []),
        ("float32", 37, {"ROWS": 36}, []),
        ("float32", 37, {"ROWS": 36, "WIDE_MAX_INNER": {2: 40, 4: 39}}, ["addmm"]),
    ],
)
def test_the_scaffold_computes_small_matmuls_in_one_kernel(
    dtype,
    num_tokens,
    bounds,
    matmul,
    monkeypatch,
    porter_device,
    matmul_calls,
    gelu_linear_reference,
):
    case = load_case(CASE)
    for name, value in bounds.items():
        _bound(monkeypatch, case, name, value)
    sizes = {"num_tokens": num_tokens, "in_features": 40, "out_features": 40}
    x, weight, bias = make_inputs(case, Scenario(dtype, sizes), porter_device, seed=1)
    bias = (bias + 4).to(bias.dtype)  # a bias left out cannot pass
    (got,) = as_tuple(scaffold_entry(case, dtype, porter_device)(x, weight, bias))
    assert matmul_calls == matmul
    tol = 1e-5 if dtype == "float32" else 2e-2
    assert not got.isnan().any()
    torch.testing.assert_close(
        got.double(), gelu_linear_reference(x, weight, bias), atol=tol, rtol=tol
    )


def test_a_row_sliced_input_reads_by_its_row_stride(
    porter_device, matmul_calls, gelu_linear_reference
):
    case = load_case(CASE)
    sizes = {"num_tokens": 5, "in_features": 32, "out_features": 48}
    x, weight, bias = make_inputs(
        case, Scenario("bfloat16", sizes), porter_device, seed=2
    )
    wide = torch.randn(5, 80, device=porter_device).to(x.dtype)
    wide[:, 16:48] = x
    view = wide[:, 16:48]  # rows 80 apart, unit stride along them
    (got,) = as_tuple(
        scaffold_entry(case, "bfloat16", porter_device)(view, weight, bias)
    )
    assert matmul_calls == []
    torch.testing.assert_close(
        got.double(), gelu_linear_reference(x, weight, bias), atol=2e-2, rtol=2e-2
    )


def _ported_text():
    from porter.port import port_capture
    from porter.render import render_kernel
    from porter.records import Capture
    from porter.reference import load_reference
    from porter.store import read_manifest

    cap = Capture.from_dict(read_manifest(CASE))
    return render_kernel(
        port_capture(cap, load_reference(CASE / "reference.py").module)
    )


def test_no_matmul_form_where_the_launcher_has_its_own_rhs(monkeypatch):
    from porter.port.launch import bias

    assert "def linear_gelu_matmul_kernel(" in _ported_text()
    real = bias.unfuse_bias

    def bias_named_rhs(launcher, ports, module):
        # As if the caller's bias were an argument named `rhs`: the branch's
        # `rhs = <weight view>` would hand the kernel the weight as the bias.
        done = real(launcher, ports, module)
        step = launcher.steps[-1]
        step.args = [(n, "rhs" if v == "bias" else v) for n, v in step.args]
        return done

    monkeypatch.setattr(bias, "unfuse_bias", bias_named_rhs)
    text = _ported_text()
    assert "_matmul_kernel" not in text and "MATMUL_EPILOGUE" not in text
    assert "bias_ptr=rhs" in text


def _captured(tmp_path_factory, name: str) -> Path:
    """tests/references/<name>.py captured on the CPU: its case folder."""
    from porter.pipeline import capture

    out = tmp_path_factory.mktemp(name)
    reference = ROOT / "tests" / "references" / f"{name}.py"
    capture(reference, out=out, device="cpu", progress=lambda _: None)
    return out / name


@pytest.fixture(scope="module")
def mm_silu(tmp_path_factory):
    # A matmul without a bias (`torch.mm`, no unfuse_bias form) and SiLU.
    return _captured(tmp_path_factory, "mm_silu")


@pytest.mark.parametrize(
    "dtype, bounds, matmul",
    [
        ("bfloat16", {}, []),
        ("bfloat16", {"ROWS": 0}, []),
        ("bfloat16", {"ROWS": 0, "WIDE_MAX_INNER": {}}, ["mm"]),
        ("float32", {}, []),
        ("float32", {"ROWS": 0, "WIDE_MAX_INNER": {}}, ["mm"]),
    ],
)
def test_a_matmul_without_bias_takes_the_one_kernel_too(
    mm_silu, dtype, bounds, matmul, monkeypatch, porter_device, matmul_calls
):
    text = (mm_silu / "kernel.py").read_text()
    assert "def mm_silu_matmul_kernel(" in text and "ADD_BIAS" not in text
    case = load_case(mm_silu)
    for name, value in bounds.items():
        _bound(monkeypatch, case, name, value)
    sizes = {"num_tokens": 19, "in_features": 24, "out_features": 40}
    x, w = make_inputs(case, Scenario(dtype, sizes), porter_device, seed=3)
    (got,) = as_tuple(scaffold_entry(case, dtype, porter_device)(x, w))
    assert matmul_calls == matmul
    y = x.double() @ w.double().T
    tol = 1e-5 if dtype == "float32" else 2e-2
    assert not got.isnan().any()
    torch.testing.assert_close(got.double(), y * torch.sigmoid(y), atol=tol, rtol=tol)


def _without_fake_return(launcher: str) -> str:
    """A launcher less its return for fake tensors (before any launch)."""
    return re.sub(r"if is_fake\(\w+\):.*\n\s*return .*\n", "", launcher)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    # Two matmuls, each with a pointwise kernel after it: GELU (and the first
    # layer's bias), then SiLU.
    return _captured(tmp_path_factory, "mlp_gelu")


@pytest.mark.parametrize(
    "dtype, bounds, matmul",
    [
        ("bfloat16", {}, []),  # both layers in one kernel each
        ("bfloat16", {"ROWS": 0}, []),  # both past the rows, in blocks of 64
        ("bfloat16", {"ROWS": 0, "WIDE_MAX_INNER": {}}, ["mm", "mm"]),
        ("float32", {}, []),
        ("float32", {"ROWS": 0, "WIDE_MAX_INNER": {}}, ["addmm", "mm"]),
    ],
)
def test_every_matmul_pair_gets_the_one_kernel(
    mlp, dtype, bounds, matmul, monkeypatch, porter_device, matmul_calls
):
    text = (mlp / "kernel.py").read_text()
    launcher = _without_fake_return(text[text.index("def mlp_gelu(") :])
    # The first layer's pair sits in an if/else (the second layer follows);
    # the second's ends the launcher: its one kernel returns.
    first, second = (launcher.index(f"mlp_gelu_matmul_kernel_{n}[") for n in (0, 1))
    assert first < launcher.index("else:") < second
    assert "return out" not in launcher[:second]
    assert second < launcher.index("return out") < launcher.rindex("torch.mm(")
    # The second matmul's input is the first's buffer, which Inductor renamed
    # when the GELU kernel reused it in place (porter.parse).
    assert "torch.mm(scratch_buf0, " in launcher
    case = load_case(mlp)
    for name, value in bounds.items():
        _bound(monkeypatch, case, name, value)
    sizes = {"num_tokens": 5, "hidden": 16, "inter": 48}
    x, w1, b1, w2 = make_inputs(case, Scenario(dtype, sizes), porter_device, seed=0)
    (got,) = as_tuple(scaffold_entry(case, dtype, porter_device)(x, w1, b1, w2))
    assert matmul_calls == matmul
    h = x.double() @ w1.double().T + b1.double()
    h = 0.5 * h * (1 + torch.tanh(0.7978845608028654 * (h + 0.044715 * h**3)))
    y = h @ w2.double().T
    want = y * torch.sigmoid(y)
    tol = 1e-5 if dtype == "float32" else 3e-2
    assert not got.isnan().any()
    torch.testing.assert_close(got.double(), want, atol=tol, rtol=tol)


@pytest.fixture(scope="module")
def mm_chain(tmp_path_factory):
    # A matmul right after another: its one kernel follows a cuBLAS call.
    return _captured(tmp_path_factory, "mm_chain")


def test_the_one_kernel_behind_an_extern_call_launches_without_pdl(
    mm_chain, porter_device, matmul_calls
):
    text = (mm_chain / "kernel.py").read_text()
    tree = ast.parse(text)
    kernel = next(
        f for f in tree.body if getattr(f, "name", "") == "mm_chain_matmul_kernel"
    )
    assert "LAUNCH_PDL" not in ast.unparse(kernel)
    launcher = _without_fake_return(text[text.index("def mm_chain(") :])
    branch = launcher[
        launcher.index("if matmul_in_one_kernel(") : launcher.index("return out")
    ]
    assert "No programmatic dependent launch right after the extern call" in branch
    assert "launch_pdl" not in branch
    # The inner size is the first matmul's output's named column count.
    assert "matmul_in_one_kernel(num_tokens, hidden, inter, " in branch
    case = load_case(mm_chain)
    sizes = {"num_tokens": 3, "hidden": 16, "inter": 40}
    x, w1, w2, b2 = make_inputs(
        case, Scenario("bfloat16", sizes), porter_device, seed=0
    )
    (got,) = as_tuple(scaffold_entry(case, "bfloat16", porter_device)(x, w1, w2, b2))
    assert matmul_calls == ["mm"]  # the first matmul only
    y = x.double() @ w1.double().T @ w2.double().T + b2.double()
    want = 0.5 * y * (1 + torch.tanh(0.7978845608028654 * (y + 0.044715 * y**3)))
    torch.testing.assert_close(got.double(), want, atol=3e-2, rtol=3e-2)
