#!/usr/bin/env bash
# porter bench on the H200. PLAN holds one case per line, with its own bench
# flags (e.g. "rmsnorm --dims hidden=2048,4096,8192"); default: every case at
# its captured sizes. BENCH_ARGS is added to every line (e.g. "--dtype bfloat16").
# Results go to docs/benchmarks/ and are packed into $OUT/benchmarks.tgz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/porter-h200}
mkdir -p "$out"
plan=${PLAN:-$(ls captured)}
while read -r c flags; do
  [ -z "$c" ] && continue
  # shellcheck disable=SC2086
  python3 -m porter.cli bench "captured/$c" $flags ${BENCH_ARGS:-} 2>&1 | grep -v "^porter: \["
done <<< "$plan" | tee -a "$out/bench.log"
python3 -m porter.cli report
tar czf "$out/benchmarks.tgz" docs/benchmarks
