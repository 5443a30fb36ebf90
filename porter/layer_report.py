"""The decoder-layer section of `porter report`: engine/layer.json (written by
tools/engine_layer.py) as a table of porter's layer against the same layer
without porter's kernels, with how many times any variant broke the graph or
recompiled after warmup."""

from __future__ import annotations

import json
from pathlib import Path

LAYER_JSON = Path("engine") / "layer.json"


def layer_section(folder: Path) -> list[str]:
    """Markdown lines for folder/engine/layer.json, or none where it is absent."""
    path = folder / LAYER_JSON
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    rows = data["rows"]
    sizes = ", ".join(f"{k} {v}" for k, v in data["sizes"].items())
    lines = [
        "",
        "## A decoder layer with porter's kernels as custom ops",
        "",
        f"A Llama-style layer ({sizes}; {data['dtype']}) with its RMSNorm, fused "
        "add + RMSNorm, rotary and SiLU-and-mul ops as plain PyTorch (`pure`) or as "
        "porter's captured kernels registered as custom ops (`porter`), both under "
        "torch.compile(fullgraph=True); docs/engine.md says how it is built. "
        "Ratios are porter / pure (below 1: porter's layer is "
        f"faster), {data['method']}. Error: the larger of the two outputs' max "
        "|out - float64 layer| / max |float64 layer|. Measured on "
        f"{data['gpu']}, torch {data['torch']}, triton {data['triton']}, {data['date']}.",
        "",
        "| tokens | layer | in CUDA graphs | compiled, no graph | eager | "
        "error porter / pure | graph breaks | recompiles after warmup |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        breaks = r["pure_graph_breaks"] + r["porter_graph_breaks"]
        lines.append(
            f"| {r['num_tokens']} | {r['form']} | "
            f"{_ratio(r, 'graph')} | {_ratio(r, 'compiled')} | {_ratio(r, 'eager')} | "
            f"{r['porter_graph_err']:.4f} / {r['pure_graph_err']:.4f} | "
            f"{breaks} | {r['compiles_after_warmup']} |"
        )
    graph = [r["porter_graph_ms"] / r["pure_graph_ms"] for r in rows]
    slower = [
        r["num_tokens"] for r in rows if r["porter_graph_ms"] > r["pure_graph_ms"]
    ]
    lines += [
        "",
        f"In CUDA graphs porter's layer takes {min(graph):.3f}-{max(graph):.3f}x "
        "the time of the layer without its kernels"
        + (
            f"; slower at {', '.join(map(str, slower))} tokens."
            if slower
            else ", at least as fast at every token count measured."
        ),
    ]
    slow = [
        r["num_tokens"] for r in rows if r["porter_compiled_ms"] > r["pure_compiled_ms"]
    ]
    host = data.get("host_us_per_rmsnorm_call")
    if slow and host:
        lines[-1] += (
            f" Outside CUDA graphs it is slower at {', '.join(map(str, sorted(set(slow))))} "
            "tokens, where the host's time per call decides: one rmsnorm call at one "
            f"token took {host['function']} µs of host time as the scaffold's function, "
            f"{host['op']} µs as its op, {host['compiled_op']} µs as the op under "
            f"torch.compile, against {host['compiled_reference']} µs for the reference "
            "compiled by Inductor (docs/engine.md)."
        )
    return lines


def _ratio(row: dict, how: str) -> str:
    p, q = row[f"porter_{how}_ms"], row[f"pure_{how}_ms"]
    return f"{p / q:.3f} ({p:.3f} / {q:.3f})"
