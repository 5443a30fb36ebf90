"""The Python API behind the CLI: each function runs stages end to end.

    from porter.pipeline import capture
    result = capture("examples/rmsnorm.py", out="captured")
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from porter.capture import run_capture
from porter.errors import PorterError
from porter.records import Capture
from porter.reference import load_reference
from porter.store import MANIFEST, kernel_diff, read_manifest, write_case


def _stderr(message: str) -> None:
    print(f"porter: {message}", file=sys.stderr, flush=True)


@dataclass
class CaptureResult:
    case: Path
    capture: Capture
    changed: str | None  # None: new case; "": same code as stored; else the diff
    backups: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


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
) -> CaptureResult:
    """Capture Inductor's kernels for the reference in `path` into `out/name/`."""
    path = Path(path)
    name = name or path.stem
    if not name.isidentifier():
        raise PorterError(
            f"case name {name!r} must be a Python identifier (letters, digits, _); "
            "pass --name"
        )
    case = Path(out) / name
    progress(f"loading {path}")
    ref = load_reference(path)
    progress(f"compiling {ref.name} with torch.compile ({device} device)")
    cap, sources = run_capture(ref, device=device, static=static, dtype=dtype, debug=debug)
    progress(
        f"captured {len(cap.kernels)} Triton kernel(s) from {len(cap.modules)} "
        f"module(s) on {cap.target}"
    )
    files = capture_files(path.read_text(), cap, sources)
    old = read_manifest(case) if (case / MANIFEST).is_file() else None
    changed = kernel_diff(old, cap.to_dict()) if old is not None else None
    written = write_case(case, files, cap.to_dict(), force=force, replace_all=True)
    return CaptureResult(case, cap, changed, written.backups, cap.warnings)


def capture_files(reference_source: str, cap: Capture, sources: list[str]) -> dict[str, str]:
    files = {"reference.py": reference_source}
    for i, source in enumerate(sources):
        files[f"inductor/module_{i}.py"] = source
    for k in cap.kernels:
        files[f"inductor/kernels/{k.name}.py"] = k.source
    return files


def diff(case: str | Path, device: str = "auto", progress: Callable[[str], None] = _stderr) -> str:
    """Re-capture the stored reference and diff Inductor's kernels; touches nothing."""
    case = Path(case)
    stored = read_manifest(case)
    ref_path = case / "reference.py"
    if not ref_path.is_file():
        raise PorterError(f"{ref_path} is missing; re-run porter capture on the original file")
    ref = load_reference(ref_path)
    progress(f"re-compiling {ref.name} to compare with the stored capture")
    dims = {d["name"] for d in stored.get("dims", []) if not d.get("symbolic", True)}
    cap, _ = run_capture(ref, device=device, static=tuple(dims), dtype=stored.get("capture_dtype"))
    return kernel_diff(stored, cap.to_dict())
