#!/usr/bin/env bash
# porter bench on the H200. PLAN holds one case per line, with its own bench
# flags (e.g. "rmsnorm --dims hidden=2048,4096,8192"); default: every case at
# its captured sizes. BENCH_ARGS is added to every line (e.g. "--dtype bfloat16",
# or "--dtype float16 float32 --merge" to add those beside the stored bf16 rows).
# Results go to $OUT/benchmarks/ and, after each case, into $OUT/benchmarks.tgz
# (so a run cut short keeps what finished); copy them into docs/benchmarks/ and
# run `porter report` there. CASES is the folder of the case folders (default
# captured; tools/perf_corpus.py's are elsewhere) and RESULTS the folder of
# the stored results that --merge adds to (default docs/benchmarks).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/porter-h200}
mkdir -p "$out/benchmarks"
# The results in docs/benchmarks/, so that `--merge` (in BENCH_ARGS or a PLAN
# line) adds to them; without it each case's files are replaced. Copy each
# call's results there before the next call merges, or that call's merged files
# bring back the older rows of the dtypes it did not measure.
cp "${RESULTS:-docs/benchmarks}"/*.json "$out/benchmarks/" 2>/dev/null
# Every case folder (one with a manifest) when PLAN is unset. A PLAN set but
# empty (a plan command that failed) stops here rather than time every case.
if [ -n "${PLAN+set}" ] && [ -z "$PLAN" ]; then
  echo "h200_bench: PLAN is empty; unset it to time every case" >&2
  exit 2
fi
cases=${CASES:-captured}
plan=${PLAN:-$(for d in "$cases"/*/; do [ -f "$d/manifest.json" ] && basename "$d"; done)}
while read -r c flags; do
  [ -z "$c" ] && continue
  # shellcheck disable=SC2086
  python3 -m porter.cli bench "$cases/$c" --out "$out/benchmarks" $flags ${BENCH_ARGS:-} 2>&1 | grep -v "^porter: \["
  tar czf "$out/benchmarks.tgz" -C "$out" benchmarks
done <<< "$plan" | tee -a "$out/bench.log"
