"""The sweep's points and what is counted at each: sizes, bytes, flops,
the copy a point's bytes would take."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import torch

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


def label_parts(shape: str) -> list[str]:
    """A shape label's NAME=V parts: split at each x between a value and the
    next name (num_experts and max_position keep theirs)."""
    return re.split(r"(?<=\d)x(?=[A-Za-z_])", shape)


def model_label(shape: str) -> str:
    """The model part of a shape label (the sizes after num_tokens); "-" when
    the case has no model dim (a KernelBench file with fixed sizes)."""
    return "x".join(label_parts(shape)[1:]) or "-"


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
    """A shape label's sizes: "num_tokens=4xhidden=8" -> {"num_tokens": 4, ...}
    (an x between a value and the next name: num_experts keeps its own)."""
    return {k: int(v) for k, v in (part.split("=") for part in label_parts(shape))}


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


# A graph of several calls cycles its calls through input sets that together
# are at least this many bytes, five times the H200's 50 MB L2: no call then
# reads what the call before it left in the cache, as one call a graph does
# after do_bench's flush. A set this size or larger serves every call alone.
ROTATE_MIN_BYTES = 256 << 20
