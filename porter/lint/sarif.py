"""Findings as SARIF 2.1.0, the format code-scanning UIs (GitHub's among them) read."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from porter.lint.findings import ERROR, INFO, WARNING, Finding, Rule

VERSION = "2.1.0"
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL = "porter lint"
# SARIF has no "info" level; "note" is its lowest that still shows a result.
LEVELS = {ERROR: "error", WARNING: "warning", INFO: "note"}


def artifact_uri(path: str) -> str:
    """A finding's path as a URI reference: relative stays relative (to where
    `porter lint` ran), absolute becomes file://; forward slashes, percent-escaped."""
    p = Path(path)
    if p.is_absolute():
        return p.as_uri()
    return quote(p.as_posix(), safe="/")


def _rule(rule: Rule) -> dict:
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.reason},
        "help": {"text": rule.fix},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
    }


def _result(f: Finding, index: dict[str, int]) -> dict:
    out = {
        "ruleId": f.rule,
        "level": LEVELS[f.severity],
        "message": {"text": f"{f.message} (fix: {f.fix})"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(f.path)},
                    "region": {"startLine": f.line, "startColumn": f.col},
                }
            }
        ],
    }
    if f.rule in index:
        out["ruleIndex"] = index[f.rule]
    return out


def to_sarif(findings: list[Finding], rules: dict[str, Rule]) -> dict:
    """One SARIF log with one run: every rule in `rules`, one result per finding."""
    descriptors = [_rule(r) for r in rules.values()]
    index = {r.id: i for i, r in enumerate(rules.values())}
    return {
        "$schema": SCHEMA,
        "version": VERSION,
        "runs": [
            {
                # informationUri is left out: SARIF requires an absolute URI there.
                "tool": {"driver": {"name": TOOL, "rules": descriptors}},
                "results": [_result(f, index) for f in findings],
            }
        ],
    }
