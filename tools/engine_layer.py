"""A Llama-style decoder layer in plain PyTorch, run with its norm, rotary and
activation ops as written and with porter's captured kernels in their place
(registered as custom ops), eager, under torch.compile(fullgraph=True) and
inside CUDA graphs: outputs against a float64 layer, graph breaks, recompiles
after warmup, and time per layer (docs/engine.md).

    python tools/engine_layer.py --out docs/benchmarks/engine   # on a GPU
    python tools/engine_layer.py --smoke                        # CPU: tiny sizes, eager only
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
# The captured cases the layer takes its ops from.
CASES = ("rmsnorm", "fused_add_rmsnorm", "rotary_neox", "silu_and_mul")
# Llama-3-8B's sizes.
LLAMA = {"hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "inter": 14336}
DECODE = [1, 16, 64, 256]
PREFILL = [4096, 16384]


def _load(path: Path, name: str):
    if path.name == "kernel.py":  # it imports from the common.py beside its case
        from porter.testing.parity import import_kernel

        return import_kernel(path, name)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Dynamo imports a traced function's module by name
    spec.loader.exec_module(module)
    return module


class Ops:
    """The layer's four small ops: the captured references (plain PyTorch), or
    porter's kernels as the custom ops `namespace::<case>`."""

    def __init__(self, porter: bool, namespace: str = "porter"):
        for case in CASES:
            folder = ROOT / "captured" / case
            if porter:
                kernel = _load(folder / "kernel.py", f"engine_layer_{case}_kernel")
                fn = kernel.register_op(namespace)
            else:
                fn = _load(
                    folder / "reference.py", f"engine_layer_{case}_ref"
                ).REFERENCE
            setattr(self, case, fn)


def make_weights(sizes: dict, dtype, device, seed: int = 0) -> dict:
    g = torch.Generator(device="cpu").manual_seed(seed)
    h, hd = sizes["hidden"], sizes["head_dim"]
    qkv = (sizes["heads"] + 2 * sizes["kv_heads"]) * hd

    def w(*shape, scale):
        return (torch.randn(*shape, generator=g) * scale).to(device=device, dtype=dtype)

    return {
        "input_norm": 1.0 + w(h, scale=0.1),
        "post_norm": 1.0 + w(h, scale=0.1),
        "qkv": w(qkv, h, scale=h**-0.5),
        "o": w(h, sizes["heads"] * hd, scale=(sizes["heads"] * hd) ** -0.5),
        "gate_up": w(2 * sizes["inter"], h, scale=h**-0.5),
        "down": w(h, sizes["inter"], scale=sizes["inter"] ** -0.5),
    }


def rope_cache(max_pos: int, head_dim: int, dtype, device):
    """vLLM's cos_sin_cache: per position, head_dim/2 cosines then as many sines."""
    inv = 1.0 / (
        500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    )
    angle = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat([angle.cos(), angle.sin()], dim=-1).to(device=device, dtype=dtype)


def sdpa(q, k, v):
    """Causal attention over (tokens, heads, head_dim) q, k, v (grouped kv heads)."""
    t = q.shape[0]
    attn = F.scaled_dot_product_attention(
        q.transpose(0, 1)[None],
        k.transpose(0, 1)[None],
        v.transpose(0, 1)[None],
        is_causal=True,
        enable_gqa=True,
    )
    return attn[0].transpose(0, 1).reshape(t, -1)


def chunked_attention(q, k, v, chunk: int = 4):
    """sdpa's math a few heads at a time, so float64 at 16k tokens fits."""
    t, nq, hd = q.shape
    group = nq // k.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    heads = []
    for h0 in range(0, nq, chunk):
        idx = torch.arange(h0, min(h0 + chunk, nq), device=q.device)
        qh = q[:, idx].transpose(0, 1)
        kh, vh = k[:, idx // group].transpose(0, 1), v[:, idx // group].transpose(0, 1)
        s = (qh @ kh.transpose(1, 2)) / math.sqrt(hd)
        s = s.masked_fill(~causal, float("-inf"))
        heads.append((s.softmax(-1) @ vh).transpose(0, 1))
        del s
    return torch.cat(heads, dim=1).reshape(t, nq * hd)


def layer(ops, p, sizes, x, residual, positions, cos_sin_cache, attention=sdpa):
    """One decoder layer, vLLM's calling convention: (hidden, residual) in and
    out; residual None on the first layer. Tokens are one causal sequence;
    q and k, adjacent in the fused QKV output, are rotated in one call."""
    t, hd = x.shape[0], sizes["head_dim"]
    nq, nkv = sizes["heads"], sizes["kv_heads"]
    if residual is None:
        residual = x
        h = ops.rmsnorm(x, p["input_norm"], 1e-6)
    else:
        h, residual = ops.fused_add_rmsnorm(x, residual, p["input_norm"], 1e-6)
    qkv = h @ p["qkv"].t()
    cos, sin = cos_sin_cache[positions].chunk(2, dim=-1)
    qk = ops.rotary_neox(qkv[:, : (nq + nkv) * hd].view(t, nq + nkv, hd), cos, sin)
    v = qkv[:, (nq + nkv) * hd :].reshape(t, nkv, hd)
    o = attention(qk[:, :nq], qk[:, nq:], v) @ p["o"].t()
    h, residual = ops.fused_add_rmsnorm(o, residual, p["post_norm"], 1e-6)
    mlp = ops.silu_and_mul(h @ p["gate_up"].t()) @ p["down"].t()
    return mlp, residual


def layer64(p, sizes, x, residual, positions, cos_sin_cache):
    """The same layer in float64, its ops the references: the yardstick both
    bf16 layers are scored against."""
    return layer(
        Ops(porter=False),
        {k: v.double() for k, v in p.items()},
        sizes,
        x.double(),
        None if residual is None else residual.double(),
        positions,
        cos_sin_cache.double(),
        attention=chunked_attention,
    )


def rel_err(got, ref64) -> float:
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")  # NaN never passes
    return ((got - ref64).abs().max() / ref64.abs().max().clamp_min(1e-30)).item()


def timed(calls: dict, graph: bool, reps: int = 10, rounds: int = 15):
    """(ms per call of each callable, the outputs of its last call): `reps`
    calls captured in one CUDA graph (graph) or launched from Python, the
    callables' rounds interleaved so clock drift hits them alike; medians."""
    runners, outputs = {}, {}
    for name, fn in calls.items():
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                outputs[name] = fn()
        torch.cuda.current_stream().wait_stream(stream)
        if graph:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(reps):
                    outputs[name] = fn()  # replays refill these
            runners[name] = g.replay
        else:
            runners[name] = lambda fn=fn: [fn() for _ in range(reps)]
        runners[name]()
    torch.cuda.synchronize()
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, run in runners.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                enable_timing=True
            )
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            times[name].append(start.elapsed_time(end) / reps)
    return {n: sorted(t)[len(t) // 2] for n, t in times.items()}, outputs


def host_us(fn, n: int = 300) -> float:
    """Host time of one call in µs (calls queued without waiting: at one token
    the GPU keeps up, so this is what the CPU spends launching)."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return round(elapsed / n * 1e6, 1)


def host_costs(dtype, hidden: int) -> dict:
    """µs of host time per rmsnorm call on one token: the scaffold's function,
    its op, the op and the reference each alone under torch.compile."""
    folder = ROOT / "captured" / "rmsnorm"
    kernel = _load(folder / "kernel.py", "engine_layer_host_rmsnorm")
    reference = _load(folder / "reference.py", "engine_layer_host_ref").REFERENCE
    op = kernel.register_op("porter_host")
    x = torch.randn(1, hidden, device="cuda", dtype=dtype)
    w = torch.randn(hidden, device="cuda", dtype=dtype)
    compiled_op = torch.compile(lambda x, w: op(x, w), fullgraph=True)
    compiled_ref = torch.compile(reference, fullgraph=True)
    return {
        "function": host_us(lambda: kernel.rmsnorm(x, w)),
        "op": host_us(lambda: op(x, w)),
        "compiled_op": host_us(lambda: compiled_op(x, w)),
        "compiled_reference": host_us(lambda: compiled_ref(x, w)),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tokens",
        default=",".join(map(str, DECODE + PREFILL)),
        help="token counts, comma-separated (default: %(default)s)",
    )
    ap.add_argument("--dtype", default="bfloat16", help="default: %(default)s")
    ap.add_argument("--out", default="", help="folder for layer.json")
    ap.add_argument(
        "--smoke", action="store_true", help="tiny sizes, eager, any device"
    )
    args = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.smoke:
        sys.exit("engine_layer: times a GPU; on the CPU run it with --smoke")
    sizes = dict(LLAMA)
    tokens = [int(t) for t in args.tokens.split(",")]
    if args.smoke:
        sizes = {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "inter": 96}
        tokens = [1, 5]
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before the kernels are loaded
    dtype = getattr(torch, args.dtype)
    pure, ported = Ops(porter=False), Ops(porter=True)
    p = make_weights(sizes, dtype, device)
    cache = rope_cache(max(tokens), sizes["head_dim"], dtype, device)
    torch._dynamo.config.cache_size_limit = 64
    compiled = {
        name: torch.compile(
            lambda x, r, pos, ops=ops: layer(ops, p, sizes, x, r, pos, cache),
            fullgraph=True,
            dynamic=False,
            # the CPU smoke run: Dynamo and AOT dispatch without a C++ compiler
            backend="aot_eager" if args.smoke else "inductor",
        )
        for name, ops in (("pure", pure), ("porter", ported))
    }
    counters = torch._dynamo.utils.counters
    rows = []
    for t in tokens:
        g = torch.Generator(device="cpu").manual_seed(t)
        x = torch.randn(t, sizes["hidden"], generator=g).to(device=device, dtype=dtype)
        res = torch.randn(t, sizes["hidden"], generator=g).to(
            device=device, dtype=dtype
        )
        pos = torch.arange(t, device=device)
        # The first layer's form (rmsnorm, no residual) at one decode and one prefill size.
        for first in (False, True) if t in (tokens[0], PREFILL[0]) else (False,):
            r = None if first else res
            row = {"num_tokens": t, "form": "first" if first else "middle"}
            ref = layer64(p, sizes, x, r, pos, cache)
            outs = {
                "pure_eager": layer(pure, p, sizes, x, r, pos, cache),
                "porter_eager": layer(ported, p, sizes, x, r, pos, cache),
            }
            for name, fn in compiled.items():
                # fullgraph=True raises at a break; the counter says so too.
                breaks = sum(counters["graph_break"].values())
                outs[f"{name}_compiled"] = fn(x, r, pos)
                row[f"{name}_graph_breaks"] = (
                    sum(counters["graph_break"].values()) - breaks
                )
            for name, (out, new_res) in outs.items():
                row[f"{name}_err"] = max(rel_err(out, ref[0]), rel_err(new_res, ref[1]))
            if not args.smoke:
                before = counters["stats"]["unique_graphs"]
                calls = {
                    name: lambda fn=fn: fn(x, r, pos) for name, fn in compiled.items()
                }
                eager = {
                    name: lambda ops=ops: layer(ops, p, sizes, x, r, pos, cache)
                    for name, ops in (("pure", pure), ("porter", ported))
                }
                for how, fns, graph in (
                    ("graph", calls, True),
                    ("compiled", calls, False),
                    ("eager", eager, False),
                ):
                    ms, got = timed(fns, graph)
                    for name in fns:
                        row[f"{name}_{how}_ms"] = ms[name]
                    if graph:  # what the replays computed
                        for name, (out, new_res) in got.items():
                            row[f"{name}_graph_err"] = max(
                                rel_err(out, ref[0]), rel_err(new_res, ref[1])
                            )
                row["compiles_after_warmup"] = (
                    counters["stats"]["unique_graphs"] - before
                )
            rows.append(row)
            print(json.dumps(row), flush=True)
    meta = {
        "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "triton": __import__("triton").__version__,
        "date": datetime.date.today().isoformat(),
        "dtype": args.dtype,
        "sizes": sizes,
        "method": "ms per layer; graph: 10 calls in one CUDA graph, compiled/eager: 10 "
        "calls launched from Python; median of 15 rounds, the variants' rounds interleaved",
    }
    if not args.smoke:
        meta["host_us_per_rmsnorm_call"] = host_costs(dtype, sizes["hidden"])
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "layer.json").write_text(
            json.dumps({**meta, "rows": rows}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
