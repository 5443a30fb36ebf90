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


def test_no_refusal_without_the_ops_recorded():
    assert _checks(clear_aten=True) == []


def test_the_scaffold_refuses_where_eager_raises(tmp_path):
    case = tmp_path / "per_tensor_amax"
    shutil.copytree(CASE, case)
    port(case, progress=lambda _: None)
    loaded = load_case(case)
    empty = Scenario("float32", {"num_tokens": 0, "hidden": 16}, optional=True)
    with pytest.raises(ReferenceRejects, match="so does the scaffold"):
        check_parity(loaded, empty, "cpu", 0)
    check_parity(loaded, Scenario("float32", {"num_tokens": 3, "hidden": 16}), "cpu", 0)
