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
from porter.merge import merge3

MANIFEST = "manifest.json"


def sha256_text(text: str | bytes) -> str:
    data = text if isinstance(text, bytes) else text.encode()
    return hashlib.sha256(data).hexdigest()


def read_manifest(case: Path) -> dict[str, Any]:
    path = Path(case) / MANIFEST
    if not path.is_file():
        raise PorterError(
            f"{case}: not a porter case (no {MANIFEST}); give a folder porter "
            "capture wrote, or run porter capture first"
        )
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise PorterError(
            f"{path}: unreadable ({err}); restore it from version control, or "
            "capture the reference again"
        ) from None
    if not isinstance(data, dict) or "kernels" not in data or "modules" not in data:
        raise PorterError(
            f"{path}: not a manifest porter wrote (no kernels or modules); restore "
            "it from version control, or capture the reference again"
        )
    return data


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
    # Scaffold files the engineer edited: porter's changes merged into them,
    # left as they were (porter's output unchanged), or, where the two
    # overlap, left as they were beside a .porter-merge file with both.
    merged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


# The files an engineer owns and edits: porter merges its regenerated text into
# their edits (porter.merge) instead of refusing or replacing them. BASES
# holds the text porter last wrote of each, the merge's common ancestor.
MERGED = ("kernel.py", "test_parity.py", "README.md")
BASES = ".porter/bases.json"


def read_bases(case: Path) -> dict[str, str]:
    """The text porter last wrote of each merged file, by name ({} before any)."""
    path = Path(case) / BASES
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_case(
    case: Path,
    files: dict[str, str | bytes],
    manifest: dict[str, Any],
    force: bool = False,
    replace_all: bool = True,
) -> WriteResult:
    """Write `files` (relative path -> text) and the manifest into `case`, atomically.

    replace_all: the generated files of the old case not in `files` are dropped
    (a re-capture); otherwise they are kept (regenerating only the scaffold).
    Files porter did not generate (notes, backups) are always kept. An edited
    kernel.py, test_parity.py or README.md gets porter's changes merged in;
    other edited files are refused, or with `force` replaced, each kept as a
    backup (as are merged files with `force`: porter's text, not a merge).
    """
    case = Path(case)
    old_manifest: dict[str, Any] = {}
    foreign: list[str] = []
    if case.exists():
        if not (case / MANIFEST).is_file():
            if not force:
                raise PorterError(
                    f"{case} exists and is not a porter case; choose another --name or "
                    "--out, or pass --force to turn it into one (files of yours that "
                    "porter writes over are kept as backups)"
                )
            foreign = [rel for rel in files if (case / rel).is_file()]
        else:
            old_manifest = read_manifest(case)
    edited = edited_files(case, old_manifest) if old_manifest else []
    merges: dict[str, str] = {}  # rel -> the text to write instead of porter's
    result = WriteResult(case, sorted(files))
    bases = read_bases(case) if old_manifest else {}
    if not force:
        for rel in edited:
            if rel not in MERGED or rel not in files or rel not in bases:
                continue
            base, ours, new = bases[rel], (case / rel).read_text(), files[rel]
            if new == base:
                merges[rel] = ours
                result.kept.append(rel)
                continue
            merged = merge3(base, ours, new)
            if merged.conflicts:
                merges[rel] = ours
                merges[f"{rel}.porter-merge"] = merged.text
                result.conflicts.append(rel)
            else:
                merges[rel] = merged.text
                result.merged.append(rel)
    # Only files porter is about to replace or drop count as a conflict.
    at_risk = [f for f in edited if (f in files or replace_all) and f not in merges]
    at_risk += foreign
    if at_risk and not force:
        raise PorterError(
            f"{case}: refusing to overwrite files edited since porter wrote them: "
            f"{', '.join(at_risk)}; move them away, or pass --force to keep each as a "
            ".porter-backup beside the new one"
        )
    # Merged files are backed up too: the merge is porter's doing.
    at_risk += result.merged

    generated = {} if replace_all else dict(old_manifest.get("generated", {}))
    generated.update({rel: sha256_text(text) for rel, text in files.items()})
    old_generated = set(old_manifest.get("generated", {}))
    manifest = {**manifest, "generated": generated}

    case.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{case.name}.porter-tmp-", dir=case.parent))
    # mkdtemp's folder is private (0700); the case is an ordinary folder.
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)
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
                    result.backups.append(backup)
                keep_generated = (
                    rel in old_generated and not replace_all and rel not in files
                )
                if rel not in old_generated or keep_generated:
                    _copy(path, tmp / rel)
        for rel, text in files.items():
            _write(tmp / rel, merges.get(rel, text))
            if rel in MERGED and rel not in result.conflicts:
                bases[rel] = text  # the next merge's common ancestor
        if any(rel in MERGED for rel in files):
            _write(tmp / BASES, json.dumps(bases, indent=1, sort_keys=True) + "\n")
        for rel, text in merges.items():
            if rel not in files:
                _write(tmp / rel, text)
        _write(tmp / MANIFEST, json.dumps(manifest, indent=2, sort_keys=False) + "\n")
        result.created = not case.exists()
        _swap(tmp, case)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # Ctrl-C or a crash leaves no half case
        raise
    return result


# The module the cases of a folder share, and the text porter last wrote of it
# (the merge's common ancestor).
COMMON = "common.py"
COMMON_BASE = ".porter/common.base.py"


def write_common(root: Path, name: str, text: str, force: bool = False) -> WriteResult:
    """Write the module the cases under `root` share (common.py) as porter
    writes a case's kernel.py: an edited one gets porter's changes merged in
    (or, where they overlap, is left beside a .porter-merge file); a file porter
    did not write is refused, or with `force` kept as a backup."""
    root = Path(root)
    check_common(root, name, text, force)
    path, base_path = root / name, root / COMMON_BASE
    result = WriteResult(root, [name])
    ours = path.read_text() if path.is_file() else None
    base = base_path.read_text() if base_path.is_file() else None
    write = text
    if ours is not None and ours not in (text, base):
        if base is None or force:
            result.backups.append(_backup(path))
        elif base == text:
            write = None  # porter's text unchanged: the edits stand
            result.kept.append(name)
        else:
            merged = merge3(base, ours, text)
            if merged.conflicts:
                _write(root / f"{name}.porter-merge", merged.text)
                result.conflicts.append(name)
                write = None
            else:
                write = merged.text
                result.merged.append(name)
                result.backups.append(_backup(path))  # the merge is porter's doing
    if write is not None and write != ours:
        tmp = path.with_name(f".{name}.porter-tmp-{os.getpid()}")
        _write(tmp, write)
        os.replace(tmp, path)  # never half a file
    if not result.conflicts:
        _write(base_path, text)
    return result


def _backup(path: Path) -> str:
    """Copy `path` to a .porter-backup-<time> file beside it; that file's name."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    backup = f"{path.name}.porter-backup-{stamp}"
    _copy(path, path.with_name(backup))
    return backup


def check_common(root: Path, name: str, text: str, force: bool = False) -> None:
    """Refuse, before anything is written, a common.py porter did not write."""
    path = Path(root) / name
    if force or not path.is_file() or (Path(root) / COMMON_BASE).is_file():
        return
    if path.read_text() != text:
        raise PorterError(
            f"{path} exists and porter did not write it; move it away, or "
            "pass --force to keep it as a .porter-backup beside the new one"
        )


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
    # Inductor's own scoring of tilings, not the kernel (it differs with
    # triton.max_tiles, which porter sets)
    (re.compile(r"'tiling_scores': \{[^}]*\}, "), ""),
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
