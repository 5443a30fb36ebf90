"""Stage: the case folder on disk, written atomically, never losing an engineer's edits.

A case is `DIR/NAME/`. `manifest.json` records the sha256 of every file porter
generated; a file whose content no longer matches was edited by someone, and
porter will not overwrite it without `force` (and then keeps it as a backup).
"""

from __future__ import annotations

import datetime
import difflib
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from porter.errors import PorterError

MANIFEST = "manifest.json"


def sha256_text(text: str | bytes) -> str:
    data = text if isinstance(text, bytes) else text.encode()
    return hashlib.sha256(data).hexdigest()


def read_manifest(case: Path) -> dict[str, Any]:
    path = case / MANIFEST
    if not path.is_file():
        raise PorterError(
            f"{case}: not a porter case (no {MANIFEST}); run porter capture first"
        )
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise PorterError(
            f"{path}: unreadable ({err}); restore it from version control"
        ) from err


def edited_files(case: Path, manifest: dict[str, Any]) -> list[str]:
    """Generated files whose content changed since porter wrote them."""
    out = []
    for rel, digest in sorted(manifest.get("generated", {}).items()):
        path = case / rel
        if path.is_file() and sha256_text(path.read_bytes()) != digest:
            out.append(rel)
    return out


@dataclass
class WriteResult:
    case: Path
    written: list[str]
    backups: list[str] = field(default_factory=list)
    created: bool = True


def write_case(
    case: Path,
    files: dict[str, str],
    manifest: dict[str, Any],
    force: bool = False,
    replace_all: bool = True,
) -> WriteResult:
    """Write `files` (relative path -> text) and the manifest into `case`, atomically.

    replace_all: the generated files of the old case not in `files` are dropped
    (a re-capture); otherwise they are kept (regenerating only the scaffold).
    Files porter did not generate (notes, backups) are always kept.
    """
    case = Path(case)
    old_manifest: dict[str, Any] = {}
    if case.exists():
        if not (case / MANIFEST).is_file():
            if not force:
                raise PorterError(
                    f"{case} exists and is not a porter case; choose another --name or "
                    "--out, or pass --force to turn it into one (its files are kept)"
                )
        else:
            old_manifest = read_manifest(case)
    edited = edited_files(case, old_manifest) if old_manifest else []
    # Only files porter is about to replace or drop count as a conflict.
    at_risk = [f for f in edited if f in files or replace_all]
    if at_risk and not force:
        raise PorterError(
            f"{case}: refusing to overwrite files edited since porter wrote them: "
            f"{', '.join(at_risk)}; move them away, or pass --force to keep each as a "
            ".porter-backup beside the new one"
        )

    generated = {} if replace_all else dict(old_manifest.get("generated", {}))
    generated.update({rel: sha256_text(text) for rel, text in files.items()})
    old_generated = set(old_manifest.get("generated", {}))
    manifest = {**manifest, "generated": generated}

    case.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{case.name}.porter-tmp-", dir=case.parent))
    backups = []
    try:
        if case.exists():
            stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
            for path in sorted(case.rglob("*")):
                if not path.is_file() or "__pycache__" in path.parts:
                    continue
                rel = path.relative_to(case).as_posix()
                if rel == MANIFEST:
                    continue
                if rel in at_risk:
                    backup = f"{rel}.porter-backup-{stamp}"
                    _copy(path, tmp / backup)
                    backups.append(backup)
                keep_generated = (
                    rel in old_generated and not replace_all and rel not in files
                )
                if rel not in old_generated or keep_generated:
                    _copy(path, tmp / rel)
        for rel, text in files.items():
            _write(tmp / rel, text)
        _write(tmp / MANIFEST, json.dumps(manifest, indent=2, sort_keys=False) + "\n")
        created = not case.exists()
        _swap(tmp, case)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # Ctrl-C or a crash leaves no half case
        raise
    return WriteResult(case, sorted(files), backups, created)


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)  # a reference file, byte for byte
    else:
        path.write_text(text)


def _swap(new: Path, case: Path) -> None:
    if not case.exists():
        os.replace(new, case)
        return
    old = case.with_name(f".{case.name}.porter-old-{os.getpid()}")
    os.replace(case, old)
    try:
        os.replace(new, case)
    except BaseException:
        os.replace(old, case)
        raise
    shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------- diffs

_NOISE = [
    (re.compile(r"'backend_hash': '[0-9A-Fa-f]+'"), "'backend_hash': '...'"),
    (re.compile(r"^# kernel path: .*$", re.M), "# kernel path: ..."),
]


def normalize_kernel(source: str) -> str:
    """Drop what changes on every run but means nothing (hashes, cache paths)."""
    for pattern, repl in _NOISE:
        source = pattern.sub(repl, source)
    return source


def kernel_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A unified diff of the kernels of two manifests, empty when Inductor's code is the same."""
    old_k = {k["name"]: normalize_kernel(k["source"]) for k in old.get("kernels", [])}
    new_k = {k["name"]: normalize_kernel(k["source"]) for k in new.get("kernels", [])}
    chunks = []
    for name in sorted(set(old_k) | set(new_k)):
        a = old_k.get(name, "").splitlines(keepends=True)
        b = new_k.get(name, "").splitlines(keepends=True)
        chunks.extend(difflib.unified_diff(a, b, f"stored/{name}.py", f"new/{name}.py"))
    return "".join(chunks)
