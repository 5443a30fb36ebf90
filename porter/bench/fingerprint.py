"""Fingerprints of a case's kernel.py code, which a bench row carries so
that the report can tell rows of code edited since."""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from pathlib import Path


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
    """Short hash of the code of a case's kernel.py as it is now (code_text: a
    change to its comments or docstrings alone, such as a measured figure,
    keeps it): a bench row carries the one it timed, so the report can tell
    rows of a kernel.py whose code was edited or regenerated since. The whole
    file's bytes where it does not parse."""
    path = Path(folder) / "kernel.py"
    if not path.is_file():
        return None
    return code_fingerprint(path.read_bytes())


def code_fingerprint(raw: bytes) -> str:
    """kernel_fingerprint of a kernel.py's bytes."""
    try:
        raw = code_text(raw.decode()).encode()
    except (SyntaxError, UnicodeDecodeError, tokenize.TokenError):
        pass
    return hashlib.sha256(raw).hexdigest()[:12]
