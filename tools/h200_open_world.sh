#!/usr/bin/env bash
# Open-world check on the H200: porter sweep of the engine references and of
# the KernelBench folder KB names (captured natively on the GPU, checked on
# CUDA), then the committed corpus's parity suites on CUDA. Results (tables,
# JSON, logs) under $OUT. Carry .whl (black) and the KernelBench folder.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/porter-h200}
mkdir -p "$out"
{
  date -u +%Y-%m-%dT%H:%MZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} | tee "$out/versions.txt"
for set in ${SETS:-engine=examples/engine kernelbench=${KB:-.kb}}; do
  name=${set%%=*}
  timeout ${SWEEP_TIMEOUT:-330} python3 -m porter.cli sweep "${set#*=}" --device cuda \
    --jobs ${JOBS:-12} --timeout 240 --out "/tmp/sweep-$name" >/dev/null 2>"$out/sweep-$name.log"
  cp "/tmp/sweep-$name/sweep.md" "$out/sweep-$name.md" 2>/dev/null
  cp "/tmp/sweep-$name/sweep.json" "$out/sweep-$name.json" 2>/dev/null
  tail -1 "$out/sweep-$name.md" 2>/dev/null
done
if [ -z "${NO_PARITY:-}" ]; then
  timeout ${PARITY_TIMEOUT:-200} python3 -m pytest captured -q -p no:cacheprovider --porter-device cuda \
    -n 8 -m "not gpu" 2>&1 | grep -E "^(FAILED|E  )|passed|failed" | tail -30 | tee "$out/parity.log"
fi
