"""Plain copies folded into their uses (fold_copies)."""

from __future__ import annotations

import ast

from porter.ast_tools import assigned_names, rename_names, walk_stmts
from porter.port.model import KernelPort


def fold_copies(kp: KernelPort) -> None:
    """`tmp2 = tmp1` (left behind by removed casts and broadcasts) is folded away
    when both names are assigned exactly once."""
    folded = fold_plain_copies(kp.tree)
    if folded:
        kp.notes.append(f"folded {folded} plain copies")


def fold_plain_copies(fn: ast.FunctionDef) -> int:
    """fold_copies on a function; how many copies went."""
    folded = 0
    while True:
        counts: dict[str, int] = {}
        for stmt, _ in walk_stmts(fn.body):
            for t in assigned_names(stmt):
                counts[t] = counts.get(t, 0) + 1
            if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
                counts[stmt.target.id] = counts.get(stmt.target.id, 0) + 2
        args = {a.arg for a in fn.args.args}
        copy = None
        for stmt, body in walk_stmts(fn.body):
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Name)
                and counts.get(stmt.targets[0].id) == 1
                and (counts.get(stmt.value.id) == 1 or stmt.value.id in args)
            ):
                copy = (stmt, body)
                break
        if copy is None:
            return folded
        stmt, body = copy
        body.remove(stmt)
        rename_names(fn, {stmt.targets[0].id: stmt.value.id})
        folded += 1
