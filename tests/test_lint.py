"""`porter lint`: each rule on its bad and good case files, suppression, output formats,
exit codes. Static analysis only: nothing here imports or runs triton."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from porter.errors import PorterError
from porter.lint import RULES, Finding, Rule, lint_paths, lint_source
from porter.lint import command

CASES = Path(__file__).parent / "lint_cases"
REPO = Path(__file__).parent.parent

# (rule, line) for every finding in each bad file, in report order.
EXPECTED = {
    "pt001_bad.py": [
        ("PT001", 19),
        ("PT001", 25),
        ("PT001", 30),
        ("PT001", 36),
        ("PT001", 43),
    ],
    "pt002_bad.py": [
        ("PT002", 14),
        ("PT002", 15),
        ("PT002", 21),
        ("PT002", 28),
        ("PT002", 40),
        ("PT002", 50),
        ("PT002", 59),
    ],
    "pt003_bad.py": [("PT003", 13), ("PT003", 14)],
    "pt004_bad.py": [("PT004", 8), ("PT004", 20), ("PT004", 21)],
    "pt005_bad.py": [("PT005", 17), ("PT005", 32), ("PT005", 43), ("PT005", 54)],
    "pt006_bad.py": [("PT006", 13), ("PT006", 14), ("PT006", 25), ("PT006", 34)],
    "pt007_bad.py": [("PT007", 12), ("PT007", 19)],
    "pt008_bad.py": [("PT008", 11), ("PT008", 14), ("PT008", 15)],
    "pt009_bad.py": [("PT009", 11), ("PT009", 21)],
    "pt010_bad.py": [("PT010", 7), ("PT010", 39)],
    "pt011_bad.py": [("PT011", 19), ("PT011", 26)],
}
# Findings a rule reports at info (it could not decide), by file and line.
INFO_LINES = {
    "pt002_bad.py": {14, 15, 21, 50},
    "pt006_bad.py": {14},
    "pt007_bad.py": {12, 19},
    "pt009_bad.py": {11},
}
GOOD = sorted(p.name for p in CASES.glob("*_good.py"))

# The kernel porter generates, verbatim from the design brief: must be lint-clean.
RMSNORM = """
import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["num_tokens"])
def rmsnorm_kernel(x_ptr, weight_ptr, out_ptr, num_tokens, x_row_stride: tl.int64, out_row_stride: tl.int64, eps: tl.float32, hidden: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < hidden
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    sum_sq = tl.sum(x * x, axis=0)
    rstd = tl.rsqrt(sum_sq / hidden + eps)
    out = x * rstd * w
    tl.store(out_ptr + row * out_row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)

def rmsnorm(x, weight, eps=1e-6):
    out = torch.empty_like(x)
    num_tokens, hidden = x.shape
    BLOCK_SIZE = triton.next_power_of_2(hidden)
    rmsnorm_kernel[(num_tokens,)](x, weight, out, num_tokens, x.stride(0), out.stride(0), eps, hidden=hidden, BLOCK_SIZE=BLOCK_SIZE, num_warps=8)
    return out
"""

# A pointwise kernel in porter's style: widened program id, fp32 math, do_not_specialize.
POINTWISE = """
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["n_elements"])
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def add(x, y, out, num_tokens, hidden):
    BLOCK = 1024
    add_kernel[(num_tokens, triton.cdiv(hidden, BLOCK))](x, y, out, x.numel(), BLOCK=BLOCK)
"""


def _pairs(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in findings]


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="porter lint")
    command.add_arguments(parser)
    return command.run(parser.parse_args(argv))


# -- the rules on their case files ---------------------------------------------


def test_every_rule_has_metadata_and_cases():
    assert list(RULES) == [f"PT{i:03d}" for i in range(12)]
    for rule_id, rule in RULES.items():
        assert isinstance(rule, Rule) and rule.id == rule_id
        assert rule.severity in ("error", "warning", "info")
        assert rule.title and rule.reason and rule.fix and rule.name
        if rule_id != "PT000":  # syntax errors are tested inline
            assert (CASES / f"{rule_id.lower()}_bad.py").is_file()
            assert (CASES / f"{rule_id.lower()}_good.py").is_file()
    assert sorted(EXPECTED) == sorted(p.name for p in CASES.glob("*_bad.py"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_case_findings(name):
    findings = lint_paths([CASES / name])
    assert _pairs(findings) == EXPECTED[name]
    for f in findings:
        info = f.line in INFO_LINES.get(name, ())
        assert f.severity == ("info" if info else RULES[f.rule].severity)
        assert f.path == str(CASES / name)
        assert f.col >= 1 and f.message and f.fix


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_case_markers_agree(name):
    """Each `# PTnnn` marker comment in a bad file sits on a reported line, and back."""
    lines = (CASES / name).read_text().splitlines()
    marked = [
        (m, i)
        for i, text in enumerate(lines, start=1)
        for m in re.findall(r"#.*?\b(PT\d{3})\b", text)
    ]
    assert sorted(marked) == sorted(EXPECTED[name])


@pytest.mark.parametrize("name", GOOD)
def test_good_case_is_clean(name):
    assert lint_paths([CASES / name]) == []


def test_well_written_rmsnorm_is_clean():
    assert lint_source(RMSNORM) == []


def test_well_written_pointwise_with_per_model_grid1_is_clean():
    assert lint_source(POINTWISE) == []


def test_whole_case_folder_at_once():
    findings = lint_paths([CASES])
    assert len(findings) == sum(len(v) for v in EXPECTED.values())
    assert all("_bad.py" in f.path for f in findings)


# -- kernel discovery ------------------------------------------------------------


def test_kernel_through_heuristics_and_autotune_stack():
    src = textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.heuristics({"EVEN": lambda args: args["n"] % 16 == 0})
        @triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
        @triton.jit(do_not_specialize=[1])
        def scale_kernel(x_ptr, n, EVEN: tl.constexpr, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n))
        """)
    # autotune without tl.dot, and an int32 offset; `n` (index 1) is not specialized.
    assert _pairs(lint_source(src)) == [("PT010", 6), ("PT002", 10)]


def test_jit_imported_from_triton_counts_and_other_jits_do_not():
    src = textwrap.dedent("""
        from numba import jit
        from triton import jit as tjit

        @jit
        def host_loop(x, n_rows):
            return x[0] * n_rows

        @tjit
        def copy_kernel(x_ptr, y_ptr, n_rows):
            tl.store(y_ptr + tl.program_id(0), tl.load(x_ptr))
        """)
    assert _pairs(lint_source(src)) == [("PT004", 10)]


def test_reexported_triton_names_are_understood():
    src = textwrap.dedent("""
        from vllm.triton_utils import tl, triton

        @triton.jit
        def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs))
        """)
    assert _pairs(lint_source(src)) == [("PT002", 6)]


def test_helper_called_from_a_kernel_gets_no_launch_argument_rules():
    src = textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit
        def _rms(x, eps, is_gated, D: tl.constexpr):
            return x / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)

        @triton.jit
        def norm_kernel(x_ptr, eps: tl.float32, D: tl.constexpr):
            row = tl.program_id(0).to(tl.int64)
            cols = tl.arange(0, D)
            x = tl.load(x_ptr + row * D + cols).to(tl.float32)
            tl.store(x_ptr + row * D + cols, _rms(x, eps, 0, D))
        """)
    assert lint_source(src) == []


def test_launch_in_another_file_is_checked(tmp_path):
    (tmp_path / "ops.py").write_text(textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit(do_not_specialize=["num_tokens"])
        def rope(x_ptr, num_tokens, D: tl.constexpr):
            pass
        """))
    launcher = tmp_path / "layer.py"
    launcher.write_text(textwrap.dedent("""
        from ops import rope

        def apply(x, num_heads):
            rope[(num_heads, x.shape[0])](x, x.shape[0], D=128)
        """))
    # `rope` does not look like a kernel by name: only lint_paths, seeing both files, knows.
    assert lint_source(launcher.read_text()) == []
    assert _pairs(lint_paths([tmp_path])) == [("PT001", 5)]


def test_folder_recursion_skips_hidden_and_cache_dirs(tmp_path):
    bad = (CASES / "pt010_bad.py").read_text()
    for rel in ("pkg/sub/k.py", ".venv/lib/k.py", "pkg/__pycache__/k.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(bad)
    (tmp_path / "notes.txt").write_text("not python")
    paths = {
        Path(f.path).relative_to(tmp_path).as_posix() for f in lint_paths([tmp_path])
    }
    assert paths == {"pkg/sub/k.py"}


def test_syntax_error_is_a_finding():
    findings = lint_source("def broken(:\n", "x.py")
    assert [(f.rule, f.severity, f.line) for f in findings] == [("PT000", "error", 1)]


def test_missing_path_raises_porter_error(tmp_path):
    with pytest.raises(PorterError, match="no such file or folder"):
        lint_paths([tmp_path / "nope.py"])


# -- suppression -----------------------------------------------------------------

SUPPRESSIBLE = textwrap.dedent("""
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(x_ptr, y_ptr, n_rows, is_first, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # COMMENT
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n_rows))
    """)


def _with_comment(comment: str) -> str:
    return SUPPRESSIBLE.replace("# COMMENT", comment)


def test_suppression_comment():
    # Same line: ordered by column (n_rows comes before is_first).
    assert _pairs(lint_source(_with_comment(""))) == [
        ("PT004", 6),
        ("PT003", 6),
        ("PT002", 7),
    ]
    assert _pairs(lint_source(_with_comment("# porter: ignore[PT002]"))) == [
        ("PT004", 6),
        ("PT003", 6),
    ]
    # Another rule's id on the line does not hide PT002.
    assert ("PT002", 7) in _pairs(lint_source(_with_comment("# porter: ignore[PT004]")))


def test_suppression_lists_several_ids_on_the_finding_line():
    src = SUPPRESSIBLE.replace(
        "is_first, BLOCK: tl.constexpr):",
        "is_first, BLOCK: tl.constexpr):  # porter: ignore[PT003, pt004]",
    )
    assert _pairs(lint_source(src)) == [("PT002", 7)]


# -- output and exit codes ---------------------------------------------------------


def test_text_format(capsys):
    bad = CASES / "pt002_bad.py"
    assert _run([str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    pattern = re.compile(r"^(.+):(\d+):(\d+): (PT\d{3}) (.+) \(fix: (.+)\)$")
    findings = [pattern.match(line) for line in out[:-1]]
    assert all(findings), out
    shown = [
        (str(bad), line, rule)
        for rule, line in EXPECTED["pt002_bad.py"]
        if line not in INFO_LINES["pt002_bad.py"]
    ]
    assert [(m[1], int(m[2]), m[4]) for m in findings] == shown
    assert out[0].startswith(f"{bad}:28:14: PT002 `tl.program_id(0) * stride`")
    assert out[-1] == (
        "3 finding(s): 3 error(s), 0 warning(s); "
        "4 info finding(s) hidden (--min-severity info shows them)"
    )


def test_json_format(capsys):
    bad = CASES / "pt004_bad.py"
    assert _run([str(bad), "--format", "json"]) == 0  # warnings only
    data = json.loads(capsys.readouterr().out)
    assert [(d["rule"], d["line"]) for d in data] == EXPECTED["pt004_bad.py"]
    first = data[0]
    assert set(first) == {"rule", "severity", "path", "line", "col", "message", "fix"}
    assert (first["severity"], first["path"], first["col"]) == ("warning", str(bad), 39)
    assert "n_elements" in first["message"]


def test_json_format_clean_is_an_empty_list(capsys):
    assert _run([str(CASES / "pt001_good.py"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_exit_codes(capsys, tmp_path):
    assert _run([str(CASES / "pt001_good.py")]) == 0
    assert capsys.readouterr().out == "0 finding(s): 0 error(s), 0 warning(s)\n"
    assert _run([str(CASES / "pt009_bad.py")]) == 0  # warnings do not fail
    assert _run([str(CASES / "pt001_bad.py")]) == 1
    capsys.readouterr()
    assert _run([str(tmp_path / "missing.py")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.py" in err and "Traceback" not in err


def test_add_arguments_under_a_subcommand(capsys):
    """The main CLI mounts the command as `porter lint`."""
    parser = argparse.ArgumentParser(prog="porter")
    sub = parser.add_subparsers(dest="command")
    command.add_arguments(sub.add_parser("lint"))
    args = parser.parse_args(["lint", str(CASES / "pt011_bad.py"), "--format", "json"])
    assert command.run(args) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2


def test_python_dash_m(tmp_path):
    def run(*argv):
        return subprocess.run(
            [sys.executable, "-m", "porter.lint", *argv],
            capture_output=True,
            text=True,
            cwd=REPO,
        )

    ok = run(str(CASES / "pt005_good.py"))
    assert (ok.returncode, ok.stdout, ok.stderr) == (
        0,
        "0 finding(s): 0 error(s), 0 warning(s)\n",
        "",
    )
    bad = run(str(CASES / "pt005_bad.py"), "--format", "json")
    assert bad.returncode == 1 and len(json.loads(bad.stdout)) == 4
    missing = run(str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "Traceback" not in missing.stderr
    usage = run()  # no PATH: argparse's usage error
    assert usage.returncode == 2
