"""The report's section on the performance corpus (tools/perf_corpus.py):
engine references at real checkpoints' sizes, judged by issue 47's bars."""

from __future__ import annotations

import json
from pathlib import Path

from porter.bench.points import size_copy_pct_bw, sizes_of

# The bars: no slower than the dynamic compile anywhere; within STATIC_NEAR of
# the static compile at STATIC_NEAR_SHARE of the points and within STATIC_FAR
# everywhere; BW_BAR % of the copy bandwidth from BW_FROM tokens wherever a copy
# of the same bytes reaches it.
STATIC_NEAR, STATIC_NEAR_SHARE, STATIC_FAR = 1.03, 0.95, 1.10
BW_BAR, BW_FROM = 90, 4096


def _span(rows: list[dict]) -> str:
    dates = sorted({r["date"] for r in rows})
    return dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"


def corpus_section(folder: Path) -> list[str]:
    """Lines for docs/benchmarks/README.md from folder/*.json (empty when
    there are none)."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        rows += json.loads(path.read_text())
    if not rows:
        return []
    pd = [r["ported_graph_us"] / r["inductor_graph_us"] for r in rows]
    ps = [r["ported_graph_us"] / r["inductor_static_graph_us"] for r in rows]
    slower = sorted(
        (ratio, r["case"], r["shape"], r["num_tokens"])
        for ratio, r in zip(pd, rows)
        if ratio > 1.0
    )
    far = sorted(
        (ratio, r["case"], r["shape"], r["num_tokens"])
        for ratio, r in zip(ps, rows)
        if ratio > STATIC_FAR
    )
    near = sum(1 for ratio in ps if ratio <= STATIC_NEAR)
    reached = [
        r
        for r in rows
        if r["num_tokens"] >= BW_FROM and (size_copy_pct_bw(r) or 0) >= BW_BAR
    ]
    short = sorted(
        (r["pct_copy_bw"], r["case"], r["shape"], r["num_tokens"])
        for r in reached
        if r["pct_copy_bw"] < BW_BAR
    )
    r0 = rows[0]
    cases = sorted({r["case"] for r in rows})

    def worst(found: list[tuple]) -> str:
        shown = [f"{c} {s} at {t} ({v:.2f})" for v, c, s, t in found[::-1][:5]]
        return "; ".join(shown) + ("; ..." if len(found) > 5 else "")

    lines = [
        "",
        "## Performance corpus",
        "",
        f"{len(cases)} engine references at real checkpoints' sizes "
        "(tools/perf_corpus.py; [perf/](perf/)), {n} points, timed as graphs of "
        "several calls over rotating inputs ({gpu}, torch {torch}, triton "
        "{triton}, {date}):".format(
            n=len(rows),
            gpu=r0["gpu"],
            torch=r0["torch"],
            triton=r0["triton"],
            date=_span(rows),
        ),
        "",
        f"- slower than the dynamic compile at {len(slower)} of {len(rows)} points"
        + (f": {worst(slower)}" if slower else ""),
        f"- within {STATIC_NEAR}x of the static compile at {near} of {len(rows)} "
        f"points ({100 * near / len(rows):.0f}%; the bar: "
        f"{100 * STATIC_NEAR_SHARE:.0f}%)",
        f"- over {STATIC_FAR}x of the static compile at {len(far)} points"
        + (f": {worst(far)}" if far else ""),
        f"- from {BW_FROM} tokens, where a copy of the same bytes reaches "
        f"{BW_BAR}% of the copy bandwidth ({len(reached)} points), the ported "
        f"kernel is short of {BW_BAR}% at {len(short)}"
        + (
            ": "
            + "; ".join(f"{c} {s} at {t} ({v}%)" for v, c, s, t in short[:5])
            + ("; ..." if len(short) > 5 else "")
            if short
            else ""
        ),
    ]
    lines += [
        "",
        "| case | model sizes | points | slower than dynamic | within "
        f"{STATIC_NEAR}x of static | worst p/s (tokens) | lowest BW from {BW_FROM} |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case in cases:
        sub = [(r, d, st) for r, d, st in zip(rows, pd, ps) if r["case"] == case]
        models = sorted({_model(r["shape"]) for r, _, _ in sub})
        worst = max(sub, key=lambda x: x[2])
        big = [r["pct_copy_bw"] for r, _, _ in sub if r["num_tokens"] >= BW_FROM]
        lines.append(
            f"| [{case}](perf/{case}.md) | {'; '.join(models)} | {len(sub)} | "
            f"{sum(1 for _, d, _ in sub if d > 1.0)} | "
            f"{sum(1 for _, _, st in sub if st <= STATIC_NEAR)} | "
            f"{worst[2]:.2f} ({_model(worst[0]['shape'])}, {worst[0]['num_tokens']}) | "
            f"{f'{min(big)}%' if big else 'n/a'} |"
        )
    return lines


def _model(shape: str) -> str:
    """A shape label's model sizes: num_tokens=4xhidden=8 -> hidden=8."""
    sizes = sizes_of(shape)
    return " ".join(f"{k}={v}" for k, v in sizes.items() if k != "num_tokens") or "-"
