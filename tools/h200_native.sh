#!/usr/bin/env bash
# Native capture (`--device cuda`: Inductor's GPU code, its autotuned configs)
# against the committed corpus (captured on the codegen-only target), on the H200:
# capture every example on the GPU, run the native scaffolds' parity suites on
# CUDA, then time each native kernel.py beside captured/'s with
# tools/launch_probe.py (20 calls a graph over rotated inputs, four rounds) at
# the benchmark sweeps' model sizes. PLAN overrides the probe lines ("case
# launch_probe flags"); TOKENS the token counts; EXTRA_VARIANTS adds kernel.py
# files to a case's line ("case=path" words). Logs and the native captures
# (native.tgz) under $OUT.
set -uo pipefail
. tools/h200_env.sh
cap=${NATIVE:-/tmp/native}
# Six captures at a time: each mostly waits on Inductor's compile and autotuning.
ls examples/*.py | xargs -P 6 -I{} sh -c \
  "python3 -m porter.cli capture {} --out $cap --device cuda --force >/dev/null 2>&1 || echo 'capture failed: {}'" \
  | tee "$out/capture.log"
(cd "$cap" && tar czf "$out/native.tgz" .)
python3 -m pytest "$cap" -q -p no:cacheprovider -p porter.testing.plugin --porter-device cuda -n 4 -m "not gpu" 2>&1 \
  | grep -E "^(FAILED|E  )|passed|failed" | tail -30 | tee "$out/parity.log"
plan=${PLAN:-"rmsnorm --dims hidden=4096
fused_add_rmsnorm --dims hidden=4096
add_layernorm --dims hidden=4096
gelu_tanh_and_mul --dims intermediate=4096
silu_and_mul --dims intermediate=4096
softmax --dims vocab=32768
logsumexp --dims vocab=32768
quant_int8 --dims hidden=4096
rotary_neox --dims num_heads=32 head_dim=128
linear_gelu --dims in_features=128 out_features=256
linear_gelu --dims in_features=128 out_features=256 --dtype float32
kb_layernorm
kb_scaled_rmsnorm"}
while read -r c flags; do
  [ -z "$c" ] && continue
  more=""
  for v in ${EXTRA_VARIANTS:-}; do
    [ "${v%%=*}" = "$c" ] && more="$more ${v#*=}"
  done
  # shellcheck disable=SC2086
  python3 tools/launch_probe.py "$c" $flags --tokens ${TOKENS:-1 64 1024 16384} \
    --launches 20 --rotate --rounds 4 --variant "$cap/$c/kernel.py" $more 2>&1 | grep "^{"
done <<< "$plan" | tee "$out/probe.jsonl"
