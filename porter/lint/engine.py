"""Run the rules over sources and files; apply `# porter: ignore[...]` comments."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from porter.errors import PorterError
from porter.lint.context import Context, helper_names
from porter.lint.findings import Finding, Hit
from porter.lint.registry import CHECKS, RULES, SYNTAX
from porter.lint.source import Module, find_launches, parse_module

_IGNORE = re.compile(r"porter:\s*ignore\[([A-Za-z0-9_,\s-]+)\]")
# Folders a recursive lint never enters, besides hidden ones (.git, .venv).
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}


def suppressions(source: str) -> dict[int, set[str]]:
    """Line -> rule ids from trailing `# porter: ignore[PT001, PT004]` comments."""
    out: dict[int, set[str]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            m = _IGNORE.search(tok.string)
            if m:
                ids = {s.strip().upper() for s in m.group(1).split(",") if s.strip()}
                out.setdefault(tok.start[0], set()).update(ids)
    return out


def _finding(rule_id: str, path: str, h: Hit) -> Finding:
    rule = RULES[rule_id]
    return Finding(
        rule.id,
        h.severity or rule.severity,
        path,
        h.line,
        h.col + 1,
        h.message,
        h.fix or rule.fix,
    )


def _lint_module(module: Module, helpers: set[str] = frozenset()) -> list[Finding]:
    ctx = Context.build(module, helpers)
    ignored = suppressions(module.source)
    found: set[Finding] = set()
    for check in CHECKS:
        rule_id = check.RULE.id
        for h in check.check(ctx):
            if rule_id not in ignored.get(h.line, ()):
                found.add(_finding(rule_id, module.path, h))
    return sorted(found, key=lambda f: (f.path, f.line, f.col, f.rule))


def _syntax_finding(path: str, err: SyntaxError) -> Finding:
    h = Hit(err.lineno or 1, max((err.offset or 1) - 1, 0), f"cannot parse: {err.msg}")
    return _finding(SYNTAX.id, path, h)


def lint_source(
    source: str, path: str = "<string>", known_kernels: set[str] = frozenset()
) -> list[Finding]:
    """Lint one file's source. `known_kernels` names kernels defined elsewhere, so
    their launch sites here are checked too."""
    try:
        module = parse_module(source, path, set(known_kernels))
    except SyntaxError as err:
        return [_syntax_finding(path, err)]
    return _lint_module(module)


def collect_files(paths: list[str | Path]) -> list[Path]:
    """Files to lint: given files as-is, folders searched for *.py (hidden folders skipped)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for f in sorted(path.rglob("*.py")):
                rel = f.relative_to(path).parts[:-1]
                if not any(p.startswith(".") or p in _SKIP_DIRS for p in rel):
                    files.append(f)
        else:
            raise PorterError(
                f"no such file or folder: {raw} (pass .py files or folders to lint)"
            )
    return files


def _read(path: Path) -> str:
    try:
        with tokenize.open(path) as f:  # honours PEP 263 encoding cookies
            return f.read()
    except (OSError, UnicodeDecodeError, SyntaxError) as err:
        raise PorterError(f"cannot read {path}: {err}") from err


def lint_paths(paths: list[str | Path]) -> list[Finding]:
    """Lint files and folders (recursing for *.py). Raises PorterError for a missing path.

    Kernels defined in any of the files count as kernels in all of them, so a
    launcher in one file is checked against a kernel in another."""
    findings: list[Finding] = []
    modules: list[Module] = []
    for f in collect_files(paths):
        try:
            modules.append(parse_module(_read(f), str(f)))
        except SyntaxError as err:
            findings.append(_syntax_finding(str(f), err))
    kernels = {k.name for m in modules for k in m.kernels}
    for m in modules:
        find_launches(m, kernels)
    helpers = helper_names(modules)
    for m in modules:
        findings += _lint_module(m, helpers)
    return sorted(findings, key=lambda f: (f.path, f.line, f.col, f.rule))
