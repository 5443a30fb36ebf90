#!/usr/bin/env bash
# Open-world check on the H200: porter sweep of each folder SETS names
# (default: the engine references and the KernelBench folder KB names),
# captured natively on the GPU and checked on CUDA, then the committed
# corpus's parity suites on CUDA, and, where CARRY names a history folder
# (tools/carry_rows.py --save-history), the carried benchmark rows checked
# again with this machine's triton. Everything lands in $OUT/results.tgz,
# with the sweeps' count lines and the parity summary in $OUT/summary.txt.
# Carry .whl (black), the reference folders and the history.
set -uo pipefail
. tools/h200_env.sh
final=$out
out=/tmp/h200-results
mkdir -p "$out"
cp "$final/versions.txt" "$out/"
for set in ${SETS:-engine=examples/engine kernelbench=${KB:-.kb}}; do
  name=${set%%=*}
  timeout ${SWEEP_TIMEOUT:-330} python3 -m porter.cli sweep "${set#*=}" --device cuda \
    --jobs ${JOBS:-12} --timeout 240 --out "/tmp/sweep-$name" >/dev/null 2>"$out/sweep-$name.log"
  cp "/tmp/sweep-$name/sweep.md" "$out/sweep-$name.md" 2>/dev/null
  cp "/tmp/sweep-$name/sweep.json" "$out/sweep-$name.json" 2>/dev/null
  echo "$name: $(tail -1 "$out/sweep-$name.md" 2>/dev/null)" | tee -a "$final/summary.txt"
  # The failed references' case folders, to read back here.
  failed=$(python3 -c "import json,sys; print(' '.join(r['case'] for r in json.load(open(sys.argv[1]))['results'] if r['status']=='failed' and r['case']))" "/tmp/sweep-$name/sweep.json" 2>/dev/null)
  [ -n "$failed" ] && (cd "/tmp/sweep-$name" && tar czf "$out/failed-$name.tgz" $failed)
done
if [ -z "${NO_PARITY:-}" ]; then
  timeout ${PARITY_TIMEOUT:-200} python3 -m pytest captured -q -p no:cacheprovider -p porter.testing.plugin --porter-device cuda \
    -n 8 -m "not gpu" 2>&1 | grep -E "^(FAILED|E  )|passed|failed" | tail -30 > "$out/parity.log"
  echo "parity: $(tail -1 "$out/parity.log")" | tee -a "$final/summary.txt"
fi
if [ -n "${CARRY:-}" ]; then
  timeout ${CARRY_TIMEOUT:-240} python3 tools/carry_rows.py --history "$CARRY" --recheck --write \
    > "$out/carry.log" 2>&1
  echo "carry: $(tail -1 "$out/carry.log")" | tee -a "$final/summary.txt"
  mkdir -p "$out/benchmarks" && cp docs/benchmarks/*.json "$out/benchmarks/"
fi
tar czf "$final/results.tgz" -C "$out" .
