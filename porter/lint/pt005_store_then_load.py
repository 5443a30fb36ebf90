"""PT005: a load from a pointer the kernel already stored to, with no barrier between."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator

from porter.lint.context import Context
from porter.lint.findings import ERROR, Hit, Rule, hit

RULE = Rule(
    id="PT005",
    name="store-then-load",
    severity=ERROR,
    title="store then load of the same pointer without tl.debug_barrier()",
    reason=(
        "Triton does not order a store and a later load through the same pointer: another "
        "thread of the block may read before the write lands. A barrier synchronizes the "
        "block (not separate programs)."
    ),
    fix="put `tl.debug_barrier()` between the `tl.store` and the `tl.load`",
)


def _exclusive(a: tuple, b: tuple, tests: dict[int, ast.expr]) -> bool:
    """Two branch paths that took different sides of one `if` never both run;
    nor do two that took sides of constexpr tests no value meets together
    (`if PHASE == 0:` and `if PHASE > 0:`, or `PHASE == LOOP` and `PHASE >
    LOOP` of two constexprs: one compiled kernel holds one)."""
    taken = dict(a)
    if any(taken.get(if_id, side) != side for if_id, side in b):
        return True
    sides = [(tests[i], side) for i, side in a + b if i in tests]
    names = {
        n.id for test, _ in sides for n in ast.walk(test) if isinstance(n, ast.Name)
    }
    if not 1 <= len(names) <= 3 or len(sides) < 2:
        return False
    # One name over every small value; two (`PHASE == LOOP`, `PHASE > LOOP`)
    # or three over smaller grids of them together.
    values = {1: range(-8, 257), 2: range(-8, 65)}.get(len(names), range(-4, 9))
    try:
        codes = [
            (compile(ast.Expression(test), "<test>", "eval"), side)
            for test, side in sides
        ]
        return not any(
            all(
                bool(eval(code, {}, dict(zip(sorted(names), point)))) == side
                for code, side in codes
            )
            for point in itertools.product(values, repeat=len(names))
        )
    except Exception:  # noqa: BLE001 - a test that is not plain integer arithmetic
        return False


def _same_elements(store: ast.Call, load: ast.Call) -> bool:
    """Same pointer and mask, written the same way: each element comes back to the
    thread that wrote it (one layout for one shape), which program order covers."""

    def key(call: ast.Call) -> tuple:
        mask = next((k.value for k in call.keywords if k.arg == "mask"), None)
        if mask is None and len(call.args) > 2 and call.func.attr == "load":
            mask = call.args[1]
        if mask is None and len(call.args) > 2 and call.func.attr == "store":
            mask = call.args[2]
        return ast.dump(call.args[0]), ast.dump(mask) if mask is not None else None

    return bool(store.args and load.args) and key(store) == key(load)


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        paths, tests = kc.flow.memop_paths, kc.flow.compile_time_tests
        stored = {}  # base pointer -> plain stores since the last barrier
        for op in kc.flow.memops:
            if op.kind == "barrier":
                stored.clear()
            elif op.kind == "store" and op.base and _plain(op.node, ctx):
                stored.setdefault(op.base, []).append(op.node)
            elif op.kind == "load" and op.base in stored:
                racing = [
                    s
                    for s in stored[op.base]
                    if not _exclusive(paths[id(s)], paths[id(op.node)], tests)
                    and not _same_elements(s, op.node)
                ]
                if not racing:
                    continue
                store = racing[0]
                yield hit(
                    op.node,
                    f"`{kc.kernel.name}` loads from `{op.base}` after storing to it "
                    f"(line {store.lineno}) at other offsets, with no tl.debug_barrier() "
                    f"between: an element may come back from another thread before its "
                    f"write lands",
                    f"add `tl.debug_barrier()` after the store on line {store.lineno}",
                )


def _plain(node: ast.Call, ctx: Context) -> bool:
    """tl.store, not an atomic: atomics are how programs synchronize on purpose."""
    return ctx.module.aliases.tl_name(node.func) == "store"
