#!/usr/bin/env bash
# Re-verify the committed corpus on the H200 without re-capturing: the parity
# suite, the planted-bug and jitcheck tests on CUDA, the >2^31-element tests
# (serially), and `porter jitcheck --baseline` per case. Logs under $OUT.
set -uo pipefail
. tools/h200_env.sh
plugin="-p no:cacheprovider -p porter.testing.plugin --porter-device cuda"
python3 -m pytest captured tests/test_planted_bugs.py tests/test_jitcheck.py -q $plugin -n 4 -m "not gpu" -rfs 2>&1 | grep -E "^(FAILED|SKIPPED|E  )|passed|failed" | tail -60 | tee "$out/parity.log"
python3 -m pytest captured -q $plugin -m gpu 2>&1 | tail -3 | tee "$out/large_offsets.log"
[ -n "${SKIP_JITCHECK:-}" ] && exit 0
for c in captured/*/; do
  echo "== $c"; python3 -m porter.cli jitcheck "$c" --device cuda --baseline 2>&1
done | tee "$out/jitcheck.log"
