#!/usr/bin/env bash
# Open-world check on the H200: porter sweep of the engine references and of
# the KernelBench folder KB names (captured natively on the GPU, checked on
# CUDA), then the committed corpus's parity suites on CUDA. Results (tables,
# JSON, logs) under $OUT. Carry .whl (black) and the KernelBench folder.
set -uo pipefail
. tools/h200_env.sh
for set in ${SETS:-engine=examples/engine kernelbench=${KB:-.kb}}; do
  name=${set%%=*}
  timeout ${SWEEP_TIMEOUT:-330} python3 -m porter.cli sweep "${set#*=}" --device cuda \
    --jobs ${JOBS:-12} --timeout 240 --out "/tmp/sweep-$name" >/dev/null 2>"$out/sweep-$name.log"
  cp "/tmp/sweep-$name/sweep.md" "$out/sweep-$name.md" 2>/dev/null
  cp "/tmp/sweep-$name/sweep.json" "$out/sweep-$name.json" 2>/dev/null
  tail -1 "$out/sweep-$name.md" 2>/dev/null
  # The failed references' case folders, to read back here.
  failed=$(python3 -c "import json,sys; print(' '.join(r['case'] for r in json.load(open(sys.argv[1]))['results'] if r['status']=='failed' and r['case']))" "/tmp/sweep-$name/sweep.json" 2>/dev/null)
  [ -n "$failed" ] && (cd "/tmp/sweep-$name" && tar czf "$out/failed-$name.tgz" $failed)
done
if [ -z "${NO_PARITY:-}" ]; then
  timeout ${PARITY_TIMEOUT:-200} python3 -m pytest captured -q -p no:cacheprovider -p porter.testing.plugin --porter-device cuda \
    -n 8 -m "not gpu" 2>&1 | grep -E "^(FAILED|E  )|passed|failed" | tail -30 | tee "$out/parity.log"
fi
