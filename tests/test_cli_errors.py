"""A newcomer's mistakes: each is one line saying what to do, exit 1 (2 for
usage), never an internal error or a traceback; no file of theirs is lost."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from porter.cli import main

ROOT = Path(__file__).resolve().parents[1]
RMSNORM = ROOT / "examples" / "rmsnorm.py"
ENV = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err: str, *words: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("porter: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    for word in words:
        assert word in lines[0], lines[0]


def test_out_that_is_a_file_is_refused_before_compiling(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("")
    code, _, err = _run(capsys, "capture", RMSNORM, "--out", target, "--device", "cpu")
    assert code == 1
    _one_error_line(err, "is a file, not a folder")
    assert "compiling" not in err  # refused before the compile


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_out_that_is_not_writable_is_refused(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    code, _, err = _run(capsys, "capture", RMSNORM, "--out", locked / "x", "--device", "cpu")
    assert code == 1
    _one_error_line(err, "not writable")


@pytest.mark.parametrize("dtype", ["bogus", "int8"])
def test_a_dtype_porter_cannot_capture_in_is_refused(tmp_path, capsys, dtype):
    code, _, err = _run(capsys, "capture", RMSNORM, "--out", tmp_path, "--dtype", dtype)
    assert code == 1
    _one_error_line(err, f"--dtype {dtype}", "float32")


@pytest.mark.parametrize(
    "dims, extra, words",
    [
        ('{"num_tokens": 8, "heads": 1}', [], ["DIMS heads=1", "2 or more"]),
        ('{"num_tokens": 8, "heads": 2.5}', [], ["DIMS heads=2.5", "2 or more"]),
        ('{"num_tokens": 8, "heads": 2}', ["--set", "heads=1"], ["--set heads=1"]),
    ],
)
def test_an_example_size_below_2_is_refused(tmp_path, capsys, dims, extra, words):
    # MQA's one kv head at capture: Dynamo fixed it at 1, and every suite
    # call at another count came back refused.
    ref = tmp_path / "mqa.py"
    ref.write_text(
        "import torch\n"
        f"DIMS = {dims}\n"
        "def make_inputs(num_tokens, heads, dtype=torch.float32, device='cpu'):\n"
        "    return (torch.randn(num_tokens, int(heads) * 4, dtype=dtype, device=device),)\n"
        "def f(x):\n"
        "    return x * 2\n"
        "REFERENCE = f\n"
    )
    code, _, err = _run(capsys, "capture", ref, "--out", tmp_path / "out", "--device", "cpu", *extra)
    assert code == 1
    _one_error_line(err, *words)
    assert not (tmp_path / "out").exists()


def test_a_latin1_reference_with_a_coding_line_captures_and_one_without_is_refused(
    tmp_path, capsys
):
    text = RMSNORM.read_text().replace('"""RMSNorm', '"""RMSNorm (déjà vu)')
    coded = tmp_path / "coded.py"
    coded.write_bytes(("# -*- coding: latin-1 -*-\n" + text).encode("latin-1"))
    code, _, err = _run(capsys, "capture", coded, "--out", tmp_path / "o", "--device", "cpu")
    assert code == 0, err
    assert (tmp_path / "o" / "coded" / "reference.py").read_bytes() == coded.read_bytes()
    bare = tmp_path / "bare.py"
    bare.write_bytes(text.encode("latin-1"))
    code, _, err = _run(capsys, "capture", bare, "--out", tmp_path / "o", "--device", "cpu")
    assert code == 1
    _one_error_line(err, "UTF-8", "coding declaration")


@pytest.mark.parametrize("command", ["port", "jitcheck", "test", "diff"])
def test_a_folder_that_is_not_a_case_is_named(tmp_path, capsys, command):
    code, _, err = _run(capsys, command, tmp_path)
    assert code == 1
    _one_error_line(err, "not a porter case")


def test_a_corrupt_manifest_is_named(tmp_path, capsys):
    (tmp_path / "manifest.json").write_text("{not json")
    code, _, err = _run(capsys, "port", tmp_path)
    assert code == 1
    _one_error_line(err, "manifest.json: unreadable", "restore it")


def test_another_reference_never_silently_replaces_a_case(tmp_path, capsys):
    code, *_ = _run(capsys, "capture", RMSNORM, "--out", tmp_path, "--device", "cpu")
    assert code == 0
    other = tmp_path / "other.py"
    other.write_text(RMSNORM.read_text())
    code, _, err = _run(
        capsys, "capture", other, "--name", "rmsnorm", "--out", tmp_path, "--device", "cpu"
    )
    assert code == 1
    _one_error_line(err, "holds the capture of rmsnorm.py, not of other.py", "--name")
    code, out, _ = _run(
        capsys, "capture", other, "--name", "rmsnorm", "--out", tmp_path,
        "--device", "cpu", "--force",
    )
    assert code == 0 and "replacing the capture of rmsnorm.py" in out


def test_force_into_a_folder_of_ones_own_keeps_its_files(tmp_path, capsys):
    folder = tmp_path / "rmsnorm"
    folder.mkdir()
    (folder / "kernel.py").write_text("my kernel\n")
    (folder / "README.md").write_text("my readme\n")
    code, _, err = _run(capsys, "capture", RMSNORM, "--out", tmp_path, "--device", "cpu")
    assert code == 1
    _one_error_line(err, "is not a porter case", "backups")
    code, out, _ = _run(
        capsys, "capture", RMSNORM, "--out", tmp_path, "--device", "cpu", "--force"
    )
    assert code == 0
    kept = sorted(p.name for p in folder.glob("*.porter-backup-*"))
    assert [k.split(".porter-backup-")[0] for k in kept] == ["README.md", "kernel.py"]
    assert "my kernel" in next(folder.glob("kernel.py.porter-backup-*")).read_text()
    assert out.count("kept your file as it was before") == 2
    assert not (tmp_path / "__init__.py").exists()  # nothing written beside the case
    assert oct(folder.stat().st_mode & 0o777) != oct(0o700)


def test_usage_mistakes_exit_2(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["capture"])
    assert stop.value.code == 2
    assert main([]) == 2


def test_ctrl_c_and_the_end_of_a_capture_print_no_traceback_and_linger_not(tmp_path):
    argv = [sys.executable, "-c", "from porter.cli import run; run()"]
    # Ctrl-C while torch loads: one line, exit 130.
    proc = subprocess.Popen(
        argv + ["capture", str(RMSNORM), "--out", str(tmp_path / "a"), "--device", "cpu"],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C as in a terminal, whatever the runner left (a job in the
        # background starts with it ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert "porter: interrupted" in err
    # A capture that runs to its end: the prompt is back right after the last line.
    proc = subprocess.Popen(
        argv + ["capture", str(RMSNORM), "--out", str(tmp_path / "b"), "--device", "cpu"],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    last = time.monotonic()
    for _ in proc.stdout:
        last = time.monotonic()
    proc.wait(timeout=120)
    assert proc.returncode == 0
    assert time.monotonic() - last < 1.0


def test_ctrl_c_while_triton_loads_waits_for_it_then_interrupts():
    # An interrupt inside triton's native module setup aborted the process
    # (a C++ terminate, exit -6); held, it becomes KeyboardInterrupt once
    # triton is in.
    code = (
        "import builtins, os, signal, sys\n"
        # as in a terminal, whatever the runner left (a job in the background
        # starts with Ctrl-C ignored)
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from porter import cli\n"
        "real = builtins.__import__\n"
        "def load(name, *args, **kwargs):\n"
        "    if name == 'triton' and 'triton' not in sys.modules:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = load\n"
        "try:\n"
        "    cli._load_torch()\n"
        "except KeyboardInterrupt:\n"
        "    restored = signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "    print('interrupted after', 'triton' in sys.modules, restored)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.strip() == "interrupted after True True", proc.stderr


def test_words_after_a_double_dash_go_to_pytest(capsys, monkeypatch):
    # `porter test CASE -- -k name` as --help says: argparse gave -k to CASE
    seen = []
    monkeypatch.setattr(pytest, "main", lambda argv: seen.append(argv) or 0)
    case = ROOT / "captured" / "rmsnorm"
    assert _run(capsys, "test", case, "--", "-k", "bfloat16")[0] == 0
    assert seen[0][0] == str(case) and seen[0][-2:] == ["-k", "bfloat16"]
    with pytest.raises(SystemExit) as stop:
        main(["lint", str(case), "--", "-k"])
    assert stop.value.code == 2 and "no arguments after --" in capsys.readouterr().err
