"""The reports: a case's rows merged and written (JSON, Markdown, plot),
and docs/benchmarks/README.md aggregated from them."""

from __future__ import annotations

import json
import math
from pathlib import Path

from porter.bench.corpus import corpus_section
from porter.bench.fingerprint import kernel_fingerprint
from porter.bench.points import (
    DTYPE_ORDER,
    PEAK_FLOPS,
    ROTATE_MIN_BYTES,
    arithmetic_bound,
    model_label,
    point_flops,
    roofline_us,
    size_copy_pct_bw,
    sizes_of,
)
from porter.layer_report import layer_section


def write_case(rows: list[dict], facts: dict, out: Path, case: str) -> list[Path]:
    """docs/benchmarks/<case>.json, .md and .png from measured rows."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{case}.json", out / f"{case}.md", out / f"{case}.png"]
    paths[0].write_text(json.dumps(rows, indent=1) + "\n")
    paths[1].write_text(markdown_table(rows, facts))
    plot(rows, paths[2], title=f"{case} on {facts.get('gpu', '?')}")
    return paths


def merge_rows(kept: list[dict], new: list[dict]) -> list[dict]:
    """Stored rows with this run's added: a stored row of a (dtype, shape) this
    run measured is replaced, the rest are kept (each row carries its own GPU,
    versions and date). Ordered by dtype (bf16 first), model size, then tokens."""
    fresh = {(r["dtype"], r["shape"]) for r in new}
    rows = [r for r in kept if (r["dtype"], r["shape"]) not in fresh] + new
    models: dict[str, int] = {}
    for r in rows:
        models.setdefault(model_label(r["shape"]), len(models))

    def order(r: dict) -> tuple:
        d = r["dtype"]
        rank = DTYPE_ORDER.index(d) if d in DTYPE_ORDER else len(DTYPE_ORDER)
        return (rank, models[model_label(r["shape"])], r["num_tokens"])

    return sorted(rows, key=order)


# A CUDA-graph replay drops the host's launch work, so for calls long enough
# that launch gaps do not count (MIN_DIRECT_US; below it a replay's own launch
# can outlast an event-timed direct call) it should not take longer than the
# same call launched directly. On the H200 the ported call's replay took
# 1.06-1.14x its direct launch at points moving 2 GB or more, while Inductor's
# and eager's replays at the same points took 0.99-1.00x
# (lab/NOTES.md): such points are reported as suspect.
GRAPH_SLOWER = 1.05
MIN_DIRECT_US = 100.0
TIMED = ("ported", "inductor", "inductor_static", "eager")


def graph_anomalies(rows: list[dict]) -> list[tuple[dict, str, float]]:
    """(row, call, graph / direct) where a call of MIN_DIRECT_US or more took
    more than GRAPH_SLOWER times as long replayed from a graph as launched
    directly: the kernel-only time there is suspect, whatever made it slow."""
    out = []
    for r in rows:
        for name in TIMED:
            direct, graph = r.get(f"{name}_us"), r.get(f"{name}_graph_us")
            if not direct or not graph or direct < MIN_DIRECT_US:
                continue
            if graph > GRAPH_SLOWER * direct:
                out.append((r, name, graph / direct))
    return out


def _anomaly_text(found: list[tuple[dict, str, float]], with_case: bool) -> str:
    return "; ".join(
        (f"{r['case']} " if with_case else "")
        + f"{r['dtype']} {r['shape']} {name} {ratio:.2f}x"
        for r, name, ratio in found
    )


def _one_round_note(rows: list[dict]) -> str:
    old = [r for r in rows if r.get("graph_rounds", 1) < 2]
    if not old:
        return ""
    return (
        f" ({len(old)} of {len(rows)} rows had a single round, timed before "
        "porter took two)"
    )


def _rounds_text(rows: list[dict]) -> str:
    """How the rows' graph times were taken (`porter bench --rounds`)."""
    counts = sorted({r.get("graph_rounds", 1) for r in rows} - {1})
    if counts in ([], [2]):
        return "lower of two rounds timed in opposite orders"
    many = " or ".join(str(n) for n in counts)
    return f"lowest of {many} rounds timed in alternating orders"


def _launches_text(rows: list[dict]) -> str:
    """How many calls the rows' graphs held (`porter bench --launches`)."""
    many = [r for r in rows if r.get("graph_launches", 1) > 1]
    if not many:
        return ""
    counts = " or ".join(str(n) for n in sorted({r["graph_launches"] for r in many}))
    rotated = sum(1 for r in many if "input_sets" in r)
    sets = (
        f", cycling input sets of {ROTATE_MIN_BYTES >> 20} MB or more together "
        f"in {rotated} of them (`input_sets`)"
        if rotated
        else ""
    )
    if len(many) == len(rows):
        return f"; graphs of {counts} calls back to back, timed per call{sets}"
    return (
        f"; in {len(many)} of {len(rows)} rows graphs of {counts} calls back to "
        f"back, timed per call{sets} (the others one call a graph)"
    )


def markdown_table(rows: list[dict], facts: dict) -> str:
    # Rows put together from stored runs (not one run) have no copy
    # bandwidth of their own; each row keeps its % of its run's.
    copy = (
        f"; copy bandwidth {facts['copy_gbps']} GB/s in the same run"
        if "copy_gbps" in facts
        else ""
    )
    head = (
        f"Measured on {facts.get('gpu')} with torch {facts.get('torch')}, "
        f"triton {facts.get('triton')}, {facts.get('date')}{copy}. Kernel-only times are "
        f"CUDA-graph replays, each call's {_rounds_text(rows)}"
        + _one_round_note(rows)
        + _launches_text(rows)
        + "; % same-size copy is the ported rate against a device copy of the "
        "point's bytes timed the same way, the faster of torch's and a Triton "
        "copy where the row timed both (- where not timed)"
        + "; ratios are ported / other (below 1: "
        "ported is faster).\n\n"
    )
    lines = [
        "| dtype | shape | ported µs | Inductor dynamic µs | Inductor static µs | eager µs | ported / dynamic | ported / static | ported GB/s | % copy BW | % same-size copy | host µs (ported, dynamic) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['dtype']} | {r['shape']} | {r['ported_graph_us']} | {r['inductor_graph_us']} | "
            f"{r['inductor_static_graph_us']} | {r['eager_graph_us']} | "
            f"{r['ported_graph_us'] / r['inductor_graph_us']:.2f} | "
            f"{r['ported_graph_us'] / r['inductor_static_graph_us']:.2f} | {r['ported_gbps']} | "
            f"{r['pct_copy_bw']} | {r.get('pct_size_copy', '-')} | "
            f"{r['ported_us']}, {r['inductor_us']} |"
        )
    first = ""
    if "ported_first_call_s" in facts:
        first = (
            f"\n\nFirst call (compile + launch): ported {facts['ported_first_call_s']} s, "
            f"torch.compile (dynamic) {facts['inductor_first_call_s']} s.\n"
        )
    variants = variant_summary(rows)
    if variants:
        first += (
            "\nTriton variants of the ported kernels, compiled by the end of each "
            "token sweep (cumulative over the run): " + variants + ".\n"
        )
    earlier = sorted(
        {(r["date"], r["gpu"], r["torch"], r["triton"]) for r in rows}
        - {
            (
                facts.get("date"),
                facts.get("gpu"),
                facts.get("torch"),
                facts.get("triton"),
            )
        }
    )
    if earlier:
        first += (
            "\nRows kept from earlier runs (`--merge`; their % copy BW is against their own run's copy): "
            + "; ".join(
                f"{gpu}, torch {t}, triton {tr}, {date}" for date, gpu, t, tr in earlier
            )
            + ".\n"
        )
    if facts.get("left_out"):
        first += (
            "\nLeft out (out of GPU memory): " + ", ".join(facts["left_out"]) + ".\n"
        )
    odd = graph_anomalies(rows)
    if odd:
        first += (
            f"\nGraph replay slower than the same call launched directly (by more "
            f"than {GRAPH_SLOWER}x, calls of {MIN_DIRECT_US:g} µs or more; the "
            "kernel-only time there is suspect): "
            + _anomaly_text(odd, with_case=False)
            + ".\n"
        )
    return head + "\n".join(lines) + "\n" + first


def sweeps(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """Rows by (dtype, model size), each a num_tokens sweep, in first-seen order."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dtype"], model_label(r["shape"])), []).append(r)
    return groups


def variant_summary(rows: list[dict]) -> str:
    """`bfloat16 hidden=4096: 1 -> 1` per sweep: variants after its first and
    last point (equal: no token count compiled a new one)."""
    measured = [r for r in rows if r.get("ported_variants") is not None]
    return "; ".join(
        f"{d} {m}: {sub[0]['ported_variants']} -> {sub[-1]['ported_variants']}"
        for (d, m), sub in sweeps(measured).items()
    )


def multi_launch_spans(rows: list[dict]) -> list[tuple[int, int, int]]:
    """(lowest, highest num_tokens, launches) of each run of consecutive rows
    (by num_tokens) timed in graphs of the same several calls (`porter bench
    --launches`), for a plot to shade: their µs are per call inside a longer
    graph, the others' one call a graph."""
    spans: list[tuple[int, int, int]] = []
    last = None
    for r in sorted(rows, key=lambda r: r["num_tokens"]):
        n = r.get("graph_launches", 1)
        if n > 1 and last == n:
            lo, _, _ = spans[-1]
            spans[-1] = (lo, r["num_tokens"], n)
        elif n > 1:
            spans.append((r["num_tokens"], r["num_tokens"], n))
        last = n
    return spans


def plot(rows: list[dict], path: Path, title: str) -> list[tuple[str, str]]:
    """One log-log panel per (dtype, model size); returns the panels drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sweeps(rows)
    panels = sorted(groups, key=lambda k: DTYPE_ORDER.index(k[0]))
    cols = min(3, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(
        nrows, cols, figsize=(6 * cols, 4.5 * nrows), squeeze=False
    )
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (dtype, model) in zip(axes.flat, panels):
        sub = sorted(groups[(dtype, model)], key=lambda r: r["num_tokens"])
        x = [r["num_tokens"] for r in sub]
        for key, label in (
            ("ported_graph_us", "ported"),
            ("inductor_graph_us", "torch.compile dynamic"),
            ("inductor_static_graph_us", "torch.compile static"),
            ("eager_graph_us", "eager"),
        ):
            ax.plot(x, [r[key] for r in sub], marker="o", label=label)
        for i, (lo, hi, n) in enumerate(multi_launch_spans(sub)):
            ax.axvspan(
                lo / 1.2,
                hi * 1.2,
                color="grey",
                alpha=0.15,
                label=f"graphs of {n} calls, per call" if i == 0 else None,
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("num_tokens")
        ax.set_ylabel("µs (CUDA-graph replay)")
        ax.set_title(f"{title}, {dtype}" + (f", {model}" if model != "-" else ""))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return panels


def _date_span(rows: list[dict]) -> str:
    dates = sorted({r["date"] for r in rows})
    return dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"


# Issue 6's time bar for one point: the ported kernel at most the dynamic
# compile's time, and at most 1.03x the static compile's.
STATIC_SLACK = 1.03
# Token counts up to this are decode sizes (the bench's sweep: 1-256).
DECODE_MAX_TOKENS = 256


def within_bar(p_over_dynamic: float, p_over_static: float) -> bool:
    return p_over_dynamic <= 1.0 and p_over_static <= STATIC_SLACK


# Issue 6's bandwidth clause: memory-bound cases move at least BW_BAR_PCT % of
# the copy bandwidth at every point from BW_BAR_FROM tokens.
BW_BAR_PCT = 90
BW_BAR_FROM = 4096


def bandwidth_note(swept: list[tuple[str, str, str, list[dict]]]) -> str:
    """How many sweeps (case, dtype, model sizes, rows) reach BW_BAR_PCT % of
    the copy bandwidth at every memory-bound point from BW_BAR_FROM tokens,
    and the lowest point of each that does not, with what a copy of that
    point's bytes reached where it was timed; sweeps without such points
    are left out, and those whose points there are all bound by arithmetic
    (`arithmetic_bound`: the clause is for memory-bound cases) are named.
    The short sweeps come in two lists: those short only where a copy of the
    same bytes, timed the same way in the same run, stayed under the clause
    too (the size's shortfall: a call of those bytes pays a fixed cost the
    copy bandwidth, measured over 1 GiB, never sees), and the others (the
    kernel's, or not known: no copy timed)."""
    size_short, kernel_short, met, bound = [], [], 0, []
    for case, dtype, model, rows in swept:
        big = [r for r in rows if r["num_tokens"] >= BW_BAR_FROM]
        if not big:
            continue
        memory = [r for r in big if not arithmetic_bound(r)]
        if not memory:
            r = max(big, key=lambda r: r["num_tokens"])
            math_us, bytes_us = roofline_us(r)
            bound.append(
                f"{case} {dtype} {model} (at {r['num_tokens']} tokens its "
                f"matmuls take {math_us:.3g} µs at the GPU's peak, its bytes "
                f"{bytes_us:.3g} µs at the copy bandwidth; the ported call "
                f"{r['ported_graph_us']:.3g} µs, "
                f"{100 * math_us / r['ported_graph_us']:.0f}% of the peak)"
            )
            continue
        low = min(memory, key=lambda r: r["pct_copy_bw"])
        if low["pct_copy_bw"] >= BW_BAR_PCT:
            met += 1
            continue
        copy_pct = size_copy_pct_bw(low)
        copy = "" if copy_pct is None else f"; a copy of its bytes {copy_pct:.1f}%"
        text = f"{case} {dtype} {model} ({low['pct_copy_bw']}% at {low['num_tokens']}{copy})"
        missed = [r for r in memory if r["pct_copy_bw"] < BW_BAR_PCT]
        copies = [size_copy_pct_bw(r) for r in missed]
        if all(c is not None and c < BW_BAR_PCT for c in copies):
            size_short.append(text)
        else:
            kernel_short.append(text)
    short = len(size_short) + len(kernel_short)
    if not met and not short and not bound:
        return ""
    text = (
        f"At {BW_BAR_PCT}% of the copy bandwidth or more at every point from "
        f"{BW_BAR_FROM} tokens: {met} of {met + short} sweeps"
    )
    if size_short:
        text += (
            f". Short of it only at points where a copy of the same bytes, timed "
            f"the same way in the same run, stays under {BW_BAR_PCT}% too (the "
            "clause asks more of those sizes than a copy of them reaches): "
            + "; ".join(size_short)
        )
    if kernel_short:
        text += (
            f". Short of it where a copy of the same bytes reaches {BW_BAR_PCT}% "
            "or was not timed: " + "; ".join(kernel_short)
        )
    elif size_short:
        text += (
            f". Short of it where a copy of the same bytes reaches {BW_BAR_PCT}%: "
            "none"
        )
    text += "."
    if bound:
        text += (
            " Left out, bound by arithmetic rather than memory at every point "
            "from there (matmul FLOPs at the GPU's dense peak, bf16 and fp16 "
            "at 989.4 TFLOP/s, fp32 at a third of TF32's 494.7, against bytes "
            "at the copy bandwidth): " + "; ".join(bound) + "."
        )
    return text


# Issue 6's softmax clause: a softmax over rows of up to SOFTMAX_MAX_ROW
# elements beats Inductor's looped two-pass kernel (both compiles run one at
# those sizes).
SOFTMAX_CASE = "softmax"
SOFTMAX_MAX_ROW = 8192


def row_elements(row: dict) -> int:
    """The elements of one token's row at a stored row's point: the product of
    its shape's sizes other than num_tokens."""
    sizes = sizes_of(row["shape"])
    sizes.pop("num_tokens", None)
    return math.prod(sizes.values())


def _span(values) -> str:
    """The lowest and highest of some ratios, to three places ("0.470-0.982")."""
    low, high = f"{min(values):.3f}", f"{max(values):.3f}"
    return low if low == high else f"{low}-{high}"


def softmax_note(rows: list[dict]) -> str:
    """At how many of the softmax case's points over rows of up to
    SOFTMAX_MAX_ROW elements the ported kernel took less time than each
    compile (graph replays), with the points where it did not beat both and
    the copy-bandwidth share of each side there."""
    sub = [
        r
        for r in rows
        if r["case"] == SOFTMAX_CASE and row_elements(r) <= SOFTMAX_MAX_ROW
    ]
    if not sub:
        return ""
    ratios = [_ratios(r) for r in sub]
    pd, ps = zip(*ratios)
    text = (
        f"The {SOFTMAX_CASE} case over rows of up to {SOFTMAX_MAX_ROW} elements: "
        "the ported kernel took less time than the dynamic compile at "
        f"{sum(x < 1 for x in pd)} of {len(sub)} points (p/d {_span(pd)}) and "
        f"than the static one at {sum(x < 1 for x in ps)} (p/s {_span(ps)})"
    )
    behind = []
    for r, (d, s) in zip(sub, ratios):
        if max(d, s) < 1:
            continue
        # The same bytes in each compile's time.
        behind.append(
            f"{r['dtype']} {r['model']} at {r['num_tokens']} tokens (p/d {d:.3f}, "
            f"p/s {s:.3f}; the ported kernel at {r['pct_copy_bw']:.1f}% of the "
            f"copy bandwidth, the dynamic compile at {r['pct_copy_bw'] * d:.1f}%, "
            f"the static one at {r['pct_copy_bw'] * s:.1f}%)"
        )
    if behind:
        text += "; not less than both at " + "; ".join(behind)
    return text + "."


def copy_rate_miss_note(rows: list[dict]) -> str:
    """How many points that miss the time bar do so where the ported kernel
    and the faster torch.compile both move BW_BAR_PCT % of the copy bandwidth
    or more, with the largest gaps there: misses by a kernel already near the
    memory's rate, as against ones with a kernel to improve."""
    missed = [r for r in rows if not _row_within_bar(r)]
    at_rate = []
    for r in missed:
        pd, ps = _ratios(r)
        # The same bytes in the faster compile's time.
        theirs = r["pct_copy_bw"] * max(pd, ps)
        if r["pct_copy_bw"] >= BW_BAR_PCT and theirs >= BW_BAR_PCT:
            at_rate.append((pd, ps, r["pct_copy_bw"], theirs))
    if not at_rate:
        return ""
    pd, ps, ours, theirs = zip(*at_rate)
    return (
        f"{len(at_rate)} of the {len(missed)} points missing the time bar are "
        f"at the copy rate: the ported kernel moves {min(ours):.1f}-"
        f"{max(ours):.1f}% of the copy bandwidth there and the faster of the "
        f"two compiles {min(theirs):.1f}-{max(theirs):.1f}%; the ported kernel "
        "takes at "
        f"most {max(pd):.3f}x the dynamic compile's time and {max(ps):.3f}x "
        "the static one's."
    )


def size_copy_note(rows: list[dict], at: int = 4096) -> str:
    """What a copy of the same bytes reached at `at` tokens (rows that timed
    one), beside the bandwidth clause: how far a copy of that size, timed the
    same way, gets towards 90% of the copy bandwidth measured over 1 GiB."""
    sub = [r for r in rows if r["num_tokens"] == at and size_copy_pct_bw(r)]
    if not sub:
        return ""
    own = [size_copy_pct_bw(r) for r in sub]
    kernel = [r["pct_size_copy"] for r in sub]
    both = sum(1 for r in sub if r.get("copy_triton_graph_us"))
    which = (
        f"the faster of torch's copy and a Triton copy at {both} of them"
        if both
        else "torch's copy"
    )
    return (
        f"At {at} tokens, a device copy of each point's bytes, timed as the "
        f"ported kernel is, reached {min(own):.0f}-{max(own):.0f}% of the copy "
        f"bandwidth ({len(sub)} point{'s' if len(sub) > 1 else ''}; {which}); "
        "the ported kernels reached "
        f"{min(kernel):.0f}-{max(kernel):.0f}% of that copy's rate (a rough "
        "reference, not a ceiling: [lab/NOTES.md](../../lab/NOTES.md))."
    )


def _ratios(r: dict) -> tuple[float, float]:
    """A stored row's (p/d, p/s): the ported graph time over the dynamic and
    the static compile's."""
    return (
        r["ported_graph_us"] / r["inductor_graph_us"],
        r["ported_graph_us"] / r["inductor_static_graph_us"],
    )


def _row_within_bar(r: dict) -> bool:
    """A stored row's point meets the time bar, by graph replay."""
    return within_bar(*_ratios(r))


def stale_rows(rows: list[dict], current: str | None) -> tuple[int, int]:
    """(rows timed on another kernel.py than `current`, rows that recorded
    none): rows of a scaffold regenerated or edited since, and rows older than
    the record."""
    unrecorded = sum(1 for r in rows if not r.get("kernel_sha"))
    other = sum(
        1
        for r in rows
        if r.get("kernel_sha") and current is not None and r["kernel_sha"] != current
    )
    return other, unrecorded


def _fill_flops(rows: list[dict], folder: Path) -> None:
    """Give stored rows without a `flops` record (timed before porter bench
    kept one) the count of the case folder's reference, where it loads and
    runs on meta tensors; the stored files are left as they are."""
    from porter.testing.parity import load_case

    need = [r for r in rows if "flops" not in r and r.get("gpu") in PEAK_FLOPS]
    if not need or not (folder / "manifest.json").is_file():
        return
    try:
        case = load_case(folder)
    except Exception:  # noqa: BLE001 - a case that no longer loads: rows as stored
        return
    for r in need:
        flops = point_flops(case, r["dtype"], sizes_of(r["shape"]))
        if flops is not None:
            r["flops"] = flops


def aggregate(folder: Path, captured: Path | None = None) -> str:
    """docs/benchmarks/README.md: one line per case, dtype and model size, with
    the worst ratios (and where), the bandwidth reached, and how many points
    are within issue 6's time bar (ported <= dynamic, <= 1.03 x static).
    captured: the case folders, to say which rows timed another kernel.py than
    the one there now."""
    lines = [
        "# Benchmarks",
        "",
        "Kernel-only times (CUDA-graph replays); p/d = ported / torch.compile with",
        "dynamic num_tokens, p/s = ported / torch.compile static per shape (below 1:",
        "ported is faster); BW = % of the copy bandwidth measured in the same run, at",
        "num_tokens >= 4096. Hand-written notes: [lab/NOTES.md](../../lab/NOTES.md).",
        "",
        "| case | dtype | model sizes | points | within time bar | missing it at (tokens) | worst p/d (tokens) | worst p/s (tokens) | lowest BW | measured on |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    every = []  # all cases' rows, for the notes below the table
    swept = []  # (case, dtype, model sizes, rows) of every sweep
    changed, unrecorded, carried = [], 0, []
    for path in sorted(folder.glob("*.json")):
        rows = json.loads(path.read_text())
        if captured is not None:
            _fill_flops(rows, captured / path.stem)
        every += rows
        current = kernel_fingerprint(captured / path.stem) if captured else None
        # Carried to the kernel.py there now (a row carried to an earlier one
        # is stale, listed as such).
        carried += [
            r
            for r in rows
            if r.get("carried") and (current is None or r.get("kernel_sha") == current)
        ]
        for (dtype, model), sub in sweeps(rows).items():
            other, none = stale_rows(sub, current)
            unrecorded += none
            if other:
                changed.append(f"{path.stem} {dtype} {model} ({other} of {len(sub)})")
            missing = [r["num_tokens"] for r in sub if not _row_within_bar(r)]
            within = len(sub) - len(missing)
            # The worst p/d and p/s, and the rows they are at.
            rd = max(sub, key=lambda r: _ratios(r)[0])
            rs = max(sub, key=lambda r: _ratios(r)[1])
            wd, ws = _ratios(rd)[0], _ratios(rs)[1]
            swept.append((path.stem, dtype, model, sub))
            big = [r["pct_copy_bw"] for r in sub if r["num_tokens"] >= BW_BAR_FROM]
            bw = f"{min(big)}%" if big else "n/a"
            r0 = sub[0]
            lines.append(
                f"| [{r0['case']}]({path.stem}.md) | {dtype} | {model} | {len(sub)} | "
                f"{within}/{len(sub)} | {', '.join(map(str, missing)) or '-'} | "
                f"{wd:.2f} ({rd['num_tokens']}) | "
                f"{ws:.2f} ({rs['num_tokens']}) | {bw} | "
                f"{r0['gpu']}, torch {r0['torch']}, triton {r0['triton']}, "
                f"{_date_span(sub)} |"
            )
    if every:
        decode = [r for r in every if r["num_tokens"] <= DECODE_MAX_TOKENS]
        above = [r for r in every if r["num_tokens"] > DECODE_MAX_TOKENS]
        met = [sum(map(_row_within_bar, rs)) for rs in (every, decode, above)]
        lines += [
            "",
            f"Within the time bar: {met[0]} of {len(every)} points; {met[1]} of "
            f"{len(decode)} up to {DECODE_MAX_TOKENS} tokens, {met[2]} of "
            f"{len(above)} above.",
        ]
    for note in (
        copy_rate_miss_note(every),
        bandwidth_note(swept),
        size_copy_note(every),
        softmax_note(every),
    ):
        if note:
            lines += ["", note]
    if changed:
        lines += [
            "",
            "Timed on an older kernel.py than the case folder holds now (re-run "
            "porter bench for them): " + "; ".join(changed) + ".",
        ]
    if carried:
        tritons = sorted({r["carried"].get("triton", "?") for r in carried})
        lines += [
            "",
            f"{len(carried)} of {len(every)} rows were timed on an earlier "
            "kernel.py whose launches at their points compile to the same SASS, "
            "with the same grid, launch options and arguments, as today's "
            "(`tools/carry_rows.py`, "
            f"compiled for sm_90 with triton {', '.join(tritons)}): they time "
            "today's kernels and count as its rows.",
        ]
        other = sum(1 for r in carried if r["carried"].get("triton") != r.get("triton"))
        if other:
            lines[-1] += (
                f" {other} of them were checked with another triton than the one "
                "that timed them; `tools/carry_rows.py --recheck` run with that "
                "one checks them again."
            )
    if unrecorded:
        lines += [
            "",
            f"{unrecorded} of {len(every)} rows were timed before porter bench "
            "recorded the kernel.py it ran (no kernel_sha): this report cannot "
            "tell whether their kernel.py changed since.",
        ]
    single = sum(1 for r in every if r.get("graph_rounds", 1) < 2)
    if single:
        lines += [
            "",
            f"{single} of {len(every)} rows timed each graph once; later rows "
            f"take the {_rounds_text(every)}.",
        ]
    many = sum(1 for r in every if r.get("graph_launches", 1) > 1)
    if many:
        lines += [
            "",
            f"{many} of {len(every)} rows timed graphs of several calls back to "
            "back, per call (`porter bench --launches`): inside a longer graph, "
            "as in an engine's decode step. "
            + (
                "The others timed one call a graph, which at decode sizes is "
                "mostly the graph's own launch; each row's ratios compare calls "
                "timed the same way, and the time bar judges each row by them. "
                if many < len(every)
                else ""
            )
            + "Each call there follows a call of the same "
            "kernel: a scaffold launched with programmatic dependent launch "
            "(Hopper and later) starts while the call before it drains, more "
            "than it would behind other kernels: behind a cuBLAS matmul it "
            "measured faster with programmatic dependent launch than without, "
            "behind torch's elementwise kernel, which never lets the next one "
            'launch early, slower ([lab/NOTES.md](../../lab/NOTES.md), "Calls BM-BP").',
        ]
        rotated = sum(1 for r in every if "input_sets" in r and r["graph_launches"] > 1)
        if rotated:
            lines[-1] += (
                f" {rotated} of them cycled their calls through input sets of their "
                f"own, {ROTATE_MIN_BYTES >> 20} MB or more together (`input_sets`; "
                "one set where a set alone is that large), so that no call read "
                "what the call before it left in the L2 cache"
                + (
                    "; the others read one set every call, which at decode sizes "
                    "stays in the cache."
                    if rotated < many
                    else "."
                )
            )
    large = [r for r in every if r["num_tokens"] >= 1024]
    early = sum(1 for r in large if r.get("dynamic_traced_at", 1024) < 1024)
    unknown = sum(1 for r in large if "dynamic_traced_at" not in r)
    cached = sum(1 for r in large if r.get("inductor_caches") != "off")
    if early or unknown or cached:
        lines += [
            "",
            f"Of {len(large)} rows from 1024 tokens, {early} were timed against "
            "a dynamic compile traced below 1024 tokens, and "
            f"{unknown} predate the record of where (`dynamic_traced_at`). "
            "Inductor tunes a traced graph's kernels for the size it was traced "
            "at, so against one traced small, p/d compares with kernels tuned "
            "for small batches; porter bench now traces a compile of its own at "
            "the first point from 1024 tokens.",
        ]
        if cached:
            lines[-1] += (
                f" {cached} were timed while Inductor's caches were on "
                "(no `inductor_caches` record): their dynamic compile may be a "
                "graph an earlier run traced at another size, which Inductor's "
                "FX graph cache hands any trace of the same symbolic shapes, "
                "whatever `dynamic_traced_at` says."
            )
        lines[-1] += " Re-run the rows counted here."
    odd = graph_anomalies(every)
    if odd:
        lines += [
            "",
            f"Suspect points: a call of {MIN_DIRECT_US:g} µs or more took more than "
            f"{GRAPH_SLOWER}x as long replayed from a CUDA graph as launched "
            "directly, where a replay should only save the host's work. Their "
            "ratios above may be a measurement effect rather than the kernel: "
            + _anomaly_text(odd, with_case=True)
            + ".",
        ]
    lines += corpus_section(folder / "perf")
    lines += layer_section(folder)
    lines.append("")
    lines += [f"![{p.stem}]({p.name})" for p in sorted(folder.glob("*.png"))]
    return "\n".join(lines) + "\n"
