"""Timing on the GPU: each point's parity checked, then the ported kernel,
Inductor (dynamic and static) and eager timed as direct calls and as
CUDA-graph replays over rotating input sets."""

from __future__ import annotations

import datetime
import itertools
import time
from typing import Any, Callable

import torch

from porter.bench.fingerprint import kernel_fingerprint
from porter.bench.points import (
    ROTATE_MIN_BYTES,
    PREFILL_FROM,
    Point,
    dynamic_hints,
    gbps,
    model_label,
    pct_size_copy,
    point_flops,
    shape_label,
    size_copy_us,
    tensor_bytes,
)
from porter.testing.launches import compiled_variants, scaffold_kernels


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
