"""Stage: a persistent (row-in-registers) form of a looped reduction kernel.

Inductor's looped reductions walk a row in blocks, once per reduction and once
more for the epilogue, so x is read from memory two or three times. When the
whole row fits in one block, a hand-written kernel reads it once and keeps it
in registers. These passes derive that kernel from the looped one, which stays
in the scaffold for rows too wide for registers; the launcher picks by row size.

Each pass takes the kernel's FunctionDef, rewrites it in place and returns how
many rewrites it made. The order (PERSIST_PIPELINE) is documented in docs/port.md.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from porter.ast_tools import (
    assigned_names,
    call_name,
    is_call,
    read_counts,
    names_in,
    rename_names,
    ptr_base,
    stored_names,
)
from porter.port.clean.dead import drop_unread
from porter.port.model import KernelPort

ACCUMULATE_IDENTITY = {
    # op -> the init value that makes op(init, v) == v (NaN included)
    "+": 0,
    "|": False,
    "maximum_nan": float("-inf"),
    "minimum_nan": float("inf"),
    "tl.maximum": float("-inf"),
    "tl.minimum": float("inf"),
}


def is_col_loop(stmt: ast.stmt) -> bool:
    """`for col_start in tl.range(0, row, BLOCK_COLS):` (or plain range)."""
    if not (isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name)):
        return False
    it = stmt.iter
    return (
        isinstance(it, ast.Call)
        and ast.unparse(it.func) in ("tl.range", "range")
        and len(it.args) == 3
        and ast.unparse(it.args[0]) == "0"
        and ast.unparse(it.args[2]) == "BLOCK_COLS"
    )


def can_persist(fn: ast.FunctionDef) -> bool:
    """A looped reduction whose loops all step over the row by BLOCK_COLS, with
    no loop nested inside them."""
    loops = [s for s in fn.body if isinstance(s, ast.For)]
    if not loops or not all(is_col_loop(s) for s in loops):
        return False
    rows = {ast.unparse(s.iter.args[1]) for s in loops}
    nested = any(
        isinstance(n, (ast.For, ast.While))
        for s in loops
        for b in s.body
        for n in ast.walk(b)
    )
    return len(rows) == 1 and not nested


def name_counts(fn: ast.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for stmt in ast.walk(fn):
        if isinstance(stmt, ast.stmt):
            for t in assigned_names(stmt):
                counts[t] = counts.get(t, 0) + 1
    return counts


# ------------------------------------------------------------------ passes


class _ZeroStart(ast.NodeTransformer):
    """The loop variable becomes 0; `0 + x` becomes x."""

    def __init__(self, var: str):
        self.var = var

    def visit_Name(self, n: ast.Name) -> ast.AST:
        return ast.Constant(0) if n.id == self.var else n

    def visit_BinOp(self, n: ast.BinOp) -> ast.AST:
        self.generic_visit(n)
        if (
            isinstance(n.op, ast.Add)
            and isinstance(n.left, ast.Constant)
            and n.left.value == 0
        ):
            return n.right
        return n


def inline_single_block(fn: ast.FunctionDef) -> int:
    """Each `for col_start in tl.range(0, row, BLOCK_COLS)` loop runs exactly
    once when BLOCK_COLS covers the row: its body replaces it, col_start = 0."""
    body, inlined = [], 0
    for stmt in fn.body:
        if is_col_loop(stmt):
            zero = _ZeroStart(stmt.target.id)
            body.extend(zero.visit(s) for s in stmt.body)
            inlined += 1
        else:
            body.append(stmt)
    fn.body = body
    return inlined


def drop_repeated_assignments(fn: ast.FunctionDef) -> int:
    """`cols = col_base` and `col_mask = cols < row` repeated from each inlined
    loop: a later identical assignment whose inputs did not change is dropped."""
    seen: dict[str, tuple[str, set[str]]] = {}  # target -> (dump, names) of its value
    body, dropped = [], 0
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and seen.get(stmt.targets[0].id, ("",))[0] == ast.dump(stmt.value)
        ):
            dropped += 1
            continue
        changed = set(assigned_names(stmt))
        for name in list(seen):
            if name in changed or seen[name][1] & changed:
                del seen[name]
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id not in names_in(stmt.value)
        ):
            seen[stmt.targets[0].id] = (ast.dump(stmt.value), names_in(stmt.value))
        body.append(stmt)
    fn.body = body
    return dropped


def fold_into_source(fn: ast.FunctionDef) -> int:
    """`cols = col_base`, where col_base is assigned once and used only here:
    the source takes the copy's name (`cols = tl.arange(...)`)."""
    folded = 0
    while True:
        counts, uses = name_counts(fn), read_counts(fn)
        for i, stmt in enumerate(fn.body):
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Name)
                and counts.get(stmt.targets[0].id) == 1
                and counts.get(stmt.value.id) == 1
                and uses.get(stmt.value.id) == 1
            ):
                src, dst = stmt.value.id, stmt.targets[0].id
                del fn.body[i]
                rename_names(fn, {src: dst})
                folded += 1
                break
        else:
            return folded


def load_parts(value: ast.AST):
    """(load call, cast) of `tl.load(...)` or `tl.load(...).to(T)`."""
    cast = None
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "to"
        and is_call(value.func.value, "tl.load")
    ):
        cast, value = value.args[0], value.func.value
    if is_call(value, "tl.load"):
        return value, cast
    return None, None


def load_key(load: ast.Call) -> str:
    """What a load reads: pointer, mask and `other`, not its cache hint."""
    parts = [ast.dump(a) for a in load.args]
    parts += [ast.dump(k) for k in load.keywords if k.arg != "eviction_policy"]
    return "|".join(parts)


def store_key(store: ast.Call) -> str:
    mask = store.args[2] if len(store.args) > 2 else None
    for k in store.keywords:
        if k.arg == "mask":
            mask = k.value
    return ast.dump(store.args[0]) + "|" + (ast.dump(mask) if mask else "")


def _single_assignment(fn: ast.FunctionDef, node: ast.AST) -> bool:
    counts = name_counts(fn)
    return all(counts.get(n, 0) <= 1 for n in names_in(node))


def stored_bases(stmt: ast.stmt) -> set[str]:
    return {ptr_base(n.args[0]) for n in ast.walk(stmt) if is_call(n, "tl.store")}


def forward_stores(fn: ast.FunctionDef) -> int:
    """A load of what this kernel just stored (same pointer, same mask) becomes
    the stored value, cast through the output's type as the memory would where
    the store is an output. Where a later store to the same elements overwrites
    it (softmax's exp, kept in the output until the row's sum is known), the
    store held a temporary: Inductor's fp32 capture put it in a buffer of the
    output's type, which porter's dtypes make bf16 or fp16, while eager keeps
    it in fp32 like any other intermediate. There the value is forwarded before
    that cast (`unrounded`). Masked-off lanes keep the stored expression rather
    than the load's `other`: safe for Inductor's code, which masks every
    reduction with tl.where."""
    forwarded = 0
    scratch = _overwritten_stores(fn.body)
    stores: dict[str, ast.Call] = {}  # store key -> the store
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign):
            load, cast = load_parts(stmt.value)
            if load is not None and len(load.args) >= 2:
                key = ast.dump(load.args[0]) + "|" + ast.dump(load.args[1])
                store = stores.get(key)
                if store is not None and _single_assignment(fn, load):
                    value = copy.deepcopy(store.args[1])
                    if id(store) in scratch:
                        value = unrounded(value)
                    if cast is not None:
                        value = ast.Call(
                            ast.Attribute(value, "to", ast.Load()),
                            [copy.deepcopy(cast)],
                            [],
                        )
                    stmt.value = value
                    forwarded += 1
        for base in stored_bases(stmt):
            stores = {k: s for k, s in stores.items() if ptr_base(s.args[0]) != base}
        if (
            isinstance(stmt, ast.Expr)
            and is_call(stmt.value, "tl.store")
            and len(stmt.value.args) >= 3
        ):
            stores[store_key(stmt.value)] = stmt.value
    return forwarded


def unrounded(value: ast.AST) -> ast.AST:
    """A stored value without explicit_dtypes' cast to the output's element
    type (`v.to(out_ptr.dtype.element_ty)` -> `v`): the fp32 value it rounds."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "to"
        and len(value.args) == 1
        and ast.unparse(value.args[0]).endswith(".dtype.element_ty")
    ):
        return value.func.value
    return value


def _overwritten_stores(body: list[ast.stmt]) -> set[int]:
    """ids of the top-level stores that a later store to the same elements
    overwrites, every load of that pointer between them reading exactly those
    elements (the store's own pointer and mask)."""
    return {
        id(stmt.value)
        for i, stmt in enumerate(body)
        if _overwritten_at(body, i, reads_between=True) is not None
    }


def _overwritten_at(body: list[ast.stmt], i: int, reads_between: bool) -> int | None:
    """Where a later store overwrites the elements the store at body[i] wrote
    (its index in body); None where none does, or where a load of that
    pointer comes first. With reads_between, loads of exactly the stored
    elements (its pointer and mask) may come between."""
    stmt = body[i]
    if not (
        isinstance(stmt, ast.Expr)
        and is_call(stmt.value, "tl.store")
        and len(stmt.value.args) >= 3
    ):
        return None
    key, base = store_key(stmt.value), ptr_base(stmt.value.args[0])
    for j in range(i + 1, len(body)):
        later = body[j]
        loads = [
            n
            for n in ast.walk(later)
            if is_call(n, "tl.load") and ptr_base(n.args[0]) == base
        ]
        if loads and not (
            reads_between
            and all(
                len(n.args) >= 2
                and ast.dump(n.args[0]) + "|" + ast.dump(n.args[1]) == key
                for n in loads
            )
        ):
            return None
        if (
            isinstance(later, ast.Expr)
            and is_call(later.value, "tl.store")
            and store_key(later.value) == key
        ):
            return j
    return None


def reuse_loads(fn: ast.FunctionDef) -> int:
    """A second load of the same elements (no store to that pointer between)
    reuses the first one's registers: the row is read from memory once. The
    kept load takes the later one's cache hint (the last read decides)."""
    reused = 0
    while True:
        loads: dict[tuple[str, str], ast.Assign] = {}
        hit = None
        for stmt in fn.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                load, cast = load_parts(stmt.value)
                if load is not None and _single_assignment(fn, load):
                    key = (load_key(load), ast.dump(cast) if cast else "")
                    if key in loads:
                        hit = (loads[key], stmt, load)
                        break
                    loads[key] = stmt
            for base in stored_bases(stmt):
                loads = {
                    k: s
                    for k, s in loads.items()
                    if ptr_base(load_parts(s.value)[0].args[0]) != base
                }
        if hit is None:
            return reused
        first, later, later_load = hit
        first_load = load_parts(first.value)[0]
        hint = [k for k in later_load.keywords if k.arg == "eviction_policy"]
        first_load.keywords = [
            k for k in first_load.keywords if k.arg != "eviction_policy"
        ] + hint
        fn.body.remove(later)
        rename_names(fn, {later.targets[0].id: first.targets[0].id})
        reused += 1


def drop_overwritten_stores(fn: ast.FunctionDef) -> int:
    """A store that a later store to the same elements overwrites, with no load
    of that pointer between, is dead."""
    dropped = 0
    body = fn.body
    for stmt in list(body):
        if _overwritten_at(body, body.index(stmt), reads_between=False) is not None:
            body.remove(stmt)
            dropped += 1
    return dropped


def drop_needless_barriers(fn: ast.FunctionDef) -> int:
    """`tl.debug_barrier()` guarded a reload of stored data; once the reload is
    forwarded from registers no barrier is needed."""
    stored: set[str] = set()
    reloads = False
    for stmt in fn.body:
        for n in ast.walk(stmt):
            if is_call(n, "tl.load") and ptr_base(n.args[0]) in stored:
                reloads = True
        stored |= stored_bases(stmt)
    if reloads:
        return 0
    before = len(fn.body)
    fn.body = [
        s
        for s in fn.body
        if not (isinstance(s, ast.Expr) and is_call(s.value, "tl.debug_barrier"))
    ]
    return before - len(fn.body)


def full_init(stmt: ast.stmt):
    """`acc = tl.full(shape, c, dtype)` / `tl.zeros(shape, dtype)` -> (acc, c)."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
        return None, None
    v = stmt.value
    if is_call(v, "tl.full") and len(v.args) == 3:
        try:
            c = ast.literal_eval(v.args[1])
        except ValueError:
            if ast.unparse(v.args[1]) in ('float("-inf")', "float('-inf')"):
                c = float("-inf")
            elif ast.unparse(v.args[1]) in ('float("inf")', "float('inf')"):
                c = float("inf")
            else:
                return None, None
        return stmt.targets[0].id, c
    if is_call(v, "tl.zeros"):
        return stmt.targets[0].id, 0
    return None, None


def op_of(value: ast.AST, acc: str):
    """(op, other operand) of `acc + v`, `acc | v`, `maximum_nan(acc, v)`..."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.BitOr)):
        op = "+" if isinstance(value.op, ast.Add) else "|"
        sides = [value.left, value.right]
    elif isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords:
        op = ast.unparse(value.func)
        sides = list(value.args)
    else:
        return None, None
    names = [isinstance(s, ast.Name) and s.id == acc for s in sides]
    if names.count(True) != 1:
        return None, None
    return op, sides[1 - names.index(True)]


def masked_update(stmt: ast.stmt | None, acc: str):
    """`acc = tl.where(mask, t, acc)` -> (mask, t); (None, None) otherwise."""
    if not (
        isinstance(stmt, ast.Assign)
        and ast.unparse(stmt.targets[0]) == acc
        and is_call(stmt.value, "tl.where")
        and len(stmt.value.args) == 3
        and ast.unparse(stmt.value.args[2]) == acc
        and isinstance(stmt.value.args[1], ast.Name)
    ):
        return None, None
    return stmt.value.args[0], stmt.value.args[1].id


def fold_identity_accumulators(fn: ast.FunctionDef) -> int:
    """In one block, `acc = tl.full(.., 0); t = acc + v; acc = tl.where(m, t, acc)`
    is `acc = tl.where(m, v, 0)`: the accumulator starts at op's identity."""
    folded = 0
    body = fn.body
    for init in list(body):
        acc, c = full_init(init)
        if acc is None:
            continue
        rest = body[body.index(init) + 1 :]
        step = next((s for s in rest if acc in names_in(s)), None)
        if not (isinstance(step, ast.Assign) and isinstance(step.targets[0], ast.Name)):
            continue
        op, operand = op_of(step.value, acc)
        if op not in ACCUMULATE_IDENTITY or ACCUMULATE_IDENTITY[op] != c:
            continue
        t = step.targets[0].id
        after = rest[rest.index(step) + 1 :]
        merge = next((s for s in after if t in names_in(s) or acc in names_in(s)), None)
        if masked_update(merge, acc)[1] != t:
            continue
        if read_counts(fn).get(t, 0) != 1:
            continue
        merge.value.args[1] = operand
        merge.value.args[2] = (
            init.value.args[1] if is_call(init.value, "tl.full") else ast.Constant(0.0)
        )
        body.remove(init)
        body.remove(step)
        folded += 1
    return folded


def _mask_bound(
    fn: ast.FunctionDef, masks: set[str], index: str | None = None
) -> ast.expr | None:
    """The bound of the first `m = i < bound` the kernel assigns to one of
    masks (i: index, where given)."""
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(assigned_names(stmt)) == 1
            and assigned_names(stmt)[0] in masks
            and isinstance(stmt.value, ast.Compare)
            and isinstance(stmt.value.ops[0], ast.Lt)
            and (index is None or ast.unparse(stmt.value.left) == index)
        ):
            return stmt.value.comparators[0]
    return None


def _row_length(fn: ast.FunctionDef, mask: ast.expr) -> ast.expr | None:
    """The bound of the column mask among mask's terms (`col_mask = cols <
    hidden` gives `hidden`): in every row that is stored, the number of
    elements the mask keeps."""
    return _mask_bound(fn, names_in(mask), "cols")


def two_pass_welford(
    fn: ast.FunctionDef, nan_mean: bool = True
) -> tuple[int, set[str]]:
    """Welford over a single block (one value per lane, then a tree merge) is
    the row's mean and m2 computed in registers: `row_mean_m2`, two exact
    passes over the row without the merge's divisions. Its count is the
    column mask's bound, a constant where the row size is per-model, rather
    than a third reduction summing the mask (which gives the same count in
    every stored row); without a column mask, that sum."""
    body = fn.body
    for stmt in list(body):
        if not (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Tuple)
            and is_call(stmt.value, "welford_accumulate")
        ):
            continue
        value, mean, m2, count = stmt.value.args[:4]
        nxt = [e.id for e in stmt.targets[0].elts]
        accs = [ast.unparse(a) for a in (mean, m2, count)]
        merges = [
            s
            for s in body
            if isinstance(s, ast.Assign)
            and ast.unparse(s.targets[0]) in accs
            and is_call(s.value, "tl.where")
            and ast.unparse(s.value.args[1]) in nxt
        ]
        finish = next(
            (
                s
                for s in body
                if isinstance(s, ast.Assign)
                and is_call(s.value, "welford_finish")
                and [ast.unparse(a) for a in s.value.args[:3]] == accs
            ),
            None,
        )
        inits = [
            s
            for s in body
            if isinstance(s, ast.Assign)
            and ast.unparse(s.targets[0]) in accs
            and s not in merges
        ]
        if len(merges) != 3 or finish is None or len(inits) != 3:
            continue
        mask = merges[0].value.args[0]
        axis = finish.value.args[3]
        # Without a column mask, count the mask broadcast to the row's shape:
        # a row-only mask ([rows, 1]) would otherwise count one a row.
        count = (
            _row_length(fn, mask)
            or ast.parse(
                f"tl.sum(tl.broadcast_to({ast.unparse(mask)}, ({ast.unparse(value)}).shape)"
                f".to(tl.float32), {ast.unparse(axis)})",
                mode="eval",
            ).body
        )
        finish.value = ast.Call(
            ast.Name("row_mean_m2", ast.Load()), [value, mask, axis, count], []
        )
        for s in [stmt, *merges, *inits]:
            body.remove(s)
        row_mean, row_m2 = (ast.unparse(e) for e in finish.targets[0].elts[:2])
        if nan_mean and _stores_as_is(fn, row_mean):
            # eager's var_mean is Welford: an inf in the row makes its mean NaN
            # (inf - inf), as it makes m2 here; the sum / count mean was inf.
            nan_mean = (
                f"{row_mean} = tl.where({row_m2} == {row_m2}, {row_mean}, {row_m2})"
            )
            body.insert(body.index(finish) + 1, ast.parse(nan_mean).body[0])
        return 1, {"row_mean_m2"}
    return 0, set()


def _stores_as_is(fn: ast.FunctionDef, name: str) -> bool:
    """Whether a store writes `name` itself (through `x = name[:, None]` and
    casts), an output of its own rather than a term of one."""
    bound = {
        s.targets[0].id: s.value
        for s in fn.body
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
    }

    def source(node: ast.AST, depth: int = 0) -> ast.AST:
        while True:
            if isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Call) and call_name(node) == "to":
                node = node.func.value
            elif (
                isinstance(node, ast.Name)
                and node.id != name
                and node.id in bound
                and depth < 8
            ):
                node, depth = bound[node.id], depth + 1
            else:
                return node

    return any(
        is_call(n, "tl.store")
        and len(n.args) > 1
        and isinstance(v := source(n.args[1]), ast.Name)
        and v.id == name
        for n in ast.walk(fn)
    )


def drop_unused(fn: ast.FunctionDef) -> int:
    """Assignments nothing reads any more (left by the folds above)."""
    return drop_unread(fn)


# Calls that reduce across the row: a cross-warp one waits on shared memory and
# a barrier, so a load issued after it starts only when the reduction is done.
REDUCTIONS = {
    "tl.sum",
    "tl.max",
    "tl.min",
    "tl.reduce",
    "tl.argmax",
    "tl.argmin",
    "tl.xor_sum",
    "max_nan",
    "min_nan",
    "row_mean_m2",
}


def _reduces(stmt: ast.stmt) -> bool:
    return any(
        isinstance(n, ast.Call) and ast.unparse(n.func) in REDUCTIONS
        for n in ast.walk(stmt)
    )


def hoist_late_loads(fn: ast.FunctionDef) -> int:
    """Loads after the first reduction (weight, bias: the epilogue's) move up
    to just before it, when they read nothing computed after that point and no
    store of this kernel writes their pointer. The looped kernel loads them in
    its last loop; held in registers, their memory latency overlaps the row's
    and the reduction's instead of following them, as in Inductor's own
    persistent kernels (which issue every load first).
    Where the kernel stores before its first reduction (fused_add_rmsnorm's
    sum), they go further up, to just after what they read: the compiler
    does not move a load above a store that may alias it, so ptxas issued the
    weight's load only once the row's data was back (the 90th of 152
    instructions in fp32 over 1024 columns). Issued first, fused_add_rmsnorm
    over 1024 columns took 0.94-0.97 of the time at 1-16 tokens (graphs of 20
    launches) and 0.98-0.99 from 4096; add_layernorm fp32 over 768 0.97-0.98 at
    1-16 tokens, 0.99-1.01 from 16384, but 1.07 at 4096, where its threads
    hold 80 registers instead of 64 (H200, lab/NOTES.md)."""
    first = next((i for i, s in enumerate(fn.body) if _reduces(s)), None)
    if first is None:
        return 0
    stored = set().union(*(stored_bases(s) for s in fn.body))
    late: set[str] = set()  # names assigned from the reduction on
    checked: set[str] = set()  # names a tl.device_assert checks from there on
    hoisted = []
    for stmt in fn.body[first:]:
        load = load_parts(stmt.value)[0] if isinstance(stmt, ast.Assign) else None
        if (
            load is not None
            and len(assigned_names(stmt)) == 1
            and not _reduces(stmt)
            and not (names_in(stmt.value) & (late | checked))
            and ptr_base(load.args[0]) not in stored
        ):
            hoisted.append(stmt)
            continue
        if isinstance(stmt, ast.Expr) and is_call(stmt.value, "tl.device_assert"):
            # a load by an index it checks stays after it (x[ids] before the
            # check read outside x where eager raises)
            checked |= names_in(stmt.value)
        late |= set(assigned_names(stmt))
    if not hoisted or any(set(assigned_names(h)) & late for h in hoisted):
        return 0  # a hoisted name is also assigned later: leave the order alone
    rest = [s for s in fn.body[first:] if s not in hoisted]
    at = _above_first_store(fn.body[:first], hoisted)
    fn.body = fn.body[:at] + hoisted + fn.body[at:first] + rest
    return len(hoisted)


def _above_first_store(head: list[ast.stmt], loads: list[ast.stmt]) -> int:
    """Where in head (the statements before the first reduction) the loads go:
    just after the last statement assigning what they read, when a store
    follows that point; otherwise at head's end."""
    stores = [i for i, s in enumerate(head) if stored_bases(s)]
    reads = set().union(*(names_in(s.value) for s in loads))
    targets = set().union(*(stored_names(s) for s in loads))
    at = 1 + max([-1] + [i for i, s in enumerate(head) if stored_names(s) & reads])
    # Nothing they jump over may read what they assign.
    if not stores or stores[0] < at or any(names_in(s) & targets for s in head[at:]):
        return len(head)
    return at


STREAM_ROWS = "STREAM_ROWS"


def _row_count(fn: ast.FunctionDef) -> str | None:
    """The runtime row count the kernel masks its rows by (`row_mask = rows < n`)."""
    bound = _mask_bound(fn, {"row_mask"})
    return bound.id if isinstance(bound, ast.Name) else None


def _is_evict_first(k: ast.keyword) -> bool:
    return (
        k.arg == "eviction_policy"
        and isinstance(k.value, ast.Constant)
        and k.value.value == "evict_first"
    )


def _hinted_loads(node: ast.AST) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(node)
        if is_call(n, "tl.load") and any(_is_evict_first(k) for k in n.keywords)
    ]


def _unhint(load: ast.Call) -> None:
    """Drop load's evict_first hint, in place."""
    load.keywords = [k for k in load.keywords if not _is_evict_first(k)]


def _is_stream_branch(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.If)
        and isinstance(stmt.test, ast.Compare)
        and isinstance(stmt.test.comparators[0], ast.Name)
        and stmt.test.comparators[0].id == STREAM_ROWS
    )


def hint_row_loads(fn: ast.FunctionDef) -> int:
    """Loads the looped kernel marked evict_first (the row's last read) keep the
    hint only while the tensor is under STREAM_MIN_BYTES: the hint paid where a
    tensor fits in the L2 cache and cost where it streams past it. The kernel
    takes a per-model STREAM_ROWS constexpr (the row count from which the
    tensor is that large) and branches on its runtime row count, so that the
    choice compiles no variant per token range."""
    rows = _row_count(fn)
    if rows is None:
        return 0
    hinted, body = 0, []
    for stmt in fn.body:
        if not isinstance(stmt, ast.Assign) or not _hinted_loads(stmt):
            body.append(stmt)
            continue
        streamed = copy.deepcopy(stmt)
        for load in _hinted_loads(streamed):
            _unhint(load)
        hinted += 1
        if hinted > 1 and body and _is_stream_branch(body[-1]):
            # Adjacent loads (x, then residual) share one branch.
            body[-1].body.append(stmt)
            body[-1].orelse.append(streamed)
            continue
        test = ast.parse(f"{rows} < {STREAM_ROWS}", mode="eval").body
        body.append(ast.If(test, [stmt], [streamed]))
    fn.body = body
    if hinted:
        fn.args.args.append(
            ast.arg(STREAM_ROWS, ast.parse("tl.constexpr", mode="eval").body)
        )
    return hinted


def drop_row_hints(fn: ast.FunctionDef) -> int:
    """Inductor's own persistent kernel, captured on the codegen-only target,
    marks its one read of each row evict_first; compiled for the GPU, Inductor
    emits the same loads without it. Unhinted loads took 0.97-0.99 of the
    hinted time at 32768-65536 rows on an H200 (kb_layernorm, kb_scaled_rmsnorm);
    a branch on the row count choosing between them (hint_row_loads) cost bf16
    rows 6-20% at 1024-16384 rows (lab/NOTES.md)."""
    loads = _hinted_loads(fn)
    for load in loads:
        _unhint(load)
    return len(loads)


PERSIST_PIPELINE: list[Callable[[ast.FunctionDef], int]] = [
    inline_single_block,
    drop_repeated_assignments,
    fold_into_source,
    forward_stores,
    reuse_loads,
    drop_overwritten_stores,
    drop_needless_barriers,
    fold_identity_accumulators,
    drop_unused,
    hoist_late_loads,
    hint_row_loads,
]


def persist(
    fn: ast.FunctionDef, nan_mean: bool = True
) -> tuple[ast.FunctionDef, set[str]] | None:
    """The persistent form of a looped reduction kernel, and the porter helpers
    it needs beyond the looped one's; None when the kernel is not of that shape.
    `nan_mean`: a stored mean is NaN on a row with an inf, as var_mean's
    Welford gives it (not BatchNorm's, whose CPU statistics sum the row)."""
    if not can_persist(fn):
        return None
    out = copy.deepcopy(fn)
    helpers: set[str] = set()
    for step in PERSIST_PIPELINE:
        step(out)
        if step is fold_identity_accumulators:
            _, extra = two_pass_welford(out, nan_mean)
            helpers |= extra
    ast.fix_missing_locations(out)
    return out, helpers


def drop_inductor_row_hints(kp: KernelPort) -> None:
    """Inductor's own persistent kernel loads its rows without evict_first, as
    Inductor's kernel compiled for a GPU does (drop_row_hints)."""
    if kp.record.kind == "persistent_reduction" and drop_row_hints(kp.tree):
        kp.notes.append(
            "the rows' loads carry no evict_first hint, as Inductor's kernel "
            "compiled for a GPU has none"
        )


def derive_persistent(kp: KernelPort) -> None:
    """A looped reduction gains a persistent form, its row held in registers,
    for rows that fit (persist); the looped kernel serves wider rows."""
    if kp.record.kind != "reduction":
        return
    persistent = persist(
        kp.tree, nan_mean=not any("batch_norm" in op for op in kp.record.aten)
    )
    if persistent is not None:
        kp.persistent, extra = persistent
        kp.helpers |= extra
        kp.notes.append(
            "derived a persistent kernel for rows that fit in registers "
            "(x read once); the looped kernel serves wider rows"
        )
