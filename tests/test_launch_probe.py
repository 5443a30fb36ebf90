"""tools/launch_probe.py's CPU-side logic: the candidates it builds and the
scaffold globals it patches and restores (timing needs a GPU)."""

import argparse
import types
from pathlib import Path

import pytest

from porter.testing.parity import import_kernel

ROOT = Path(__file__).resolve().parents[1]
launch_probe = import_kernel(ROOT / "tools" / "launch_probe.py", "launch_probe_tool")


def _args(**kw):
    base = dict(
        reduce=[], tile=[], max_fused=[], looped=[], min_row_bytes=[], no_pdl=False
    )
    return argparse.Namespace(**{**base, **kw})


def test_patched_restores_and_deletes():
    mod = types.SimpleNamespace(launch_settings="mine", MAX_FUSED_COLS=8192)
    with launch_probe._patched(mod, launch_settings="probe", ONLINE_MIN_COLS=1):
        assert (mod.launch_settings, mod.ONLINE_MIN_COLS) == ("probe", 1)
    assert mod.launch_settings == "mine"
    assert not hasattr(mod, "ONLINE_MIN_COLS")  # the scaffold had none


def test_patched_restores_after_an_error():
    mod = types.SimpleNamespace(MAX_FUSED_COLS=8192)
    with pytest.raises(RuntimeError):
        with launch_probe._patched(mod, MAX_FUSED_COLS=1):
            raise RuntimeError("candidate failed")
    assert mod.MAX_FUSED_COLS == 8192


def test_patched_reaches_the_constants_common_py_holds():
    # rmsnorm's launcher asks common.row_launch, which reads the table from
    # common.py: patching the kernel module alone would change nothing.
    from porter.testing.parity import common_module

    kernel = import_kernel(ROOT / "captured" / "rmsnorm" / "kernel.py", "probe_rms")
    common = common_module(kernel)
    before = dict(common.LOOPED_MIN_ROW_BYTES)
    rows_of_4_kb = (1024, 2048, 2)  # below the table's 8 KB: held
    assert kernel.row_launch(*rows_of_4_kb, reads=(2, 1))[0] == "persistent"
    with launch_probe._patched(kernel, LOOPED_MIN_ROW_BYTES={(2, 1): 1}):
        assert kernel.row_launch(*rows_of_4_kb, reads=(2, 1))[0] == "looped"
    assert common.LOOPED_MIN_ROW_BYTES == before
    assert not hasattr(kernel, "LOOPED_MIN_ROW_BYTES")


def test_candidates_fix_the_launch_choice():
    mod = types.SimpleNamespace(
        MAX_FUSED_COLS=8192,
        LOOPED_WARPS=16,
        LOOPED_MIN_ROW_BYTES={(2, 1): 8192},
        looped_min_row_bytes=lambda *args: 8192,
    )
    got = dict(
        launch_probe._candidates(
            mod,
            _args(
                reduce=["2x4"],
                tile=["1x1024x4"],
                looped=["2048", "4096x8"],
                min_row_bytes=[1 << 30],
            ),
        )
    )
    # Rows of 1000 round up to a block of 1024; the element size (third
    # argument, as the launchers pass it) binds to nothing.
    assert got["reduce=2x4"]["launch_settings"](7, 1000, 2) == (2, 1024, 4)
    assert got["tile=1x1024x4"]["tile_settings"](7, 300, 2) == (1, 512, 4)
    assert got["looped=2048"]["looped_settings"](7, 4096, 4) == (2048, 16)
    assert got["looped=4096x8"]["looped_settings"](7, 4096, 4) == (4096, 8)
    assert got["looped=4096x8"]["MAX_FUSED_COLS"] == 1
    assert got["min_row_bytes=1073741824"]["LOOPED_MIN_ROW_BYTES"] == {(2, 1): 1 << 30}


def test_no_pdl_launches_the_scaffold_without_pdl():
    mod = types.SimpleNamespace(pdl_enabled=lambda device: True)
    got = dict(launch_probe._candidates(mod, _args(no_pdl=True)))
    assert got["pdl=off"]["pdl_enabled"]("cuda") is False
    # A scaffold without PDL (linear_gelu) gets no candidate that would time
    # its default under another name.
    assert launch_probe._candidates(types.SimpleNamespace(), _args(no_pdl=True)) == []


def test_no_pdl_launches_each_candidate_without_pdl_too():
    mod = types.SimpleNamespace(pdl_enabled=lambda device: True)
    got = dict(launch_probe._candidates(mod, _args(no_pdl=True, tile=["2x1024x8"])))
    assert list(got) == ["tile=2x1024x8", "tile=2x1024x8,pdl=off", "pdl=off"]
    both = got["tile=2x1024x8,pdl=off"]
    assert both["pdl_enabled"]("cuda") is False
    assert both["tile_settings"](4096, 5120, 2) == (2, 1024, 8)


def test_candidates_skip_switches_the_scaffold_lacks():
    # A pointwise scaffold has no looped kernel: --looped and --max-fused there
    # would time the default under another name.
    mod = types.SimpleNamespace()
    assert launch_probe._candidates(mod, _args(looped=["2048"], max_fused=[1])) == []


def test_a_missing_variant_file_stops_before_anything_runs(
    tmp_path, monkeypatch, capsys
):
    present = tmp_path / "v.py"
    present.write_text("")
    argv = [
        "launch_probe.py",
        "rmsnorm",
        "--variant",
        str(present),
        str(tmp_path / "gone.py"),
    ]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as exc:
        launch_probe.main()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"--variant: no such file: {tmp_path / 'gone.py'}" in err
    assert "Traceback" not in err


def test_without_a_gpu_it_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(launch_probe.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("sys.argv", ["launch_probe.py", "rmsnorm", "--tokens", "16"])
    assert launch_probe.main() == 2
    assert capsys.readouterr().err == "launch_probe: needs a CUDA GPU\n"


def test_behind_runs_the_neighbour_first_and_returns_the_call():
    order = []
    pair = launch_probe.behind(lambda: order.append("neighbour"), lambda: "out")
    assert pair() == "out"
    order.append("after")
    assert order == ["neighbour", "after"]


def test_the_add_neighbour_writes_its_own_buffer():
    # On the CPU here; the probe builds it on the GPU. Its output is a buffer
    # of its own, so the timed call's inputs stay as they were.
    first = launch_probe.neighbour("add", device="cpu")
    out = first()
    assert out.dtype == launch_probe.torch.bfloat16 and out.numel() == 1 << 19
    assert first().data_ptr() == out.data_ptr()  # the same buffer every call
    with pytest.raises(ValueError, match="not one of add, mm"):
        launch_probe.neighbour("copy", device="cpu")


def test_an_unknown_neighbour_stops_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["launch_probe.py", "rmsnorm", "--behind", "copy"])
    with pytest.raises(SystemExit) as exc:
        launch_probe.main()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--behind: invalid choice: 'copy'" in err and "Traceback" not in err


def test_rotate_cycles_each_graph_through_its_input_sets(monkeypatch):
    # The probe on the CPU, graphs and timing stubbed: each "graph" records the
    # inputs its captured calls read, and its replay time is the call count.
    from porter.bench.points import sweep
    from porter.testing.parity import load_case

    case = load_case(ROOT / "captured" / "rmsnorm")
    from porter.testing import parity

    make = parity.make_inputs

    def on_cpu(c, sc, device, seed=0):
        return make(c, sc, "cpu", seed)

    # The probe's first set, and the others porter.bench.timing.input_sets makes.
    monkeypatch.setattr(launch_probe, "make_inputs", on_cpu)
    monkeypatch.setattr(parity, "make_inputs", on_cpu)
    read = []
    real = case.kernel.rmsnorm

    def spy(x, *rest):
        read.append(x.data_ptr())
        return real(x, *rest)

    monkeypatch.setattr(case.kernel, "rmsnorm", spy)
    captured = {}

    def capture_graph(fn, launches=1):
        start = len(read)
        for _ in range(launches):
            fn()
        captured[len(captured)] = read[start:]
        return types.SimpleNamespace(replay=launches)

    monkeypatch.setattr(launch_probe, "capture_graph", capture_graph)
    monkeypatch.setattr(launch_probe, "_median_us", lambda replay: float(replay))
    monkeypatch.setattr(launch_probe, "rotation_sets", lambda nbytes, launches: 3)
    (point,) = sweep(case.manifest, (16,), ("float32",))
    args = argparse.Namespace(
        case="rmsnorm",
        dtype="float32",
        **_args().__dict__,
        rounds=1,
        launches=6,
        behind=None,
        rotate=True,
        inductor=False,
        copy=False,
    )
    got = launch_probe.probe(case, {}, point, args, None)
    assert got["input_sets"] == 3
    assert got["default"] == 1.0  # per call: the graph's time over its 6 calls
    (calls,) = captured.values()
    assert len(calls) == 6 and len(set(calls)) == 3  # every set, each in turn
    assert calls[:3] == calls[3:]

    # --copy: a torch copy and the Triton copies of the point's bytes, each
    # cycling as many buffers as the inputs do (stubbed: no GPU here).
    made = []

    def fake_copy(nbytes, *launch, **kw):
        made.append(nbytes)
        return lambda: None

    monkeypatch.setattr(launch_probe, "same_size_copy", fake_copy)
    monkeypatch.setattr(launch_probe, "triton_copy", fake_copy)
    # On the CPU the scaffold has no PDL, so no copy is timed with it either.
    args.copy = True
    got = launch_probe.probe(case, {}, point, args, None)
    copies = sorted(k for k in got if k.startswith("copy_"))
    assert copies == [
        "copy_torch",
        "copy_triton_16k4",
        "copy_triton_32k8",
        "copy_triton_8k4",
    ]
    hidden = point.sizes["hidden"]  # x and out of 16 rows, and the weight
    assert got["bytes"] == (2 * 16 + 1) * hidden * 4 and set(made) == {got["bytes"]}
    assert len(made) == 3 * 4  # each copy once a set
