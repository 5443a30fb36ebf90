"""Before/after tests for refusing a returned view that takes more than a
size holds (porter.port.finish.views)."""

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
from porter.testing.parity import ParityError, ScaffoldRefuses, Scenario

# y[:, :16], y[:, 4:12] and y[:, 16:] of a [num_tokens, hidden] result
CASE = Path(__file__).parent / "cases" / "sliced_views"


def _state(until):
    manifest = read_manifest(CASE)
    cap = Capture.from_dict(manifest)
    ref = case_reference(CASE, manifest).module
    return run_pipeline(PortState(cap, None, ref, PortOptions()), until=until)


def test_each_sliced_view_gets_its_bound():
    before = _state("refuse_empty_extrema").launcher.shape_checks
    after = _state("refuse_short_views").launcher.shape_checks
    assert before == []
    tests = [c.splitlines()[0] for c in after]
    # [:16] needs 16 columns, [4:12] 12, and [16:] a size of hidden - 16 >= 0
    assert tests == ["if hidden < 16:", "if hidden < 12:", "if -16 + hidden < 0:"]
    assert "a slice like [:16]" in after[0]


def test_the_scaffold_refuses_a_row_shorter_than_the_slice(tmp_path):
    case = tmp_path / "sliced_views"
    shutil.copytree(CASE, case)
    port(case, progress=lambda _: None)
    loaded = load_case(case)
    # Eager clamps y[:, :16] to 5 columns; the view of 16 ran past the buffer.
    narrow = Scenario("float32", {"num_tokens": 3, "hidden": 5}, optional=True)
    with pytest.raises(ScaffoldRefuses, match="takes 16 along x.shape"):
        check_parity(loaded, narrow, "cpu", 0)
    # From 16 columns up every slice is whole, and right.
    for hidden in (16, 40):
        sizes = {"num_tokens": 3, "hidden": hidden}
        check_parity(loaded, Scenario("float32", sizes), "cpu", 0)


def test_an_output_less_contiguous_than_eagers_fails(tmp_path):
    # Right values at a padded row stride: a caller's .view() of it raises
    # where eager's output, contiguous, takes one.
    case = tmp_path / "var_mean_rows"
    shutil.copytree(Path(__file__).parent / "cases" / "var_mean_rows", case)
    port(case, progress=lambda _: None)
    kernel = case / "kernel.py"
    alloc = "out0 = torch.empty((num_tokens, hidden), dtype=x.dtype, device=x.device)"
    padded = (
        "out0 = torch.empty((num_tokens, 2 * hidden), dtype=x.dtype, "
        "device=x.device)[:, :hidden]"
    )
    text = kernel.read_text()
    assert alloc in text
    sizes = {"num_tokens": 3, "hidden": 16}
    check_parity(load_case(case), Scenario("float32", sizes), "cpu", 0)
    kernel.write_text(text.replace(alloc, padded))
    with pytest.raises(ParityError, match=r"output 0 has strides \(32, 1\)"):
        check_parity(load_case(case), Scenario("float32", sizes), "cpu", 0)


def test_an_input_returned_as_it_came_is_the_callers_tensor(tmp_path):
    # return x, y[:, ::2], total.expand(...): for a row-sliced x the launcher
    # copies x to its kernels' layout and had returned that copy.
    case = tmp_path / "return_input_and_view"
    shutil.copytree(Path(__file__).parent / "cases" / "return_input_and_view", case)
    port(case, progress=lambda _: None)
    kernel = case / "kernel.py"
    text = kernel.read_text()
    assert "x_given = x" in text
    sliced = Scenario("float32", {"num_tokens": 3, "hidden": 8}, layout="row_sliced")
    check_parity(load_case(case), sliced, "cpu", 0)
    kernel.write_text(text.replace("        x_given,\n", "        x,\n"))
    with pytest.raises(ParityError, match="output 0 is eager's input 0 itself"):
        check_parity(load_case(case), sliced, "cpu", 0)


def test_a_flattened_axis_read_as_rows_is_not_checked():
    # InstanceNorm's [16 * batch] statistics returned as [batch, 16]: at batch
    # 0 the view is empty, and a check of 16 * batch >= 16 refused it.
    from types import SimpleNamespace

    from porter.port.finish.views import refuse_short_views
    from porter.port.launch.launcher import Alloc

    def checks(sizes, returns):
        alloc = Alloc(
            "out0", sizes, ["hidden", "1"][-len(sizes) :], "x.dtype", "x.device"
        )
        launcher = SimpleNamespace(
            dims=[], allocs=[alloc], returns=returns, shape_checks=[]
        )
        refuse_short_views(SimpleNamespace(launcher=launcher, notes=[]))
        return [c.splitlines()[0] for c in launcher.shape_checks]

    flat = "out0.as_strided((batch, 16), (16, 1), out0.storage_offset())"
    assert checks(["16 * batch"], flat) == []
    rows = "out0.as_strided((num_tokens, 16), (hidden, 1), out0.storage_offset())"
    assert checks(["num_tokens", "hidden"], rows) == ["if hidden < 16:"]
