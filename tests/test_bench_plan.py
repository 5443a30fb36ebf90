"""tools/bench_plan.py: PLAN lines that time stored rows again as they were timed."""

from pathlib import Path

from porter.testing.parity import import_kernel

ROOT = Path(__file__).resolve().parents[1]
bench_plan = import_kernel(ROOT / "tools" / "bench_plan.py", "bench_plan_tool")


def _row(dtype, tokens, model="hidden=4096", **extra):
    row = {
        "case": "rmsnorm",
        "dtype": dtype,
        "num_tokens": tokens,
        "shape": f"num_tokens={tokens}x{model}",
        "graph_rounds": 6,
        "graph_launches": 20 if tokens <= 256 else 1,
        "kernel_sha": "abc",
        "inductor_caches": "off",
    }
    return {**row, **extra}


def test_a_line_per_model_and_range_with_the_rows_timing():
    rows = [_row(d, n) for d in ("float32", "bfloat16") for n in (1, 64, 1024, 4096)]
    rows += [_row("bfloat16", n, model="hidden=8192") for n in (32768, 65536)]
    lines = bench_plan.plan(rows, "abc", {"decode", "prefill"}, needing=False)
    assert lines == [
        "rmsnorm --dims hidden=4096 --dtype bfloat16 float32 --tokens 1 64 "
        "--rounds 6 --launches 20 --merge",
        "rmsnorm --dims hidden=4096 --dtype bfloat16 float32 --tokens 1024 4096 "
        "--rounds 6 --merge",
        "rmsnorm --dims hidden=8192 --dtype bfloat16 --tokens 32768 65536 "
        "--rounds 6 --merge",
    ]
    # One range only.
    prefill = bench_plan.plan(rows, "abc", {"prefill"}, needing=False)
    assert all("--launches" not in line for line in prefill) and len(prefill) == 2


def test_needing_keeps_the_flagged_rows_and_the_traced_one():
    rows = [_row("bfloat16", n) for n in (1024, 4096, 16384)]
    rows += [_row("float32", n) for n in (1024, 4096, 16384)]
    assert bench_plan.plan(rows, "abc", {"prefill"}, needing=True) == []
    rows[2] = _row("bfloat16", 16384, kernel_sha="old")  # stale kernel.py
    del rows[5]["inductor_caches"]  # timed with Inductor's caches on
    # 4096 is left out; 1024 stays, where the dynamic compile is traced.
    (line,) = bench_plan.plan(rows, "abc", {"prefill"}, needing=True)
    assert "--dtype bfloat16 float32 --tokens 1024 16384 --rounds" in line
    (line,) = bench_plan.plan(rows, "abc", {"prefill"}, needing=True, whole=True)
    assert "--dtype bfloat16 float32 --tokens 1024 4096 16384 --rounds" in line


def test_needing_traces_decode_at_its_first_point_above_one_token():
    rows = [_row("bfloat16", n) for n in (1, 2, 4, 16)]
    rows[3] = _row("bfloat16", 16, kernel_sha="old")
    (line,) = bench_plan.plan(rows, "abc", {"decode"}, needing=True)
    assert "--tokens 2 16 --rounds 6 --launches 20" in line


def test_a_case_without_model_dims_has_no_dims_word():
    rows = [
        {**_row("float32", n, model=""), "case": "kb", "shape": f"batch={n}"}
        for n in (1, 2)
    ]
    assert bench_plan.plan(rows, "abc", {"decode"}, needing=False) == [
        "kb --dtype float32 --tokens 1 2 --rounds 6 --launches 20 --merge"
    ]


def test_needing_keeps_the_rows_timed_in_graphs_of_fewer_calls():
    rows = [_row("bfloat16", n, graph_launches=20) for n in (1024, 4096)]
    rows += [_row("bfloat16", n) for n in (16384, 32768)]  # one call a graph
    rows += [_row("float32", n, graph_launches=20) for n in (1024, 4096, 16384)]
    # The bf16 rows of one call a graph, with 1024, where the dynamic compile
    # is traced, 20 calls a graph as the range's other rows; fp32 is whole.
    (line,) = bench_plan.plan(rows, "abc", {"prefill"}, needing=True)
    assert line == (
        "rmsnorm --dims hidden=4096 --dtype bfloat16 --tokens 1024 16384 32768 "
        "--rounds 6 --launches 20 --merge"
    )
