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
    python3 tools/launch_probe.py fused_add_rmsnorm --dims hidden=1024 \
        --tokens 1 16 256 --reduce 1x2 2x2 --rounds 6 --inductor
    python3 tools/launch_probe.py rmsnorm --tokens 1 16 --launches 20 --no-pdl
    python3 tools/launch_probe.py silu_and_mul --tokens 1 256 --launches 20 --behind mm
    python3 tools/launch_probe.py rmsnorm --tokens 4096 --launches 20 --rotate --copy

One JSON line per (case, sizes): {"default": us, "<candidate>": us, ...}, each
the lowest of --rounds graph-replay timings taken in alternating orders (a
graph of --launches calls, its time divided by them);
--inductor adds the reference under torch.compile ("inductor", "inductor_static").
--behind puts another kernel before every call in the graph, as an engine's
neighbours come: each time is then of the pair, and "behind" holds the
neighbour's own time alone. --rotate cycles the calls of a graph through input
sets of their own ("input_sets": how many), as porter bench does; --copy adds
copies of the point's bytes ("bytes"): "copy_torch" (torch's copy_) and
"copy_triton_<KB a program>k<warps>", also "..._pdl" where the scaffold
launches with PDL.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import triton

from porter.bench.points import sweep, tensor_bytes
from porter.bench.timing import (
    _median_us,
    _pdl,
    capture_graph,
    compiled_references,
    graph_times,
    input_sets,
    rotated_references,
    rotating,
    rotation_sets,
    same_size_copy,
)
from porter.sizes import add_point_options, parse_dims
from porter.testing.parity import (
    Scenario,
    common_module,
    import_kernel,
    load_case,
    make_inputs,
    scaffold_entry,
)
from porter.yardstick import triton_copy


def _close(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.allclose(
            a.float(), b.float(), rtol=2e-2, atol=1e-2, equal_nan=True
        )
    if isinstance(a, (tuple, list)):
        return all(_close(x, y) for x, y in zip(a, b))
    return True


def _modules(mod) -> list:
    """The scaffold module and the common.py module it imports from, if any:
    a launch constant lives in the second, a name it imported in both."""
    try:
        return [mod, common_module(mod)]
    except (AttributeError, KeyError):
        return [mod]  # a kernel.py from before common.py


def _get(mod, name: str, default=None):
    """`name` from the scaffold module or its common.py."""
    return next(
        (getattr(m, name) for m in _modules(mod) if hasattr(m, name)), default
    )


@contextlib.contextmanager
def _patched(mod, **attrs):
    """The scaffold module (and its common.py, wherever it holds the name too)
    with some globals replaced, restored afterwards (deleted where the
    scaffold had none)."""
    targets = {
        k: [m for m in _modules(mod) if hasattr(m, k)] or [mod] for k in attrs
    }
    saved = {
        (id(m), k): getattr(m, k) for k in attrs for m in targets[k] if hasattr(m, k)
    }
    for k, v in attrs.items():
        for m in targets[k]:
            setattr(m, k, v)
    try:
        yield
    finally:
        for k in attrs:
            for m in targets[k]:
                if (id(m), k) in saved:
                    setattr(m, k, saved[id(m), k])
                else:
                    delattr(m, k)


# The neighbour --behind puts before each call. add: an elementwise sum over
# 1 MiB of bf16, torch's own kernel, which never lets the next one launch
# early; mm: a decode step's projection, (16, 4096) x (4096, 4096) bf16 in
# cuBLAS, behind which a PDL call took 0.8-1.2 us less than without PDL on
# the H200 (torch 2.11), where behind add it took 0.2-0.3 us more
# (lab/NOTES.md, "Calls BM-BP").
BEHIND = ("add", "mm")


def neighbour(kind: str, device: str = "cuda"):
    """The call --behind puts before each timed one."""
    if kind == "add":
        a = torch.randn(1 << 19, dtype=torch.bfloat16, device=device)
        out = torch.empty_like(a)
        return lambda: torch.add(a, a, out=out)
    if kind == "mm":
        x = torch.randn(16, 4096, dtype=torch.bfloat16, device=device)
        w = torch.randn(4096, 4096, dtype=torch.bfloat16, device=device)
        out = torch.empty(16, 4096, dtype=torch.bfloat16, device=device)
        return lambda: torch.mm(x, w, out=out)
    raise ValueError(f"--behind: {kind!r} is not one of {', '.join(BEHIND)}")


def behind(first, call):
    """call, with first run just before it; returns what call returns."""

    def pair():
        first()
        return call()

    return pair


def _candidates(mod, args) -> list[tuple[str, dict]]:
    """(label, the scaffold globals it replaces) for every launch candidate."""
    out = []
    for r_w in args.reduce:
        r, w = (int(v) for v in r_w.split("x"))
        # *_, **__: the launchers pass the element size and row_tensors too;
        # they must not bind to r or w.
        settings = lambda n, c, *_, r=r, w=w, **__: (r, triton.next_power_of_2(c), w)
        out.append((f"reduce={r_w}", {"launch_settings": settings}))
    for t in args.tile:
        r, c, w = (int(v) for v in t.split("x"))
        settings = lambda n, cols, *_, r=r, c=c, w=w, **__: (
            r,
            min(c, triton.next_power_of_2(cols)),
            w,
        )
        out.append((f"tile={t}", {"tile_settings": settings}))
    # a scaffold with a looped kernel (row_launch picks it; older ones branched)
    if hasattr(mod, "row_launch") or hasattr(mod, "MAX_FUSED_COLS"):
        for m in args.max_fused:
            out.append((f"max_fused={m}", {"MAX_FUSED_COLS": m}))
        for spec in args.looped:
            cols, _, warps = spec.partition("x")
            warps = int(warps) if warps else _get(mod, "LOOPED_WARPS")
            # Every row size takes this block and these warps, fp32 rows over 64
            # KB included (the scaffold's own looped_settings halves the block
            # there); the looped kernel, not the online one.
            out.append(
                (
                    f"looped={spec}",
                    {
                        "MAX_FUSED_COLS": 1,
                        "looped_settings": lambda *_, c=int(cols), w=warps: (c, w),
                        "ONLINE_MIN_COLS": 1 << 62,
                    },
                )
            )
    if args.no_pdl and hasattr(mod, "pdl_enabled"):
        # The same kernels launched without programmatic dependent launch, at
        # the scaffold's own settings and at each candidate's.
        off = {"pdl_enabled": lambda device: False}
        out += [(f"{label},pdl=off", {**patch, **off}) for label, patch in out]
        out.append(("pdl=off", off))
    if hasattr(mod, "row_launch") or hasattr(mod, "looped_min_row_bytes"):
        for b in args.min_row_bytes:
            table = {key: b for key in _get(mod, "LOOPED_MIN_ROW_BYTES")}
            out.append((f"min_row_bytes={b}", {"LOOPED_MIN_ROW_BYTES": table}))
    return out


def copies(nbytes: int, pdl: bool) -> dict[str, Callable]:
    """--copy: copies of a point's bytes to time beside it, by name: torch's
    copy_ (a memcpy node in the graph, as porter bench times it) and a Triton
    kernel in three launches (16 KB a program with 4 warps, 32 KB with 8, 8
    KB with 4), each also with programmatic dependent launch where the
    scaffold has it; None where one does not fit."""
    out = {"copy_torch": same_size_copy(nbytes)}
    for block, warps in ((4096, 4), (8192, 8), (2048, 4)):
        for on in (False, True) if pdl else (False,):
            name = f"copy_triton_{block * 4 // 1024}k{warps}" + ("_pdl" if on else "")
            out[name] = triton_copy(nbytes, block, warps, pdl=on)
    return out


def probe(case, variants: dict, point, args, compiled: tuple | None) -> dict:
    """Time the scaffold and every candidate at one point of the sweep, each
    captured once in a CUDA graph and timed in `args.rounds` rounds of
    alternating order (porter.bench.timing.graph_times), the lowest round kept.
    With --rotate, the calls of a graph cycle through input sets
    (porter.bench.timing.rotation_sets), each checked on the first."""
    mod = case.kernel
    sc = Scenario(args.dtype, point.sizes)
    inputs = make_inputs(case, sc, "cuda", seed=0)
    results = {"case": args.case, "sizes": point.sizes, "dtype": args.dtype}
    fn = scaffold_entry(case, args.dtype, "cuda")
    expected = fn(*inputs)
    nbytes = tensor_bytes(inputs) + tensor_bytes(expected)
    sets = rotation_sets(nbytes, args.launches) if args.rotate else 1
    every = input_sets(case, sc, inputs, sets)
    if args.rotate:
        results["input_sets"] = sets
    first = neighbour(args.behind) if args.behind else None
    graphs = {}

    def each(make):
        # One call a set, in turn; the first call (the check below) takes set 0.
        return rotating([make(one) for one in every])

    def add(label, call):
        # Another reduction order may move the last bit: a sanity check, not
        # parity (run the parity suite on the settings you keep).
        try:
            got = call()
        except Exception as exc:  # noqa: BLE001
            if label == "default":
                raise
            # A candidate that does not compile (shared memory, registers) is
            # reported, and the others are still timed.
            results[label] = f"failed: {type(exc).__name__}: {str(exc)[:160]}"
            torch.cuda.synchronize()
            return
        if _close(expected, got):
            timed = behind(first, call) if first else call
            graphs[label] = capture_graph(timed, args.launches)
        else:
            results[label] = "differs"

    add("default", each(lambda one: lambda: fn(*one)))
    if first:
        results["behind_kind"] = args.behind
        graphs["behind"] = capture_graph(first, args.launches)

    for label, attrs in _candidates(mod, args):
        with _patched(mod, **attrs):
            add(label, each(lambda one: lambda: fn(*one)))
    for path, vmod in variants.items():
        vfn = scaffold_entry(case, args.dtype, "cuda", kernel=vmod)
        add(f"variant={path}", each(lambda one, vfn=vfn: lambda: vfn(*one)))
    if args.inductor:
        with torch.no_grad():
            references = rotated_references(
                case, compiled, args.dtype, every, point.num_tokens
            )
            add("inductor", references["inductor"])
            add("inductor_static", references["inductor_static"])
    if args.copy:
        results["bytes"] = nbytes
        pdl = _pdl(case, inputs)
        made = [copies(nbytes, pdl) for _ in range(sets)]
        for name, call in made[0].items():
            if all(m[name] is not None for m in made):
                graphs[name] = capture_graph(
                    rotating([m[name] for m in made]), args.launches
                )
    times = graph_times(
        {k: g.replay for k, g in graphs.items()}, _median_us, args.rounds
    )
    results.update({k: round(us / args.launches, 2) for k, us in times.items()})
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
    ap.add_argument(
        "--no-pdl",
        action="store_true",
        help="also time the scaffold, and each candidate, launched without "
        "programmatic dependent launch (its pdl_enabled patched to False)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="timing rounds a point, in alternating orders; the lowest is kept "
        "(6 settles most of the spread at 5-8 us decode points)",
    )
    ap.add_argument(
        "--inductor",
        action="store_true",
        help="also time the reference under torch.compile, dynamic (num_tokens "
        "symbolic) and static, in the same rounds",
    )
    ap.add_argument(
        "--launches",
        type=int,
        default=1,
        help="calls back to back in each graph, its time divided by them: a "
        "kernel's time inside a longer graph, as in an engine's decode step",
    )
    ap.add_argument(
        "--behind",
        choices=BEHIND,
        help="put this kernel before every call in the graph (add: an "
        "elementwise sum over 1 MiB, which never lets the next kernel launch "
        "early; mm: a 16 x 4096 x 4096 bf16 cuBLAS matmul): the pair's time; "
        "the neighbour alone is reported as 'behind'",
    )
    ap.add_argument(
        "--rotate",
        action="store_true",
        help="with --launches, each call in a graph takes the next of several "
        "input sets, together at least 256 MB, so that no call reads what the "
        "one before it left in the L2 cache",
    )
    ap.add_argument(
        "--copy",
        action="store_true",
        help="also time copies of the point's bytes (inputs and outputs, half "
        "read, half written): torch's copy_ and Triton kernels",
    )
    args = ap.parse_args()
    if args.launches < 1:
        ap.error("--launches: give 1 or more")
    if args.rounds < 1:
        ap.error("--rounds: give 1 or more")
    missing = [v for v in args.variant if not Path(v).is_file()]
    if missing:
        # Checked before anything compiles: kernel_variant writes no file
        # where its form does not apply to the case.
        ap.error(f"--variant: no such file: {', '.join(missing)}")
    if not torch.cuda.is_available():
        print("launch_probe: needs a CUDA GPU", file=sys.stderr)
        return 2
    case = load_case(f"captured/{args.case}")
    compiled = compiled_references(case) if args.inductor else None
    common = case.folder.parent / "common.py"  # where a variant's folder has none
    variants = {
        v: import_kernel(Path(v), f"variant{i}", common)
        for i, v in enumerate(args.variant)
    }
    model = parse_dims(args.dims)
    points = sweep(case.manifest, tuple(args.tokens), (args.dtype,), model_sizes=model)
    for point in points:
        print(json.dumps(probe(case, variants, point, args, compiled)), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
