"""docs/tutorial.md's commands, run as written, print what it shows; its
kernel excerpt is the scaffold porter writes."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
# The versions the tutorial's outputs were printed with (its first paragraph).
WRITTEN_WITH = ("2.13.0", "3.9.0")


def _console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each ```console block as [(command, expected output lines)]."""
    blocks = []
    for body in re.findall(r"```console\n(.*?)```", text, re.S):
        steps: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


def _normalized(line: str) -> str:
    line = re.sub(r"porter-backup-\d{8}-\d{6}", "porter-backup-<time>", line)
    return re.sub(r"\bin \d+\.\d+s\b", "in <t>s", line)


def _matches(expected: list[str], got: list[str]) -> bool:
    """Line by line; a `...` line stands for any lines (pytest's progress)."""
    expected = [_normalized(e) for e in expected]
    got = [_normalized(g) for g in got]
    if not expected:
        return not got
    if expected[0] == "...":
        return any(_matches(expected[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and got[0] == expected[0] and _matches(expected[1:], got[1:])


@pytest.mark.skipif(
    (torch.__version__.split("+")[0], triton.__version__) != WRITTEN_WITH,
    reason=f"the tutorial's outputs were printed with torch and triton {WRITTEN_WITH}",
)
def test_the_tutorials_commands_print_what_it_shows(tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    text = TUTORIAL.read_text()
    # the script the last section runs, as the tutorial shows it
    demo = re.search(r"from `demo.py`:\n\n```python\n(.*?)```", text, re.S).group(1)
    (tmp_path / "demo.py").write_text(demo)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr in the order a terminal shows
    porter = f"{sys.executable} -c 'from porter.cli import run; run()'"
    for steps in _console_blocks(text):
        for command, expected in steps:
            shell = re.sub(r"^porter ", porter + " ", command)
            done = subprocess.run(
                shell, shell=True, cwd=tmp_path, env=env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600,
            )
            got = done.stdout.splitlines()
            assert _matches(expected, got), (
                f"$ {command}\nexpected:\n" + "\n".join(expected) + "\ngot:\n" + done.stdout
            )


def test_the_tutorials_kernel_excerpt_is_what_porter_writes(tmp_path):
    from porter.pipeline import capture

    text = TUTORIAL.read_text()
    excerpt = re.search(r"Its\nfirst kernel, abridged.*?```python\n(.*?)```", text, re.S).group(1)
    result = capture(
        ROOT / "examples" / "fused_add_rmsnorm.py", out=tmp_path, device="cpu",
        progress=lambda _: None,
    )
    kernel = (result.case / "kernel.py").read_text().splitlines()
    # every line shown is the scaffold's, in order, `...` standing for the rest
    at = 0
    for line in excerpt.splitlines():
        if line.strip() == "...":
            continue
        assert line in kernel[at:], f"not in kernel.py (in this order): {line!r}"
        at = kernel.index(line, at) + 1
