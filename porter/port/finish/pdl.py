"""Programmatic dependent launch (PDL): a ported kernel that may start while the
kernel before it in the stream drains.

On Hopper and later GPUs a kernel launched with `launch_pdl=True` is scheduled
as soon as the kernel before it lets it (`gdc_launch_dependents`) or exits, not
after that kernel's writes have been flushed; in return it must not touch
memory before `gdc_wait`, which returns once the kernel before it has finished
and its writes are visible. At decode sizes a call's time inside a CUDA graph
is mostly the gap between one kernel and the next, which this overlaps.

`dependent_launch` opens a kernel with `pdl_wait(LAUNCH_PDL)`, common.py's

    if LAUNCH_PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()

behind a constexpr, so that Triton's interpreter and older GPUs (which the
launcher gives LAUNCH_PDL=False) never meet the instructions. Waiting first
keeps every load and store of the kernel after the previous kernel's writes, as
without PDL; letting the next kernel launch right after the wait bounds the
chain to one kernel ahead. On an H200 this order was faster at 1-16 tokens
than triggering after the loads (Inductor's own PDL code) or not at all
(lab/NOTES.md).

`trigger_after_loads` then splits the handshake of a pointwise (tile) kernel:
`pdl_wait(LAUNCH_PDL, EARLY_TRIGGER)` stays first, and triggers beside the wait
where the block spans a few columns (the launcher's EARLY_TRIGGER: at most 512,
every block at decode sizes); a block spanning a long row lets the next kernel
launch once its loads are issued, at `pdl_release(LAUNCH_PDL, EARLY_TRIGGER)`. Inside a CUDA graph of 20 calls on an H200, silu_and_mul and
gelu_tanh_and_mul in bf16 over 4096 columns took 0.81-0.84 of the early
trigger's time that way at 256 tokens, 0.91-1.01 at 128-1024; triggering
after the loads in the decode-sized blocks of 64 tokens took 1.12-1.21 of
it, and in rotary_neox's blocks of 16 rows of 64, 1.17 at 4096 tokens in bf16
(lab/NOTES.md).

A reduction's persistent kernel is split the same way, on the rows a program
holds: one row (every decode size, and every wide row) triggers right after
the wait, several narrow rows once their loads are issued. Over 20 calls a
graph of rotated inputs on an H200, the late trigger took 0.73 of the early
one's time for kb_scaled_rmsnorm fp32 at 4096 rows of 512 (4.75 against
6.54 µs), 0.92-1.01 at 4096-16384 rows of the other narrow-row sweeps,
0.90-1.03 at 1024 rows and 0.74-1.00 at 2048 (six rounds; three had shown
1.03-1.13 at 1024 rows in 2-byte types); at 512 rows it took 1.02-1.11 in
six of seven sweeps, and at 1-16 rows of one row a program 1.10-1.24
(lab/NOTES.md). A rule by row count as well would compile one
more variant in the middle of prefill sizes, where BLOCK_ROWS does not
change.
"""

from __future__ import annotations

import ast

from porter.ast_tools import comment_stmt, is_call
from porter.port.model import PortState

LAUNCH_PDL = "LAUNCH_PDL"
# The scaffold header's line for it (templates/kernel.py.j2 says why).
PDL_NOTE = (
    "on Hopper and later GPUs the kernels launch with programmatic dependent "
    "launch: each waits for the kernel before it, then lets the next one launch"
)
# What pdl_note adds where the scaffold's kernels trigger after their loads.
LATE_TRIGGER_NOTES = {
    "tile": "a pointwise kernel's blocks over long rows",
    "rows": "a reduction's programs of several rows",
}


def pdl_note(late: list[str]) -> str:
    """PDL_NOTE, with the kernels that let the next one launch only once their
    loads are issued (keys of LATE_TRIGGER_NOTES, in that order)."""
    kinds = [LATE_TRIGGER_NOTES[k] for k in LATE_TRIGGER_NOTES if k in late]
    if not kinds:
        return PDL_NOTE
    return f"{PDL_NOTE} ({' and '.join(kinds)} once their loads are issued)"


EARLY_TRIGGER = "EARLY_TRIGGER"
# A tile kernel lets the next kernel launch right after its wait where its
# block spans a few columns (at most tile_settings' DECODE_BLOCK), and after its
# loads where it spans a long row.
EARLY_TRIGGER_EXPR = "BLOCK_COLS <= DECODE_BLOCK"
# A reduction's persistent kernel does so where a program holds one row, and
# after its loads where it holds several narrow rows.
ROWS_EARLY_TRIGGER_EXPR = "BLOCK_ROWS == 1"
GDC_WAIT = "tl.extra.cuda.gdc_wait()"
GDC_LAUNCH = "tl.extra.cuda.gdc_launch_dependents()"
# common.py's jit helpers that hold the handshake, so a kernel spends a line on it.
PDL_WAIT = "pdl_wait"
PDL_RELEASE = "pdl_release"


def _pdl_call(stmt: ast.stmt, helper: str) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and is_call(stmt.value, helper)
        and bool(stmt.value.args)
        and ast.unparse(stmt.value.args[0]) == LAUNCH_PDL
    )


def is_pdl_block(stmt: ast.stmt) -> bool:
    """The `pdl_wait(LAUNCH_PDL...)` call dependent_launch opens a kernel with."""
    return _pdl_call(stmt, PDL_WAIT)


def is_pdl_release(stmt: ast.stmt) -> bool:
    """The `pdl_release(LAUNCH_PDL, EARLY_TRIGGER)` trigger_after_loads adds."""
    return _pdl_call(stmt, PDL_RELEASE)


def dependent_launch(fn: ast.FunctionDef) -> bool:
    """Open the kernel with `pdl_wait(LAUNCH_PDL)` and add the LAUNCH_PDL
    constexpr as its last parameter; False (unchanged) where it has them."""
    if any(a.arg == LAUNCH_PDL for a in fn.args.args):
        return False
    first = fn.body[0] if fn.body else None
    docstring = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and not first.value.value.startswith(("NOTE(porter)", "TODO(porter)"))
    )
    fn.body.insert(
        1 if docstring else 0, ast.parse(f"{PDL_WAIT}({LAUNCH_PDL})").body[0]
    )
    fn.args.args.append(
        ast.arg(LAUNCH_PDL, annotation=ast.parse("tl.constexpr", mode="eval").body)
    )
    return True


def loads(stmt: ast.stmt) -> bool:
    """Whether the statement calls tl.load anywhere inside it."""
    return any(is_call(n, "tl.load") for n in ast.walk(stmt))


def loads_at_top(fn: ast.FunctionDef) -> bool:
    """Whether a top-level statement of the kernel loads: where
    trigger_after_loads has a place for the late trigger."""
    return any(loads(stmt) for stmt in fn.body)


# Why the late trigger sits where it does, by what the launcher compares: a
# tile kernel's block columns, a persistent reduction's rows a program.
TILE_NOTE = (
    "a block over a long row lets the next kernel launch once its loads are issued"
)
ROWS_NOTE = (
    "a program of several rows lets the next kernel launch once its loads are issued"
)


def trigger_after_loads(
    fn: ast.FunctionDef, note: str = TILE_NOTE, when: str = EARLY_TRIGGER
) -> bool:
    """Split the handshake of a kernel dependent_launch opened: the wait
    triggers only `if EARLY_TRIGGER` (`pdl_wait(LAUNCH_PDL, EARLY_TRIGGER)`),
    and `pdl_release(LAUNCH_PDL, EARLY_TRIGGER)` triggers otherwise, after the
    last top-level statement that loads, under the comment `note` (TILE_NOTE,
    ROWS_NOTE); adds the EARLY_TRIGGER constexpr after LAUNCH_PDL, or, with
    `when` a constexpr expression of the kernel's own (BLOCK_ROWS == 1),
    splits on that. False (unchanged) where the kernel has no such wait,
    already has the split, or loads nothing at its top level."""
    if any(a.arg == EARLY_TRIGGER for a in fn.args.args):
        return False
    at = next((i for i, s in enumerate(fn.body) if is_pdl_block(s)), None)
    if at is None or len(fn.body[at].value.args) > 1:
        return False
    loading = [i for i, s in enumerate(fn.body) if i > at and loads(s)]
    if not loading:
        return False
    handshake = f"({LAUNCH_PDL}, {when})"
    fn.body[at] = ast.parse(PDL_WAIT + handshake).body[0]
    fn.body[loading[-1] + 1 : loading[-1] + 1] = [
        comment_stmt(note),
        ast.parse(PDL_RELEASE + handshake).body[0],
    ]
    if when != EARLY_TRIGGER:
        return True
    pdl = next(i for i, a in enumerate(fn.args.args) if a.arg == LAUNCH_PDL)
    fn.args.args.insert(
        pdl + 1,
        ast.arg(EARLY_TRIGGER, annotation=ast.parse("tl.constexpr", mode="eval").body),
    )
    return True


def launch_dependents(port: PortState) -> None:
    """Kernels the launcher launches with PDL open with the wait for the
    kernel before them and let the next one launch: right after the wait, or
    after their loads where their launch passes EARLY_TRIGGER (a tile kernel)
    or their own rows block says so (a persistent kernel: BLOCK_ROWS == 1)."""
    for kp, form, step in port.forms():
        if step.pdl:
            dependent_launch(form)
        if form is kp.matmul:
            continue
        own_rows = any(a.arg == "BLOCK_ROWS" for a in form.args.args)
        if step.early_trigger == ROWS_EARLY_TRIGGER_EXPR and own_rows:
            # A persistent reduction triggers on its own rows block: the
            # launcher passes nothing.
            if trigger_after_loads(form, ROWS_NOTE, ROWS_EARLY_TRIGGER_EXPR):
                step.persistent_trigger = True
            step.early_trigger = ""
        elif step.early_trigger:
            note = TILE_NOTE if kp.tile is not None else ROWS_NOTE
            if not trigger_after_loads(form, note):
                step.early_trigger = ""  # nothing loads at its top level
        elif step.persistent_trigger and form is kp.persistent:
            # The launcher saw it load at its top level, so the split holds.
            if not trigger_after_loads(form, ROWS_NOTE, ROWS_EARLY_TRIGGER_EXPR):
                raise RuntimeError(f"porter: {form.name} took no early trigger")
    if any(s.pdl for s in port.steps()):
        launches = port.launches()
        late = ["tile" for s in launches if s.early_trigger == EARLY_TRIGGER_EXPR]
        late += ["rows" for s in launches if s.persistent_trigger]
        late += ["rows" for s in launches if s.early_trigger == ROWS_EARLY_TRIGGER_EXPR]
        port.notes.append(pdl_note(late))
