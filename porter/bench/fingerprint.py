"""Fingerprints of a case's kernel.py code, which a bench row carries so
that the report can tell rows of code edited since."""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from pathlib import Path

from porter.store import COMMON


def code_text(source: str) -> str:
    """A kernel.py's code without its comments, docstrings and blank lines:
    what a fingerprint of the code it runs hashes. Lines, as in the file
    (Python versions tokenize and dump syntax trees differently; comment tokens
    and docstring lines they agree on)."""
    tree = ast.parse(source)
    dropped: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(
                node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            )
            and ast.get_docstring(node, clean=False) is not None
        ):
            doc = node.body[0]
            dropped.update(range(doc.lineno, doc.end_lineno + 1))
    comment_at = {
        tok.start[0]: tok.start[1]
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    kept = []
    for number, line in enumerate(source.splitlines(), 1):
        if number in dropped:
            continue
        line = line[: comment_at.get(number, len(line))].rstrip()
        if line:
            kept.append(line)
    return "\n".join(kept)


def kernel_fingerprint(folder: Path) -> str | None:
    """Short hash of the code of a case's kernel.py as it is now, with the
    common.py beside its folder where it imports from it (code_text: a change
    to comments or docstrings alone, such as a measured figure, keeps it): a
    bench row carries the one it timed, so the report can tell rows of code
    edited or regenerated since. The whole file's bytes where it does not parse."""
    path = Path(folder) / "kernel.py"
    if not path.is_file():
        return None
    raw = path.read_bytes()
    common = Path(folder).parent / COMMON
    if uses_common(raw) and common.is_file():
        return code_fingerprint(raw, common.read_bytes())
    return code_fingerprint(raw)


def uses_common(raw: bytes) -> bool:
    """Whether a kernel.py's bytes import from the common.py of its folder's parent."""
    return b"from ..common import" in raw


def code_fingerprint(raw: bytes, common: bytes | None = None) -> str:
    """kernel_fingerprint of a kernel.py's bytes (and of common.py's, where it
    imports from it)."""
    parts = [raw] if common is None else [raw, common]
    texts = []
    for part in parts:
        try:
            texts.append(code_text(part.decode()).encode())
        except (SyntaxError, UnicodeDecodeError, tokenize.TokenError):
            texts.append(part)
    return hashlib.sha256(b"\n".join(texts)).hexdigest()[:12]
