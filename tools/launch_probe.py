"""Time a scaffold under other launch settings or kernel variants (GPU only), to
tune porter's heuristics. Each candidate replaces `launch_settings` (reductions)
or `tile_settings` (pointwise) by a fixed choice, or loads another kernel.py,
and is timed by CUDA-graph replay at every token count; a candidate whose
output is not close to the scaffold's is reported as differing, not timed.

    python3 tools/launch_probe.py rmsnorm --dims hidden=4096 --tokens 1 64 4096 \
        --reduce 1x4 1x8 2x4 --looped 2048x16
    python3 tools/launch_probe.py silu_and_mul --tokens 1 4096 --tile 1x1024x4 2x1024x8
    python3 tools/launch_probe.py softmax --dims vocab=32768 --variant my_softmax.py
    python3 tools/launch_probe.py rmsnorm --dtype float32 --min-row-bytes 1073741824

One JSON line per (case, sizes): {"default": us, "<candidate>": us, ...}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys

import torch
import triton

from porter.bench import _graph_us, sweep
from porter.sizes import add_point_options, parse_dims
from porter.testing.parity import Scenario, load_case, make_inputs, scaffold_entry


def _load_variant(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _close(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.allclose(
            a.float(), b.float(), rtol=2e-2, atol=1e-2, equal_nan=True
        )
    if isinstance(a, (tuple, list)):
        return all(_close(x, y) for x, y in zip(a, b))
    return True


def probe(case, variants: dict, point, args) -> dict:
    """Time the scaffold and every candidate at one point of the sweep."""
    mod = case.kernel
    inputs = make_inputs(case, Scenario(args.dtype, point.sizes), "cuda", seed=0)
    results = {"case": args.case, "sizes": point.sizes, "dtype": args.dtype}
    fn = scaffold_entry(case, args.dtype, "cuda")
    expected = fn(*inputs)
    results["default"] = _graph_us(lambda: fn(*inputs))

    def timed(label, call):
        # Another reduction order may move the last bit: a sanity check, not
        # parity (run the parity suite on the settings you keep).
        results[label] = _graph_us(call) if _close(expected, call()) else "differs"

    saved = {k: getattr(mod, k, None) for k in ("launch_settings", "tile_settings")}
    for r_w in args.reduce:
        r, w = (int(v) for v in r_w.split("x"))
        # *_: the launchers pass the element size too; it must not bind to r or w.
        mod.launch_settings = lambda n, c, *_, r=r, w=w: (
            r,
            triton.next_power_of_2(c),
            w,
        )
        timed(f"reduce={r_w}", lambda: fn(*inputs))
    for t in args.tile:
        r, c, w = (int(v) for v in t.split("x"))
        mod.tile_settings = lambda n, cols, *_, r=r, c=c, w=w, **__: (
            r,
            min(c, triton.next_power_of_2(cols)),
            w,
        )
        timed(f"tile={t}", lambda: fn(*inputs))
    for k, v in saved.items():
        if v is not None:
            setattr(mod, k, v)
    fused = getattr(mod, "MAX_FUSED_COLS", None)
    for m in args.max_fused:
        mod.MAX_FUSED_COLS = m
        timed(f"max_fused={m}", lambda: fn(*inputs))
    looped_cols = getattr(mod, "LOOPED_BLOCK_COLS", None)
    looped_warps = getattr(mod, "LOOPED_WARPS", None)
    for spec in args.looped:
        cols, _, warps = spec.partition("x")
        mod.MAX_FUSED_COLS, mod.LOOPED_BLOCK_COLS = 1, int(cols)
        if warps:
            mod.LOOPED_WARPS = int(warps)
        # Every row size takes this block and these warps, fp32 rows over 64 KB
        # included (the scaffold's own looped_settings halves the block there).
        saved_looped = mod.looped_settings
        mod.looped_settings = lambda *_: (mod.LOOPED_BLOCK_COLS, mod.LOOPED_WARPS)
        online = getattr(mod, "ONLINE_MIN_COLS", None)
        mod.ONLINE_MIN_COLS = 1 << 62  # the looped kernel, not the online one
        timed(f"looped={spec}", lambda: fn(*inputs))
        if online is None:
            del mod.ONLINE_MIN_COLS
        else:
            mod.ONLINE_MIN_COLS = online
        mod.looped_settings = saved_looped
        if looped_warps is not None:
            mod.LOOPED_WARPS = looped_warps
    if fused is not None:
        mod.MAX_FUSED_COLS, mod.LOOPED_BLOCK_COLS = fused, looped_cols
    min_row_bytes = getattr(mod, "LOOPED_MIN_ROW_BYTES", None)
    for b in args.min_row_bytes:
        if min_row_bytes is None:
            break  # this scaffold has no such switch
        mod.LOOPED_MIN_ROW_BYTES = {key: b for key in min_row_bytes}
        timed(f"min_row_bytes={b}", lambda: fn(*inputs))
    if min_row_bytes is not None:
        mod.LOOPED_MIN_ROW_BYTES = min_row_bytes
    for path, vmod in variants.items():
        vfn = scaffold_entry(case, args.dtype, "cuda", kernel=vmod)
        timed(f"variant={path}", lambda vfn=vfn: vfn(*inputs))
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_point_options(ap)
    ap.add_argument("--reduce", nargs="*", default=[], help="ROWSxWARPS")
    ap.add_argument("--tile", nargs="*", default=[], help="ROWSxCOLSxWARPS")
    ap.add_argument(
        "--max-fused",
        type=int,
        nargs="*",
        default=[],
        help="MAX_FUSED_COLS values: rows wider take the looped kernel",
    )
    ap.add_argument(
        "--min-row-bytes",
        type=int,
        nargs="*",
        default=[],
        help="LOOPED_MIN_ROW_BYTES values, for every (reads, inputs) key (a large one "
        "keeps the persistent kernel)",
    )
    ap.add_argument(
        "--looped",
        nargs="*",
        default=[],
        help="COLS or COLSxWARPS: LOOPED_BLOCK_COLS (and warps), every row taking "
        "the looped kernel",
    )
    args = ap.parse_args()
    case = load_case(f"captured/{args.case}")
    variants = {v: _load_variant(v, f"variant{i}") for i, v in enumerate(args.variant)}
    model = parse_dims(args.dims)
    points = sweep(case.manifest, tuple(args.tokens), (args.dtype,), model_sizes=model)
    for point in points:
        print(json.dumps(probe(case, variants, point, args)), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
