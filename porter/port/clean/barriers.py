"""Barriers between a store and a later load of the same pointer, and none elsewhere (barrier_before_reload, drop_store_only_barriers)."""

from __future__ import annotations

import ast

from porter.ast_tools import is_call, ptr_base
from porter.port.model import KernelPort


def barrier_before_reload(kp: KernelPort) -> None:
    """A load from a pointer this kernel stored to earlier gets a
    `tl.debug_barrier()` before it (the seed's write-then-read rule)."""
    stored: set[str] = set()
    inserted = 0

    def visit(body: list[ast.stmt]) -> None:
        nonlocal inserted
        i = 0
        while i < len(body):
            stmt = body[i]
            loads = {
                ptr_base(n.args[0]) for n in ast.walk(stmt) if is_call(n, "tl.load")
            }
            if (loads - {None}) & stored:
                body.insert(
                    i, ast.Expr(ast.parse("tl.debug_barrier()", mode="eval").body)
                )
                stored.clear()
                inserted += 1
                i += 1
            for n in ast.walk(stmt):
                if is_call(n, "tl.store"):
                    stored.add(ptr_base(n.args[0]))
            i += 1

    visit(kp.tree.body)
    if inserted:
        kp.notes.append(
            f"added {inserted} tl.debug_barrier() between a store and a later load of the same pointer"
        )


def drop_store_only_barriers(kp: KernelPort) -> None:
    """`tl.debug_barrier()` orders a program's reads and writes of one buffer.
    Inductor puts one before every store to an in-place buffer (in_out_ptr0),
    also where the kernel never reads it (logsumexp's output); where no
    argument is both loaded and stored, each barrier goes. Kept wherever a
    load or store goes through anything but an argument plus an offset, which
    could alias."""
    fn = kp.tree
    args = {a.arg for a in fn.args.args}
    loaded, stored = set(), set()
    for n in ast.walk(fn):
        for name, into in (("tl.load", loaded), ("tl.store", stored)):
            if is_call(n, name):
                base = ptr_base(n.args[0]) if n.args else None
                if base not in args:
                    return
                into.add(base)
    if loaded & stored:
        return
    dropped = 0
    for node in ast.walk(fn):
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            kept = [
                s
                for s in body
                if not (
                    isinstance(s, ast.Expr) and is_call(s.value, "tl.debug_barrier")
                )
            ]
            if len(kept) < len(body):
                dropped += len(body) - len(kept)
                setattr(node, field, kept or [ast.Pass()])
    if dropped:
        kp.notes.append(
            f"dropped {dropped} tl.debug_barrier() before a store to a buffer "
            "the kernel never reads"
        )
