"""Stage: a single-read looped kernel for a row max followed by a sum of exp.

Inductor's looped logsumexp walks the row twice: once for the row max M, once
for sum(exp(x - S(M))), where S is a shift computed from M alone (logsumexp
uses 0 for an infinite M). For rows too wide to hold in registers, the row is
then read from memory twice. The online form walks it once, keeping one running
max m and one sum(exp(x - S(m))) per row: each block brings its max (a
reduction over the block) and its sum of exp against the new max's shift, and
the sum so far is rescaled by exp(S(m_old) - S(m_new)). Per element that is a
subtraction and an exp, as in the two-pass kernel's second loop; a first form
that kept a running max and sum per lane (rescaling every element) was slower
on an H200 than the persistent kernel it was meant to beat. An empty sum stays
0 when rescaled (0 * exp(inf) would be NaN), so rows of -inf, +inf and NaN
come out as the two-pass kernel's.

Only this shape is rewritten: a loop whose one accumulator is the lane max of a
loaded value, `row_max = max_nan(acc, 1)[:, None]`, then a loop whose one
accumulator sums `tl.exp(v - shift)`, v the same load and shift computed from
row_max and constants only, with no store. Anything else is left as it is.
"""

from __future__ import annotations

import ast
import copy

from porter.ast_tools import (
    assigned_names,
    is_call,
    names_in,
    rename_names,
    set_hint,
)
from porter.port.model import KernelPort
from porter.port.clean.core_math import HELPER_DEPENDS
from porter.port.forms.persist import (
    full_init,
    is_col_loop,
    load_key,
    load_parts,
    masked_update,
    op_of,
)


def loop_carried(loop: ast.For, before: list[ast.stmt]) -> set[str]:
    """Names a loop assigns that were initialized before it (its accumulators)."""
    inits = {t for s in before for t in assigned_names(s)}
    return {t for s in loop.body for t in assigned_names(s)} & inits


def _defs(body: list[ast.stmt]) -> dict[str, ast.Assign]:
    out = {}
    for s in body:
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            out[s.targets[0].id] = s
    return out


def _depends_only_on(name: str, defs: dict[str, ast.Assign], allowed: set[str]):
    """The statements computing `name` from `allowed` names and constants, in
    order; None when it reads anything else."""
    chain: list[ast.Assign] = []

    def visit(n: str) -> bool:
        if n in allowed:
            return True
        s = defs.get(n)
        if s is None:
            return n in ("tl", "float")
        # In source order, so the generated kernel is the same on every run.
        read = [x.id for x in ast.walk(s.value) if isinstance(x, ast.Name)]
        for m in dict.fromkeys(read):
            if m not in ("tl", "float") and not visit(m):
                return False
        if s not in chain:
            chain.append(s)
        return True

    return chain if visit(name) else None


def online_max_sum_exp(fn: ast.FunctionDef) -> int:
    """Merge a max loop and the following sum-of-exp loop into one pass; 1 when
    rewritten, 0 when the kernel is not of that shape."""
    body = fn.body
    loops = [i for i, s in enumerate(body) if is_col_loop(s)]
    if len(loops) != 2:
        return 0
    i1, i2 = loops
    l1, l2 = body[i1], body[i2]
    max_acc = loop_carried(l1, body[:i1])
    sum_acc = loop_carried(l2, body[:i2])
    if len(max_acc) != 1 or len(sum_acc) != 1:
        return 0
    (m_acc,), (s_acc,) = max_acc, sum_acc
    # Loop 1: v = load; t = maximum_nan(m_acc, v); m_acc = tl.where(mask, t, m_acc)
    mask1, t1 = masked_update(l1.body[-1], m_acc)
    defs1 = _defs(l1.body)
    if t1 not in defs1:
        return 0
    op, value = op_of(defs1[t1].value, m_acc)
    if op != "maximum_nan" or not isinstance(value, ast.Name):
        return 0
    v1 = value.id
    load1, cast1 = load_parts(defs1[v1].value) if v1 in defs1 else (None, None)
    if load1 is None:
        return 0
    # The lane max becomes a row max: nothing else in loop 1 may read it.
    others = [st for st in l1.body if st is not defs1[t1] and st is not l1.body[-1]]
    if any({m_acc, t1} & names_in(st) for st in others):
        return 0
    # Between: row_max = max_nan(m_acc, 1)[:, None], and the sum's init at 0.
    between = body[i1 + 1 : i2]
    row_max = None
    for s in between:
        if (
            isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name)
            and ast.unparse(s.value) == f"max_nan({m_acc}, 1)[:, None]"
        ):
            row_max = s.targets[0].id
    init = next((s for s in between if full_init(s)[0] == s_acc), None)
    if row_max is None or init is None or full_init(init)[1] != 0:
        return 0
    # Loop 2: v2 = the same load; shift from row_max; e = tl.exp(v2 - shift);
    # u = s_acc + e; s_acc = tl.where(mask, u, s_acc); no store.
    if any(is_call(n, "tl.store") for n in ast.walk(l2)):
        return 0
    mask2, u = masked_update(l2.body[-1], s_acc)
    defs2 = _defs(l2.body)
    if u not in defs2:
        return 0
    op, term = op_of(defs2[u].value, s_acc)
    if not (
        op == "+"
        and isinstance(term, ast.Name)
        and term.id in defs2
        and is_call(defs2[term.id].value, "tl.exp")
    ):
        return 0
    e = term.id
    arg = defs2[e].value.args[0]
    if isinstance(arg, ast.Name) and arg.id in defs2:
        arg = defs2[arg.id].value
    if not (
        isinstance(arg, ast.BinOp)
        and isinstance(arg.op, ast.Sub)
        and isinstance(arg.left, ast.Name)
        and isinstance(arg.right, ast.Name)
    ):
        return 0
    v2, shift = arg.left.id, arg.right.id
    load2, cast2 = load_parts(defs2[v2].value) if v2 in defs2 else (None, None)
    if load2 is None or load_key(load2) != load_key(load1):
        return 0
    if ast.dump(cast1 or ast.Pass()) != ast.dump(cast2 or ast.Pass()):
        return 0  # not the same cast of the load
    chain = _depends_only_on(shift, defs2, {row_max})
    if chain is None or ast.dump(mask1) != ast.dump(mask2):
        return 0
    # Nothing else from loop 2 may be read later, and its names must be free
    # in loop 1.
    after = body[i2 + 1 :]
    read_after = set().union(*(names_in(s) for s in after)) if after else set()
    l2_names = {t for st in l2.body for t in assigned_names(st)} - {s_acc}
    l1_names = {t for st in l1.body for t in assigned_names(st)}
    if (l2_names - {"cols", "col_mask"}) & read_after or {e, u} & l1_names:
        return 0
    total = next(
        (
            st
            for st in after
            if isinstance(st, ast.Assign)
            and isinstance(st.value, ast.Subscript)
            and is_call(st.value.value, "tl.sum")
            and ast.unparse(st.value.value.args[0]) == s_acc
        ),
        None,
    )
    if total is None:
        return 0

    m_init = next((st for st in body[:i1] if full_init(st)[0] == m_acc), None)
    if m_init is None or full_init(m_init)[1] != float("-inf"):
        return 0
    if not all(
        is_call(st.value, "tl.full") and isinstance(st.value.args[0], ast.List)
        for st in (m_init, init)
    ):
        return 0

    # The rewrite. The running max and sum become one value per row (shape
    # [BLOCK_ROWS, 1]); each block adds its max and its sum of exp against the
    # new max's shift, the sum so far rescaled to that shift.
    def shift_at(row_value: str, suffix: str) -> tuple[list[ast.stmt], str]:
        stmts = [copy.deepcopy(st) for st in chain]
        names = {t for st in stmts for t in assigned_names(st)}
        mapping = {row_max: row_value, **{n: f"{n}_{suffix}" for n in names}}
        for st in stmts:
            rename_names(st, mapping)
        return stmts, mapping.get(shift, shift)

    for st in (m_init, init):
        st.value.args[0].elts[-1] = ast.Constant(1)
    run_stmts, run_shift = shift_at(m_acc, "run")
    new_stmts, new_shift = shift_at(t1, "new")
    if run_shift == m_acc:
        # shift is the max itself: keep a copy that the loop can carry
        run_stmts = [ast.parse(f"{m_acc}_shift = {m_acc}").body[0]]
        run_shift = f"{m_acc}_shift"
    mask_src = ast.unparse(mask1)
    loop_tail = [
        (
            f"{t1} = maximum_nan({m_acc}, "
            f"max_nan(tl.where({mask_src}, {v1}, float('-inf')), 1)[:, None])"
        ),
        *[ast.unparse(st) for st in new_stmts],
        f"{e} = tl.exp({v1} - {new_shift})",
        f"{u} = tl.sum(tl.where({mask_src}, {e}, 0.0), 1)[:, None]",
        f"{s_acc} = rescale_sum({s_acc}, {run_shift}, {new_shift}) + {u}",
        f"{m_acc} = {t1}",
        f"{run_shift} = {new_shift}",
    ]
    set_hint(load1, "evict_first")  # the row is read once now
    keep = [st for st in l1.body if st is not defs1[t1] and st is not l1.body[-1]]
    l1.body = keep + [ast.parse(line).body[0] for line in loop_tail]
    # After the loop the row's max and sum are the running ones (the sum is
    # already against the row max's shift).
    for st in between:
        if isinstance(st, ast.Assign) and ast.unparse(st.targets[0]) == row_max:
            st.value = ast.Name(m_acc, ast.Load())
    total.value = ast.Name(s_acc, ast.Load())
    head = [st for st in between if st is not init]
    fn.body = body[:i1] + [init, *run_stmts, l1] + head + after
    return 1


def derive_online(kp: KernelPort) -> None:
    """A looped reduction with a persistent form gains a single-pass form
    (online_max_sum_exp on a copy of the looped kernel), for many very wide
    rows."""
    if kp.persistent is None:
        return
    online = copy.deepcopy(kp.tree)
    if online_max_sum_exp(online):
        kp.online = online
        kp.helpers |= {"rescale_sum", *HELPER_DEPENDS["rescale_sum"]}
        kp.notes.append(
            "derived a single-pass looped kernel (a running max and sum "
            "of exp per row) for many very wide rows"
        )
