"""Plain copies folded into their uses (fold_copies)."""

from __future__ import annotations

import ast

from porter.ast_tools import assigned_names, rename_names, stored_names, walk_stmts
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
            return folded + _fold_loop_target_copies(fn)
        stmt, body = copy
        body.remove(stmt)
        rename_names(fn, {stmt.targets[0].id: stmt.value.id})
        folded += 1


def _fold_loop_target_copies(fn: ast.FunctionDef) -> int:
    """`roffset = r0_offset`, a copy of a loop's own target (Inductor's alias
    for Welford's first-block test), folded where every read of the copy is
    in a loop that binds it so, after that binding, and nothing else assigns
    the copy or, after it, the target."""
    loops = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.For) and isinstance(n.target, ast.Name)
    ]
    by_name: dict[str, list[tuple[ast.For, int]]] = {}
    for loop in loops:
        for i, stmt in enumerate(loop.body):
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Name)
                and stmt.value.id == loop.target.id
            ):
                by_name.setdefault(stmt.targets[0].id, []).append((loop, i))
    folded = 0
    for name, sites in by_name.items():
        copies = {id(loop.body[i]) for loop, i in sites}
        stores = [s for s, _ in walk_stmts(fn.body) if name in assigned_names(s)] + [
            l for l in loops if l.target.id == name
        ]
        if len(stores) != len(sites) or any(id(s) not in copies for s in stores):
            continue
        inside = set()
        for loop, i in sites:
            inside |= {id(n) for s in loop.body[i + 1 :] for n in ast.walk(s)}
            later = set().union(*map(stored_names, loop.body[i + 1 :]))
            if name in later or loop.target.id in later:
                inside = None
                break
        reads = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
        if inside is None or any(id(n) not in inside for n in reads):
            continue
        for loop, i in sorted(sites, key=lambda site: -site[1]):
            target = loop.target.id
            for stmt in loop.body[i + 1 :]:
                rename_names(stmt, {name: target})
            del loop.body[i]
            folded += 1
    return folded
