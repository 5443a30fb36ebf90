"""Stage: the looped kernel recomputes a temporary instead of reloading it.

Inductor's CPU softmax stores exp(x - max) into the output in its second loop
and reads it back in the third to divide by the sum: the row is written twice
and read once more from the output. Inductor's own GPU kernel recomputes the
exp from x instead (three reads of x, one write). This pass does the same for
any looped kernel of that shape: when a loop stores a value into elements that
a later loop over the same columns loads and then overwrites, the later loop
computes the value again from what the first one read, and the first store goes.

Only where it saves traffic: the value must be computed from at most one
row-sized load (plus per-column vectors such as a weight, and per-row scalars
computed before the first loop; two for a buffer of the kernel's own, whose
write goes too), so that recomputing reads no more than the reload did, from
memory the kernel has not written since; and the store must be a temporary (a real output written once,
such as fused_add_rmsnorm's sum, is kept and reloaded).
"""

from __future__ import annotations

import ast
import copy

from porter.port.model import KernelPort
from porter.port.forms.online import loop_carried
from porter.ast_tools import (
    assigned_names,
    is_call,
    names_in,
    rename_names,
    ptr_base,
    set_hint,
    unique_name,
)
from porter.port.forms.persist import (
    is_col_loop,
    load_parts,
    store_key,
    drop_needless_barriers,
    unrounded,
)


def store_stmts(loop: ast.For) -> list[ast.Expr]:
    return [
        s
        for s in loop.body
        if isinstance(s, ast.Expr)
        and is_call(s.value, "tl.store")
        and len(s.value.args) >= 3
    ]


def _slice(value: ast.AST, at: int, body: list[ast.stmt], outside: set[str]):
    """The statements of `body` that compute the names `value` (read at
    statement `at`) reads, in body order; None when one of them reads a name
    that is neither in `outside` nor assigned exactly once in `body` before the
    statement reading it (a later assignment is last block's value)."""
    assigned: dict[str, list[int]] = {}
    for i, s in enumerate(body):
        for t in assigned_names(s):
            assigned.setdefault(t, []).append(i)
    needed, stack = set(), [(n, at) for n in names_in(value)]
    while stack:
        n, reader = stack.pop()
        if n in outside or n in ("tl", "float"):
            continue
        where = assigned.get(n)
        if where is None or len(where) != 1 or where[0] >= reader:
            return None
        s = body[where[0]]
        if not isinstance(s, ast.Assign) or len(s.targets) != 1:
            return None
        if where[0] not in needed:
            needed.add(where[0])
            stack.extend((m, where[0]) for m in names_in(s.value))
    return [body[i] for i in sorted(needed)]


def row_loads(stmts: list[ast.stmt]) -> list[ast.Call]:
    """The loads among stmts whose pointer moves with the row."""
    return [
        n
        for s in stmts
        for n in ast.walk(s)
        if is_call(n, "tl.load") and "rows" in names_in(n.args[0])
    ]


def recompute_reloads(fn: ast.FunctionDef) -> int:
    """Replace each qualifying reload with the computation of the stored value
    (see the module doc); how many reloads were replaced."""
    body = fn.body
    done = 0
    loops = [i for i, s in enumerate(body) if is_col_loop(s)]
    for ia in loops:
        la = body[ia]
        for store in store_stmts(la):
            key = store_key(store.value)
            base = ptr_base(store.value.args[0])
            for ib in [i for i in loops if i > ia]:
                if recompute_into(fn, ia, ib, store, key, base) is not None:
                    done += 1
                    break
    if done:
        drop_needless_barriers(fn)
    return done


def recompute_into(
    fn,
    ia: int,
    ib: int,
    store: ast.Expr,
    key: str,
    base,
    scratch: bool = False,
    rounded: bool = False,
) -> list[ast.stmt] | None:
    """Loop `ib` computes again the value loop `ia` stores (`store`, to
    `base`), in place of its one reload of it; the statements it copied, or
    None where it cannot. The store goes, unless `scratch`: then the caller
    has checked that no one else reads `base`, and the later loop need not
    overwrite it (a buffer of the kernel's own, reloaded by several loops;
    forms.scratch); it may read two rows then (silu(x) * y), which cost no
    more than the buffer's write and read. With `rounded` the value keeps its
    cast to the buffer's element type, as the reload returned it."""
    body = fn.body
    la, lb = body[ia], body[ib]
    if (
        ast.unparse(la.iter.args[1]) != ast.unparse(lb.iter.args[1])
        or la.target.id != lb.target.id
    ):
        return None
    # The later loop loads exactly the stored elements, once, and overwrites them.
    reloads = [
        (j, s)
        for j, s in enumerate(lb.body)
        if isinstance(s, ast.Assign)
        and isinstance(s.targets[0], ast.Name)
        and load_parts(s.value)[0] is not None
        and ptr_base(load_parts(s.value)[0].args[0]) == base
    ]
    if len(reloads) != 1 or not (
        scratch or any(store_key(s.value) == key for s in store_stmts(lb))
    ):
        return None
    j, reload = reloads[0]
    load, cast = load_parts(reload.value)
    if (
        len(load.args) < 2
        or ast.dump(load.args[0]) != ast.dump(store.value.args[0])
        or ast.dump(load.args[1]) != ast.dump(store.value.args[2])
    ):
        return None
    # Nobody else reads what the first loop stored.
    all_loads = [
        n for n in ast.walk(fn) if is_call(n, "tl.load") and ptr_base(n.args[0]) == base
    ]
    if len(all_loads) != 1 and not scratch:
        return None
    # What the stored value reads: computed in this loop, from names set before
    # it (and not again until the later loop), never from its accumulators.
    before = body[:ia]
    outside = {a.arg for a in fn.args.args} | {
        t for s in before for t in assigned_names(s)
    }
    carried = loop_carried(la, before)
    outside -= carried
    outside -= {t for s in body[ia + 1 : ib] for t in assigned_names(s)}
    outside.add(la.target.id)
    value = store.value.args[1]
    stmts = _slice(value, la.body.index(store), la.body, outside)
    if (
        stmts is None
        or any(names_in(s) & carried for s in stmts)
        or any(
            not isinstance(s, ast.Assign) or is_call(s.value, "tl.store") for s in stmts
        )
    ):
        return None
    if len(row_loads(stmts)) > (2 if scratch else 1):
        return None
    # What it reads is not written before the later loop reads it again (an
    # input the kernel changes in place).
    written = {
        ptr_base(n.args[0])
        for s in body[ia:ib] + lb.body[:j]
        for n in ast.walk(s)
        if is_call(n, "tl.store") and n.args
    }
    if any(
        ptr_base(n.args[0]) in written
        for s in stmts
        for n in ast.walk(s)
        if is_call(n, "tl.load") and n.args
    ):
        return None
    # Build the copy for the later loop: statements it already has (cols,
    # col_mask), set once before the reload so they still hold that value, are
    # reused; the rest take fresh names.
    set_before = [t for s in lb.body[:j] for t in assigned_names(s)]
    already = {
        ast.dump(s)
        for s in lb.body[:j]
        if all(set_before.count(t) == 1 for t in assigned_names(s))
    }
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    taken |= {a.arg for a in fn.args.args}
    renames: dict[str, str] = {}
    copies: list[ast.stmt] = []
    for s in stmts:
        if ast.dump(s) in already and not (names_in(s.value) & set(renames)):
            continue
        c = copy.deepcopy(s)
        rename_names(c.value, renames)
        old = c.targets[0].id
        renames[old] = unique_name(old, taken)
        taken.add(renames[old])
        c.targets[0].id = renames[old]
        copies.append(c)
    # The stored value was a temporary (the later loop overwrites it): the
    # recomputed one stays fp32, as eager keeps it (persist.forward_stores).
    new_value = copy.deepcopy(value) if rounded else unrounded(copy.deepcopy(value))
    rename_names(new_value, renames)
    if cast is not None:
        new_value = ast.Call(
            ast.Attribute(new_value, "to", ast.Load()), [copy.deepcopy(cast)], []
        )
    reload.value = new_value
    lb.body[j:j] = copies
    # The first loop's reads are now read again: keep them in cache; the
    # recomputation is the last read.
    for n in row_loads(stmts):
        set_hint(n, "evict_last")
    for n in row_loads(copies):
        set_hint(n, "evict_first")
    if not scratch:
        la.body.remove(store)
    return copies


def recompute_looped_reloads(kp: KernelPort) -> None:
    """The looped kernel recomputes a value it stored only to reload it
    (recompute_reloads). Runs after the other forms are derived from it: they
    keep the row in registers or do not store."""
    if kp.record.kind == "reduction" and recompute_reloads(kp.tree):
        kp.notes.append(
            "the looped kernel recomputes a value it stored only to reload "
            "it (the output is written once)"
        )
