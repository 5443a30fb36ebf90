"""`porter lint PATH... [--format text|json]`: argparse glue over `porter.lint.lint_paths`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from porter.errors import PorterError
from porter.lint.engine import lint_paths
from porter.lint.findings import ERROR

EXIT_CLEAN = 0
EXIT_ERRORS = 1  # error-severity findings remain
EXIT_USAGE = 2  # bad arguments, missing paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="Python files or folders (searched for *.py)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: one `path:line:col: RULE message (fix: ...)` per line; json: a list",
    )


def run(args: argparse.Namespace) -> int:
    try:
        findings = lint_paths(args.paths)
    except PorterError as err:
        print(f"porter lint: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    if args.format == "json":
        print(json.dumps([asdict(f) for f in findings], indent=2))
    else:
        for f in findings:
            print(f.format_text())
        errors = sum(f.severity == ERROR for f in findings)
        print(
            f"{len(findings)} finding(s): {errors} error(s), {len(findings) - errors} warning(s)"
        )
    return EXIT_ERRORS if any(f.severity == ERROR for f in findings) else EXIT_CLEAN
