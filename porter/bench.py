"""Stage: benchmark a ported kernel against Inductor and eager, decode to prefill.

For each point of the sweep (num_tokens x dtype at the case's model sizes):
check the scaffold's parity first, then time four things with
`triton.testing.do_bench` medians (it flushes L2 between runs) and again as
CUDA-graph replays (kernel-only time; host overhead dominates decode sizes):
the ported launcher, torch.compile with the capture's dynamic dims compiled
once, torch.compile with static shapes (one specialization per point), and
eager. Bandwidth is counted as each input read once plus each output written
once, against a device-to-device copy measured in the same run.

The GPU parts need CUDA; sweep generation, byte counting and the report,
table and plot rendering are plain Python (unit-tested on the CPU).
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import io
import itertools
import json
import math
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from porter.layer_report import layer_section
from porter.testing.launches import compiled_variants, scaffold_kernels

DEFAULT_TOKENS = (1, 2, 4, 16, 64, 256, 1024, 4096, 16384, 32768, 65536)
DTYPE_ORDER = ("bfloat16", "float16", "float32")
ROW_KEYS = (
    "case",
    "dtype",
    "num_tokens",
    "shape",
    "ported_us",
    "inductor_us",
    "inductor_static_us",
    "eager_us",
    "ported_graph_us",
    "inductor_graph_us",
    "inductor_static_graph_us",
    "eager_graph_us",
    "ported_gbps",
    "pct_copy_bw",
    "gpu",
    "torch",
    "triton",
    "date",
)


@dataclass
class Point:
    dtype: str
    sizes: dict[str, int]

    @property
    def num_tokens(self) -> int:
        return next(iter(self.sizes.values()))


def tensor_bytes(values: Any) -> int:
    """Bytes of every tensor in a (nested) tuple/list, each counted once."""
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (tuple, list)):
        return sum(tensor_bytes(v) for v in values)
    return 0


def sweep(
    manifest: dict[str, Any],
    tokens: tuple[int, ...] = DEFAULT_TOKENS,
    dtypes: tuple[str, ...] | None = None,
    bytes_per_point: Callable[[dict[str, int], str], int] | None = None,
    memory_limit: int | None = None,
    model_sizes: dict[str, list[int]] | None = None,
) -> list[Point]:
    """Points in dtype order (bf16 first), then model sizes (`model_sizes`
    overrides the captured ones: hidden 2048, 4096, 8192 ...), then token counts
    ascending; a point whose inputs and outputs would not fit in `memory_limit`
    bytes is left out."""
    runtime = [d["name"] for d in manifest["dims"] if d["role"] == "runtime"]
    base = {d["name"]: d["size"] for d in manifest["dims"]}
    model_sizes = model_sizes or {}
    unknown = sorted(set(model_sizes) - (set(base) - set(runtime)))
    if unknown:
        raise ValueError(
            f"{', '.join(unknown)}: not a model dim of this case "
            f"(model dims: {', '.join(k for k in base if k not in runtime) or 'none'})"
        )
    models = [{}]
    for name, values in model_sizes.items():
        models = [{**m, name: v} for m in models for v in values]
    supported = manifest["dtypes"]
    dtypes = dtypes or tuple(d for d in DTYPE_ORDER if d in supported)
    points = []
    for dtype in dtypes:
        for model in models:
            for n in sorted(tokens):
                sizes = {
                    **{r: n for r in runtime},
                    **{k: model.get(k, v) for k, v in base.items() if k not in runtime},
                }
                if (
                    memory_limit
                    and bytes_per_point
                    and bytes_per_point(sizes, dtype) > memory_limit
                ):
                    continue
                points.append(Point(dtype, sizes))
    return points


# Token counts from here on are timed against a dynamic compile of their own,
# traced at the first of them (compiled_references).
PREFILL_FROM = 1024


def dynamic_hints(points: list[Point]) -> list[int]:
    """For each point of a run, the num_tokens at which the dynamic compile it
    is timed against was traced. porter bench compiles the dynamic reference
    twice a run, for decode counts and for counts from PREFILL_FROM, and
    Dynamo traces each again for each dtype and model size (they are static),
    at the first such point of its range; a point of one token gets a graph
    of its own (Dynamo specializes a dim of size 1). Inductor tunes a traced
    graph's kernels for the sizes it was traced at: rotary_neox bf16 at 1024
    tokens took 24.8 µs traced at 2 tokens, 9.2 traced at 1024 (H200,
    lab/NOTES.md, "Calls AL-AQ")."""
    first: dict[tuple[str, str, bool], int] = {}
    hints = []
    for p in points:
        if p.num_tokens == 1:
            hints.append(1)
            continue
        key = (
            p.dtype,
            model_label(shape_label(p.sizes)),
            p.num_tokens >= PREFILL_FROM,
        )
        hints.append(first.setdefault(key, p.num_tokens))
    return hints


def model_label(shape: str) -> str:
    """The model part of a shape label (the sizes after num_tokens); "-" when
    the case has no model dim (a KernelBench file with fixed sizes)."""
    return "x".join(shape.split("x")[1:]) or "-"


def shape_label(sizes: dict[str, int]) -> str:
    return "x".join(f"{k}={v}" for k, v in sizes.items())


def gbps(nbytes: int, us: float) -> float:
    return nbytes / (us * 1e-6) / 1e9


# Dense tensor-core peaks in FLOP/s (no sparsity), by GPU name and dtype, from
# the vendor's datasheet. fp32 at fp32 accuracy on tensor cores takes three
# TF32 products a term (tf32x3, as porter's matmul kernel computes it): a
# third of the TF32 peak, the fastest fp32-accurate rate the GPU has.
PEAK_FLOPS = {
    "NVIDIA H200": {
        "bfloat16": 989.4e12,
        "float16": 989.4e12,
        "float32": 494.7e12 / 3,
    },
}


def sizes_of(shape: str) -> dict[str, int]:
    """A shape label's sizes: "num_tokens=4xhidden=8" -> {"num_tokens": 4, ...}."""
    return {k: int(v) for k, v in (part.split("=") for part in shape.split("x"))}


def point_flops(case, dtype: str, sizes: dict[str, int]) -> int | None:
    """The matmul FLOPs (two a multiply-add) the reference computes at a point,
    as torch's FlopCounterMode counts them, run on meta tensors (no data, no
    GPU); pointwise work and reductions count 0. None where the reference
    cannot run on meta tensors."""
    from torch.utils.flop_counter import FlopCounterMode

    from porter.testing.parity import Scenario, make_inputs, run_reference

    try:
        inputs = make_inputs(case, Scenario(dtype, dict(sizes)), "meta", seed=0)
        counter = FlopCounterMode(display=False)
        with counter:
            run_reference(case, inputs, dtype, "meta")
    except Exception:  # noqa: BLE001 - any op without a meta kernel
        return None
    return int(counter.get_total_flops())


def roofline_us(row: dict) -> tuple[float, float] | None:
    """A stored row's (µs its matmuls take at the GPU's dense peak, µs its
    bytes take at the copy bandwidth of the row's run); None where the flops,
    the bytes or the GPU's peak are not known."""
    peak = PEAK_FLOPS.get(row.get("gpu", ""), {}).get(row.get("dtype", ""))
    flops, nbytes = row.get("flops"), row.get("bytes")
    if not (peak and flops and nbytes and row.get("pct_copy_bw")):
        return None
    copy_gbps = row["ported_gbps"] * 100 / row["pct_copy_bw"]
    return flops / peak * 1e6, nbytes / (copy_gbps * 1e3)


def arithmetic_bound(row: dict) -> bool:
    """Whether a stored row's point is bound by arithmetic rather than memory:
    its matmuls at the GPU's dense peak take longer than its bytes at the copy
    bandwidth (the roofline's ridge). False where `roofline_us` does not know:
    such a point counts as memory-bound."""
    times = roofline_us(row)
    return times is not None and times[0] > times[1]


def size_copy_us(row: dict) -> float | None:
    """The faster copy of a stored row's bytes: torch's copy_ (copy_graph_us)
    or, in rows timed since 2026-12-03, the fastest Triton copy
    (copy_triton_graph_us); None where the row timed neither."""
    times = [row[k] for k in ("copy_graph_us", "copy_triton_graph_us") if row.get(k)]
    return min(times) if times else None


def pct_size_copy(row: dict) -> float:
    """The ported kernel's rate as % of the faster copy of the same bytes
    (size_copy_us), graph replays in one run: below 100, the kernel streams
    slower than a copy of its size does. A reference, not a ceiling: on the
    H200 ported kernels beat torch's copy alone by up to 37% at points where it
    (a memcpy node in the graph) ran slow, and equal bytes took it up to 1.4x
    as long from one point to another (lab/NOTES.md, "Calls
    BM-BP")."""
    return round(100 * size_copy_us(row) / row["ported_graph_us"], 1)


def size_copy_pct_bw(row: dict) -> float | None:
    """What the copy of a stored row's bytes reached, as % of its run's copy
    bandwidth (pct_copy_bw over pct_size_copy); None where the row timed no
    such copy."""
    if not row.get("pct_size_copy"):
        return None
    return row["pct_copy_bw"] * 100 / row["pct_size_copy"]


# ---------------------------------------------------------------- GPU timing


def _median_us(fn: Callable[[], Any]) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3


def capture_graph(fn: Callable[[], Any], launches: int = 1) -> "torch.cuda.CUDAGraph":
    """`launches` calls back to back captured in one CUDA graph (after three
    warm-up calls on a side stream, which compile and autotune outside the
    capture)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            fn()
    return graph


def _graph_us(fn: Callable[[], Any], launches: int = 1) -> float:
    """Kernel-only time: capture `launches` calls in a CUDA graph, time its
    replays, per call. With one, a decode-sized call's time is mostly the
    graph's own launch; with several, it is the call's time between
    neighbours, as inside an engine's decode graph."""
    return _median_us(capture_graph(fn, launches).replay) / launches


def same_size_copy(nbytes: int) -> Callable[[], Any] | None:
    """A device-to-device copy moving `nbytes` (half read, half written), as
    torch makes it (copy_ of contiguous bytes: a cudaMemcpyAsync, captured as a
    memcpy node), to time beside a kernel moving as many bytes; None where its
    buffers do not fit beside the point's."""
    try:
        src = torch.empty(max(nbytes // 2, 1), dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return None
    return lambda: dst.copy_(src)


def _pdl(case, inputs: list) -> bool:
    """Whether the case's scaffold launches with programmatic dependent launch
    on the GPU holding its first tensor input."""
    enabled = getattr(case.kernel, "pdl_enabled", None)
    first = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
    return bool(enabled and first is not None and enabled(first.device))


# The Triton copies are timed up to this many bytes a point: from 50 MB
# torch's copy was the faster in every run on an H200 (lab/NOTES.md,
# "Calls BU-BY" and "Calls DM-DP"), and at the largest points their buffers,
# as large as the point's, would crowd the graphs out of GPU memory.
TRITON_COPY_MAX_BYTES = 256 << 20


def size_copies(nbytes: int, sets: int, pdl: bool) -> dict[str, Callable[[], Any]]:
    """Copies of `nbytes` to graph beside a point, each with buffers of its own
    for each of `sets` input sets, taken in turn: "copy" (torch's copy_) and,
    up to TRITON_COPY_MAX_BYTES, "copy_triton_<words>w<warps>[_pdl]"
    (porter.yardstick's launches, those with PDL only where the scaffold has
    it). A copy whose buffers do not fit is left out."""
    from porter.yardstick import COPY_LAUNCHES, triton_copy

    made = {"copy": [same_size_copy(nbytes) for _ in range(sets)]}
    for words, warps, on in COPY_LAUNCHES:
        if (on and not pdl) or nbytes > TRITON_COPY_MAX_BYTES:
            continue
        name = f"copy_triton_{words}w{warps}" + ("_pdl" if on else "")
        made[name] = [triton_copy(nbytes, words, warps, pdl=on) for _ in range(sets)]
    return {
        name: rotating(calls)
        for name, calls in made.items()
        if all(c is not None for c in calls)
    }


# A graph of several calls cycles its calls through input sets that together
# are at least this many bytes, five times the H200's 50 MB L2: no call then
# reads what the call before it left in the cache, as one call a graph does
# after do_bench's flush. A set this size or larger serves every call alone.
ROTATE_MIN_BYTES = 256 << 20


def rotation_sets(set_bytes: int, launches: int) -> int:
    """How many input sets a graph of `launches` calls cycles through, each
    set `set_bytes` (inputs and outputs)."""
    if launches <= 1:
        return 1
    return max(1, min(launches, -(-ROTATE_MIN_BYTES // max(set_bytes, 1))))


def rotating(calls: list[Callable[[], Any]]) -> Callable[[], Any]:
    """One callable that runs calls[0], calls[1], ... in turn, one a call:
    captured `launches` times in a graph, each capture takes the next."""
    turn = itertools.count()
    return lambda: calls[next(turn) % len(calls)]()


def input_sets(case, scenario, first: list, sets: int, seed: int = 0) -> list[list]:
    """`first` and `sets - 1` more input sets of the same scenario on the GPU,
    each of its own seed, for a graph's calls to cycle through."""
    from porter.testing.parity import make_inputs

    more = [
        make_inputs(case, scenario, "cuda", seed=seed + 1000 * k)
        for k in range(1, sets)
    ]
    return [first] + more


def rotated_references(
    case, compiled: tuple, dtype: str, every: list[list], num_tokens: int
) -> dict[str, Callable[[], Any]]:
    """reference_calls over each input set of `every`, each name's calls taken
    in turn (rotating)."""
    refs = [reference_calls(case, compiled, dtype, one, num_tokens) for one in every]
    return {name: rotating([r[name] for r in refs]) for name in refs[0]}


def copy_bandwidth_gbps(nbytes: int = 1 << 30) -> float:
    """Device-to-device copy, bytes read plus bytes written, in GB/s."""
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = _median_us(lambda: dst.copy_(src))
    return gbps(nbytes, us)


def code_text(source: str) -> str:
    """A kernel.py's code without its comments, docstrings and blank lines:
    what a fingerprint of the code it runs hashes. Lines, as in the file
    (Python versions tokenize and dump syntax trees differently; comment tokens
    and docstring lines they agree on)."""
    tree = ast.parse(source)
    dropped: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(
                node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            )
            and ast.get_docstring(node, clean=False) is not None
        ):
            doc = node.body[0]
            dropped.update(range(doc.lineno, doc.end_lineno + 1))
    comment_at = {
        tok.start[0]: tok.start[1]
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    kept = []
    for number, line in enumerate(source.splitlines(), 1):
        if number in dropped:
            continue
        line = line[: comment_at.get(number, len(line))].rstrip()
        if line:
            kept.append(line)
    return "\n".join(kept)


def kernel_fingerprint(folder: Path) -> str | None:
    """Short hash of the code of a case's kernel.py as it is now (code_text: a
    change to its comments or docstrings alone, such as a measured figure,
    keeps it): a bench row carries the one it timed, so the report can tell
    rows of a kernel.py whose code was edited or regenerated since. The whole
    file's bytes where it does not parse."""
    path = Path(folder) / "kernel.py"
    if not path.is_file():
        return None
    return code_fingerprint(path.read_bytes())


def code_fingerprint(raw: bytes) -> str:
    """kernel_fingerprint of a kernel.py's bytes."""
    try:
        raw = code_text(raw.decode()).encode()
    except (SyntaxError, UnicodeDecodeError, tokenize.TokenError):
        pass
    return hashlib.sha256(raw).hexdigest()[:12]


def _timed_first_call(fn: Callable[[], Any]) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def cuda_reference(case):
    """The case's reference on the GPU (a KernelBench Model moved there)."""
    reference = case.reference.build()
    if isinstance(reference, torch.nn.Module):
        reference = reference.to("cuda")
    return reference


def uncached_compiles() -> None:
    """Make this process's torch.compile compile every graph itself. Inductor's
    FX graph cache keys a dynamic graph by its symbolic shapes, not by the size
    it was traced at: a run that starts at 1024 tokens would be handed the
    graph an earlier run traced at 2, with kernels tuned for 2 (seen on the
    H200: 2-4x the time from 1024 tokens, recorded as traced at 1024). Also
    makes the first-call time a cold compile."""
    for config in (torch.compiler.config, torch._inductor.config):
        if hasattr(config, "force_disable_caches"):  # where this torch keeps it
            config.force_disable_caches = True
            return
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False


def compiled_references(case) -> tuple[Any, Callable, Callable, Callable]:
    """(the reference on the GPU, its dynamic compile for decode counts, its
    static compile, its dynamic compile for counts from PREFILL_FROM), as
    porter bench times them. Dynamic as an engine compiles it: only the
    capture's runtime dims (num_tokens) symbolic, once the inputs are marked
    (mark_runtime_dims), model sizes static; the prefill one is traced at
    prefill sizes, so that large points are not timed against kernels tuned
    for a decode batch. Static: one specialization per shape. A wrapper each,
    since Dynamo caches per code object, so that each keeps its own
    specializations. No compile comes from a disk cache (uncached_compiles)."""
    uncached_compiles()
    if hasattr(torch._dynamo.config, "recompile_limit"):
        torch._dynamo.config.recompile_limit = 1024
    torch._dynamo.config.cache_size_limit = 1024
    reference = cuda_reference(case)

    def dynamic_ref(*args):
        return reference(*args)

    def static_ref(*args):
        return reference(*args)

    def prefill_ref(*args):
        return reference(*args)

    dynamic = torch.compile(dynamic_ref, dynamic=False)
    static = torch.compile(static_ref, dynamic=False)
    prefill = torch.compile(prefill_ref, dynamic=False)
    return reference, dynamic, static, prefill


def run(
    case, points: list[Point], progress=print, rounds: int = 2, launches: int = 1
) -> tuple[list[dict], dict]:
    """Time every point on the current CUDA device; returns rows and run facts.
    rounds: graph-replay rounds a point (graph_times); launches: calls back to
    back in each graph (_graph_us), cycling through input sets of their own
    where one set would stay in the L2 cache (rotation_sets)."""
    import triton

    from porter.testing.parity import Scenario, check_parity, make_inputs

    compiled = compiled_references(case)
    scaffold = _scaffold_callable(case)
    copy_bw = copy_bandwidth_gbps()
    facts = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": datetime.date.today().isoformat(),
        "copy_gbps": round(copy_bw, 1),
        "kernel_sha": kernel_fingerprint(case.folder),
    }
    kernels = scaffold_kernels(case.kernel)
    hints = dynamic_hints(points)
    rows = []
    for i, point in enumerate(points):
        progress(
            f"[{i + 1}/{len(points)}] {case.name} {point.dtype} {shape_label(point.sizes)}"
        )
        try:
            sc = Scenario(point.dtype, dict(point.sizes))
            inputs = make_inputs(case, sc, "cuda", seed=i)
            references = reference_calls(
                case, compiled, point.dtype, inputs, point.num_tokens
            )
            if i == 0:
                # Before anything else runs them: compile + first launch, as an engine
                # starting up pays it (Triton's disk cache as found; Inductor's is off).
                with torch.no_grad():
                    first = _timed_first_call(lambda: scaffold(point.dtype)(*inputs))
                    facts["ported_first_call_s"] = round(first, 3)
                    first = _timed_first_call(references["inductor"])
                    facts["inductor_first_call_s"] = round(first, 3)
            check_parity(case, sc, device="cuda", seed=i)  # correct before timed
            with torch.no_grad():
                calls = {"ported": lambda: scaffold(point.dtype)(*inputs), **references}
                row = {
                    "case": case.name,
                    "dtype": point.dtype,
                    "num_tokens": point.num_tokens,
                    "shape": shape_label(point.sizes),
                    "model": model_label(shape_label(point.sizes)),
                }
                for name, fn in calls.items():
                    fn()  # warm up (compiles static for this shape)
                    row[f"{name}_us"] = round(_median_us(fn), 2)
                nbytes = tensor_bytes(inputs) + tensor_bytes(calls["ported"]())
                sets = rotation_sets(nbytes, launches)
                every = input_sets(case, sc, inputs, sets, seed=i)
                graphed = {
                    "ported": rotating(
                        [lambda one=one: scaffold(point.dtype)(*one) for one in every]
                    ),
                    **rotated_references(
                        case, compiled, point.dtype, every, point.num_tokens
                    ),
                }
                # Copies of the point's bytes, timed among the others so that
                # they share their rounds' order.
                graphed.update(size_copies(nbytes, sets, _pdl(case, inputs)))
                timed = graph_times(graphed, lambda f: _graph_us(f, launches), rounds)
                triton_copies = {
                    k: timed.pop(k) for k in list(timed) if k.startswith("copy_triton")
                }
                for name, us in timed.items():
                    row[f"{name}_graph_us"] = round(us, 2)
                if triton_copies:
                    fastest = min(triton_copies, key=triton_copies.get)
                    row["copy_triton_graph_us"] = round(triton_copies[fastest], 2)
                    row["copy_triton_launch"] = fastest.removeprefix("copy_triton_")
                row["graph_rounds"] = rounds
                row["graph_launches"] = launches
                row["input_sets"] = sets
                row["dynamic_traced_at"] = hints[i]
                row["inductor_caches"] = "off"  # uncached_compiles: traced here
            row["bytes"] = nbytes
            flops = point_flops(case, point.dtype, point.sizes)
            if flops is not None:
                row["flops"] = flops
            row["ported_gbps"] = round(gbps(nbytes, row["ported_graph_us"]), 1)
            row["pct_copy_bw"] = round(100 * row["ported_gbps"] / copy_bw, 1)
            if size_copy_us(row):
                row["pct_size_copy"] = pct_size_copy(row)
            row.update(
                {k: facts[k] for k in ("gpu", "torch", "triton", "date", "kernel_sha")}
            )
            # Variants Triton has compiled for the ported kernels so far (its own
            # caches, as porter jitcheck reads them): flat across num_tokens
            # means the token count never recompiles.
            row["ported_variants"] = compiled_variants(kernels)
            rows.append(row)
        except torch.cuda.OutOfMemoryError:
            # The parity check's float64 copies are the largest tensors; leave
            # the point out, say so, and go on with the smaller ones.
            torch.cuda.empty_cache()
            progress(
                f"{case.name} {shape_label(point.sizes)}: out of GPU memory, left out"
            )
            facts.setdefault("left_out", []).append(shape_label(point.sizes))
    return rows, facts


def graph_times(
    calls: dict[str, Callable[[], Any]],
    time_graph: Callable[[Callable], float],
    rounds: int = 2,
) -> dict[str, float]:
    """Each call's graph-replay time, the lowest of `rounds` rounds timed in
    alternating orders: no call is always the first timed at a point. On the
    H200 the call timed first (the ported one) replayed 1.06-1.14x slower than
    its direct launch at points moving 2 GB or more, and no other did; two
    rounds brought those points back to their direct times
    (lab/NOTES.md, "Suspect measurements"). More rounds are meant
    for the 5-8 µs decode points, whose spread from run to run is as large as
    the gaps there; whether they narrow it is not yet measured."""
    names = list(calls)
    best: dict[str, float] = {}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            us = time_graph(calls[name])
            best[name] = min(us, best.get(name, us))
    return {name: best[name] for name in names}


def mark_runtime_dims(manifest: dict[str, Any], inputs: list[Any]) -> list[Any]:
    """Mark the inputs' runtime dims (num_tokens) dynamic for torch.compile, as an
    engine compiles the reference: model sizes stay static."""
    names = manifest.get("input_names", [])
    for d in manifest["dims"]:
        if d["role"] != "runtime":
            continue
        for n, axis in d.get("axes", []):
            if n not in names or names.index(n) >= len(inputs):
                continue
            value = inputs[names.index(n)]
            if isinstance(value, torch.Tensor):
                torch._dynamo.maybe_mark_dynamic(value, axis)
    return inputs


def _alias(v):
    # The same storage under another tensor object: marking a dim dynamic for
    # the dynamic compile must not leak into the static one's inputs.
    return v.view_as(v) if isinstance(v, torch.Tensor) else v


def _cast_module(reference, dtype: str):
    if isinstance(reference, torch.nn.Module):
        return reference.to(getattr(torch, dtype))
    return reference


def reference_calls(
    case, compiled: tuple, dtype: str, inputs: list, num_tokens: int
) -> dict:
    """The reference's calls at one point, as porter bench times them:
    "inductor" (the dynamic compile of the point's range, on aliases of the
    inputs with their runtime dims marked), "inductor_static" and "eager" (the
    reference cast to dtype in place). compiled: compiled_references(case)."""
    reference, dynamic, static, prefill = compiled
    if num_tokens >= PREFILL_FROM:
        dynamic = prefill
    dyn_inputs = mark_runtime_dims(case.manifest, [_alias(v) for v in inputs])
    model = _cast_module(reference, dtype)
    return {
        "inductor": lambda: dynamic(*dyn_inputs),
        "inductor_static": lambda: static(*inputs),
        "eager": lambda: model(*inputs),
    }


def _scaffold_callable(case):
    """The scaffold's entry point per dtype, a KernelBench model built once each."""
    from porter.testing.parity import scaffold_entry

    models = {}

    def get(dtype):
        if dtype not in models:
            models[dtype] = scaffold_entry(case, dtype, "cuda")
        return models[dtype]

    return get


# ---------------------------------------------------------------- reports


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
    lines += layer_section(folder)
    lines.append("")
    lines += [f"![{p.stem}]({p.name})" for p in sorted(folder.glob("*.png"))]
    return "\n".join(lines) + "\n"
