"""Print the PLAN lines for tools/h200_bench.sh that time stored benchmark rows
again the way they were timed: for each case, model size and dtype, its token
counts with the rows' own graph rounds and launches (the most any row of the
sweep's range took: a range timed partly in graphs of several calls is timed
all that way, input sets rotated as porter bench does), one line per token range
(decode below PREFILL_FROM, 1024 tokens, prefill from there: the ranges porter
bench traces a dynamic compile for), which also keeps apart the decode rows'
several launches a graph. Lines with the same sizes, tokens and timing
share one line with several dtypes.

    python3 tools/bench_plan.py                      # every stored row
    python3 tools/bench_plan.py --range prefill --needing silu_and_mul
    PLAN="$(python3 tools/bench_plan.py --needing)" bash tools/h200_bench.sh

--needing keeps the rows `porter report` flags: timed on another kernel.py than
the case folder holds, or before porter bench turned Inductor's caches off (no
`inductor_caches` record); and the rows timed in graphs of fewer calls than
another row of their range (one call a graph where the range's other rows took
20), which the line times the range's way. Each sweep's flagged rows are re-timed with the row
its range's dynamic compile is traced at (the first above one token: porter
bench traces at a run's first point of a range), so the trace stays where the
sweep's other rows have it; --whole re-times the whole sweep instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# Run as a script from the repository root, with or without porter installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from porter.bench.fingerprint import kernel_fingerprint
from porter.bench.points import DTYPE_ORDER, PREFILL_FROM, label_parts, model_label


def _needs_timing(row: dict, current: str | None, launches: int = 1) -> bool:
    """The row is flagged: stale, timed with Inductor's caches on, or in graphs
    of fewer calls than `launches` (the most of its range)."""
    stale = current is not None and row.get("kernel_sha") != current
    fewer = row.get("graph_launches", 1) < launches
    return stale or fewer or row.get("inductor_caches") != "off"


def _dims(model: str) -> str:
    """`--dims` words from a model label (`num_heads=32xhead_dim=128`)."""
    return "" if model == "-" else " ".join(label_parts(model))


def _tokens(
    sweep: list[dict], current: str | None, only_flagged: bool, launches: int = 1
) -> tuple:
    every = sorted({r["num_tokens"] for r in sweep})
    if not only_flagged:
        return tuple(every)
    flagged = {r["num_tokens"] for r in sweep if _needs_timing(r, current, launches)}
    traced = [n for n in every if n > 1][:1]  # dynamic_hints: one token apart
    return tuple(sorted(flagged | set(traced)))


def plan(
    rows: list[dict],
    current: str | None,
    ranges: set[str],
    needing: bool,
    whole: bool = False,
) -> list[str]:
    """PLAN lines for one case's stored rows."""
    sweeps: dict[tuple, list[dict]] = {}
    for r in rows:
        span = "prefill" if r["num_tokens"] >= PREFILL_FROM else "decode"
        if span not in ranges:
            continue
        key = (model_label(r["shape"]), span, r["dtype"])
        sweeps.setdefault(key, []).append(r)
    lines: dict[tuple, list[str]] = {}
    for (model, span, dtype), sweep in sweeps.items():
        rounds = max(r.get("graph_rounds", 1) for r in sweep)
        launches = max(r.get("graph_launches", 1) for r in sweep)
        if needing and not any(_needs_timing(r, current, launches) for r in sweep):
            continue
        tokens = _tokens(sweep, current, needing and not whole, launches)
        lines.setdefault((model, span, tokens, rounds, launches), []).append(dtype)
    out = []
    for (model, _, tokens, rounds, launches), dtypes in lines.items():
        case = rows[0]["case"]
        dims = _dims(model)
        words = [case] + (["--dims", dims] if dims else [])
        order = sorted(dtypes, key=DTYPE_ORDER.index)
        words += ["--dtype", *order, "--tokens", *map(str, tokens)]
        words += ["--rounds", str(rounds)]
        if launches > 1:
            words += ["--launches", str(launches)]
        out.append(" ".join(words + ["--merge"]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help="case names (default: every stored)")
    ap.add_argument("--dir", default="docs/benchmarks", help="the stored rows")
    ap.add_argument("--captured", default="captured", help="the case folders")
    ap.add_argument("--range", choices=["decode", "prefill", "all"], default="all")
    ap.add_argument(
        "--needing",
        action="store_true",
        help="only sweeps with a row porter report flags (stale kernel.py, or "
        "timed with Inductor's caches on) or timed in graphs of fewer calls than "
        "another row of its range",
    )
    ap.add_argument(
        "--whole",
        action="store_true",
        help="with --needing, every row of a flagged sweep, not only its flagged "
        "rows and the one its dynamic compile is traced at",
    )
    args = ap.parse_args()
    folder = Path(args.dir)
    names = args.cases or sorted(p.stem for p in folder.glob("*.json"))
    ranges = {"decode", "prefill"} if args.range == "all" else {args.range}
    for name in names:
        path = folder / f"{name}.json"
        if not path.is_file():
            print(f"bench_plan: {path}: no stored rows", file=sys.stderr)
            return 1
        rows = json.loads(path.read_text())
        current = kernel_fingerprint(Path(args.captured) / name)
        for line in plan(rows, current, ranges, args.needing, args.whole):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
