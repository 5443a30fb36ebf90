#!/usr/bin/env bash
# porter bench on the H200 for the given cases (default: all), results packed
# into $OUT/benchmarks.tgz (docs/benchmarks/ files) and the log.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/porter-h200}
mkdir -p "$out"
cases=${CASES:-$(ls captured)}
for c in $cases; do
  python3 -m porter.cli bench "captured/$c" ${BENCH_ARGS:-} 2>&1 | grep -v "^porter: \[" 
done | tee "$out/bench.log"
python3 -m porter.cli report
tar czf "$out/benchmarks.tgz" docs/benchmarks
