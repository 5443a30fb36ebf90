"""Compiling kernels for a GPU target from a test session that runs Triton's
interpreter (TRITON_INTERPRET=1), whose kernels cannot be compiled: in a Python
process of its own, without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def json_lines_apart(*argv: str, cwd: Path) -> list[dict]:
    """The JSON lines a Python process of its own prints for argv (python3
    ARGV), run in cwd without TRITON_INTERPRET; a failure raises with its
    stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines()]
