"""Stage: the looped kernel launched split over each row, for few wide rows.

The looped kernel runs one program a row: at 1-16 rows of a 151936-token
vocabulary that is a few of an H200's 132 SMs doing all the work, and it took
up to 6.4x the time of Inductor's static compile, which splits the row. Split,
it runs on a (rows, SPLITS) grid: program (r, s) walks slice s of row r
(common.py's split_cols), in one launch a phase (a PHASE constexpr). Phase j runs the kernel's loop j over the slice and stores
each of its accumulators reduced over the slice (a partial) in an fp32
workspace; each later phase loads the row's SPLITS partials in place of the
accumulator (split_partial), so the reduction after the loop
(`max_nan(acc, 1)`, `tl.sum(acc, 1)`) reduces the partials to the row's
value. A store outside the loops (one value a row) is made once a row, by the
slice at its start, in the first phase that has every reduction before it. There is no grid-wide barrier: phases are
launches, in stream order. PHASE -1 is the looped kernel as it was: every loop
in one launch over whole rows. common.py's SplitRows launches either.

It is split only where that is exact: every accumulator a lane-wise max, min
or sum (from 0) in fp32, reduced once after its loop by the same op (not a Welford
triple or an argmax pair), no loop reading what it writes at other columns,
and no code outside the loops reading what the kernel writes.
"""

from __future__ import annotations

import ast
import copy

from porter.ast_tools import (
    arg_names,
    assigned_names,
    comment_stmt,
    full_names,
    is_call,
    names_in,
    ptr_base,
    stored_names,
)
from porter.errors import PorterError
from porter.port.forms.online import loop_carried
from porter.port.forms.persist import full_init, is_col_loop, masked_update, op_of
from porter.port.model import KernelPort

# The in-loop update of a lane accumulator: the reduction that combines
# lanes, slices and partials alike, and split_partial's name for it.
REDUCTIONS = {
    "maximum_nan": ("max_nan", "max"),
    "minimum_nan": ("min_nan", "min"),
    "+": ("tl.sum", "sum"),
}
# Names the split adds; a kernel using any of them is not split.
ADDED = {"partials_ptr", "SPLITS", "PHASE", "start", "stop", "partials"}
WHY = "PHASE -1 runs every loop over whole rows; PHASE j, loop j over a slice"


def plan_split(kp: KernelPort) -> None:
    """A looped reduction with a persistent form is marked for a split launch
    over each row where the split is exact (split_rows on a copy), so the
    launcher offers it for few wide rows."""
    if kp.persistent is not None:
        kp.split_launch = split_rows(copy.deepcopy(kp.tree)) or (0, 0)


def split_looped_kernel(kp: KernelPort) -> None:
    """The looped kernel marked for a split launch takes its phases: each loop
    over the program's slice of the row in its own launch, the partial
    reductions handed on through an fp32 workspace."""
    if not kp.split_launch[0]:
        return
    if split_rows(kp.tree) != kp.split_launch:
        raise PorterError(
            f"porter could not split {kp.tree.name} as it planned; please report "
            "it, with the reference"
        )
    kp.notes.append(
        "the looped kernel also runs split over each row (one launch a loop "
        "over it, partial reductions in a workspace), for few wide rows"
    )


def split_rows(fn: ast.FunctionDef) -> tuple[int, int] | None:
    """Rewrite a looped kernel in place to take a PHASE (-1: as it was); the
    (phases, partials a row and split) of its split launch, or None (fn left
    as it was) where the kernel is not of a shape the split keeps exact."""
    plan = _plan(fn)
    if plan is None:
        return None
    loops, slots, stores, row_mask, col_base, stop = plan
    body = fn.body
    by_loop: dict[int, list[tuple[int, str, str]]] = {}
    for slot, (i, acc, op) in enumerate(slots):
        by_loop.setdefault(i, []).append((slot, acc, op))
    phases, ready, new = len(loops), 0, []
    for k, stmt in enumerate(body):
        if k in loops:
            j = loops.index(k)
            stmt.iter.args[:2] = [_expr("start"), _expr("stop")]
            runs = "PHASE <= 0" if j == 0 else f"PHASE < 0 or PHASE == {j}"
            guard = _stmt(f"if {runs}:\n    pass")
            guard.body = [stmt]
            new.append(guard)
            for slot, acc, op in by_loop.get(k, []):
                new.append(
                    _stmt(
                        f"{acc} = split_partial({acc}, {op!r}, partials, {slot}, "
                        f"{j}, {row_mask}, SPLITS, PHASE)"
                    )
                )
            if k in by_loop:
                ready = j + 1
            continue
        if stmt in stores:
            # one value a row: written once, by the slice at the row's start,
            # once it is known
            phases = max(phases, ready + 1)
            guard = _stmt(
                f"if PHASE < 0 or PHASE == {ready}:\n    if start == 0:\n        pass"
            )
            guard.body[0].body = [stmt]
            new.append(guard)
            continue
        new.append(stmt)
        if stmt is col_base:
            new.append(comment_stmt(WHY))
            new.append(
                _stmt(f"start, stop = split_cols({stop}, BLOCK_COLS, SPLITS, PHASE)")
            )
            new.append(
                _stmt(f"partials = partials_ptr + rows * ({len(slots)} * SPLITS)")
            )
    fn.body = _merge_guards(new)
    _add_params(fn)
    return phases, len(slots)


def _merge_guards(body: list[ast.stmt]) -> list[ast.stmt]:
    """Back-to-back `if`s of one test (a phase's row stores, then its loop)
    as one `if`, nested ones too; the first must not assign what the test reads."""
    out: list[ast.stmt] = []
    for stmt in body:
        last = out[-1] if out else None
        if (
            isinstance(stmt, ast.If)
            and isinstance(last, ast.If)
            and not stmt.orelse
            and not last.orelse
            and ast.dump(stmt.test) == ast.dump(last.test)
            and not stored_names(last) & names_in(last.test)
        ):
            last.body = _merge_guards(last.body + stmt.body)
            continue
        out.append(stmt)
    return out


def _plan(fn: ast.FunctionDef):
    """(loop indices, accumulator slots, stores outside loops, row mask name,
    the col_base statement, the loops' stop) where the split is exact; None
    elsewhere."""
    body = fn.body
    if ADDED & (set(arg_names(fn)) | stored_names(fn) | names_in(fn)):
        return None
    loops = [i for i, s in enumerate(body) if isinstance(s, ast.For)]
    if not loops or not all(is_col_loop(body[i]) for i in loops):
        return None
    stops = {ast.unparse(body[i].iter.args[1]) for i in loops}
    if len(stops) != 1:
        return None
    for node in ast.walk(fn):
        if isinstance(node, (ast.While, ast.If, ast.With, ast.Return)):
            return None
        if isinstance(node, ast.For) and node not in [body[i] for i in loops]:
            return None
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name.startswith("tl.atomic") or (
                name == "tl.program_id" and ast.unparse(node.args[0]) != "0"
            ):
                return None
    row_mask = _assigned(body, "rows < ")
    col_base = next(
        (
            s
            for s in body
            if isinstance(s, ast.Assign)
            and ast.unparse(s.value) == "tl.arange(0, BLOCK_COLS)[None, :]"
        ),
        None,
    )
    if row_mask is None or col_base is None or body.index(col_base) > loops[0]:
        return None
    slots = []
    for i in loops:
        found = _accumulators(body, i)
        if found is None:
            return None
        slots += found
    if not slots:
        return None
    stores = _row_stores(fn, loops, col_base)
    # a store before the split's own names are bound stays unsplit
    if stores is None or any(body.index(s) < body.index(col_base) for s in stores):
        return None
    return loops, slots, stores, row_mask, col_base, stops.pop()


def _accumulators(body: list[ast.stmt], i: int):
    """Loop i's accumulators as (i, acc, split_partial's name of its op); None
    where one is not a lane max, min or sum (from 0) in fp32 reduced once after
    the loop by the same op, or the code after reads another of its names."""
    loop = body[i]
    out = []
    for acc in sorted(loop_carried(loop, body[:i])):
        init = [s for s in body[:i] if full_init(s)[0] == acc]
        if not init or not is_call(init[-1].value, "tl.full"):
            return None
        _, value, dtype = init[-1].value.args
        if ast.unparse(dtype) != "tl.float32":
            return None
        updates = [s for s in loop.body if acc in assigned_names(s)]
        if len(updates) != 1:
            return None
        _, t = masked_update(updates[0], acc)
        defs = [s for s in loop.body if t is not None and assigned_names(s) == [t]]
        if len(defs) != 1:
            return None
        op, _ = op_of(defs[0].value, acc)
        # each slice's lanes start from the init: a sum from c counts it SPLITS times
        if op not in REDUCTIONS or (
            op == "+" and ast.unparse(value) not in ("0", "0.0")
        ):
            return None
        # the lane accumulator is read by its update alone
        if any(acc in names_in(s) for s in loop.body if s not in (defs[0], updates[0])):
            return None
        users = [s for s in body[i + 1 :] if acc in names_in(s)]
        reduce, name = REDUCTIONS[op]
        text = f"{reduce}({acc}, 1)[:, None]"
        if not (
            len(users) == 1
            and isinstance(users[0], ast.Assign)
            and ast.unparse(users[0].value) == text
        ):
            return None
        out.append((i, acc, name))
    # what else the loop binds stays inside it
    local = {t for s in loop.body for t in assigned_names(s)} - {a for _, a, _ in out}
    local.add(loop.target.id)
    later = set().union(*(names_in(s) for s in body[i + 1 :]), set())
    rebound = set().union(*(stored_names(s) for s in body[i + 1 :]), set())
    if local & later - rebound:
        return None
    return out


def _row_stores(fn: ast.FunctionDef, loops: list[int], col_base: ast.stmt):
    """The stores outside the loops (one value a row), where memory allows the
    split: none of them over columns, and a tensor the kernel writes read
    nowhere outside the loops and, in a loop, only where that loop writes it."""
    body = fn.body
    cols = full_names(fn, set(assigned_names(col_base)))
    stores, writes, reads = [], {}, {}
    for k, stmt in enumerate(body):
        region = k if k in loops else None
        for node in ast.walk(stmt):
            if is_call(node, "tl.store") or is_call(node, "tl.load"):
                base = ptr_base(node.args[0])
                if base is None:
                    return None
                side = writes if is_call(node, "tl.store") else reads
                side.setdefault(base, []).append((region, ast.dump(node.args[0])))
        if region is None and any(is_call(n, "tl.store") for n in ast.walk(stmt)):
            if not (
                isinstance(stmt, ast.Expr)
                and is_call(stmt.value, "tl.store")
                and not names_in(stmt.value.args[0]) & cols
            ):
                return None
            stores.append(stmt)
    for base, written in writes.items():
        read = reads.get(base, [])
        if read and any(region is None for region, _ in written + read):
            return None
        if any(
            r == region and p != pointer for region, pointer in read for r, p in written
        ):
            return None
    return stores


def _assigned(body: list[ast.stmt], prefix: str) -> str | None:
    for s in body:
        if (
            isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name)
            and ast.unparse(s.value).startswith(prefix)
        ):
            return s.targets[0].id
    return None


def _add_params(fn: ast.FunctionDef) -> None:
    """partials_ptr after the pointers, SPLITS after the runtime arguments,
    PHASE last."""
    args = fn.args.args
    constexpr = [
        i
        for i, a in enumerate(args)
        if a.annotation is not None and ast.unparse(a.annotation) == "tl.constexpr"
    ]
    pointers = [i for i, a in enumerate(args) if a.arg.endswith("_ptr")]
    first_constexpr = constexpr[0] if constexpr else len(args)
    args.insert(first_constexpr, ast.arg("SPLITS"))
    args.insert(pointers[-1] + 1 if pointers else 0, ast.arg("partials_ptr"))
    args.append(ast.arg("PHASE", _expr("tl.constexpr")))


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _stmt(text: str) -> ast.stmt:
    return ast.parse(text).body[0]
