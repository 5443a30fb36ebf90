"""porter capture on the CPU (codegen-only Triton target): the examples and bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from porter.cli import main
from porter.errors import PorterError
from porter.pipeline import capture

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _quiet(_: str) -> None:
    pass


def _capture(tmp_path, name, **kw):
    return capture(
        EXAMPLES / f"{name}.py", out=tmp_path, device="cpu", progress=_quiet, **kw
    )


# Subprocesses get the environment without the CPU test session's interpreter flag.
ENV = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}


def _launches(result):
    return [s for m in result.capture.modules for s in m.steps if s.kind == "launch"]


def test_rmsnorm_is_captured_with_symbolic_dims(tmp_path):
    result = _capture(tmp_path, "rmsnorm")
    case = tmp_path / "rmsnorm"
    manifest = json.loads((case / "manifest.json").read_text())
    assert manifest["device"] == "cpu"
    assert "codegen-only" in manifest["target"]
    assert manifest["torch_version"] and manifest["triton_version"]
    (kernel,) = result.capture.kernels
    assert kernel.kind in ("reduction", "persistent_reduction")
    assert (
        case / "inductor" / "kernels" / f"{kernel.name}.py"
    ).read_text() == kernel.source
    assert (case / "reference.py").read_text() == (EXAMPLES / "rmsnorm.py").read_text()
    assert "async_compile.triton" in (case / "inductor" / "module_0.py").read_text()
    # Dynamic by default: neither the token count nor hidden is a literal in the kernel.
    body = kernel.source[kernel.source.index("@triton.jit") :]
    assert "1024" not in body and "64" not in body
    bind = {b.param: b for b in _launches(result)[0].args}
    ptrs = {p: (b.kind, b.target) for p, b in bind.items() if b.kind != "size"}
    # eps, a float argument, is a runtime value of the kernel's, not a literal
    assert ptrs == {
        "in_ptr0": ("input", "x"),
        "in_ptr1": ("scalar", "eps"),
        "in_ptr2": ("input", "weight"),
        "out_ptr1": ("output", "0"),
    }
    assert bind["xnumel"].expr == "num_tokens"
    assert {a.name: a.type for a in kernel.signature}["in_ptr0"] == "*fp32"


def test_silu_and_mul_reads_a_sliced_input(tmp_path):
    result = _capture(tmp_path, "silu_and_mul")
    (launch,) = _launches(result)
    exprs = {b.param: b.expr for b in launch.args if b.kind == "size"}
    # x's last axis is 2 * intermediate: named after the axis, not the dim.
    assert exprs["ks0"] == "(x.size(1) // 2)"
    assert "x.size(1)" in exprs.values()


def test_softmax_is_a_reduction(tmp_path):
    result = _capture(tmp_path, "softmax")
    (kernel,) = result.capture.kernels
    assert kernel.kind in ("reduction", "persistent_reduction")
    assert kernel.reduction_hint is not None


def test_add_layernorm_has_two_outputs_and_reloads_a_buffer(tmp_path):
    result = _capture(tmp_path, "add_layernorm")
    (launch,) = _launches(result)
    outputs = sorted(b.target for b in launch.args if b.kind == "output")
    assert outputs == ["0", "1"]
    inputs = [b.target for b in launch.args if b.kind == "input"]
    assert inputs == ["x", "residual", "weight", "bias"]
    (kernel,) = result.capture.kernels
    # The kernel stores the residual sum and loads it back in a later loop.
    stored = [b.param for b in launch.args if b.target == "1"][0]
    assert (
        f"tl.store({stored}" in kernel.source and f"tl.load({stored}" in kernel.source
    )


def test_linear_gelu_keeps_the_extern_matmul_in_order(tmp_path):
    result = _capture(tmp_path, "linear_gelu")
    steps = result.capture.modules[0].steps
    assert [s.kind for s in steps] == ["extern", "launch"]
    assert steps[0].name in ("extern_kernels.addmm", "extern_kernels.mm")
    assert result.capture.kernels[0].kind == "pointwise"


def test_kernelbench_file(tmp_path):
    result = _capture(tmp_path, "kb_scaled_rmsnorm")
    cap = result.capture
    assert cap.reference_kind == "kernelbench"
    # dims are the file's size globals that shape its inputs
    assert [(d.name, d.role) for d in cap.dims] == [
        ("batch_size", "runtime"),
        ("features", "model"),
    ]
    (launch,) = _launches(result)
    targets = {b.target for b in launch.args if b.kind == "input"}
    assert targets == {"x", "weight"}  # the module parameter is part of the reference
    assert {b.expr for b in launch.args if b.param == "xnumel"} == {"batch_size"}


def test_cli_capture_is_quiet(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "porter.cli",
            "capture",
            str(EXAMPLES / "rmsnorm.py"),
            "--out",
            str(tmp_path),
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert proc.returncode == 0, proc.stderr
    assert "porter: wrote" in proc.stdout
    # Progress lines only: no Inductor code, log chatter or tracebacks.
    assert "def triton_" not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) <= 4


def test_recapture_reports_unchanged_code_and_diff_shows_changes(tmp_path, capsys):
    _capture(tmp_path, "rmsnorm")
    again = _capture(tmp_path, "rmsnorm")
    assert again.changed == ""
    case = tmp_path / "rmsnorm"
    manifest = json.loads((case / "manifest.json").read_text())
    manifest["kernels"][0]["source"] = manifest["kernels"][0]["source"].replace(
        "rsqrt", "sqrt"
    )
    (case / "manifest.json").write_text(json.dumps(manifest))
    before = {p: p.read_bytes() for p in case.rglob("*") if p.is_file()}
    assert main(["diff", str(case), "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "-" in out and "rsqrt" in out and "differs" in out
    after = {p: p.read_bytes() for p in case.rglob("*") if p.is_file()}
    assert before == after  # diff touches nothing


def test_edited_files_are_protected_and_backed_up_with_force(tmp_path, capsys):
    _capture(tmp_path, "rmsnorm")
    case = tmp_path / "rmsnorm"
    edited = next((case / "inductor" / "kernels").glob("*.py"))
    edited.write_text(edited.read_text() + "\n# my notes\n")
    (case / "NOTES.md").write_text("mine")
    assert (
        main(
            [
                "capture",
                str(EXAMPLES / "rmsnorm.py"),
                "--out",
                str(tmp_path),
                "--device",
                "cpu",
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "refusing to overwrite" in err and edited.name in err and "--force" in err
    assert "# my notes" in edited.read_text()
    assert (
        main(
            [
                "capture",
                str(EXAMPLES / "rmsnorm.py"),
                "--out",
                str(tmp_path),
                "--device",
                "cpu",
                "--force",
            ]
        )
        == 0
    )
    backups = list(edited.parent.glob(edited.name + ".porter-backup-*"))
    assert len(backups) == 1 and "# my notes" in backups[0].read_text()
    assert "# my notes" not in edited.read_text()
    assert (case / "NOTES.md").read_text() == "mine"  # not porter's: kept as is


def test_interrupted_write_leaves_no_case(tmp_path, monkeypatch):
    import porter.store as store

    calls = []

    def crash(path, text):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())

    monkeypatch.setattr(store, "_write", crash)
    with pytest.raises(KeyboardInterrupt):
        _capture(tmp_path, "rmsnorm")
    assert list(tmp_path.iterdir()) == []


BAD = {
    "syntax": ("def f(:\n    pass\n", "syntax error"),
    "noref": ("import torch\n\ndef f(x):\n    return x\n", "no reference found"),
    "raises": (
        "import torch\nDIMS = {'n': 8}\n"
        "def make_inputs(n, dtype=torch.float32, device='cpu'):\n    return (torch.randn(n, 4),)\n"
        "def f(x):\n    return x @ torch.randn(5, 5)\nREFERENCE = f\n",
        "raised in eager mode",
    ),
    "compile_fails": (
        "import torch\nDIMS = {'n': 8}\n"
        "def make_inputs(n, dtype=torch.float32, device='cpu'):\n    return (torch.randn(n, 4),)\n"
        "@torch.library.custom_op('porter_test::boom', mutates_args=())\n"
        "def boom(x: torch.Tensor) -> torch.Tensor:\n    return x.exp()\n"
        "@boom.register_fake\ndef _(x):\n    raise RuntimeError('broken fake kernel')\n"
        "def f(x):\n    return boom(x) + 1\nREFERENCE = f\n",
        "torch.compile failed",
    ),
    "matmul_only": (
        "import torch\nDIMS = {'n': 8}\n"
        "def make_inputs(n, dtype=torch.float32, device='cpu'):\n"
        "    return torch.randn(n, 16), torch.randn(16, 16)\n"
        "def f(x, w):\n    return x @ w\nREFERENCE = f\n",
        "no Triton kernel",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_clear_line(tmp_path, case):
    source, expected = BAD[case]
    ref = tmp_path / f"{case}.py"
    ref.write_text(source)
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "porter.cli",
            "capture",
            str(ref),
            "--out",
            str(out),
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert proc.returncode == 1
    errors = [l for l in proc.stderr.splitlines() if l.startswith("porter: error:")]
    assert len(errors) == 1 and expected in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (out / case).exists()


def test_missing_file(tmp_path):
    with pytest.raises(PorterError, match="no such file"):
        capture(tmp_path / "nope.py", out=tmp_path, device="cpu", progress=_quiet)


FLAT_POINTWISE = '''"""y = (x + b) * 0.5 over [tokens, hidden]: Inductor indexes x by one flat offset."""
import torch

DIMS = {"num_tokens": 8, "hidden": 256}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    return x, torch.randn(hidden, dtype=dtype, device=device)


def add_scale(x, b):
    return (x + b) * 0.5


REFERENCE = add_scale
'''


def test_flat_indexed_input_is_packed_for_a_row_sliced_view(tmp_path, porter_device):
    """A kernel that reads x at a flat offset has no row stride to honor: the
    launcher packs a row-sliced x first (once a silent wrong answer)."""
    from porter.testing import check_parity, load_case
    from porter.testing.parity import Scenario

    src = tmp_path / "add_scale.py"
    src.write_text(FLAT_POINTWISE)
    capture(src, out=tmp_path / "cases", device="cpu", progress=_quiet)
    case = load_case(tmp_path / "cases" / "add_scale")
    text = (case.folder / "kernel.py").read_text()
    assert "x = strided_as(x, (hidden, 1))" in text
    # tiled all the same: the packed x is read at rows * hidden + cols
    assert "offsets = rows * hidden + cols" in text and "offsets % " not in text
    sizes = {"num_tokens": 5, "hidden": 256}
    check_parity(
        case, Scenario("float32", sizes, layout="row_sliced"), porter_device, 7
    )


def test_an_input_read_flat_by_one_kernel_is_packed_though_others_take_its_strides(
    tmp_path, porter_device
):
    """On the H200, Inductor split softmax over 32768 columns into five kernels
    (tests/cases/softmax_split_h200, captured there 2026-12-03): two reductions
    take logits' row stride, the last, pointwise one reads it at flat offsets.
    The launcher packs a row-sliced logits for it (the scaffold once read the
    gaps between rows there)."""
    import shutil

    from porter.pipeline import port
    from porter.testing import check_parity, load_case
    from porter.testing.parity import Scenario

    folder = tmp_path / "softmax_split"
    shutil.copytree(ROOT / "tests" / "cases" / "softmax_split_h200", folder)
    # the capture's reference.py is the example, byte for byte (its sha256)
    shutil.copy(EXAMPLES / "softmax.py", folder / "reference.py")
    port(folder, progress=_quiet)
    text = (folder / "kernel.py").read_text()
    assert "logits = strided_as(logits, (vocab, 1))" in text
    assert "logits_stride0=logits.stride(0)" in text  # the reductions' stride
    case = load_case(folder)
    for dtype in ("float32", "bfloat16"):
        sizes = {"num_tokens": 3, "vocab": 1000}
        check_parity(
            case, Scenario(dtype, sizes, layout="row_sliced"), porter_device, 7
        )


NORM_STATS = '''"""RMSNorm that also returns rstd per token (a keepdim buffer returned squeezed)."""
import torch

DIMS = {"num_tokens": 4, "hidden": 256}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32", "bfloat16"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)


def norm_stats(x):
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (xf * rstd).to(x.dtype), rstd.squeeze(-1)


REFERENCE = norm_stats
'''


def test_an_output_returned_as_a_view_of_a_buffer(tmp_path, porter_device):
    """Inductor returns rstd as reinterpret_tensor(buf, (s0,), (1,), 0): the
    launcher returns the same view, in the output's own dtype (fp32 here even
    for bf16 inputs). Both once failed: a NameError, then a bf16 rstd."""
    from porter.testing import check_parity, load_case
    from porter.testing.parity import Scenario

    src = tmp_path / "norm_stats.py"
    src.write_text(NORM_STATS)
    capture(src, out=tmp_path / "cases", device="cpu", progress=_quiet)
    case = load_case(tmp_path / "cases" / "norm_stats")
    # a view of the buffer the launcher allocated, not a copy (the normed x
    # laid out as the caller's x, as eager's elementwise result is)
    text = (case.folder / "kernel.py").read_text()
    assert "return laid_out_like(out0, x_given), out1.as_strided(" in text
    for dtype in ("float32", "bfloat16"):
        sizes = {"num_tokens": 3, "hidden": 256}
        check_parity(case, Scenario(dtype, sizes), porter_device, 5)


def _row_reference(name: str, doc: str, size: str, expr: str) -> str:
    """A porter-format reference of one [num_tokens, <size>] fp32 input x."""
    return (
        f'"""{doc}"""\nimport torch\n\n'
        f'DIMS = {{"num_tokens": 4, "{size}": 1024}}\n'
        'DYNAMIC = ["num_tokens"]\nDTYPES = ["float32"]\n\n\n'
        f"def make_inputs(num_tokens, {size}, dtype=torch.float32, device='cpu'):\n"
        f"    return (torch.randn(num_tokens, {size}, dtype=dtype, device=device),)\n\n\n"
        f"def {name}(x):\n    return {expr}\n\n\nREFERENCE = {name}\n"
    )


def _capture_text(tmp_path, name: str, text: str):
    """Capture a reference written here; the result and its case."""
    from porter.testing import load_case

    src = tmp_path / f"{name}.py"
    src.write_text(text)
    result = capture(src, out=tmp_path / "cases", device="cpu", progress=_quiet)
    assert not [w for w in result.warnings if "not ported faithfully" in w]
    return result, load_case(tmp_path / "cases" / name)


def test_argmax_ports_with_porters_index_helpers(tmp_path, porter_device):
    """Inductor's max_with_index helpers become argmax_step / argmax_rows (NaN
    is the largest, ties take the lower index, as torch.argmax)."""
    from porter.testing import check_parity
    from porter.testing.parity import Scenario

    text = _row_reference(
        "argmax_tok", "Greedy sampling.", "vocab", "torch.argmax(x, dim=-1)"
    )
    _, case = _capture_text(tmp_path, "argmax_tok", text)
    assert "argmax_rows" in _common_imports(case.folder / "kernel.py")
    for values in ("random", "difficult"):  # difficult: rows with inf and NaN
        sizes = {"num_tokens": 6, "vocab": 1025}
        check_parity(case, Scenario("float32", sizes, values=values), porter_device, 3)


def test_scans_carry_inductors_combine_function(tmp_path, porter_device):
    """tl.associative_scan's combine function (`_triton_helper_fn_add0`) comes
    along as `combine_add0`; select_one becomes porter's select_masked. The
    looped kernel carries the running sum across blocks (hidden past the
    persistent limit)."""
    from porter.testing import check_parity
    from porter.testing.parity import Scenario, max_fused_cols

    text = _row_reference("cumsum_tok", "A scan.", "hidden", "torch.cumsum(x, dim=-1)")
    _, case = _capture_text(tmp_path, "cumsum_tok", text)
    text = (case.folder / "kernel.py").read_text()
    assert "def combine_add0(" in text
    assert "select_masked" in _common_imports(case.folder / "kernel.py")
    for hidden in (1025, max_fused_cols(case.kernel) + 2):
        sizes = {"num_tokens": 2, "hidden": hidden}
        check_parity(case, Scenario("float32", sizes), porter_device, 9)


def test_reductions_of_rows_are_never_split_and_one_value_keeps_inductors_split():
    """Inductor's split of long rows is tuned to the traced batch (on an H200
    softmax over 32768 columns became five kernels, 1.9-3.6x slower ported);
    a reduction to one value keeps it, its only parallelism."""
    from torch._inductor.choices import InductorChoices

    from porter.capture import WholeRows, inductor_patches

    cuda = torch.device("cuda")
    for rows in (2, 4, 64):
        assert WholeRows.reduction_split_factor(cuda, 32768, rows, True) == 1
        assert WholeRows.reduction_split_factor(cuda, 32768, rows, False) == 1
    cpu = torch.device("cpu")
    theirs = InductorChoices.reduction_split_factor(cpu, 1 << 24, 1, True)
    assert theirs > 1
    assert WholeRows.reduction_split_factor(cpu, 1 << 24, 1, True) == theirs
    for codegen_only in (True, False):
        patches = inductor_patches(codegen_only)
        assert patches["force_disable_caches"] is True
        assert "split_reductions" not in patches  # the torch here has the choice
    assert inductor_patches(True)["cpu_backend"] == "triton"
    assert "cpu_backend" not in inductor_patches(False)


ABSMAX = '''"""A whole tensor's absmax scale (per-tensor FP8 quantization)."""
import torch

DIMS = {"num_tokens": 4, "hidden": 4096}
DYNAMIC = ["num_tokens"]
DTYPES = ["float32"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)


def absmax(x):
    return x.abs().amax() / 448.0


REFERENCE = absmax
'''


def test_a_reduction_to_one_value_ports_split_and_general(tmp_path, porter_device):
    """Inductor splits the whole tensor's amax into partial maxima and a
    reduction of them, whose launch passes xnumel = 1 as a specialized
    constant (once bound to the wrong parameter) and stores the 0-d output at
    `tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)` (once folded into a
    bare 0)."""
    from porter.testing import check_parity, load_case
    from porter.testing.parity import Scenario

    src = tmp_path / "absmax.py"
    src.write_text(ABSMAX)
    result = capture(src, out=tmp_path / "cases", device="cpu", progress=_quiet)
    assert len(result.capture.kernels) == 2  # partial maxima, then their max
    second = _launches(result)[1]
    assert {b.param: b.value for b in second.args}["xnumel"] == "1"
    case = load_case(tmp_path / "cases" / "absmax")
    for num_tokens in (1, 5, 77):
        sizes = {"num_tokens": num_tokens, "hidden": 4096}
        for layout in ("contiguous", "row_sliced"):
            check_parity(
                case, Scenario("float32", sizes, layout=layout), porter_device, 3
            )


def _common_imports(path):
    """The names a kernel.py imports from common.py."""
    import ast

    return {
        a.name
        for n in ast.parse(path.read_text()).body
        if isinstance(n, ast.ImportFrom) and n.module == "common" and n.level == 2
        for a in n.names
    }


def test_same_values_compares_fp8_tensors_changed_in_place():
    # the dtype check's aliasing probe failed the capture of an fp8 KV-cache
    # write: torch has no nan_to_num for float8_e4m3fn
    import torch

    from porter.capture import _same_values

    a = torch.tensor([1.0, float("nan"), 448.0]).to(torch.float8_e4m3fn)
    assert _same_values(a, a.clone())
    assert not _same_values(a, torch.zeros(3).to(torch.float8_e4m3fn))


def test_a_scaled_softmax_is_captured_as_the_reference_writes_it(tmp_path):
    # Inductor rewrote softmax(x / t) as (x * sign - amax(x * sign)) / (sign
    # * t) behind a per-row isfinite fallback to x / t - amax(x / t): two
    # forms in the kernel, the first rounding unlike eager.
    ref = tmp_path / "scaled_softmax.py"
    ref.write_text(
        "import torch\n"
        "DIMS = {'num_tokens': 4, 'vocab': 64}\n"
        "DYNAMIC = ['num_tokens']\n"
        "def make_inputs(num_tokens, vocab, dtype=torch.float32, device='cpu'):\n"
        "    x = torch.randn(num_tokens, vocab, dtype=dtype, device=device)\n"
        "    return x, torch.rand(num_tokens, dtype=dtype, device=device) + 0.5\n"
        "def scaled_softmax(x, t):\n"
        "    return torch.softmax(x / t[:, None], dim=-1)\n"
        "REFERENCE = scaled_softmax\n"
    )
    result = capture(ref, out=tmp_path / "out", device="cpu", progress=_quiet)
    (kernel,) = result.capture.kernels
    body = kernel.source[kernel.source.index("@triton.jit") :]
    assert 'float("-inf")' in body  # the row max
    assert 'float("inf")' not in body and ">= 0" not in body


def test_only_the_rewrite_of_a_division_by_a_tensor_is_left_out_and_comes_back():
    # x * c keeps Inductor's form (port/speed/guards.py reads it): its
    # original, x * c - max, would contract into a multiply-add on a GPU.
    from torch._inductor.fx_passes.joint_graph import pass_patterns

    from porter.capture import eager_scaled_softmax

    patterns = pass_patterns[1].patterns
    before = {k: list(v) for k, v in patterns.items()}
    with eager_scaled_softmax():
        changed = [
            e.handler.__name__
            for k, entries in patterns.items()
            for e, was in zip(entries, before[k])
            if e is not was
        ]
    assert changed and set(changed) == {"div_softmax_pattern"}
    assert all(all(e is was for e, was in zip(patterns[k], before[k])) for k in before)


LAYER_NORM = '''
import torch

DIMS = {"num_tokens": 4, "hidden": 48}
DYNAMIC = ["num_tokens"]


def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
    x = torch.randn(num_tokens, hidden, dtype=dtype, device=device)
    weight = torch.randn(hidden, dtype=dtype, device=device)
    return x, weight


def layer_norm(x, weight, eps: float = 1e-5):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, None, eps)


REFERENCE = layer_norm
'''


def test_a_layer_norms_eps_is_a_kernel_argument(tmp_path, porter_device):
    # F.layer_norm's aten op takes eps as a Python float, which fixed it at
    # capture: the scaffold refused every other eps.
    from porter.testing import load_case

    src = tmp_path / "layer_norm.py"
    src.write_text(LAYER_NORM)
    capture(src, out=tmp_path / "cases", device="cpu", progress=_quiet)
    case = load_case(tmp_path / "cases" / "layer_norm")
    torch.manual_seed(0)
    x = torch.randn(3, 48, device=porter_device) * 1e-2
    weight = torch.randn(48, device=porter_device)
    for eps in (1e-5, 0.5):
        want = torch.nn.functional.layer_norm(
            x.double(), (48,), weight.double(), None, eps
        )
        got = case.kernel.layer_norm(x, weight, eps=eps)
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_traced_norms_are_torchs(dtype):
    from porter.capture import _NORMS, runtime_norm_eps

    F = torch.nn.functional
    torch.manual_seed(0)
    x = torch.randn(3, 4, 6, dtype=dtype)
    w, b = torch.randn(4, 6, dtype=dtype), torch.randn(4, 6, dtype=dtype)
    for args in ((None, None), (w, None), (None, b), (w, b)):
        want = F.layer_norm(x, (4, 6), *args, eps=0.1)
        torch.testing.assert_close(_NORMS["layer_norm"](x, (4, 6), *args, 0.1), want)
    for args in ((), (w,), (w, 0.1)):
        want = F.rms_norm(x, (4, 6), *args)
        torch.testing.assert_close(_NORMS["rms_norm"](x, (4, 6), *args), want)
    originals = {name: getattr(F, name) for name in _NORMS}
    with runtime_norm_eps():
        assert all(getattr(F, name) is _NORMS[name] for name in _NORMS)
    assert all(getattr(F, name) is originals[name] for name in _NORMS)
