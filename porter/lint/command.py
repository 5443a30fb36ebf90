"""`porter lint PATH... [--format text|json|sarif] [--min-severity ...]` and
`porter lint --explain RULE`: argparse glue over `porter.lint.lint_paths`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from porter.errors import PorterError
from porter.lint.engine import lint_paths
from porter.lint.findings import ERROR, INFO, SEVERITIES, WARNING, Finding, Rule
from porter.lint.registry import RULES
from porter.lint.sarif import to_sarif

EXIT_CLEAN = 0
EXIT_ERRORS = 1  # error-severity findings remain
EXIT_USAGE = 2  # bad arguments, missing paths, unknown rule id

DOC = "docs/lint-rules.md"
# How each severity is counted in the summary line.
_COUNTED = {ERROR: "error(s)", WARNING: "warning(s)", INFO: "info"}
_HIDDEN = {ERROR: "error(s)", WARNING: "warning(s)", INFO: "info finding(s)"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="Python files or folders (searched for *.py)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "sarif"),
        default="text",
        help="text: one `path:line:col: RULE message (fix: ...)` per line; "
        "json: a list; sarif: SARIF 2.1.0, for code scanning",
    )
    parser.add_argument(
        "--min-severity",
        choices=SEVERITIES,
        default=WARNING,
        help="show and count findings of this severity and above (default: "
        "warning; info adds what a rule saw but could not decide). "
        "The exit code is 1 on any error either way",
    )
    parser.add_argument(
        "--explain",
        metavar="RULE",
        help="print what RULE (e.g. PT002) checks, why, its fix, how to "
        "suppress it and its section in docs/lint-rules.md; no PATH needed",
    )


def _usage(message: str) -> int:
    print(f"porter lint: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def doc_link(rule: Rule) -> str:
    """The rule's section in docs/lint-rules.md (a `### PT002 int32-offset` heading)."""
    return f"{DOC}#{rule.id.lower()}-{rule.name}"


def explain(rule: Rule) -> str:
    return "\n".join(
        [
            f"{rule.id} {rule.name}: {rule.title}",
            f"severity: {rule.severity}",
            f"why: {rule.reason}",
            f"fix: {rule.fix}",
            f"suppress on a line: # porter: ignore[{rule.id}]",
            f"docs: {doc_link(rule)}",
        ]
    )


def _explain(rule_id: str) -> int:
    rule = RULES.get(rule_id.strip().upper())
    if rule is None:
        return _usage(f"unknown rule {rule_id!r}; rules are {', '.join(RULES)}")
    print(explain(rule))
    return EXIT_CLEAN


def shown(findings: list[Finding], min_severity: str) -> list[Finding]:
    """The findings at `min_severity` or above (SEVERITIES runs most severe first)."""
    cutoff = SEVERITIES.index(min_severity)
    return [f for f in findings if SEVERITIES.index(f.severity) <= cutoff]


def summary(findings: list[Finding], min_severity: str) -> str:
    """`3 finding(s): 1 error(s), 2 warning(s)`, counting only what is shown, and
    a note of what --min-severity hid."""
    cutoff = SEVERITIES.index(min_severity) + 1
    count = {s: sum(f.severity == s for f in findings) for s in SEVERITIES}
    total = sum(count[s] for s in SEVERITIES[:cutoff])
    counted = ", ".join(f"{count[s]} {_COUNTED[s]}" for s in SEVERITIES[:cutoff])
    line = f"{total} finding(s): {counted}"
    hidden = [s for s in SEVERITIES[cutoff:] if count[s]]
    if hidden:
        parts = " and ".join(f"{count[s]} {_HIDDEN[s]}" for s in hidden)
        line += f"; {parts} hidden (--min-severity {hidden[-1]} shows them)"
    return line


def run(args: argparse.Namespace) -> int:
    if args.explain is not None:
        if args.paths:
            return _usage("give PATHs to lint or --explain RULE, not both")
        return _explain(args.explain)
    if not args.paths:
        return _usage("give a PATH to lint (a .py file or a folder), or --explain RULE")
    try:
        findings = lint_paths(args.paths)
    except PorterError as err:
        return _usage(str(err))
    visible = shown(findings, args.min_severity)
    if args.format == "json":
        print(json.dumps([asdict(f) for f in visible], indent=2))
    elif args.format == "sarif":
        print(json.dumps(to_sarif(visible, RULES), indent=2))
    else:
        for f in visible:
            print(f.format_text())
        print(summary(findings, args.min_severity))
    # Errors are never hidden (error is the highest cutoff), so this is what was shown too.
    return EXIT_ERRORS if any(f.severity == ERROR for f in findings) else EXIT_CLEAN
