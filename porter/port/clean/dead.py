"""Dead aliases and unread values dropped (drop_dead_aliases)."""

from __future__ import annotations

import ast

from porter.ast_tools import assigned_names, read_counts, walk_stmts
from porter.port.model import KernelPort


def _is_pure(value: ast.AST) -> bool:
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in (
                "tl.store",
                "tl.atomic_add",
                "tl.debug_barrier",
                "tl.device_assert",
            ):
                return False
    return True


def drop_unread(fn: ast.FunctionDef) -> int:
    """Remove pure assignments nothing reads, until none is left; how many went."""
    removed = 0
    changed = True
    while changed:
        changed = False
        used = read_counts(fn)
        for stmt, body in walk_stmts(fn.body):
            targets = assigned_names(stmt)
            if not targets or isinstance(stmt, (ast.For, ast.While)):
                continue
            value = getattr(stmt, "value", None)
            if value is None or not _is_pure(value):
                continue
            if all(used.get(t, 0) == 0 for t in targets):
                body.remove(stmt)
                removed += 1
                changed = True
                break
    return removed


def drop_dead_aliases(kp: KernelPort) -> None:
    """Remove Inductor's compatibility aliases (rnumel, RBLOCK, roffset, rindex,
    rbase) and any pure assignment nothing reads."""
    removed = drop_unread(kp.tree)
    if removed:
        kp.notes.append(f"removed {removed} dead alias(es) and unused value(s)")
