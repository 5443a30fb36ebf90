"""The labelled production corpus of `porter lint`: fetch it, lint it, score it.

    python tools/lint_corpus.py fetch     # the files of tests/lint_production/manifest.toml
    python tools/lint_corpus.py status    # per-rule table, and findings nobody judged yet
    python tools/lint_corpus.py label     # add unjudged findings to labels.json as "?"
    python tools/lint_corpus.py table     # the markdown table docs/lint-rules.md shows
    python tools/lint_corpus.py merge F   # take verdicts and reasons from a judged list F

The files are real production kernels, so they stay out of this repository: each
is fetched from its package's published wheel (`pip download --no-deps`) into a
cache folder ($PORTER_LINT_CORPUS, default ~/.cache/porter/lint-corpus) and
checked against the sha256 that labels.json records.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from porter.lint import lint_paths
from porter.lint.findings import ERROR, WARNING

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "lint_production"
MANIFEST = CORPUS / "manifest.toml"
LABELS = CORPUS / "labels.json"
VERDICTS = ("true", "false", "debatable")
SHOWN = (ERROR, WARNING)  # the severities precision is measured over


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    files: tuple[str, ...]

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.version}"


def packages() -> list[Package]:
    data = tomllib.loads(MANIFEST.read_text())
    return [
        Package(p["name"], p["version"], tuple(p["files"])) for p in data["package"]
    ]


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "porter" / "lint-corpus"
    return Path(os.environ.get("PORTER_LINT_CORPUS", default))


def load_labels() -> dict:
    return (
        json.loads(LABELS.read_text())
        if LABELS.exists()
        else {"files": {}, "findings": []}
    )


def save_labels(labels: dict) -> None:
    labels["findings"].sort(key=lambda f: (f["file"], f["line"], f["col"], f["rule"]))
    LABELS.write_text(json.dumps(labels, indent=1) + "\n")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _present(pkg: Package, root: Path, shas: dict) -> bool:
    for f in pkg.files:
        path = root / pkg.folder / f
        key = f"{pkg.folder}/{f}"
        if not path.exists() or (key in shas and _sha(path) != shas[key]):
            return False
    return True


def fetch(root: Path | None = None, quiet: bool = False) -> Path:
    """Download each package's wheel (no dependencies) and extract the listed files."""
    root = root or cache_dir()
    shas = load_labels()["files"]
    for pkg in packages():
        if _present(pkg, root, shas):
            continue
        if not quiet:
            print(f"fetching {pkg.name}=={pkg.version} ...", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q"]
            cmd += ["--only-binary=:all:", "-d", tmp, f"{pkg.name}=={pkg.version}"]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            (wheel,) = Path(tmp).glob("*.whl")
            with zipfile.ZipFile(wheel) as z:
                for f in pkg.files:
                    out = root / pkg.folder / f
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(z.read(f))
        for f in pkg.files:
            key = f"{pkg.folder}/{f}"
            if key in shas and _sha(root / key) != shas[key]:
                raise RuntimeError(f"{key}: sha256 differs from labels.json")
    return root


def lint_corpus(root: Path) -> list[dict]:
    """Every finding, each package linted on its own (kernels resolve within a package).
    One site reported for two kernels (a grid shared by two launches) counts once."""
    out = []
    for pkg in packages():
        base = root / pkg.folder
        for f in lint_paths([base / name for name in pkg.files]):
            rel = Path(f.path).relative_to(root).as_posix()
            out.append(
                dict(file=rel, rule=f.rule, line=f.line, col=f.col,
                     severity=f.severity, message=f.message)
            )  # fmt: skip
    unique = {}
    for f in out:
        unique.setdefault(_key(f), f)
    return list(unique.values())


def _key(f: dict) -> tuple:
    return (f["file"], f["rule"], f["line"], f["col"])


@dataclass
class Score:
    findings: list[dict]  # current findings at warning or error
    verdicts: dict[tuple, str]  # key -> label of every judged finding
    info: list[dict]  # findings reported at info (not scored)

    def verdict(self, f: dict) -> str:
        return self.verdicts.get(_key(f), "?")

    def unjudged(self) -> list[dict]:
        return [f for f in self.findings if self.verdict(f) == "?"]

    def lost(self) -> list[tuple]:
        """Labelled true positives no longer reported at any severity."""
        found = {_key(f) for f in self.findings + self.info}
        return [k for k, v in self.verdicts.items() if v == "true" and k not in found]

    def true_at_info(self) -> Counter:
        """Labelled true positives the linter now reports only at info, by rule."""
        return Counter(f["rule"] for f in self.info if self.verdict(f) == "true")

    def precision(self) -> float:
        tp = sum(self.verdict(f) == "true" for f in self.findings)
        return tp / len(self.findings) if self.findings else 1.0

    def by_rule(self) -> dict[str, Counter]:
        out: dict[str, Counter] = {}
        for f in self.findings:
            out.setdefault(f["rule"], Counter())[self.verdict(f)] += 1
        return dict(sorted(out.items()))


def score(root: Path) -> Score:
    found = lint_corpus(root)
    labels = load_labels()
    verdicts = {_key(f): f["verdict"] for f in labels["findings"]}
    shown = [f for f in found if f["severity"] in SHOWN]
    info = [f for f in found if f["severity"] not in SHOWN]
    return Score(shown, verdicts, info)


def table(s: Score) -> str:
    lines = [
        "| rule | findings | true | debatable | false | precision |",
        "|------|---------:|-----:|----------:|------:|----------:|",
    ]
    total = Counter()
    for rule, c in s.by_rule().items():
        n = sum(c.values())
        total.update(c)
        lines.append(
            f"| {rule} | {n} | {c['true']} | {c['debatable']} | {c['false']} "
            f"| {c['true'] / n:.0%} |"
        )
    n = sum(total.values())
    lines.append(
        f"| all | {n} | {total['true']} | {total['debatable']} | {total['false']} "
        f"| {s.precision():.0%} |"
    )
    at_info = s.true_at_info()
    if at_info:
        rules = ", ".join(f"{n} {r}" for r, n in sorted(at_info.items()))
        lines.append("")
        lines.append(f"Labelled true positives reported at info only: {rules}.")
    return "\n".join(lines)


def label(root: Path) -> int:
    """Record the current files' sha256 and add unjudged findings as "?"."""
    labels = load_labels()
    for pkg in packages():
        for f in pkg.files:
            key = f"{pkg.folder}/{f}"
            labels["files"][key] = _sha(root / key)
    judged = {_key(f) for f in labels["findings"]}
    added = 0
    for f in score(root).findings:
        if _key(f) not in judged:
            entry = {k: f[k] for k in ("file", "rule", "line", "col", "message")}
            labels["findings"].append(entry | {"verdict": "?", "why": ""})
            added += 1
    save_labels(labels)
    return added


def merge(paths: list[str]) -> int:
    """Copy "verdict" and "why" from judged lists into labels.json (by file, rule, line, col)."""
    labels = load_labels()
    index = {_key(f): f for f in labels["findings"]}
    changed = 0
    for path in paths:
        for f in json.loads(Path(path).read_text()):
            if _key(f) in index and f.get("verdict") in VERDICTS:
                index[_key(f)].update(verdict=f["verdict"], why=f.get("why", ""))
                changed += 1
    save_labels(labels)
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("fetch", "status", "label", "table", "merge"))
    ap.add_argument("files", nargs="*", help="judged lists, for merge")
    args = ap.parse_args(argv)
    if args.command == "merge":
        print(f"{merge(args.files)} verdict(s) merged into {LABELS.relative_to(ROOT)}")
        return 0
    root = fetch()
    if args.command == "label":
        print(f"{label(root)} finding(s) added to {LABELS.relative_to(ROOT)}")
        return 0
    s = score(root)
    if args.command == "table":
        print(table(s))
    elif args.command == "status":
        print(table(s))
        print(f"\n{len(s.info)} info finding(s) not scored")
        for f in s.unjudged():
            print(
                f"unjudged: {f['file']}:{f['line']}:{f['col']} {f['rule']} {f['message']}"
            )
        for k in s.lost():
            print(f"lost true positive: {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
