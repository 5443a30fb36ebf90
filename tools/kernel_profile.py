"""Per-kernel device times of the ported call and of the reference under
torch.compile (GPU only), from the CUDA profiler: which kernels each runs,
their grid, block, registers and shared memory, their mean duration, and the
mean gap between one kernel's end and the next one's start inside a CUDA graph
of --launches calls. Where porter bench says the ported call is slower at
decode sizes, this tells a longer kernel from a longer gap between kernels.

    python3 tools/kernel_profile.py gelu_tanh_and_mul --dims intermediate=4096 \
        --tokens 1 16 --dtype bfloat16 --launches 20

One JSON line per (sizes, call): {"call": "ported", "kernels": [...],
"gap_us": ...}; "kernels" lists each kernel (and memset or memcpy) name once,
with its launches per call and mean duration. --variant adds other kernel.py
files as calls; --no-pdl adds the scaffold launched without programmatic
dependent launch ("pdl=off"); --rotate cycles each graph's calls through input
sets of their own, as porter bench does with several launches a graph (the
inputs' L2 state then matches its rows). Under the profiler the spans need not
keep porter bench's
order between calls: read it for what runs and how it is launched, and time
with porter bench or launch_probe.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from porter.bench.points import sweep, tensor_bytes
from porter.bench.timing import (
    capture_graph,
    compiled_references,
    input_sets,
    rotated_references,
    rotating,
    rotation_sets,
)
from porter.sizes import add_point_options, parse_dims
from porter.testing.parity import (
    Scenario,
    import_kernel,
    load_case,
    make_inputs,
    scaffold_entry,
)

LAUNCH_ARGS = ("grid", "block", "registers per thread", "shared memory")
DEVICE_WORK = {"kernel", "gpu_memset", "gpu_memcpy"}


def kernel_events(trace: dict) -> list[dict]:
    """The trace's device work (kernels, memsets, copies) in start order."""
    kernels = [e for e in trace.get("traceEvents", []) if e.get("cat") in DEVICE_WORK]
    return sorted(kernels, key=lambda e: e["ts"])


def summarize(kernels: list[dict], calls: int) -> dict:
    """Each kernel name once (launches per call, mean duration, launch shape) and
    the mean gap between consecutive kernels (end to next start), in us."""
    by_name: dict[str, list[dict]] = defaultdict(list)
    for e in kernels:
        by_name[e["name"]].append(e)
    rows = []
    for name, events in by_name.items():
        args = events[0].get("args", {})
        rows.append(
            {
                "name": name[:90],
                "per_call": round(len(events) / calls, 2),
                "mean_us": round(sum(e["dur"] for e in events) / len(events), 3),
                **{k: args.get(k) for k in LAUNCH_ARGS},
            }
        )
    gaps = [
        b["ts"] - (a["ts"] + a["dur"])
        for a, b in zip(kernels, kernels[1:])
        if b["ts"] - (a["ts"] + a["dur"]) < 50  # not the gap between replays
    ]
    return {
        "kernels": rows,
        "gap_us": round(sum(gaps) / len(gaps), 3) if gaps else None,
        "span_us_per_call": (
            round(
                (kernels[-1]["ts"] + kernels[-1]["dur"] - kernels[0]["ts"]) / calls, 3
            )
            if kernels
            else None
        ),
    }


def without_pdl(mod, call):
    """call, with the scaffold module's pdl_enabled answering False while it
    runs (a graph captures the launch as made then)."""

    def run():
        saved = mod.pdl_enabled
        mod.pdl_enabled = lambda device: False
        try:
            return call()
        finally:
            mod.pdl_enabled = saved

    return run


def profiled(graph, replays: int) -> list[dict]:
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            return kernel_events(json.load(f))
    finally:
        os.unlink(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_point_options(ap)
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--static", action="store_true", help="also the static compile")
    ap.add_argument(
        "--no-pdl",
        action="store_true",
        help="also the scaffold launched without programmatic dependent launch",
    )
    ap.add_argument(
        "--rotate",
        action="store_true",
        help="each call in a graph on the next of several input sets, 256 MB or "
        "more together, as porter bench times graphs of several calls",
    )
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("kernel_profile: needs a CUDA GPU", file=sys.stderr)
        return 2
    case = load_case(f"captured/{args.case}")
    compiled = compiled_references(case)
    model = parse_dims(args.dims)
    points = sweep(case.manifest, tuple(args.tokens), (args.dtype,), model_sizes=model)
    variants = [
        import_kernel(Path(path), f"variant{i}", case.folder.parent / "common.py")
        for i, path in enumerate(args.variant)
    ]
    for point in points:
        sc = Scenario(args.dtype, point.sizes)
        inputs = make_inputs(case, sc, "cuda", seed=0)
        fn = scaffold_entry(case, args.dtype, "cuda")
        sets = 1
        if args.rotate:
            nbytes = tensor_bytes(inputs) + tensor_bytes(fn(*inputs))
            sets = rotation_sets(nbytes, args.launches)
        every = input_sets(case, sc, inputs, sets)
        calls = {"ported": rotating([lambda one=one: fn(*one) for one in every])}
        if args.no_pdl and hasattr(case.kernel, "pdl_enabled"):
            calls["pdl=off"] = without_pdl(case.kernel, calls["ported"])
        for path, vmod in zip(args.variant, variants):
            vfn = scaffold_entry(case, args.dtype, "cuda", kernel=vmod)
            calls[f"variant={path}"] = rotating(
                [lambda one=one, vfn=vfn: vfn(*one) for one in every]
            )
        with torch.no_grad():
            references = rotated_references(
                case, compiled, args.dtype, every, point.num_tokens
            )
            calls["inductor"] = references["inductor"]
            if args.static:
                calls["inductor_static"] = references["inductor_static"]
            for label, call in calls.items():
                try:
                    graph = capture_graph(call, args.launches)
                    found = profiled(graph, 1)
                    out = summarize(found, args.launches)
                except Exception as e:  # one point's failure keeps the others
                    out = {"error": f"{type(e).__name__}: {e}"[:300]}
                print(
                    json.dumps(
                        {
                            "sizes": point.sizes,
                            "dtype": args.dtype,
                            "call": label,
                            "input_sets": sets,
                            **out,
                        }
                    ),
                    flush=True,
                )
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
