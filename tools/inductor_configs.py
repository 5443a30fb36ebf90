"""Show what Inductor runs at a point of the sweep (GPU only): each Triton kernel
the reference's torch.compile launched, with the config its autotuner picked
(block sizes, warps, stages), the time of one CUDA-graph replay of the whole
compiled function, and, with --source, the kernel's code. The point of
comparison when a scaffold is slower than Inductor at some size.

    python3 tools/inductor_configs.py softmax --dims vocab=32768 --dtype float32 \
        --tokens 16384
    python3 tools/inductor_configs.py rmsnorm --dims hidden=8192 --tokens 65536 \
        --dynamic --source

Static shapes by default (Inductor's best case, as `porter bench` times it);
--dynamic marks the case's runtime dims dynamic. One JSON line per point.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import warnings

import torch

from porter.bench.points import sweep
from porter.bench.timing import (
    _cast_module,
    _graph_us,
    cuda_reference,
    mark_runtime_dims,
    uncached_compiles,
)
from porter.sizes import add_dims_option, parse_dims
from porter.testing.parity import Scenario, load_case, make_inputs


def _autotuners() -> list:
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    found = []
    with warnings.catch_warnings():
        # isinstance on some of gc's objects (lazy modules) warns
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            try:
                if isinstance(obj, CachingAutotuner):
                    found.append(obj)
            except ReferenceError:  # a dead weakref proxy among gc's objects
                continue
    return found


def _describe(tuner, source: bool) -> dict:
    name = getattr(tuner.fn, "__name__", None) or tuner.fn.fn.__name__
    out = {"kernel": name}
    launchers = getattr(tuner, "launchers", []) or []
    if len(launchers) == 1:
        cfg = launchers[0].config
        out["config"] = {
            **cfg.kwargs,
            "num_warps": cfg.num_warps,
            "num_stages": cfg.num_stages,
        }
    else:
        out["config"] = f"{len(launchers)} configs (not narrowed to one yet)"
    out["candidates"] = len(getattr(tuner, "configs", []) or [])
    if source:
        out["source"] = tuner.fn.src
    return out


def inspect(case, point, args) -> dict:
    uncached_compiles()  # each point traced at its own size, not a cached graph
    torch._dynamo.reset()
    before = {id(t) for t in _autotuners()}
    reference = cuda_reference(case)
    # A KernelBench Model's parameters in the point's dtype, as the bench has them.
    reference = _cast_module(reference, point.dtype)
    inputs = make_inputs(case, Scenario(point.dtype, point.sizes), "cuda", seed=0)
    if args.dynamic:
        inputs = mark_runtime_dims(case.manifest, inputs)
    compiled = torch.compile(reference, dynamic=False)
    compiled(*inputs)  # compiles and autotunes
    result = {"case": args.case, "sizes": point.sizes, "dtype": point.dtype}
    result["graph_us"] = _graph_us(lambda: compiled(*inputs))
    # Inductor may hold a second autotuner of a kernel that never launched
    # (0 launchers): only those that ran are listed.
    result["kernels"] = [
        _describe(t, args.source)
        for t in _autotuners()
        if id(t) not in before and getattr(t, "launchers", None)
    ]
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", help="a case folder under captured/")
    add_dims_option(ap)
    ap.add_argument("--tokens", type=int, nargs="*", default=[1, 4096])
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument(
        "--dynamic", action="store_true", help="runtime dims dynamic, as engines"
    )
    ap.add_argument("--source", action="store_true", help="print each kernel's code")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("inductor_configs: needs a CUDA GPU", file=sys.stderr)
        return 2
    case = load_case(f"captured/{args.case}")
    model = parse_dims(args.dims)
    points = sweep(case.manifest, tuple(args.tokens), (args.dtype,), model_sizes=model)
    for point in points:
        print(json.dumps(inspect(case, point, args)), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
