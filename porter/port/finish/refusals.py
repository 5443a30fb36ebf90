"""Stage: a refusal the launcher already made is not made again.

Two passes may refuse the same call, each for its reason: an amax over an
empty axis (empty) and the capture's eager error at that size (raises) both
refuse `hidden == 0`. The first `if` raises, so a later one with the same test
never runs; it goes.
"""

from __future__ import annotations

import ast

from porter.port.model import PortState


def _test(check: str) -> str | None:
    """The test of a check that is one `if` and one refuse(...), as ast
    spells it, else None."""
    head, _, body = check.partition("\n")
    body = body.strip()
    if (
        head.startswith("if ")
        and head.endswith(":")
        and body.startswith("refuse(")
        and "\n" not in body
    ):
        return ast.unparse(ast.parse(head[3:-1].strip(), mode="eval"))
    return None


def first_refusals(checks: list[str]) -> list[str]:
    """checks less each refusal whose test an earlier refusal has."""
    seen: set[str] = set()
    kept = []
    for check in checks:
        test = _test(check)
        if test is not None:
            if test in seen:
                continue
            seen.add(test)
        kept.append(check)
    return kept


def drop_repeated_refusals(port: PortState) -> None:
    """A launcher check that refuses on the same test as an earlier one (it
    can never run) goes; checks before the sizes and after them apart."""
    launcher = port.launcher
    launcher.checks = first_refusals(launcher.checks)
    launcher.shape_checks = first_refusals(launcher.shape_checks)
