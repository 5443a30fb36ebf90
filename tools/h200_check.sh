#!/usr/bin/env bash
# What porter runs on the H200 (through the device tool): native capture of the
# examples with autotuned configs, then the parity suite of captured/ on CUDA,
# including the >2^31-element offset test. Writes logs under $OUT.
# porter is not pip-installed there, so the pytest plugin is named with -p.
set -uo pipefail
. tools/h200_env.sh
for f in rmsnorm silu_and_mul softmax add_layernorm linear_gelu kb_scaled_rmsnorm; do
  python3 -m porter.cli capture "examples/$f.py" --out /tmp/gcap --device cuda 2>&1 | tail -3
done 2>&1 | tee "$out/capture.log"
python3 - <<'PY' | tee -a "$out/capture.log"
import glob, json
for p in sorted(glob.glob("/tmp/gcap/*/manifest.json")):
    m = json.load(open(p))
    print(p.split("/")[-2], m["target"], [(k["kind"], k["config"]) for k in m["kernels"]], m.get("warnings"))
PY
python3 -m pytest captured /tmp/gcap -q -p no:cacheprovider -p porter.testing.plugin --porter-device cuda -n 4 -m "not gpu" 2>&1 | tail -25 | tee "$out/parity.log"
# The >2^31-element tests take tens of GB each: one at a time.
python3 -m pytest captured -q -p no:cacheprovider -p porter.testing.plugin --porter-device cuda -m gpu -rA 2>&1 | tail -25 | tee "$out/large_offsets.log"
(cd /tmp/gcap && tar czf "$out/gcap.tgz" .)
