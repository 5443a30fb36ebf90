"""Before/after tests for refusing a max or min over an empty axis
(porter.port.finish.empty)."""

import shutil
from pathlib import Path

import pytest

from porter.pipeline import port
from porter.port.model import PortOptions, PortState
from porter.port.pipeline import run_pipeline
from porter.records import Capture
from porter.reference import case_reference
from porter.store import read_manifest
from porter.testing import check_parity, load_case
from porter.testing.parity import ReferenceRejects, Scenario

CASE = Path(__file__).parent / "cases" / "per_tensor_amax"


def _checks(clear_aten=False):
    manifest = read_manifest(CASE)
    cap = Capture.from_dict(manifest)
    ref = case_reference(CASE, manifest).module
    if clear_aten:  # a capture older than KernelRecord.aten
        for k in cap.kernels:
            k.aten = []
    state = run_pipeline(PortState(cap, None, ref, PortOptions()))
    return [c for c in state.launcher.shape_checks if "empty axis" in c]


def test_an_amax_refuses_an_empty_axis():
    (check,) = _checks()
    assert check.startswith("if (hidden * num_tokens) == 0:")
    assert "amax over an empty axis" in check


def test_a_capture_older_than_the_ops_record_reads_them_from_the_kernel_name():
    # captured/quant_int8's manifest has no aten ops: its scaffold returned a
    # scale for rows of no columns, where eager's amax raises.
    (check,) = _checks(clear_aten=True)
    assert "amax over an empty axis" in check


def test_an_argmax_over_a_row_whose_length_is_also_its_stride_refuses_it_empty(
    tmp_path,
):
    # Inductor passes the row's length twice (ks0, the stride; r0_numel), and
    # binding kept one parameter: the reduced size went unfound and
    # argmax(logits[:, :0]) returned 2147483647 for every row.
    from porter.pipeline import capture

    ref = tmp_path / "greedy.py"
    ref.write_text(
        "import torch\n"
        'DIMS = {"num_tokens": 4, "vocab": 50}\n'
        'DTYPES = ["float32"]\n'
        'def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):\n'
        "    return (torch.randn(num_tokens, vocab, dtype=dtype, device=device),)\n"
        "def greedy(logits):\n"
        "    return logits.argmax(dim=-1)\n"
        "REFERENCE = greedy\n"
    )
    out = capture(ref, out=tmp_path / "cases", device="cpu", progress=lambda _: None)
    loaded = load_case(out.case)
    empty = Scenario("float32", {"num_tokens": 3, "vocab": 0}, optional=True)
    with pytest.raises(ReferenceRejects, match="so does the scaffold"):
        check_parity(loaded, empty, "cpu", 0)
    # and the suite tries a per-model dim a reduction runs along at 0
    assert any(s.sizes.get("vocab") == 0 for s in loaded.scenarios())


def test_the_scaffold_refuses_where_eager_raises(tmp_path):
    case = tmp_path / "per_tensor_amax"
    shutil.copytree(CASE, case)
    port(case, progress=lambda _: None)
    loaded = load_case(case)
    empty = Scenario("float32", {"num_tokens": 0, "hidden": 16}, optional=True)
    with pytest.raises(ReferenceRejects, match="so does the scaffold"):
        check_parity(loaded, empty, "cpu", 0)
    check_parity(loaded, Scenario("float32", {"num_tokens": 3, "hidden": 16}), "cpu", 0)


def test_a_softmax_over_no_columns_is_served_as_eager_serves_it(tmp_path):
    # softmax's amax has no value over 0 columns, but its output [tokens, 0]
    # holds none: eager returns it empty, and so does the scaffold.
    from porter.pipeline import capture

    ref = tmp_path / "sm.py"
    ref.write_text(
        "import torch\n"
        'DIMS = {"num_tokens": 4, "vocab": 50}\n'
        'DTYPES = ["float32"]\n'
        'def make_inputs(num_tokens, vocab, dtype=torch.float32, device="cpu"):\n'
        "    return (torch.randn(num_tokens, vocab, dtype=dtype, device=device),)\n"
        "def sm(logits):\n"
        "    return torch.softmax(logits / 0.7, dim=-1)\n"
        "REFERENCE = sm\n"
    )
    out = capture(ref, out=tmp_path / "cases", device="cpu", progress=lambda _: None)
    loaded = load_case(out.case)
    check_parity(loaded, Scenario("float32", {"num_tokens": 3, "vocab": 0}), "cpu", 0)


def test_the_amax_of_a_log_softmax_is_not_refused(tmp_path):
    # F.cross_entropy over an n x n score matrix: Inductor's kernel lists the
    # amax of log_softmax's shift; at n = 0 eager returns nan, and the
    # scaffold had refused the call, saying eager raises.
    from porter.pipeline import capture

    ref = tmp_path / "square_ce.py"
    ref.write_text(
        "import torch\n"
        "import torch.nn.functional as F\n"
        'DIMS = {"batch": 6}\n'
        'DYNAMIC = ["batch"]\n'
        'DTYPES = ["float32"]\n'
        'def make_inputs(batch, dtype=torch.float32, device="cpu"):\n'
        "    return (torch.randn(batch, dtype=dtype, device=device),\n"
        "            torch.randn(batch, dtype=dtype, device=device))\n"
        "def square_ce(a, b):\n"
        "    s = a[:, None] * b[None, :]\n"
        "    return F.cross_entropy(s, torch.arange(s.size(0), device=s.device))\n"
        "REFERENCE = square_ce\n"
    )
    out = capture(ref, out=tmp_path / "cases", device="cpu", progress=lambda _: None)
    loaded = load_case(out.case)
    assert "empty axis" not in (loaded.folder / "kernel.py").read_text()
    for batch in (0, 5):
        check_parity(loaded, Scenario("float32", {"batch": batch}), "cpu", 0)
