"""The performance corpus: the engine references of examples/engine at the
sizes of real checkpoints, to time porter's launch rules on shapes the
captured/ cases never had (issue 47).

    python3 tools/perf_corpus.py --capture .perf/cases   # CPU captures, here
    python3 tools/perf_corpus.py --plan                  # PLAN lines for
        PLAN="$(python3 tools/perf_corpus.py --plan)" CASES=.perf/cases \
        RESULTS=docs/benchmarks/perf bash tools/h200_bench.sh

`porter report` summarizes the rows in docs/benchmarks/perf/ under
"Performance corpus".
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "examples" / "engine"

# Decode (1, 16), a batch of decodes (256) and prefill (4096, 16384) tokens.
TOKENS = (1, 16, 256, 4096, 16384)

# reference -> model sizes (each a --dims line), with the checkpoints they are
# from. Odd widths are kept where real models have them.
CORPUS: dict[str, list[str]] = {
    # Llama-3.2-1B 2048, Llama-3-8B 4096, DeepSeek-V3 7168
    "add_bias_residual_layernorm": ["hidden=2048,4096,7168"],
    # Qwen3-4B 2560, Llama-3-8B 4096, Qwen2.5-14B 5120, Llama-3-70B 8192
    "fused_add_rms_norm_inplace": ["hidden=2560,4096,5120,8192"],
    # Gemma-2-2B 2304, Gemma-2-9B 3584
    "gemma_rms_norm": ["hidden=2304,3584"],
    # a 1000-wide LayerNorm, Qwen3-4B 2560, an odd 4099
    "layer_norm_odd": ["hidden=1000,2560,4099"],
    # Mamba-2's gated norm over d_inner: 4096 (2.7B: 5120)
    "rms_norm_gated": ["hidden=4096,5120"],
    "rms_norm_static_fp8": ["hidden=4096,8192"],
    # Llama-3-8B hidden 4096, its MLP's 14336
    "dynamic_per_token_fp8_quant": ["hidden=4096,14336"],
    "static_int8_quant": ["hidden=4096,5120"],
    "int8_quant_azp": ["hidden=3072,5120"],
    # DeepSeek-V2-Lite's expert 1408, Llama-2-7B 11008, Qwen2-7B 18944
    "gelu_and_mul": ["intermediate=1408,11008,18944"],
    "fatrelu_and_mul": ["intermediate=11008,14336"],
    "silu_mul_per_token_fp8": ["intermediate=14336,18944"],
    # gpt-oss-20b's 2880
    "swiglu_clamped": ["intermediate=2880,14336"],
    # Llama-2 32000, Llama-3 128256, Qwen 151936
    "temperature_softmax": ["vocab=32000,151936"],
    "logit_softcap": ["vocab=32000,128256"],
    "softcap_logsumexp": ["vocab=32000,151936"],
    "greedy_argmax": ["vocab=32000,128256"],
    "min_p_filter": ["vocab=32000,151936"],
    # Mixtral 8 experts, Qwen1.5-MoE 60, DeepSeek-V2-Lite 64
    "moe_softmax_topk": ["num_experts=8,60,64"],
    # Llama-3-8B: 32 query heads, 8 kv heads, head_dim 128; Gemma-2 256
    "rotary_cos_sin_cache": [
        "num_heads=32 num_kv_heads=8 head_dim=128 max_position=8192",
        "num_heads=16 num_kv_heads=8 head_dim=256 max_position=8192",
    ],
    "qk_norm_from_qkv": ["num_heads=32 num_kv_heads=8 head_dim=128"],
    "merge_attn_states": ["num_heads=32 head_dim=128", "num_heads=16 head_dim=64"],
    # GPT-J: 16 heads of 256
    "rotary_gptj": ["num_heads=16 head_dim=256"],
    # Llama-3-8B's embedding
    "embedding_lookup": ["vocab=128256 hidden=4096"],
}
DTYPES = ("bfloat16",)


def plan_lines() -> list[str]:
    tokens = " ".join(map(str, TOKENS))
    dtypes = " ".join(DTYPES)
    return [
        f"{name} --dims {dims} --dtype {dtypes} --tokens {tokens} --launches 20 --merge"
        for name, models in CORPUS.items()
        for dims in models
    ]


def capture(out: Path) -> int:
    failed = 0
    for i, name in enumerate(CORPUS, 1):
        if (out / name / "kernel.py").is_file():
            continue
        print(f"perf_corpus: [{i}/{len(CORPUS)}] capturing {name}", file=sys.stderr)
        done = subprocess.run(
            [sys.executable, "-m", "porter.cli", "capture", str(ENGINE / f"{name}.py")]
            + ["--out", str(out), "--device", "cpu"],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            failed += 1
            tail = (done.stderr.strip().splitlines() or ["?"])[-1]
            print(f"perf_corpus: {name}: {tail}", file=sys.stderr)
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", action="store_true", help="print the PLAN lines")
    ap.add_argument("--capture", metavar="DIR", help="capture every reference into DIR")
    args = ap.parse_args()
    if args.capture:
        return capture(Path(args.capture))
    if args.plan:
        print("\n".join(plan_lines()))
        return 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
