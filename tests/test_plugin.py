"""The pytest plugin's CPU session: what it reports beside the verdicts."""

import os
import subprocess
import sys

# The session under test sets the interpreter flag itself, as a user's would.
ENV = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}

KERNEL_TEST = """
import warnings

import torch
import triton
import triton.language as tl


@triton.jit
def times_kernel(out_ptr, x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * tl.load(y_ptr + offs))


def test_inf_times_zero():
    x = torch.tensor([float("inf"), 1.0, 2.0, 3.0])
    y = torch.tensor([0.0, 1.0, 1.0, 1.0])
    out = torch.empty_like(x)
    times_kernel[(1,)](out, x, y, BLOCK=4)
    assert out[0].isnan() and out[1] == 1.0


def test_a_warning_of_its_own():
    warnings.warn("the test's own warning", RuntimeWarning)
"""


def test_interpreter_numpy_warnings_are_quiet_and_others_still_show(tmp_path):
    (tmp_path / "test_k.py").write_text(KERNEL_TEST)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--porter-device",
            "cpu",
            str(tmp_path / "test_k.py"),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    # numpy's "invalid value encountered in multiply" from the interpreter is gone
    assert "invalid value" not in proc.stdout
    assert "the test's own warning" in proc.stdout
