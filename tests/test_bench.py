"""porter bench's CPU-side logic: the sweep, byte counting and the reports.

The rows below are made-up inputs for the renderers, not measurements; the
timing itself needs a GPU and is exercised there (tools/h200_bench.sh)."""

import contextlib
import json
import types

import pytest
import torch

from porter.bench import fingerprint, report, timing
from porter.bench import points as bench_points
from porter.bench.points import sweep
from porter.cli import main

FACTS = {"gpu": "G", "torch": "t", "triton": "tr", "date": "2026-01-01"}
MANIFEST = {
    "dims": [
        {"name": "num_tokens", "size": 64, "role": "runtime"},
        {"name": "hidden", "size": 4096, "role": "model"},
    ],
    "dtypes": ["float32", "float16", "bfloat16"],
}


def test_sweep_is_bf16_first_and_ascending():
    points = sweep(MANIFEST, tokens=(64, 1, 4096))
    assert [p.dtype for p in points] == ["bfloat16"] * 3 + ["float16"] * 3 + [
        "float32"
    ] * 3
    assert [p.num_tokens for p in points[:3]] == [1, 64, 4096]
    assert points[0].sizes == {"num_tokens": 1, "hidden": 4096}


def test_sweep_leaves_out_points_that_do_not_fit():
    def nbytes(sizes, dtype):
        return sizes["num_tokens"] * sizes["hidden"] * 2

    points = sweep(MANIFEST, (1, 65536), ("bfloat16",), nbytes, memory_limit=1 << 20)
    assert [p.num_tokens for p in points] == [1]


def test_bytes_count_each_tensor_once():
    x = torch.empty(8, 16, dtype=torch.bfloat16)
    w = torch.empty(16)
    assert bench_points.tensor_bytes((x, [w, 3.0])) == 8 * 16 * 2 + 16 * 4
    assert bench_points.gbps(2_000_000, 1.0) == pytest.approx(2000.0)


def _summary(folder, rows, captured=None) -> str:
    """porter report's summary of one stored case, demo.json, holding rows."""
    (folder / "demo.json").write_text(json.dumps(rows))
    return report.aggregate(folder, captured)


def _rows():
    rows = []
    for n, (p, d, s) in zip((1, 4096), ((5.0, 20.0, 6.0), (100.0, 200.0, 110.0))):
        rows.append(
            {
                "case": "demo",
                "dtype": "bfloat16",
                "num_tokens": n,
                "shape": f"num_tokens={n}xhidden=4096",
                "ported_us": p * 2,
                "inductor_us": d * 2,
                "inductor_static_us": s * 2,
                "eager_us": 50.0,
                "ported_graph_us": p,
                "inductor_graph_us": d,
                "inductor_static_graph_us": s,
                "eager_graph_us": 40.0,
                "ported_gbps": 100.0,
                "pct_copy_bw": 2.5 if n == 1 else 91.0,
                "gpu": "TEST GPU",
                "torch": "t",
                "triton": "tr",
                "date": "2026-01-01",
            }
        )
    return rows


def test_reports_render_from_stored_rows(tmp_path):
    facts = {
        "gpu": "TEST GPU",
        "torch": "t",
        "triton": "tr",
        "date": "2026-01-01",
        "copy_gbps": 4000.0,
    }
    paths = report.write_case(_rows(), facts, tmp_path, "demo")
    assert json.loads(paths[0].read_text())[1]["num_tokens"] == 4096
    table = paths[1].read_text()
    assert "TEST GPU" in table and "| 0.25 |" in table and "| 0.91 |" in table
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = report.aggregate(tmp_path)
    line = next(l for l in summary.splitlines() if l.startswith("| [demo]"))
    assert (
        "| bfloat16 | hidden=4096 | 2 | 2/2 | - | 0.50 (4096) | 0.91 (4096) | 91.0% |"
        in line
    )
    assert "TEST GPU" in line and "![demo](demo.png)" in summary
    for key in bench_points.ROW_KEYS:
        assert key in _rows()[0]


def test_table_of_rows_from_stored_runs_claims_no_copy_bandwidth():
    facts = {"gpu": "TEST GPU", "torch": "t", "triton": "tr", "date": "2026-01-01"}
    head = report.markdown_table(_rows(), facts).splitlines()[0]
    assert head.startswith("Measured on TEST GPU with torch t, triton tr, 2026-01-01.")
    assert "copy bandwidth" not in head
    with_copy = report.markdown_table(_rows(), {**facts, "copy_gbps": 4000.0})
    assert "2026-01-01; copy bandwidth 4000.0 GB/s in the same run." in with_copy


def test_report_command_needs_results(tmp_path, capsys):
    assert main(["report", "--dir", str(tmp_path)]) == 1
    assert "no benchmark results" in capsys.readouterr().err


def test_bench_command_refuses_without_a_gpu(capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(["bench", "captured/rmsnorm"]) == 1
    assert "CUDA GPU" in capsys.readouterr().err


def test_sweep_over_model_sizes():
    points = sweep(
        MANIFEST, (1, 64), ("bfloat16",), model_sizes={"hidden": [2048, 8192]}
    )
    assert [(p.sizes["hidden"], p.num_tokens) for p in points] == [
        (2048, 1),
        (2048, 64),
        (8192, 1),
        (8192, 64),
    ]
    with pytest.raises(ValueError, match="not a model dim"):
        sweep(MANIFEST, (1,), model_sizes={"num_tokens": [4]})


def test_graph_times_alternate_the_order_for_more_rounds():
    order = []

    def time_graph(fn):
        name = fn()
        order.append(name)
        return {"a": 5.0, "b": 6.0}[name] + 0.1 * len(order)

    calls = {n: (lambda n=n: n) for n in ("a", "b")}
    times = timing.graph_times(calls, time_graph, rounds=3)
    assert order == ["a", "b", "b", "a", "a", "b"]
    # the lowest of each call's three rounds (its first)
    assert times == {"a": 5.1, "b": 6.2}


def test_tables_say_how_many_rounds_the_graph_times_took(tmp_path):
    rows = [dict(r, graph_rounds=2) for r in _rows()]
    assert "lower of two rounds timed in opposite orders" in report.markdown_table(
        rows, FACTS
    )
    rows[0]["graph_rounds"] = 6
    table = report.markdown_table(rows, FACTS)
    assert "lowest of 2 or 6 rounds timed in alternating orders" in table
    rows[1]["graph_rounds"] = 1
    summary = _summary(tmp_path, rows)
    assert "1 of 2 rows timed each graph once" in summary
    assert "take the lowest of 6 rounds timed in alternating orders" in summary


def test_tables_say_when_graphs_held_several_launches(tmp_path):
    rows = [dict(r, graph_rounds=2) for r in _rows()]
    assert "calls back to back" not in report.markdown_table(rows, FACTS)
    rows[0]["graph_launches"] = 20
    table = report.markdown_table(rows, FACTS)
    assert "in 1 of 2 rows graphs of 20 calls back to back, timed per call" in table
    rows[1]["graph_launches"] = 20
    table = report.markdown_table(rows, FACTS)
    assert "; graphs of 20 calls back to back, timed per call;" in table
    rows[1]["graph_launches"] = 1
    summary = _summary(tmp_path, rows)
    assert "1 of 2 rows timed graphs of several calls back to back" in summary
    assert "follows a call of the same kernel" in summary
    assert "the time bar judges each row by them" in summary
    assert "input sets" not in table + summary  # none recorded its sets
    rows[0]["input_sets"] = 4
    table = report.markdown_table(rows, FACTS)
    assert (
        "graphs of 20 calls back to back, timed per call, cycling input sets of "
        "256 MB or more together in 1 of them (`input_sets`) (the others" in table
    )
    summary = _summary(tmp_path, rows)
    assert "1 of them cycled their calls through input sets of their own" in summary
    assert "the others read one set every call" not in summary  # both are one row
    rows[1]["graph_launches"] = 20
    summary = _summary(tmp_path, rows)
    assert "1 of them cycled" in summary and "the others read one set" in summary


def test_the_summary_names_no_other_rows_where_every_row_is_one_kind(tmp_path):
    rows = [dict(r, graph_rounds=2, graph_launches=20, input_sets=4) for r in _rows()]
    summary = _summary(tmp_path, rows)
    assert "2 of 2 rows timed graphs of several calls back to back" in summary
    assert "2 of them cycled their calls through input sets of their own" in summary
    assert "The others timed one call a graph" not in summary
    assert "the others read one set" not in summary
    assert "left in the L2 cache." in summary


def test_graph_us_is_per_launch(monkeypatch):
    captured = []

    def capture(fn, launches=1):
        captured.append(launches)
        return types.SimpleNamespace(replay=None)

    monkeypatch.setattr(timing, "capture_graph", capture)
    monkeypatch.setattr(timing, "_median_us", lambda replay: 40.0)
    assert timing._graph_us(lambda: None) == 40.0
    assert timing._graph_us(lambda: None, launches=20) == 2.0
    assert captured == [1, 20]


def test_bench_passes_rounds_and_launches_to_the_timing(monkeypatch, tmp_path):
    # The GPU parts stubbed: what the command line hands timing.run.
    seen = {}

    def run(case, points, progress, rounds, launches):
        seen.update(rounds=rounds, launches=launches, points=len(points))
        return [], {}

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda i: types.SimpleNamespace(total_memory=1 << 40),
    )
    monkeypatch.setattr(timing, "run", run)
    monkeypatch.setattr(report, "write_case", lambda rows, facts, out, name: [])
    args = ["bench", "captured/rmsnorm", "--dtype", "bfloat16", "--tokens", "1", "16"]
    args += ["--out", str(tmp_path), "--rounds", "6", "--launches", "20"]
    assert main(args) == 0
    assert seen == {"rounds": 6, "launches": 20, "points": 2}


def test_bench_launches_below_one_are_refused(capsys):
    assert main(["bench", "captured/rmsnorm", "--launches", "0"]) == 1
    err = capsys.readouterr().err
    assert "--launches 0: give 1 or more" in err and "Traceback" not in err


def test_bench_rounds_below_two_are_refused(capsys):
    assert main(["bench", "captured/rmsnorm", "--rounds", "1"]) == 1
    err = capsys.readouterr().err
    assert "--rounds 1: give 2 or more" in err and "Traceback" not in err


def test_parse_dims_reads_one_dim_a_word():
    # porter bench, tools/launch_probe.py and tools/inductor_configs.py share it
    from porter.sizes import parse_dims

    sizes = parse_dims(["hidden=2048,4096", "num_heads=32"])
    assert sizes == {"hidden": [2048, 4096], "num_heads": [32]}
    assert parse_dims([]) == {}
    with pytest.raises(ValueError, match="one dim a word"):
        parse_dims(["num_heads=32,head_dim=128"])


def test_bench_dims_in_one_word_say_to_split_them(capsys):
    args = ["bench", "captured/rotary_neox", "--dims", "num_heads=32,head_dim=128"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "one dim a word: --dims num_heads=32 head_dim=128" in err
    assert "Traceback" not in err


def test_bench_dims_are_checked_before_anything_runs(capsys):
    assert main(["bench", "captured/rmsnorm", "--dims", "hidden=x"]) == 1
    assert "integer sizes" in capsys.readouterr().err
    assert main(["bench", "captured/rmsnorm", "--dims", "vocab=4"]) == 1
    assert "not a model dim" in capsys.readouterr().err


def test_plot_has_a_panel_per_dtype_and_model_size(tmp_path):
    rows = _rows()
    wide = [dict(r, shape=r["shape"].replace("4096", "8192"), model="") for r in rows]
    path = tmp_path / "p.png"
    panels = report.plot(rows + wide, path, "demo")
    assert panels == [("bfloat16", "hidden=4096"), ("bfloat16", "hidden=8192")]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert bench_points.model_label("num_tokens=1xhidden=4096") == "hidden=4096"


def test_plot_shades_the_points_timed_in_graphs_of_several_calls(tmp_path):
    rows = _rows()
    assert report.multi_launch_spans(rows) == []
    rows[0]["graph_launches"] = 20
    first = rows[0]["num_tokens"]
    assert report.multi_launch_spans(rows) == [(first, first, 20)]
    # runs of consecutive token counts, split by a one-call row between them
    sweep = [
        {"num_tokens": n, "graph_launches": k}
        for n, k in [(1, 20), (2, 20), (4, 1), (16, 20), (64, 10)]
    ]
    assert report.multi_launch_spans(sweep) == [(1, 2, 20), (16, 16, 20), (64, 64, 10)]
    path = tmp_path / "p.png"
    assert report.plot(rows, path, "demo") == [("bfloat16", "hidden=4096")]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_names_points_left_out():
    facts = {"gpu": "G", "left_out": ["num_tokens=65536xhidden=4096"]}
    table = report.markdown_table(_rows(), facts)
    assert "Left out (out of GPU memory): num_tokens=65536xhidden=4096." in table


def test_variant_summary_per_sweep():
    rows = [
        dict(r, ported_variants=v, model="hidden=4096") for r, v in zip(_rows(), (1, 1))
    ]
    assert report.variant_summary(rows) == "bfloat16 hidden=4096: 1 -> 1"
    assert (
        "cumulative over the run): bfloat16 hidden=4096: 1 -> 1."
        in report.markdown_table(rows, {"gpu": "G"})
    )
    assert report.variant_summary(_rows()) == ""  # not measured: nothing claimed


def test_aggregate_counts_points_outside_the_bar(tmp_path):
    rows = _rows()
    rows[0]["ported_graph_us"] = 6.5  # 1.08 x static at 1 token
    summary = _summary(tmp_path, rows)
    assert "| 2 | 1/2 | 1 | 0.50 (4096) | 1.08 (1) |" in summary
    assert (
        "Within the time bar: 1 of 2 points; 0 of 1 up to 256 tokens, 1 of 1 above."
        in summary
    )
    # up to 1.03x static is within
    rows[0]["ported_graph_us"] = 6.15
    assert "| 2 | 2/2 | - |" in _summary(tmp_path, rows)
    rows[0]["inductor_graph_us"] = 6.0  # slower than the dynamic compile
    summary = _summary(tmp_path, rows)
    assert "| 2 | 1/2 | 1 |" in summary
    assert "0 of 1 up to 256 tokens" in summary


def test_within_bar():
    assert report.within_bar(1.0, 1.03)
    assert not report.within_bar(1.001, 0.5)
    assert not report.within_bar(0.5, 1.031)


def test_graph_replays_slower_than_direct_launches_are_flagged(tmp_path):
    rows = _rows()  # every replay takes half its direct launch: nothing to flag
    assert report.graph_anomalies(rows) == []
    rows[1]["ported_graph_us"] = 1.12 * rows[1]["ported_us"]
    rows[1]["eager_graph_us"] = 1.04 * rows[1]["eager_us"]  # within 5%: not flagged
    found = report.graph_anomalies(rows)
    assert [(r["num_tokens"], name) for r, name, _ in found] == [(4096, "ported")]
    assert found[0][2] == pytest.approx(1.12)
    table = report.markdown_table(rows, FACTS)
    assert "bfloat16 num_tokens=4096xhidden=4096 ported 1.12x" in table
    summary = _summary(tmp_path, rows)
    assert "Suspect points" in summary
    assert "2 of 2 rows timed each graph once" in summary
    assert "demo bfloat16 num_tokens=4096xhidden=4096 ported 1.12x" in summary
    # and the clean rows give neither note
    assert "Suspect points" not in _summary(tmp_path, _rows())
    assert "Graph replay slower" not in report.markdown_table(_rows(), FACTS)
    # short calls: a replay's own launch may outlast an event-timed direct call
    rows = _rows()
    rows[0]["ported_graph_us"] = 1.5 * rows[0]["ported_us"]  # 10 µs direct
    assert report.graph_anomalies(rows) == []


def test_graph_times_take_two_rounds_in_opposite_orders():
    # Each call's timings in the order it is timed: the first round's ported
    # replay is slow (as on the H200), the second's is not.
    timings = {"ported": [12.0, 10.0], "inductor": [10.0, 10.5], "eager": [30.0, 27.0]}
    order = []

    def time_graph(fn):
        name = fn()
        order.append(name)
        return timings[name].pop(0)

    calls = {n: (lambda n=n: n) for n in ("ported", "inductor", "eager")}
    times = timing.graph_times(calls, time_graph)
    assert order == ["ported", "inductor", "eager", "eager", "inductor", "ported"]
    assert times == {"ported": 10.0, "inductor": 10.0, "eager": 27.0}
    # tables say which rows were timed so, and which (older) were not
    rows = _rows()
    assert (
        "(2 of 2 rows had a single round, timed before porter took two)"
        in report.markdown_table(rows, FACTS)
    )
    rows = [dict(r, graph_rounds=2) for r in rows]
    assert "single round" not in report.markdown_table(rows, FACTS)


def test_bench_warns_about_dtypes_outside_the_case(capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(["bench", "captured/kb_layernorm", "--dtype", "bfloat16"]) == 1
    err = capsys.readouterr().err
    assert "warning: bfloat16 is not among kb_layernorm's dtypes (float32)" in err


def test_merge_keeps_rows_this_run_did_not_measure():
    stored = _rows()  # bf16, 1 and 4096 tokens, dated 2026-01-01
    fp16 = [dict(r, dtype="float16", date="2026-02-02") for r in _rows()]
    again = [dict(_rows()[1], ported_graph_us=90.0, date="2026-02-02")]
    rows = report.merge_rows(stored + fp16, again)
    # bf16 first; the re-measured bf16 point replaced, the other two sweeps kept
    assert [(r["dtype"], r["num_tokens"], r["date"]) for r in rows] == [
        ("bfloat16", 1, "2026-01-01"),
        ("bfloat16", 4096, "2026-02-02"),
        ("float16", 1, "2026-02-02"),
        ("float16", 4096, "2026-02-02"),
    ]
    assert rows[1]["ported_graph_us"] == 90.0
    facts = {"gpu": "TEST GPU", "torch": "t", "triton": "tr", "date": "2026-02-02"}
    table = report.markdown_table(rows, facts)
    assert "Rows kept from earlier runs" in table and "2026-01-01" in table
    # a run that replaced everything names no earlier run
    assert "earlier runs" not in report.markdown_table(again, facts)


def test_runtime_dims_are_marked_dynamic_and_model_dims_are_not():
    manifest = {
        "input_names": ["x", "weight"],
        "dims": [
            {"name": "num_tokens", "role": "runtime", "axes": [["x", 0]]},
            {"name": "hidden", "role": "model", "axes": [["x", 1], ["weight", 0]]},
        ],
    }
    x, w = torch.empty(3, 4), torch.empty(4)
    out = timing.mark_runtime_dims(manifest, [x, w, 1e-6])
    assert out[0] is x and getattr(x, "_dynamo_weak_dynamic_indices", None) == {0}
    assert getattr(w, "_dynamo_weak_dynamic_indices", None) is None


def test_reference_calls_mark_aliases_for_the_dynamic_compile_only():
    manifest = {
        "input_names": ["x"],
        "dims": [{"name": "num_tokens", "role": "runtime", "axes": [["x", 0]]}],
    }
    seen = {}

    def record(name):
        return lambda *args: seen.setdefault(name, args)

    reference = torch.nn.Linear(4, 4)
    compiled = (reference, record("dynamic"), record("static"), record("prefill"))
    x = torch.ones(3, 4, dtype=torch.float64)
    calls = timing.reference_calls(
        types.SimpleNamespace(manifest=manifest), compiled, "float64", [x], 3
    )
    assert list(calls) == ["inductor", "inductor_static", "eager"]
    calls["inductor"]()
    calls["inductor_static"]()
    (dyn,), (static,) = seen["dynamic"], seen["static"]
    # The dynamic compile gets an alias of x with num_tokens marked; the static
    # one gets x itself, unmarked.
    assert dyn is not x and dyn.data_ptr() == x.data_ptr()
    assert getattr(dyn, "_dynamo_weak_dynamic_indices", None) == {0}
    assert static is x and getattr(x, "_dynamo_weak_dynamic_indices", None) is None
    # eager: the reference, cast to the point's dtype in place.
    assert reference.weight.dtype == torch.float64
    assert calls["eager"]().dtype == torch.float64
    # From PREFILL_FROM tokens: the dynamic compile of that range.
    assert "prefill" not in seen
    big = torch.ones(bench_points.PREFILL_FROM, 4, dtype=torch.float64)
    case = types.SimpleNamespace(manifest=manifest)
    timing.reference_calls(case, compiled, "float64", [big], len(big))["inductor"]()
    (pre,) = seen["prefill"]
    assert pre.data_ptr() == big.data_ptr()


def test_report_lists_rows_of_another_kernel_py(tmp_path):
    results, case = tmp_path / "results", tmp_path / "captured" / "demo"
    results.mkdir()
    case.mkdir(parents=True)
    (case / "kernel.py").write_text("BLOCK = 1024  # the scaffold as timed\n")
    timed = fingerprint.kernel_fingerprint(case)
    rows = _rows()
    rows[0]["kernel_sha"] = timed
    rows[1]["kernel_sha"] = timed
    summary = _summary(results, rows, tmp_path / "captured")
    assert "older kernel.py" not in summary and "kernel_sha" not in summary
    # An engineer (or porter port) rewrites kernel.py: both rows are now stale.
    (case / "kernel.py").write_text("BLOCK = 512  # the scaffold, edited\n")
    assert fingerprint.kernel_fingerprint(case) != timed
    summary = report.aggregate(results, tmp_path / "captured")
    assert "demo bfloat16 hidden=4096 (2 of 2)" in summary
    # Rows from before the record are counted apart: they may or may not match.
    del rows[1]["kernel_sha"]
    summary = _summary(results, rows, tmp_path / "captured")
    assert "demo bfloat16 hidden=4096 (1 of 2)" in summary
    assert "1 of 2 rows were timed before porter bench recorded" in summary


def test_report_counts_rows_carried_over_a_kernel_py_change(tmp_path):
    results, case = tmp_path / "results", tmp_path / "captured" / "demo"
    results.mkdir()
    case.mkdir(parents=True)
    (case / "kernel.py").write_text("BLOCK = 512\n")
    rows = _rows()
    for r in rows:
        r["kernel_sha"] = fingerprint.kernel_fingerprint(case)
        r["triton"] = "3.6.0"
    summary = _summary(results, rows, tmp_path / "captured")
    assert "carry_rows" not in summary
    rows[0]["carried"] = {
        "from": "0123456789ab",
        "triton": "3.6.0",
        "date": "2026-12-02",
    }
    summary = _summary(results, rows, tmp_path / "captured")
    assert "1 of 2 rows were timed on an earlier kernel.py" in summary
    assert "with triton 3.6.0" in summary and "older kernel.py" not in summary
    assert "checked with another triton" not in summary  # the rows' own 3.6.0
    rows[0]["carried"]["triton"] = "3.9.0"
    summary = _summary(results, rows, tmp_path / "captured")
    assert "1 of them were checked with another triton" in summary
    # kernel.py changes again: the carried row is stale, and listed as such.
    (case / "kernel.py").write_text("BLOCK = 256\n")
    summary = report.aggregate(results, tmp_path / "captured")
    assert "rows were timed on an earlier kernel.py" not in summary
    assert "demo bfloat16 hidden=4096 (2 of 2)" in summary


KERNEL_PY = '''"""A scaffold.

Measured: 0.9x (a figure that changes)."""

import triton


def settings(n):
    """Blocks by size: 1.1x at 64 tokens."""
    # why, with a figure: 0.95
    return 512 if n <= 64 else 1024  # 4 warps


MESSAGE = "# not a comment"
'''


@pytest.mark.parametrize(
    "edit, same",
    [
        (("0.9x", "0.8x"), True),  # the module docstring
        (("1.1x at 64", "1.2x at 64"), True),  # a function's docstring
        (("# why, with a figure: 0.95", "# why: 0.97\n    # more"), True),
        (("  # 4 warps", "  # 8 warps"), True),  # a trailing comment
        (("\n\nMESSAGE", "\n\n\nMESSAGE"), True),  # blank lines
        (("n <= 64", "n <= 128"), False),  # code
        (("# not a comment", "# not a comment!"), False),  # a string's '#'
        (("import triton", "import triton as"), False),  # no longer parses
    ],
)
def test_the_fingerprint_is_of_the_code_not_its_comments(tmp_path, edit, same):
    (tmp_path / "kernel.py").write_text(KERNEL_PY)
    before = fingerprint.kernel_fingerprint(tmp_path)
    old, new = edit
    assert old in KERNEL_PY
    (tmp_path / "kernel.py").write_text(KERNEL_PY.replace(old, new))
    assert (fingerprint.kernel_fingerprint(tmp_path) == before) is same


def test_dynamic_hints_follow_the_first_point_of_each_dtype_model_and_range():
    points = sweep(
        MANIFEST,
        (1, 2, 64, 4096, 16384),
        ("bfloat16", "float32"),
        model_sizes={"hidden": [1024, 4096]},
    )
    hints = {
        (p.dtype, p.sizes["hidden"], p.num_tokens): h
        for p, h in zip(points, bench_points.dynamic_hints(points))
    }
    # One token: a graph of its own; then traced at the run's next point,
    # and again at its first from PREFILL_FROM (1024) tokens.
    assert hints[("bfloat16", 1024, 1)] == 1
    assert hints[("bfloat16", 1024, 64)] == 2
    assert hints[("bfloat16", 1024, 4096)] == 4096
    assert hints[("float32", 4096, 16384)] == 4096
    # A run that starts at 4096 tokens traces it there.
    points = sweep(MANIFEST, (4096, 65536), ("bfloat16",))
    assert bench_points.dynamic_hints(points) == [4096, 4096]


def test_report_counts_large_rows_against_a_dynamic_compile_traced_small(tmp_path):
    rows = [dict(r, inductor_caches="off") for r in _rows()]  # 1 and 4096 tokens
    rows[1]["dynamic_traced_at"] = 4096
    assert "traced below 1024" not in _summary(tmp_path, rows)
    rows[1]["dynamic_traced_at"] = 2
    assert "Of 1 rows from 1024 tokens, 1 were timed against" in (
        _summary(tmp_path, rows)
    )
    # Rows from before the record are counted apart, not as traced small.
    del rows[1]["dynamic_traced_at"]
    summary = _summary(tmp_path, rows)
    assert "1024 tokens, 0 were timed" in summary
    assert "and 1 predate the record" in summary


def test_report_counts_large_rows_timed_with_the_compile_caches_on(tmp_path):
    rows = [dict(r, dynamic_traced_at=r["num_tokens"]) for r in _rows()]
    summary = _summary(tmp_path, rows)
    assert "1 were timed while Inductor's caches were on" in summary
    assert summary.count("Re-run the rows counted here.") == 1
    rows[1]["inductor_caches"] = "off"
    summary = _summary(tmp_path, rows)
    assert "Inductor's caches" not in summary and "Re-run" not in summary


def test_report_gives_the_dates_a_sweep_spans(tmp_path):
    rows = _rows()
    rows[1]["date"] = "2026-01-02"  # a call that ran past midnight
    line = next(
        l for l in _summary(tmp_path, rows).splitlines() if l.startswith("| [demo]")
    )
    assert line.endswith("tr, 2026-01-01 to 2026-01-02 |")


def test_capture_graph_records_each_launch_inside_the_graph(monkeypatch):
    # A fake torch.cuda that notes whether a call ran inside the capture.
    calls = []
    state = {"capturing": False}

    @contextlib.contextmanager
    def graph(_g):
        state["capturing"] = True
        yield
        state["capturing"] = False

    fake = types.SimpleNamespace(
        Stream=lambda: types.SimpleNamespace(wait_stream=lambda s: None),
        current_stream=lambda: types.SimpleNamespace(wait_stream=lambda s: None),
        stream=lambda s: contextlib.nullcontext(),
        CUDAGraph=object,
        graph=graph,
    )
    monkeypatch.setattr(timing.torch, "cuda", fake)
    timing.capture_graph(lambda: calls.append(state["capturing"]), launches=5)
    assert calls == [False] * 3 + [True] * 5  # three warm-ups, then five captured
    calls.clear()
    timing.capture_graph(lambda: calls.append(state["capturing"]))
    assert calls == [False] * 3 + [True]


@pytest.fixture
def compile_caches_on():
    """The process-wide cache switch on for the test, as found afterwards."""
    saved = torch.compiler.config.force_disable_caches
    torch.compiler.config.force_disable_caches = False
    yield
    torch.compiler.config.force_disable_caches = saved


def test_a_dynamic_graph_is_compiled_where_it_is_traced(compile_caches_on):
    """Inductor's FX graph cache hands a dynamic graph traced at 1024 the one
    compiled at 2 (same symbolic shapes), with kernels tuned for 2. bench's
    compiles must not take it: with uncached_compiles, the second trace
    compiles for itself."""
    from torch._dynamo.utils import counters

    timing.uncached_compiles()

    def gated(x):
        return torch.nn.functional.silu(x[:, :8]) * x[:, 8:]

    counters.clear()
    for n in (2, 1024):
        torch._dynamo.reset()
        x = torch.randn(n, 16)
        torch._dynamo.mark_dynamic(x, 0)
        out = torch.compile(gated)(x)
        assert torch.allclose(out, gated(x))
    assert counters["inductor"]["fxgraph_cache_hit"] == 0
    torch._dynamo.reset()


def test_decode_and_prefill_points_of_one_run_are_traced_apart(
    monkeypatch, compile_caches_on
):
    """The prefill compile is a code object of its own: Dynamo traces it at
    the first prefill point, not reusing the decode trace."""
    from torch._dynamo.utils import counters

    manifest = {
        "input_names": ["x"],
        "dims": [{"name": "num_tokens", "role": "runtime", "axes": [["x", 0]]}],
    }
    monkeypatch.setattr(timing, "cuda_reference", lambda case: torch.nn.SiLU())
    torch._dynamo.reset()
    counters.clear()
    compiled = timing.compiled_references(None)
    case = types.SimpleNamespace(manifest=manifest)
    for n in (2, 64, 1024, 4096):
        x = torch.randn(n, 8)
        out = timing.reference_calls(case, compiled, "float32", [x], n)["inductor"]()
        assert torch.allclose(out, torch.nn.functional.silu(x))
    # Two traces, each dynamic in num_tokens: one for 2 and 64, one from 1024.
    assert counters["stats"]["unique_graphs"] == 2
    torch._dynamo.reset()


def test_compiled_references_turn_the_compile_caches_off(
    monkeypatch, compile_caches_on
):
    monkeypatch.setattr(timing, "cuda_reference", lambda case: torch.neg)
    timing.compiled_references(None)
    assert torch.compiler.config.force_disable_caches


def test_size_copy_column_and_note_come_from_rows_that_timed_a_copy(tmp_path):
    rows = _rows()
    # At 4096 tokens the ported kernel took 100 µs where a copy of its bytes
    # took 80: 80% of the copy's rate, and that copy ran at 91 / 0.8 of the
    # run's copy bandwidth.
    rows[1]["copy_graph_us"] = 80.0
    rows[1]["pct_size_copy"] = bench_points.pct_size_copy(rows[1])
    assert rows[1]["pct_size_copy"] == 80.0
    table = report.markdown_table(rows, FACTS)
    lines = [l for l in table.splitlines() if l.startswith("| bfloat16")]
    assert lines[0].split(" | ")[10] == "-"
    assert lines[1].split(" | ")[10] == "80.0"
    note = report.size_copy_note(rows)
    assert "reached 114-114% of the copy bandwidth (1 point; torch's copy)" in note
    assert "reached 80-80% of that copy's rate" in note
    assert note in _summary(tmp_path, rows)
    # A row that also timed a Triton copy, faster here, is judged against it.
    rows[1]["copy_triton_graph_us"] = 50.0
    rows[1]["pct_size_copy"] = bench_points.pct_size_copy(rows[1])
    note = report.size_copy_note(rows)
    assert (
        "(1 point; the faster of torch's copy and a Triton copy at 1 of them)" in note
    )
    assert "reached 50-50% of that copy's rate" in note
    assert report.size_copy_note(_rows()) == ""


def test_size_copy_is_the_faster_of_the_copies_a_row_timed():
    row = {"ported_graph_us": 10.0, "copy_graph_us": 12.0}
    assert bench_points.size_copy_us(row) == 12.0  # rows timed before the Triton copy
    assert bench_points.pct_size_copy(row) == 120.0
    row["copy_triton_graph_us"] = 8.0
    assert bench_points.size_copy_us(row) == 8.0
    assert bench_points.pct_size_copy(row) == 80.0  # the kernel streams slower than it
    row["copy_triton_graph_us"] = 13.0
    assert bench_points.pct_size_copy(row) == 120.0
    assert bench_points.size_copy_us({"ported_graph_us": 1.0}) is None


def test_size_copies_time_the_pdl_launches_only_where_the_scaffold_has_pdl(
    monkeypatch,
):
    made = []

    def triton_copy(nbytes, words, warps, pdl=False):
        made.append((words, warps, pdl))
        # A launch whose buffers do not fit in one set is left out whole.
        return None if (warps == 8 and len(made) > 3) else (lambda: None)

    monkeypatch.setattr("porter.yardstick.triton_copy", triton_copy)
    monkeypatch.setattr(timing, "same_size_copy", lambda nbytes: lambda: None)
    assert sorted(timing.size_copies(1 << 20, 2, pdl=False)) == [
        "copy",
        "copy_triton_2048w4",
    ]
    made.clear()
    assert sorted(timing.size_copies(1 << 20, 2, pdl=True)) == [
        "copy",
        "copy_triton_2048w4",
        "copy_triton_2048w4_pdl",
    ]
    assert (8192, 8, True) in made  # made for both sets, one of which failed
    # Past TRITON_COPY_MAX_BYTES, torch's copy alone.
    made.clear()
    big = timing.TRITON_COPY_MAX_BYTES + 1
    assert sorted(timing.size_copies(big, 1, pdl=True)) == ["copy"] and not made


def test_rotation_sets_cycle_at_least_the_rotated_bytes():
    mb = 1 << 20
    assert timing.rotation_sets(64 * mb, 1) == 1  # one call a graph: nothing to cycle
    assert timing.rotation_sets(64 * mb, 20) == 4  # 4 x 64 MB reach 256 MB
    assert timing.rotation_sets(100 * mb, 20) == 3  # rounded up, not down
    assert timing.rotation_sets(1 * mb, 20) == 20  # never more sets than calls
    assert timing.rotation_sets(1 << 30, 20) == 1  # one set past the L2 many times
    for set_bytes in (mb, 3 * mb, 64 * mb, 100 * mb):
        sets = timing.rotation_sets(set_bytes, 20)
        assert sets == 20 or sets * set_bytes >= timing.ROTATE_MIN_BYTES


def test_rotating_takes_each_call_in_turn():
    seen = []
    call = timing.rotating([lambda k=k: seen.append(k) or k for k in range(3)])
    assert [call() for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert seen == [0, 1, 2, 0, 1, 2, 0]


def test_graphs_of_several_calls_cycle_through_input_sets(monkeypatch):
    # timing.run on the CPU with its GPU parts stubbed: every graphed call (the
    # scaffold, the compiles, eager, the copy) reads a set of its own in turn.
    from pathlib import Path

    from porter.testing import parity

    case = parity.load_case(Path(__file__).resolve().parents[1] / "captured/rmsnorm")
    make = parity.make_inputs
    monkeypatch.setattr(
        parity, "make_inputs", lambda c, sc, device, seed=0: make(c, sc, "cpu", seed)
    )
    monkeypatch.setattr(parity, "check_parity", lambda *a, **k: None)
    graphing = {"on": False}
    reads = {}  # call name -> the x each graphed call read

    def reader(name, x):
        def call(*_):
            if graphing["on"]:
                reads.setdefault(name, []).append(x.data_ptr())
            return x

        return call

    def graph_us(fn, launches):
        graphing["on"] = True
        for _ in range(launches):
            fn()
        graphing["on"] = False
        return 1.0

    def refs(case, compiled, dtype, inputs, num_tokens):
        names = ("inductor", "inductor_static", "eager")
        return {name: reader(name, inputs[0]) for name in names}

    copies = []

    def copy(nbytes):
        copies.append(nbytes)
        return reader("copy", torch.empty(1))

    monkeypatch.setattr(timing, "compiled_references", lambda case: None)
    monkeypatch.setattr(timing, "reference_calls", refs)

    def scaffold(x, weight):
        return reader("ported", x)()

    monkeypatch.setattr(
        timing, "_scaffold_callable", lambda case: lambda dtype: scaffold
    )
    monkeypatch.setattr(timing, "copy_bandwidth_gbps", lambda: 1000.0)
    monkeypatch.setattr(timing, "_median_us", lambda fn: 1.0)
    monkeypatch.setattr(timing, "_timed_first_call", lambda fn: 1.0)
    monkeypatch.setattr(timing, "_graph_us", graph_us)
    monkeypatch.setattr(timing, "same_size_copy", copy)
    triton_copies = []

    def triton_copy(nbytes, words, warps, pdl=False):
        triton_copies.append((nbytes, words, warps, pdl))
        return reader(f"copy_triton_{words}w{warps}", torch.empty(1))

    monkeypatch.setattr("porter.yardstick.triton_copy", triton_copy)
    monkeypatch.setattr(timing, "rotation_sets", lambda nbytes, launches: 3)
    monkeypatch.setattr(timing, "scaffold_kernels", lambda mod: [])
    monkeypatch.setattr(timing, "compiled_variants", lambda kernels: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "G")
    (point,) = sweep(case.manifest, (16,), ("float32",))
    rows, _ = timing.run(case, [point], progress=lambda s: None, rounds=1, launches=6)
    (row,) = rows
    assert row["input_sets"] == 3 and row["graph_launches"] == 6
    for name in ("ported", "inductor", "inductor_static", "eager"):
        assert len(reads[name]) == 6 and len(set(reads[name])) == 3
        assert reads[name][:3] == reads[name][3:]  # each set in turn
    assert copies == [row["bytes"]] * 3  # a copy's buffers a set
    assert len(reads["copy"]) == 6
    # No PDL on the CPU: the one Triton copy launched without it, a set each.
    assert triton_copies == [(row["bytes"], 2048, 4, False)] * 3
    assert len(reads["copy_triton_2048w4"]) == 6
    assert row["copy_triton_launch"] == "2048w4"
    assert row["copy_triton_graph_us"] == row["copy_graph_us"] == 1.0


def test_copy_rate_miss_note_counts_misses_where_both_sides_stream():
    def row(ported, dynamic, static, pct):
        return {
            "ported_graph_us": ported,
            "inductor_graph_us": dynamic,
            "inductor_static_graph_us": static,
            "pct_copy_bw": pct,
        }

    rows = [
        row(102.0, 100.0, 101.0, 95.0),  # misses p/d; dynamic at 96.9%
        row(103.1, 120.0, 100.0, 96.2),  # misses p/s; static at 99.2%
        row(101.0, 100.0, 100.0, 89.0),  # misses, the ported kernel under 90%
        row(110.0, 100.0, 100.0, 40.0),  # misses, far from the copy rate
        row(99.0, 100.0, 100.0, 99.0),  # within: not a miss
    ]
    note = report.copy_rate_miss_note(rows)
    assert note.startswith(
        "2 of the 4 points missing the time bar are at the copy rate: "
        "the ported kernel moves 95.0-96.2% of the copy bandwidth there and "
        "the faster of the two compiles 96.9-99.2%;"
    )
    assert note.endswith(
        "at most 1.020x the dynamic compile's time and 1.031x the static one's."
    )
    # Misses away from the copy rate alone, or none at all: no note.
    assert report.copy_rate_miss_note(rows[2:]) == ""
    assert report.copy_rate_miss_note(rows[4:]) == ""


def test_bandwidth_note_names_the_sweeps_short_of_the_clause():
    def rows(*points):
        return [{"num_tokens": n, "pct_copy_bw": pct} for n, pct in points]

    swept = [
        ("rmsnorm", "bfloat16", "hidden=4096", rows((1024, 40.0), (4096, 92.5))),
        ("softmax", "bfloat16", "vocab=32768", rows((4096, 84.8), (16384, 95.0))),
        ("quant", "float32", "hidden=1024", rows((4096, 90.0), (65536, 63.1))),
        ("decode_only", "bfloat16", "hidden=1024", rows((256, 5.0))),
    ]
    note = report.bandwidth_note(swept)
    # Below 4096 tokens nothing counts (rmsnorm's 40% at 1024); 90.0 meets it;
    # a sweep's lowest point from 4096 is the one named; decode-only sweeps
    # are left out of the count.
    assert note.startswith(
        "At 90% of the copy bandwidth or more at every point from 4096 tokens: "
        "1 of 3 sweeps. Short of it where a copy of the same bytes reaches 90% "
        "or was not timed: "
    )
    assert "softmax bfloat16 vocab=32768 (84.8% at 4096)" in note
    assert "quant float32 hidden=1024 (63.1% at 65536)" in note
    assert "rmsnorm" not in note and "decode_only" not in note
    assert report.bandwidth_note(swept[:1]).endswith(": 1 of 1 sweeps.")
    assert report.bandwidth_note(swept[3:]) == ""


def test_bandwidth_note_says_what_a_copy_of_the_short_points_bytes_reached():
    # 69.3% of the copy bandwidth at 116.6% of a same-size copy's rate: that
    # copy reached 59.4%. A point without the copy's time says nothing of it.
    swept = [
        (
            "kb",
            "bfloat16",
            "-",
            [{"num_tokens": 4096, "pct_copy_bw": 69.3, "pct_size_copy": 116.6}],
        ),
        ("old", "float32", "-", [{"num_tokens": 4096, "pct_copy_bw": 80.0}]),
    ]
    note = report.bandwidth_note(swept)
    assert "kb bfloat16 - (69.3% at 4096; a copy of its bytes 59.4%)" in note
    assert "old float32 - (80.0% at 4096)" in note


def test_bandwidth_note_tells_the_sizes_shortfalls_from_the_kernels():
    def row(n, pct, size_copy=None):
        r = {"num_tokens": n, "pct_copy_bw": pct}
        if size_copy:
            r["pct_size_copy"] = size_copy
        return r

    swept = [
        # A copy of the bytes reached 60% (at 100% of its rate): the size's.
        ("small", "bfloat16", "-", [row(4096, 60.0, 100.0), row(16384, 95.0)]),
        # Short at two points; at the second a copy reached 95%: the kernel's,
        # though the lowest point (named) is one a copy misses too.
        ("mixed", "float32", "-", [row(4096, 50.0, 100.0), row(16384, 80.0, 84.2)]),
        ("fine", "float32", "-", [row(4096, 91.0)]),
    ]
    note = report.bandwidth_note(swept)
    assert note == (
        "At 90% of the copy bandwidth or more at every point from 4096 tokens: "
        "1 of 3 sweeps. Short of it only at points where a copy of the same "
        "bytes, timed the same way in the same run, stays under 90% too (the "
        "clause asks more of those sizes than a copy of them reaches): small "
        "bfloat16 - (60.0% at 4096; a copy of its bytes 60.0%). Short of it "
        "where a copy of the same bytes reaches 90% or was not timed: mixed "
        "float32 - (50.0% at 4096; a copy of its bytes 50.0%)."
    )
    # Every short sweep the size's: the other list says none.
    assert report.bandwidth_note(swept[:1] + swept[2:]).endswith(
        "Short of it where a copy of the same bytes reaches 90%: none."
    )


def _bound_row(num_tokens, flops, gpu="NVIDIA H200", dtype="bfloat16"):
    # 1 MB at a copy bandwidth of 4000 GB/s (100 GB/s moved at 2.5% of it):
    # 0.25 µs of bytes, against flops / 989.4e12 s at the bf16 peak. The ported
    # call took twice the flops' time at the peak, where there are flops.
    peak_us = (flops or 0) / 989.4e12 * 1e6
    return {
        "ported_graph_us": 2 * peak_us or 1.0,
        "num_tokens": num_tokens,
        "dtype": dtype,
        "gpu": gpu,
        "bytes": 1_000_000,
        "flops": flops,
        "ported_gbps": 100.0,
        "pct_copy_bw": 2.5,
    }


def test_arithmetic_bound_is_the_roofline_ridge():
    ridge = 989.4e12 * 0.25e-6  # the flops that take as long as the bytes
    assert bench_points.arithmetic_bound(_bound_row(4096, int(ridge * 1.01)))
    assert not bench_points.arithmetic_bound(_bound_row(4096, int(ridge * 0.99)))
    # fp32 runs at a third of TF32's peak, so its ridge is lower.
    fp32 = 494.7e12 / 3 * 0.25e-6
    assert bench_points.arithmetic_bound(
        _bound_row(4096, int(fp32 * 1.01), dtype="float32")
    )
    assert not bench_points.arithmetic_bound(
        _bound_row(4096, int(fp32 * 0.99), dtype="float32")
    )
    # Unknown: no flops (pointwise work), no record, another GPU.
    assert not bench_points.arithmetic_bound(_bound_row(4096, 0))
    assert not bench_points.arithmetic_bound(_bound_row(4096, None))
    assert not bench_points.arithmetic_bound(_bound_row(4096, 10**15, gpu="OTHER GPU"))


def test_bandwidth_note_leaves_out_sweeps_bound_by_arithmetic():
    big = 10**15  # 1 s at the peak: bound by arithmetic
    swept = [
        ("mm", "bfloat16", "k=4096", [_bound_row(4096, big), _bound_row(16384, big)]),
        # One point from 4096 is memory-bound: the sweep counts, at that point.
        ("mixed", "bfloat16", "k=128", [_bound_row(4096, 0), _bound_row(16384, big)]),
    ]
    note = report.bandwidth_note(swept)
    assert note.startswith(
        "At 90% of the copy bandwidth or more at every point from 4096 tokens: "
        "0 of 1 sweeps. Short of it where a copy of the same bytes reaches 90% "
        "or was not timed: mixed bfloat16 k=128 (2.5% at 4096)."
    )
    assert "Left out, bound by arithmetic rather than memory" in note
    assert "mm bfloat16 k=4096 (at 16384 tokens its matmuls take 1.01e+06 µs" in note
    assert "its bytes 0.25 µs at the copy bandwidth; the ported call" in note
    assert "2.02e+06 µs, 50% of the peak)" in note


def test_point_flops_counts_the_matmuls_on_meta_tensors(monkeypatch):
    from pathlib import Path

    from porter.testing import parity
    from porter.testing.parity import load_case

    captured = Path(__file__).resolve().parent.parent / "captured"
    linear = load_case(captured / "linear_gelu")
    sizes = {"num_tokens": 3, "in_features": 8, "out_features": 16}
    assert bench_points.point_flops(linear, "bfloat16", sizes) == 2 * 3 * 8 * 16
    rmsnorm = load_case(captured / "rmsnorm")
    assert (
        bench_points.point_flops(rmsnorm, "float32", {"num_tokens": 3, "hidden": 8})
        == 0
    )

    def no_meta(*args, **kwargs):
        raise NotImplementedError("no meta kernel")

    monkeypatch.setattr(parity, "run_reference", no_meta)
    assert bench_points.point_flops(linear, "bfloat16", sizes) is None


def test_sizes_of_reads_a_shape_label_back():
    sizes = {"num_tokens": 4, "in_features": 128, "out_features": 256}
    assert bench_points.sizes_of(bench_points.shape_label(sizes)) == sizes


def test_row_elements_are_the_sizes_beside_the_tokens():
    assert report.row_elements({"shape": "num_tokens=64xvocab=8192"}) == 8192
    assert report.row_elements({"shape": "num_tokens=4xnum_heads=32xhead_dim=128"}) == (
        4096
    )


def test_softmax_note_counts_the_points_over_short_rows_it_beats():
    def row(case, vocab, tokens, ported, dynamic, static, pct=50.0):
        return {
            "case": case,
            "dtype": "float32",
            "num_tokens": tokens,
            "shape": f"num_tokens={tokens}xvocab={vocab}",
            "model": f"vocab={vocab}",
            "ported_graph_us": ported,
            "inductor_graph_us": dynamic,
            "inductor_static_graph_us": static,
            "pct_copy_bw": pct,
        }

    rows = [
        row("softmax", 4096, 1, 2.0, 4.0, 3.0),
        row("softmax", 8192, 65536, 1002.0, 1050.0, 1000.0, pct=100.0),
        # Over 8192 columns, or another case: not the clause's.
        row("softmax", 32768, 4096, 300.0, 200.0, 200.0),
        row("logsumexp", 4096, 1, 9.0, 1.0, 1.0),
    ]
    assert report.softmax_note(rows) == (
        "The softmax case over rows of up to 8192 elements: the ported kernel "
        "took less time than the dynamic compile at 2 of 2 points (p/d "
        "0.500-0.954) and than the static one at 1 (p/s 0.667-1.002); not less "
        "than both at float32 vocab=8192 at 65536 tokens (p/d 0.954, p/s 1.002; "
        "the ported kernel at 100.0% of the copy bandwidth, the dynamic compile "
        "at 95.4%, the static one at 100.2%)."
    )
    # Beating both everywhere names no point; no such rows, no note.
    assert report.softmax_note(rows[:1]).endswith("(p/s 0.667).")
    assert report.softmax_note(rows[2:]) == ""
