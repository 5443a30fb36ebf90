"""Time a scaffold under other launch settings (GPU only), to tune porter's
heuristics: `launch_settings` (reductions) and `tile_settings` (pointwise) are
replaced by fixed choices and each is timed by CUDA-graph replay.

    python3 tools/launch_probe.py rmsnorm num_tokens=32768,hidden=4096 --warps 4 8 16
    python3 tools/launch_probe.py silu_and_mul num_tokens=32768,intermediate=4096 \
        --tile 1x1024x4 2x1024x8 1x2048x8
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import triton

from porter.bench import _graph_us
from porter.testing.parity import Scenario, load_case, make_inputs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("sizes", help="name=value,... for every dim")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--warps", type=int, nargs="*", default=[])
    ap.add_argument("--tile", nargs="*", default=[], help="ROWSxCOLSxWARPS")
    ap.add_argument(
        "--max-fused",
        type=int,
        nargs="*",
        default=[],
        help="MAX_FUSED_COLS values: rows wider take the looped kernel",
    )
    args = ap.parse_args()
    case = load_case(f"captured/{args.case}")
    sizes = {k: int(v) for k, v in (kv.split("=") for kv in args.sizes.split(","))}
    inputs = make_inputs(case, Scenario(args.dtype, sizes), "cuda", seed=0)
    mod = case.kernel
    fn = getattr(mod, case.manifest["reference_name"], None)
    if fn is None:
        print("probe supports porter-format cases only", file=sys.stderr)
        return 1
    results = {"case": args.case, "sizes": sizes, "dtype": args.dtype}
    results["default"] = _graph_us(lambda: fn(*inputs))
    original = getattr(mod, "launch_settings", None)
    for w in args.warps:
        mod.launch_settings = lambda n, w=w: (triton.next_power_of_2(n), w)
        results[f"warps={w}"] = _graph_us(lambda: fn(*inputs))
    if original is not None:
        mod.launch_settings = original
    for t in args.tile:
        r, c, w = (int(v) for v in t.split("x"))
        mod.tile_settings = lambda n, r=r, c=c, w=w: (
            r,
            min(c, triton.next_power_of_2(n)),
            w,
        )
        results[f"tile={t}"] = _graph_us(lambda: fn(*inputs))
    fused = getattr(mod, "MAX_FUSED_COLS", None)
    for m in args.max_fused:
        mod.MAX_FUSED_COLS = m
        results[f"max_fused={m}"] = _graph_us(lambda: fn(*inputs))
    if fused is not None:
        mod.MAX_FUSED_COLS = fused
    print(json.dumps(results))
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
