# Sourced by the tools/h200_*.sh scripts: black's wheels (carried as .whl),
# porter on the path (it is not pip-installed there), $out, and the GPU and
# versions the run had in $out/versions.txt.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/porter-h200}
mkdir -p "$out"
{
  date -u +%Y-%m-%dT%H:%MZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} | tee "$out/versions.txt"
