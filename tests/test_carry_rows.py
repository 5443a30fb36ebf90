"""tools/carry_rows.py: a stored row moves to today's kernel.py only where the
launches it timed compile to the same SASS, with the same grid, launch options
and arguments (compiled for sm_90 with the wheel's ptxas, no GPU)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from porter.bench.fingerprint import kernel_fingerprint
from porter.testing.parity import import_kernel

ROOT = Path(__file__).resolve().parents[1]
carry_rows = import_kernel(ROOT / "tools" / "carry_rows.py", "carry_rows_tool")
kernel_variant = import_kernel(ROOT / "tools" / "kernel_variant.py", "kernel_variant_tool")
KB = ROOT / "captured" / "kb_scaled_rmsnorm"
COMMON = (KB.parent / "common.py").read_text()


def _sha(text: str) -> str:
    """The kernel_sha of a kb_scaled_rmsnorm kernel.py text with captured/'s common.py."""
    return carry_rows.sha_of(text, COMMON)


def test_point_of_reads_the_rows_shape():
    point = carry_rows.point_of(
        {"dtype": "float32", "shape": "num_tokens=4096xhidden=1024"}
    )
    assert point.dtype == "float32"
    assert point.sizes == {"num_tokens": 4096, "hidden": 1024}


def test_first_difference_names_the_step_and_part():
    launch = ("launch", "k", "sass1", "(4,)", {"num_warps": "4"}, {"n": "4"})
    alloc = (
        "op",
        "aten.empty_strided.default",
        "(((4,), (1,)), {dtype: torch.float32})",
        "tensor torch.float32 (4,) (1,) +0",
    )
    assert carry_rows.first_difference([alloc, launch], [alloc, launch]) is None
    other = ("launch", "k", "sass2", "(4,)", {"num_warps": "8"}, {"n": "4"})
    assert carry_rows.first_difference([alloc, launch], [alloc, other]) == (
        "step 2 (launch k) differs in its SASS and launch options"
    )
    wider = launch[:5] + ({"n": "8"},)
    assert carry_rows.first_difference([launch], [wider]) == (
        "step 1 (launch k) differs in its arguments"
    )
    assert carry_rows.first_difference([launch], [launch, launch]) == "1 steps -> 2"
    assert carry_rows.first_difference([alloc], [launch]).startswith("step 1: op")


def test_torch_work_is_recorded_by_its_arguments_not_computed():
    # A 16384 x 4096 x 4096 matmul would take the CPU minutes: the check
    # records what the launcher asks of torch, allocations and views run.
    x = torch.empty(16384, 4096, dtype=torch.bfloat16)
    w = torch.empty(4096, 4096, dtype=torch.bfloat16)
    bias = torch.empty(4096, dtype=torch.bfloat16)
    ops = carry_rows._Ops()
    with ops:
        out = torch.empty_strided((16384, 4096), (4096, 1), dtype=torch.bfloat16)
        torch.mm(x, w.t(), out=out)
        summed = torch.addmm(bias, x, w)
    names = [op[0] for op in ops.ops]
    assert names == [
        "allocation",
        "aten.t.default",
        "aten.mm.out",
        "aten.addmm.default",
    ]
    assert "(4096, 4096) (1, 4096)" in ops.ops[2][1]  # w.t(): its strides
    assert summed.shape == (16384, 4096) and summed.dtype == torch.bfloat16
    # The same calls on other layouts are other work.
    other = carry_rows._Ops()
    with other:
        out = torch.empty_strided((16384, 4096), (4096, 1), dtype=torch.bfloat16)
        torch.mm(x, w, out=out)
    assert other.ops[1][1] != ops.ops[2][1]
    trace = [("op", *op) for op in ops.ops]
    assert carry_rows.first_difference(trace[2:3], [("op", *other.ops[1])]) == (
        "step 1 (op aten.mm.out) differs in its arguments"
    )


def test_an_allocation_is_compared_by_the_tensor_it_gives():
    # torch.empty(sizes) and torch.empty_strided(sizes, contiguous strides) are
    # one allocation; other strides or another dtype are another.
    traces = []
    for alloc in (
        lambda: torch.empty_strided((8, 4), (4, 1), dtype=torch.float16),
        lambda: torch.empty((8, 4), dtype=torch.float16),
        lambda: torch.empty_strided((8, 4), (1, 8), dtype=torch.float16),
        lambda: torch.empty((8, 4), dtype=torch.float32),
    ):
        ops = carry_rows._Ops()
        with ops:
            alloc()
        traces.append([("op", *op) for op in ops.ops])
    assert carry_rows.first_difference(traces[0], traces[1]) is None
    assert carry_rows.first_difference(traces[0], traces[2]) is not None
    assert carry_rows.first_difference(traces[0], traces[3]) is not None


def _carry(tmp_path, versions: dict[str, str], rows: list[tuple], *flags: str):
    """Run the tool in a process of its own (the test session runs Triton's
    interpreter, whose kernels cannot be compiled) over kb_scaled_rmsnorm rows
    (shape, name of the kernel.py text it timed or a kernel_sha, and
    optionally {"carried": the name it was carried from}), with those texts
    as its history; the rows written back and what it said."""
    bench, hist = tmp_path / "bench", tmp_path / "hist" / "kb_scaled_rmsnorm"
    bench.mkdir(parents=True)
    hist.mkdir(parents=True)
    for name, text in versions.items():
        (hist / f"{name}.py").write_text(text)
        (hist / f"{name}.common.py").write_text(COMMON)
    sha = {name: _sha(text) for name, text in versions.items()}
    stored = [
        {
            "dtype": "float32",
            "shape": shape,
            "kernel_sha": sha.get(timed, timed),
            "ported_graph_us": 1.0,
            **{k: {"from": sha.get(v, v)} for k, v in extra.items()},
        }
        for shape, timed, *more in rows
        for extra in [more[0] if more else {}]
    ]
    (bench / "kb_scaled_rmsnorm.json").write_text(json.dumps(stored))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    argv = ["kb_scaled_rmsnorm", "--dir", str(bench), "--history", str(hist.parent)]
    done = subprocess.run(
        [sys.executable, "tools/carry_rows.py", *argv, "--write", *flags],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads((bench / "kb_scaled_rmsnorm.json").read_text()), done.stderr


def test_rows_carry_where_the_change_folds_away_and_only_there(tmp_path):
    # The kernel before its trigger moved after the loads where a program
    # holds several rows: at 16 rows (one row a program) it compiles to the
    # same SASS, at 4096 (two rows) it does not.
    today = (KB / "kernel.py").read_text()
    before, changed = kernel_variant.variant(today, "pdl-early")
    assert changed and _sha(before) != kernel_fingerprint(KB)
    rows, said = _carry(
        tmp_path,
        {"before": before},
        [("batch_size=16", "before"), ("batch_size=4096", "before")],
    )
    assert rows[0]["kernel_sha"] == kernel_fingerprint(KB)
    assert rows[0]["carried"]["from"] == _sha(before)
    assert rows[1]["kernel_sha"] == _sha(before)
    assert "carried" not in rows[1]
    assert (
        "batch_size=4096: not carried, step 2 (launch model_kernel) differs in its SASS"
        in said
    )
    assert "kb_scaled_rmsnorm: 1 row(s) carried" in said


def test_a_row_carried_before_is_checked_against_the_kernel_py_it_timed(tmp_path):
    # Carried once to a kernel.py the history no longer holds: checked again
    # against the one it was timed on, and keeps that as its origin.
    before, _ = kernel_variant.variant((KB / "kernel.py").read_text(), "pdl-early")
    rows, said = _carry(
        tmp_path,
        {"before": before},
        [
            ("batch_size=16", "0123456789ab", {"carried": "before"}),
            ("batch_size=4096", "0123456789ab", {"carried": "before"}),
        ],
    )
    assert rows[0]["kernel_sha"] == kernel_fingerprint(KB)
    assert rows[0]["carried"]["from"] == _sha(before)
    # Its SASS differs: back to the kernel.py it was timed on, plainly stale.
    assert rows[1]["kernel_sha"] == _sha(before)
    assert "carried" not in rows[1]
    assert "batch_size=4096: carried before, not now" in said


def test_recheck_confirms_carried_rows_or_sends_them_back(tmp_path):
    # Rows carried (by an earlier check, say with another triton) from the
    # form before: checked again, the one-row point stays carried, the
    # two-row one, whose SASS differs, goes back to the kernel.py it timed.
    before, _ = kernel_variant.variant((KB / "kernel.py").read_text(), "pdl-early")
    today = kernel_fingerprint(KB)
    rows = [
        ("batch_size=16", today, {"carried": "before"}),
        ("batch_size=4096", today, {"carried": "before"}),
    ]
    kept, said = _carry(tmp_path / "a", {"before": before}, rows)
    assert [r["kernel_sha"] for r in kept] == [today, today]  # not rechecked
    rows_after, said = _carry(tmp_path / "b", {"before": before}, rows, "--recheck")
    assert rows_after[0]["kernel_sha"] == today
    assert rows_after[0]["carried"]["from"] == _sha(before)
    assert rows_after[1]["kernel_sha"] == _sha(before)
    assert "carried" not in rows_after[1]
    assert "batch_size=4096: carried before, not now: step 2" in said


def test_rows_of_other_warps_or_unknown_code_stay(tmp_path):
    today = (KB / "kernel.py").read_text()
    more_warps = today.replace("num_warps=num_warps,", "num_warps=num_warps * 2,")
    assert more_warps != today
    rows, said = _carry(
        tmp_path,
        {"warps": more_warps},
        [("batch_size=4096", "warps"), ("batch_size=16", "0123456789ab")],
    )
    assert [r["kernel_sha"] for r in rows] == [
        _sha(more_warps),
        "0123456789ab",
    ]
    assert not any("carried" in r for r in rows)
    assert (
        "batch_size=4096: not carried, step 2 (launch model_kernel) differs in its SASS and launch options"
        in said
    )
    assert "batch_size=16: not carried, no kernel.py 0123456789ab in the history" in said


def test_help_names_the_history_options(capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["carry_rows", "--help"])
    with pytest.raises(SystemExit):
        carry_rows.main()
    out = capsys.readouterr().out
    assert "--history DIR" in out and "--save-history DIR" in out and "--write" in out
