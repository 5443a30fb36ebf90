"""tools/kernel_profile.py's CPU-side logic: reading a profiler trace into
kernels, launch shapes and gaps (the profiling itself needs a GPU)."""

from pathlib import Path

from porter.testing.parity import import_kernel

ROOT = Path(__file__).resolve().parents[1]
kernel_profile = import_kernel(ROOT / "tools" / "kernel_profile.py", "kernel_profile_tool")


def _event(name, ts, dur, cat="kernel", **args):
    return {"cat": cat, "name": name, "ts": ts, "dur": dur, "args": args}


def test_kernel_events_keep_device_work_in_start_order():
    trace = {
        "traceEvents": [
            _event("b", 5, 1),
            _event("cudaGraphLaunch", 0, 9, cat="cuda_runtime"),
            _event("a", 0, 2),
            _event("Memset (Device)", 3, 1, cat="gpu_memset"),
        ]
    }
    names = [e["name"] for e in kernel_profile.kernel_events(trace)]
    assert names == ["a", "Memset (Device)", "b"]


def test_summarize_per_call_means_and_gaps():
    # Two calls of a graph holding a (2 us) then b (1 us); a replay later,
    # 100 us on, whose gap is not a gap between kernels.
    events = [
        _event("a", 0, 2, grid=[4, 1, 1], block=[128, 1, 1]),
        _event("b", 3, 1),
        _event("a", 5, 4, grid=[4, 1, 1], block=[128, 1, 1]),
        _event("b", 10, 1),
        _event("a", 111, 3, grid=[4, 1, 1], block=[128, 1, 1]),
        _event("b", 115, 1),
    ]
    out = kernel_profile.summarize(events, 3)
    a, b = out["kernels"]
    assert (a["name"], a["per_call"], a["mean_us"]) == ("a", 1.0, 3.0)
    assert a["grid"] == [4, 1, 1] and a["block"] == [128, 1, 1]
    assert (b["per_call"], b["mean_us"], b["grid"]) == (1.0, 1.0, None)
    # Gaps 1, 1, 1, 1 between neighbours; the 100 us one between replays left out.
    assert out["gap_us"] == 1.0
    assert out["span_us_per_call"] == round(116 / 3, 3)


def test_summarize_without_events():
    assert kernel_profile.summarize([], 20) == {
        "kernels": [],
        "gap_us": None,
        "span_us_per_call": None,
    }


def test_without_a_gpu_it_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(kernel_profile.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("sys.argv", ["kernel_profile.py", "rmsnorm", "--tokens", "16"])
    assert kernel_profile.main() == 2
    assert capsys.readouterr().err == "kernel_profile: needs a CUDA GPU\n"


def test_without_pdl_launches_the_call_with_pdl_off_and_restores_it():
    import types

    mod = types.SimpleNamespace(pdl_enabled=lambda device: True)
    seen = []

    def launcher():  # as a scaffold's launcher asks, at every call
        seen.append(mod.pdl_enabled("cuda"))
        return "out"

    call = kernel_profile.without_pdl(mod, launcher)
    assert call() == "out" and seen == [False]
    assert mod.pdl_enabled("cuda") is True  # the scaffold as it was
    launcher()
    assert seen == [False, True]
