"""porter.testing.compiles: what the interpreter runs but the GPU compiler
rejects is caught on the CPU (every launch compiled for sm_90)."""

import shutil
from pathlib import Path

from porter.testing.compiles import check

ROOT = Path(__file__).resolve().parents[1]


def test_a_scaffold_the_gpu_compiler_rejects_fails_the_check(tmp_path):
    folder = tmp_path / "rmsnorm"
    shutil.copytree(
        ROOT / "captured" / "rmsnorm", folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "captured" / "common.py", tmp_path)  # what the case imports from
    launches, errors = check(folder)
    assert launches and errors == []
    # A broadcast of a constexpr runs under the interpreter, not on a GPU.
    kernel = folder / "kernel.py"
    text = kernel.read_text()
    plant = "row_sum / hidden"
    assert plant in text
    broadcast = "row_sum / tl.broadcast_to(hidden, [BLOCK_COLS]).to(tl.float32)"
    kernel.write_text(text.replace(plant, broadcast, 1))
    launches, errors = check(folder)
    assert errors and "CompilationError" in errors[0]
