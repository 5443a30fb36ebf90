"""The data that leaves the linter: rules, and the findings they produce."""

from __future__ import annotations

import ast
from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
# What a rule saw but could not decide (it says what it could not see); never fails a run.
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


@dataclass(frozen=True)
class Rule:
    """One kernel-writing rule as a static check."""

    id: str  # stable id users put in `# porter: ignore[...]`
    name: str  # short kebab-case name, for docs and humans
    severity: str  # ERROR makes `porter lint` exit 1; WARNING and INFO do not
    title: str
    reason: str  # why it matters, in one or two sentences
    fix: str  # the generic fix; a finding may give a more specific one


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    path: str
    line: int
    col: int  # 1-based, like the line
    message: str
    fix: str

    def format_text(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.rule} {self.message} (fix: {self.fix})"


@dataclass(frozen=True)
class Hit:
    """What a rule reports before the engine adds path, severity and suppression."""

    line: int
    col: int  # 0-based, as ast gives it
    message: str
    fix: str | None = None  # None: use the rule's generic fix
    severity: str | None = (
        None  # None: the rule's severity; INFO where it cannot decide
    )


def hit(
    node: ast.AST, message: str, fix: str | None = None, severity: str | None = None
) -> Hit:
    return Hit(node.lineno, node.col_offset, message, fix, severity)
