"""The Python API behind the CLI: each function runs stages end to end.

from porter.pipeline import capture
result = capture("examples/rmsnorm.py", out="captured")
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from porter.capture import run_capture
from porter.errors import PorterError
from porter.records import Capture
from porter.reference import FLOAT_DTYPES, case_reference, load_reference
from porter.store import (
    COMMON,
    MANIFEST,
    WriteResult,
    check_common,
    kernel_diff,
    read_manifest,
    write_case,
    write_common,
)

# A KernelBench file's inputs are cut to about this many elements at capture
# (its kernels stay general): its own sizes (4096 x 393216) would take GBs, and
# the parity suite runs at the captured sizes under the CPU interpreter.
CAPTURE_BUDGET = 1 << 16


# A re-capture whose Inductor code differs from the stored one's keeps the
# difference here (a unified diff of the kernels).
CHANGES = "inductor/changes.diff"


def _shown(case: Path) -> str:
    """The case's path as a reader types it: relative to here where it is below."""
    relative = os.path.relpath(case)
    return Path(case.resolve() if relative.startswith("..") else relative).as_posix()


def _check_out(out: Path, case: Path) -> None:
    """Before any compiling: the case folder can be written where asked."""
    for path in (out, case):
        if path.exists() and not path.is_dir():
            raise PorterError(
                f"--out: {path} is a file, not a folder; give a folder (it is created "
                "if missing)"
            )
    existing = next(p for p in [out, *out.resolve().parents] if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PorterError(
            f"--out: {existing} is not writable; give a folder you can write to"
        )


COMMON_NAME = COMMON.removesuffix(".py")


def default_case_name(path: Path) -> str:
    """The file's stem as a Python identifier (23_Softmax.py -> case_23_Softmax):
    a case folder is a package, so pytest tells one case's tests from another's."""
    name = re.sub(r"\W", "_", path.stem)
    return f"case_{name}" if not name.isidentifier() or name == COMMON_NAME else name


def _stderr(message: str) -> None:
    print(f"porter: {message}", file=sys.stderr, flush=True)


@dataclass
class CaptureResult:
    case: Path
    capture: Capture
    changed: str | None  # None: new case; "": same code as stored; else the diff
    backups: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    written: WriteResult | None = None
    # The file of another reference the case held, where --force replaced it.
    replaced: str = ""
    # What happened to the folder's common.py.
    common: WriteResult | None = None


def capture(
    path: str | Path,
    name: str | None = None,
    out: str | Path = "captured",
    device: str = "auto",
    force: bool = False,
    static: tuple[str, ...] = (),
    dtype: str | None = None,
    progress: Callable[[str], None] = _stderr,
    debug: bool = False,
    sizes: dict[str, Any] | None = None,
) -> CaptureResult:
    """Capture Inductor's kernels for the reference in `path` into `out/name/`."""
    path = Path(path)
    name = name or default_case_name(path)
    if not name.isidentifier():
        raise PorterError(
            f"case name {name!r} must be a Python identifier (letters, digits, _); "
            "pass --name"
        )
    if name == COMMON_NAME:
        raise PorterError(
            f"case name {name!r} is taken by the module the cases share "
            f"({COMMON}); pass another --name"
        )
    case = Path(out) / name
    _check_out(Path(out), case)
    if dtype is not None and dtype not in FLOAT_DTYPES:
        raise PorterError(
            f"--dtype {dtype}: porter captures in a floating-point dtype; give one of "
            f"{', '.join(FLOAT_DTYPES)}"
        )
    progress(f"loading {path}")
    ref = load_reference(path, overrides=sizes, budget=CAPTURE_BUDGET)
    shrunk = {k: v for k, v in ref.overrides.items() if k not in (sizes or {})}
    if shrunk:
        chosen = ", ".join(f"{k}={v}" for k, v in shrunk.items())
        progress(
            f"{path.name}'s own sizes give more than {CAPTURE_BUDGET} input elements; "
            f"capturing at {chosen} (the kernels stay general; --set NAME=VALUE "
            "picks other sizes)"
        )
    progress(f"compiling {ref.name} with torch.compile ({device} device)")
    cap, sources = run_capture(
        ref, device=device, static=static, dtype=dtype, debug=debug
    )
    progress(
        f"captured {len(cap.kernels)} Triton kernel(s) from {len(cap.modules)} "
        f"module(s) on {cap.target}"
    )
    files = capture_files(path.read_bytes(), cap, sources)
    scaffold = port_files(cap, ref.module, name, _shown(case))
    _refuse_todos(path.name, scaffold.todos)
    files.update(scaffold.files)
    old = read_manifest(case) if (case / MANIFEST).is_file() else None
    replaced = ""
    if old is not None and old.get("reference_file") != path.name:
        # Another reference's case: never replaced without being asked.
        if not force:
            raise PorterError(
                f"{case} holds the capture of {old.get('reference_file')}, not of "
                f"{path.name}; pass --name to capture it beside, or --force to replace "
                "that case (files edited there are kept as backups)"
            )
        replaced, old = old.get("reference_file", "?"), None
    changed = kernel_diff(old, cap.to_dict()) if old is not None else None
    if changed:
        files[CHANGES] = changed  # what Inductor writes differently now
    from porter.render import render_common

    check_common(case.parent, COMMON, render_common(), force=force)
    written = write_case(case, files, cap.to_dict(), force=force, replace_all=True)
    common = write_common(case.parent, COMMON, render_common(), force=force)
    return CaptureResult(
        case, cap, changed, written.backups, cap.warnings, written, replaced, common
    )


def capture_files(
    reference_source: str | bytes, cap: Capture, sources: list[str]
) -> dict[str, str | bytes]:
    # Packages, so pytest tells one case's test_parity.py from another's.
    files = {"reference.py": reference_source, "__init__.py": ""}
    for i, source in enumerate(sources):
        files[f"inductor/module_{i}.py"] = source
    for k in cap.kernels:
        files[f"inductor/kernels/{k.name}.py"] = k.source
    return files


def _refuse_todos(what: str, todos: list[str]) -> None:
    """A scaffold that would not match eager is never written."""
    if todos:
        more = f" (and {len(todos) - 1} more)" if len(todos) > 1 else ""
        raise PorterError(
            f"{what}: porter cannot port this faithfully: {todos[0]}{more}; "
            "nothing was written"
        )


@dataclass
class PortFiles:
    files: dict[str, str]
    todos: list[str]
    written: WriteResult | None = None
    common: WriteResult | None = None


def port_files(
    cap: Capture,
    ref_module,
    name: str,
    folder: str | None = None,
    options=None,
) -> PortFiles:
    """kernel.py, test_parity.py and README.md for a capture; `folder` is the
    case's path as its README and tests name it (default captured/NAME);
    `options` (a porter.port.model.PortOptions) the rules to port under."""
    from porter.port import PortOptions, port_capture
    from porter.render import render, render_kernel, render_text

    folder = folder or f"captured/{name}"
    scaffold = port_capture(cap, ref_module, options or PortOptions())
    test = render("test_parity.py.j2", cap=cap, name=name, folder=folder)
    readme = render_text(
        "case_readme.md.j2",
        cap=cap,
        name=name,
        folder=folder,
        title=scaffold.title,
        todos=scaffold.todos,
        notes=scaffold.notes,
        pdl=scaffold.pdl,
    )
    files = {
        "kernel.py": render_kernel(scaffold),
        "test_parity.py": test,
        "README.md": readme,
    }
    return PortFiles(files, scaffold.todos)


def port(
    case: str | Path, force: bool = False, progress: Callable[[str], None] = _stderr
) -> PortFiles:
    """Regenerate kernel.py and test_parity.py from the stored capture."""
    case = Path(case)
    manifest = read_manifest(case)
    cap = Capture.from_dict(manifest)
    ref = case_reference(case, manifest)
    progress(f"porting {len(cap.kernels)} kernel(s) of {case}")
    result = port_files(cap, ref.module, case.name, _shown(case))
    _refuse_todos(case.name, result.todos)
    from porter.render import render_common

    check_common(case.parent, COMMON, render_common(), force=force)
    result.written = write_case(
        case, result.files, manifest, force=force, replace_all=False
    )
    result.common = write_common(case.parent, COMMON, render_common(), force=force)
    return result


def diff(
    case: str | Path, device: str = "auto", progress: Callable[[str], None] = _stderr
) -> str:
    """Re-capture the stored reference and diff Inductor's kernels; touches nothing."""
    case = Path(case)
    stored = read_manifest(case)
    ref_path = case / "reference.py"
    if not ref_path.is_file():
        raise PorterError(
            f"{ref_path} is missing; re-run porter capture on the original file"
        )
    ref = case_reference(case, stored)
    progress(f"re-compiling {ref.name} to compare with the stored capture")
    dims = {d["name"] for d in stored.get("dims", []) if not d.get("symbolic", True)}
    cap, _ = run_capture(
        ref, device=device, static=tuple(dims), dtype=stored.get("capture_dtype")
    )
    return kernel_diff(stored, cap.to_dict())
