"""Stage: find unintended JIT recompiles of a case's kernels before production does.

Warm the kernels up the way an engine does (fresh allocations, a few token
counts, the layouts it will use), then sweep num_tokens and views and report
every kernel variant that appears after warmup.

A variant is keyed by Triton's specialization rules: an integer argument not in
`do_not_specialize` is specialized when it equals 1 or is divisible by 16; a
pointer is specialized on 16-byte alignment unless it is in
`do_not_specialize_on_alignment`; constexprs are part of the key. On the CPU
nothing is compiled, so the keys are computed per launch and counted; on a GPU
the kernel caches are read as well, so what Triton really compiled is reported.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from porter.port.finish.pdl import EARLY_TRIGGER
from porter.testing.launches import (
    LAUNCH_OPTIONS,
    LaunchRecorder,
    compiled_variants,
    scaffold_kernels,
    specialization_key,
    unspecialized,
)
from porter.testing.parity import (
    Case,
    Scenario,
    make_inputs,
    run_scaffold,
    scaffold_entry,
)

# Decode sizes (1, an odd count, a multiple of 16) and 512, the largest batch
# vLLM captures a CUDA graph for by default; jitcheck adds the sweep's largest
# count, as an engine's profile run at its largest batch does: porter's launch
# heuristics pick their blocks and warps from the token count (decode or
# prefill), switching once as the count grows, and that warmup compiles both
# sides; few wide rows split over several programs (under 512 rows) is the one
# regime before them. A choice that switched at another count (the persistent
# kernels' eviction hint once did) leaves a variant between them, which the
# sweep finds.
WARMUP_TOKENS = (1, 7, 64, 512)
GPU_SWEEP = (1, 2, 4, 16, 64, 256, 1024, 4096, 16384, 32768)
# On the CPU the interpreter takes about 0.1 s per 40k elements, so from
# KEYS_ONLY_FROM tokens on the launches are keyed, not run: the launcher sees
# uninitialized inputs of the same shapes and layouts, and the kernels are not
# called. That is enough for the key, and it reaches the prefill sizes where
# launch heuristics switch (a switch at 1024 tokens once went unseen on the CPU).
# Wide rows are keyed from fewer tokens: past KEYS_ONLY_ELEMENTS input elements
# (about 0.6 s interpreted) a run adds seconds and no key.
KEYS_ONLY_FROM = 1024
KEYS_ONLY_ELEMENTS = 1 << 18
CPU_SWEEP = (1, 2, 3, 4, 7, 8, 16, 17, 31, 32, 63, 64, 100, 128, 255, 256) + tuple(
    n for n in GPU_SWEEP if n >= KEYS_ONLY_FROM
)


@dataclass
class Variant:
    kernel: str
    key: tuple
    tokens: int
    layout: str
    changes: list[str] = field(default_factory=list)  # vs the nearest warmed variant

    def describe(self) -> str:
        if self.changes:
            return "; ".join(self.changes)
        parts = [
            f"{name} {what}" for name, what in self.key if what not in ("", "runtime")
        ]
        return ", ".join(parts) or "no specialization"


def _changes(key: tuple, warmed: list[tuple]) -> list[str]:
    """What differs from the closest warmed key of the same kernel."""
    if not warmed:
        return []
    best = min(warmed, key=lambda w: sum(a != b for a, b in zip(key, w)))
    out = []
    for (name, now), (_, before) in zip(key, best):
        if now != before:
            out.append(
                f"{name}: {before or 'not specialized'} -> {now or 'not specialized'}"
            )
    return out


@dataclass
class JitReport:
    case: str
    device: str
    warmup_layouts: list[str]
    launches: int
    warm_variants: int
    new_variants: list[Variant] = field(default_factory=list)
    compiled_after_warmup: int | None = None  # GPU: what Triton actually compiled
    torch_compile: dict[str, int] | None = None
    advice: list[str] = field(default_factory=list)
    warmup_tokens: list[int] = field(default_factory=list)
    keys_only_tokens: list[int] = field(default_factory=list)  # CPU: keyed, not run
    dtype: str = ""  # the inputs' dtype (a scaffold may launch other kernels by it)

    @property
    def clean(self) -> bool:
        return not self.new_variants and not self.compiled_after_warmup


def _elements(case: Case, sc: Scenario) -> int:
    """The elements of the scenario's input tensors, from shapes alone."""
    shapes = case.reference.make_inputs(sc.sizes, sc.dtype, "meta")
    return sum(v.numel() for v in shapes if isinstance(v, torch.Tensor))


def _launch(
    rec: LaunchRecorder, case: Case, tokens: int, layout: str, dtype: str, device: str
) -> bool:
    """Launch the scaffold at `tokens`; False where it was keyed, not run."""
    rec.context = (tokens, layout)
    sizes = {d["name"]: d["size"] for d in case.manifest["dims"]}
    sizes.update({d["name"]: tokens for d in case.runtime_dims()})
    sc = Scenario(dtype, sizes, layout=layout)
    run = device != "cpu" or (
        tokens < KEYS_ONLY_FROM and _elements(case, sc) <= KEYS_ONLY_ELEMENTS
    )
    rec.execute = run
    inputs = make_inputs(case, sc, device, seed=0, filled=run)
    if run:
        run_scaffold(case, inputs, dtype, device)
    else:
        with torch.no_grad():  # the kernels are not called: nothing to poison
            scaffold_entry(case, dtype, device)(*inputs)
    return run


def jitcheck(
    case: Case,
    device: str = "cpu",
    tokens: tuple[int, ...] | None = None,
    warm_layouts: tuple[str, ...] = ("contiguous",),
    warm_tokens: tuple[int, ...] | None = None,
    sweep_layouts: tuple[str, ...] = ("contiguous", "offset", "row_sliced"),
    dtype: str | None = None,
    progress=lambda message: None,
) -> JitReport:
    dtype = dtype or case.dtypes[0]
    tokens = tokens or (GPU_SWEEP if device == "cuda" else CPU_SWEEP)
    if warm_tokens is None:
        warm_tokens = (*(n for n in WARMUP_TOKENS if n < max(tokens)), max(tokens))
    kernels = scaffold_kernels(case.kernel)
    keys_only = set()

    def launch(rec: LaunchRecorder, n: int, layout: str) -> None:
        if not _launch(rec, case, n, layout, dtype, device):
            keys_only.add(n)

    with LaunchRecorder(kernels) as rec:
        for layout in warm_layouts:
            for n in warm_tokens:
                launch(rec, n, layout)
        warm = set(rec.seen)
        compiled_warm = compiled_variants(kernels)
        for layout in sweep_layouts:
            progress(f"sweeping {len(tokens)} token counts, {layout} inputs")
            for n in tokens:
                launch(rec, n, layout)
        compiled_after = compiled_variants(kernels)
    new = [
        Variant(
            kernel,
            key,
            *rec.seen[(kernel, key)],
            changes=_changes(key, [w for k, w in warm if k == kernel]),
        )
        for kernel, key in rec.seen
        if (kernel, key) not in warm
    ]
    report = JitReport(
        case=case.name,
        device=device,
        warmup_layouts=list(warm_layouts),
        launches=rec.launches,
        warm_variants=len(warm),
        new_variants=new,
        compiled_after_warmup=(
            compiled_after - compiled_warm if compiled_after is not None else None
        ),
        dtype=dtype,
    )
    report.warmup_tokens = list(warm_tokens)
    report.keys_only_tokens = sorted(keys_only)
    report.advice = _advice(report)
    return report


def _advice(report: JitReport) -> list[str]:
    out = []
    for v in report.new_variants:
        if v.layout == "offset":
            out.append(
                f"{v.kernel}: a view offset by one element breaks 16-byte pointer alignment "
                "and compiles a new variant. For pointers used only for scalar access, add "
                "them to @triton.jit(do_not_specialize_on_alignment=[...]); otherwise warm "
                "this variant up or keep the views aligned."
            )
        elif v.layout == "row_sliced":
            out.append(
                f"{v.kernel}: a row-sliced view changes a stride's specialization (divisible "
                "by 16 or not); warm the engine's real layouts up, or add the stride to "
                "do_not_specialize if it varies per call."
            )
        elif v.changes and all(_launch_choice(c) for c in v.changes):
            out.append(
                f"{v.kernel}: token count {v.tokens} takes other launch settings "
                f"({v.describe()}): the launcher's heuristic picks them by token "
                "count; warm this count up too (an engine's warmup over its batch "
                "sizes and its profile run at the largest do)."
            )
        else:
            out.append(
                f"{v.kernel}: token count {v.tokens} compiled a new variant ({v.describe()}); "
                "add the integer arguments that vary per call to do_not_specialize."
            )
    return sorted(set(out))


def _launch_choice(change: str) -> bool:
    """A change of a block size or a launch option (`BLOCK_ROWS: ... -> ...`),
    or of EARLY_TRIGGER, which a tile launcher derives from its block."""
    name = change.split(":", 1)[0]
    return name.startswith("BLOCK_") or name in (*LAUNCH_OPTIONS, EARLY_TRIGGER)


def torch_compile_baseline(
    case: Case, device: str, tokens, dtype: str
) -> dict[str, int]:
    """How many graphs and recompiles torch.compile needs for the same sweep."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    fn = case.reference.build()
    if isinstance(fn, torch.nn.Module):
        fn = fn.to(device)
    compiled = torch.compile(fn)
    sizes = {d["name"]: d["size"] for d in case.manifest["dims"]}
    for layout in ("contiguous", "offset", "row_sliced"):
        for n in tokens:
            sizes.update({d["name"]: n for d in case.runtime_dims()})
            inputs = make_inputs(
                case, Scenario(dtype, dict(sizes), layout=layout), device, 0
            )
            with torch.no_grad():
                compiled(*inputs)
    stats = dict(counters["stats"])
    torch._dynamo.reset()
    return {
        "unique_graphs": int(stats.get("unique_graphs", 0)),
        "calls_captured": int(stats.get("calls_captured", 0)),
    }


def format_report(report: JitReport) -> str:
    lines = [
        f"{report.case} on {report.device}"
        + (f" in {report.dtype}" if report.dtype else "")
        + f": {report.launches} launches, "
        f"{report.warm_variants} variant(s) after warming up {', '.join(report.warmup_layouts)} inputs"
        + (
            f" at {', '.join(map(str, report.warmup_tokens))} tokens"
            if report.warmup_tokens
            else ""
        )
    ]
    if report.keys_only_tokens:
        counts = ", ".join(map(str, report.keys_only_tokens))
        lines.append(f"keyed without running the kernels (CPU) at {counts} tokens")
    if report.compiled_after_warmup is not None:
        lines.append(
            f"Triton compiled {report.compiled_after_warmup} variant(s) after warmup"
        )
    for v in report.new_variants:
        lines.append(
            f"  new variant of {v.kernel} at num_tokens={v.tokens}, {v.layout} inputs: {v.describe()}"
        )
    lines += [f"  fix: {a}" for a in report.advice]
    if report.torch_compile is not None:
        tc = report.torch_compile
        lines.append(
            f"torch.compile for the same sweep: {tc['unique_graphs']} graph(s) compiled"
        )
    lines.append("clean: no variant after warmup" if report.clean else "NOT clean")
    return "\n".join(lines)
