"""Write a variant of a scaffold's kernel.py for tools/launch_probe.py --variant
(and tools/regcount.py --variant): a candidate kernel form, to time against the
generator's own before changing the generator.

    python3 tools/kernel_variant.py stream-helper captured/fused_add_rmsnorm/kernel.py \
        -o /tmp/fam_helper.py

Forms:
  stream-helper  The persistent kernel's eviction hint as one branch around a
                 helper: the kernel tests `rows < STREAM_ROWS` once and calls
                 `<kernel>_body(..., ROW_EVICTION)`, a @triton.jit function
                 holding the whole body, with the hint as a constexpr
                 ("evict_first", or "" for none). The scaffold's own form
                 branches around each hinted load instead, so both loads' code
                 share one body (more registers where a thread holds much of
                 the row: lab/NOTES.md).
  int32-offsets  Diagnostic, not a form porter may emit: every kernel's
                 program id left int32 and its row strides plain ints (no
                 tl.int64 annotation), so offsets are 32-bit as in
                 Inductor's kernels. Right only below 2^31 elements; it
                 prices porter's int64-offset rule at decode sizes.
  loads-first    Every load of a pointer the kernel does not store (weight,
                 bias) moved up to just after the statements that assign
                 what it reads, ahead of the row's loads and their STREAM_ROWS
                 branch: issued first, as Inductor's kernels issue every load.
                 porter itself does this only where a store comes before the
                 first reduction (fused_add_rmsnorm, add_layernorm); elsewhere
                 the scaffold loads them just before that reduction (rmsnorm),
                 and issued first they hold more registers where a thread
                 holds much of the row.
  hint-always    The persistent kernel's STREAM_ROWS branches replaced by
                 their first side (the hinted loads), so a launch below
                 STREAM_ROWS runs the same loads without the branch: it
                 prices the branch. STREAM_ROWS stays an (unread) argument.
  pdl-early      The kernel lets the next one launch
                 (gdc_launch_dependents) right after its gdc_wait, whatever
                 its block: a reduction's form, and a pointwise (tile)
                 kernel's before it took EARLY_TRIGGER (porter/port/finish/pdl.py).
  pdl-loaded     The kernel lets the next one launch after its last
                 top-level statement that loads, as Inductor's own PDL code
                 does, whatever its block.
  pdl-wait       The kernel never calls gdc_launch_dependents: the next one
                 may launch only as its programs exit, as behind a kernel
                 that does not call it (torch's elementwise kernels, say).
  loop-stages    Every `tl.range` loop (the looped and online kernels')
                 software-pipelined with num_stages=3: its loads issued
                 blocks ahead through shared memory (cp.async; LDGSTS in
                 regcount --sass), where the scaffold's loop loads one block
                 a trip. A candidate for wide rows that stream below a
                 copy's rate at 4096 tokens (lab/NOTES.md).
  loop-unroll    Every `tl.range` loop unrolled twice by Triton
                 (loop_unroll_factor=2, in place of the scaffold's
                 LOOP_UNROLL). With exp_ftz, LLVM no longer fully unrolls
                 the two-trip loops of softmax's looped kernel in fp32
                 blocks of 16384; this form, timed on an H200, led to the
                 scaffold's own unroll of two-block rows, while over four
                 blocks it lost (lab/NOTES.md).

The other forms keep a kernel's PDL wait (pdl_wait) first, so that nothing they
move reads memory before the wait. To price PDL itself, `launch_probe.py
--no-pdl`. The variant keeps every name the launcher calls. Only the kernels
change (comments are dropped: the file is printed again from its syntax
tree). flat-grid, the (rows, column blocks) tile on one grid axis, was a form
here until the generator took it (porter/port/speed/tile.py), as was pdl, the
kernels launched with programmatic dependent launch (porter/port/finish/pdl.py).
"""

from __future__ import annotations

import argparse
import ast
import copy
import sys
from pathlib import Path

from porter.ast_tools import is_call, names_in, ptr_base, stored_names
from porter.port.finish.pdl import (
    GDC_LAUNCH,
    GDC_WAIT,
    LAUNCH_PDL,
    is_pdl_block,
    is_pdl_release,
    loads,
)

# The generator's own pieces: the test for the branch hint_row_loads writes,
# and a statement's load and stored pointers.
from porter.port.forms.persist import (
    STREAM_ROWS,
    _is_stream_branch,
    load_parts,
    stored_bases,
)

ROW_EVICTION = "ROW_EVICTION"


def _hint_to_param(node: ast.AST) -> None:
    """eviction_policy="evict_first" -> eviction_policy=ROW_EVICTION."""
    for n in ast.walk(node):
        if isinstance(n, ast.keyword) and n.arg == "eviction_policy":
            if isinstance(n.value, ast.Constant) and n.value.value == "evict_first":
                n.value = ast.Name(ROW_EVICTION, ast.Load())


def stream_helper(fn: ast.FunctionDef) -> list[ast.FunctionDef] | None:
    """[body helper, dispatching kernel] for a kernel with STREAM_ROWS
    branches; None for any other kernel."""
    branches = [s for s in fn.body if _is_stream_branch(s)]
    if not branches:
        return None
    rows = ast.unparse(branches[0].test.left)
    body = copy.deepcopy(fn)
    body.name = f"{fn.name}_body"
    body.decorator_list = [ast.parse("triton.jit", mode="eval").body]
    for arg in body.args.args:
        if arg.arg == STREAM_ROWS:
            arg.arg = ROW_EVICTION
    flat = []
    for stmt in body.body:
        if _is_stream_branch(stmt):
            for inner in stmt.body:  # the hinted side; the hint becomes the param
                _hint_to_param(inner)
                flat.append(inner)
        else:
            flat.append(stmt)
    body.body = flat
    # In the helper's own order, the hint where STREAM_ROWS was.
    params = ["{}" if a.arg == ROW_EVICTION else a.arg for a in body.args.args]
    call = f"{body.name}({', '.join(params)})"
    dispatch = copy.deepcopy(fn)
    dispatch.body = ast.parse(
        f"if {rows} < {STREAM_ROWS}:\n"
        f"    {call.format(repr('evict_first'))}\n"
        f"else:\n"
        f"    {call.format(repr(''))}\n"
    ).body
    return [body, dispatch]


def _program_id_names(fn: ast.FunctionDef) -> set[str]:
    """Names assigned from a program id (`row_block = tl.program_id(0) //
    COL_BLOCKS`), as the tile kernels hold it before widening."""
    return {
        t.id
        for s in fn.body
        if isinstance(s, ast.Assign)
        and any(is_call(n, "tl.program_id") for n in ast.walk(s.value))
        for t in s.targets
        if isinstance(t, ast.Name)
    }


def _is_int64_program_id(node: ast.AST, pid_names: set[str]) -> bool:
    # tl.program_id(a).to(tl.int64), or row_block.to(tl.int64)
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and [ast.unparse(a) for a in node.args] == ["tl.int64"]
    ):
        return False
    value = node.func.value
    return is_call(value, "tl.program_id") or (
        isinstance(value, ast.Name) and value.id in pid_names
    )


class _Int32ProgramIds(ast.NodeTransformer):
    def __init__(self, pid_names: set[str]) -> None:
        self.pid_names = pid_names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if _is_int64_program_id(node, self.pid_names):
            return node.func.value
        return node


def int32_offsets(fn: ast.FunctionDef) -> list[ast.FunctionDef] | None:
    """The kernel with 32-bit program ids and unannotated (int) strides; None
    for a function with neither (the launcher, helpers)."""
    out = copy.deepcopy(fn)
    typed = [
        a
        for a in out.args.args
        if a.annotation is not None and ast.unparse(a.annotation) == "tl.int64"
    ]
    pids = _program_id_names(out)
    if not typed and not any(_is_int64_program_id(n, pids) for n in ast.walk(out)):
        return None
    for a in typed:
        a.annotation = None
    return [_Int32ProgramIds(pids).visit(out)]


def hint_always(fn: ast.FunctionDef) -> list[ast.FunctionDef] | None:
    """The kernel with each STREAM_ROWS branch replaced by its hinted side;
    None for a kernel without such branches."""
    if not any(_is_stream_branch(s) for s in fn.body):
        return None
    body = []
    for stmt in copy.deepcopy(fn).body:
        body += stmt.body if _is_stream_branch(stmt) else [stmt]
    return _with_body(fn, body)


def _with_body(fn: ast.FunctionDef, body: list[ast.stmt]) -> list[ast.FunctionDef]:
    """[a copy of fn with this body]: a variant form's one kernel."""
    out = copy.copy(fn)
    out.body = body
    return [out]


def loads_first(fn: ast.FunctionDef) -> list[ast.FunctionDef] | None:
    """The kernel with each load of an unstored pointer moved to just after
    what it reads (after the previous one moved, to keep their order); None
    where none moves."""
    stored = stored_bases(fn)
    body = list(copy.deepcopy(fn).body)
    moved, last = 0, -1
    for i in range(len(body)):
        stmt = body[i]
        single = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
        load = load_parts(stmt.value)[0] if single else None
        if load is None or not load.args or ptr_base(load.args[0]) in stored:
            continue
        reads = names_in(stmt.value)
        deps = [j + 1 for j in range(i) if stored_names(body[j]) & reads]
        at = max([0, last + 1] + deps)
        targets = stored_names(stmt)
        # Nothing it jumps over may assign or read what it assigns; jumping
        # only over arithmetic (a mask's binding) moves nothing that matters.
        between = body[at:i]
        if (
            between
            and not any(names_in(s) & targets for s in between)
            and any(loads(s) or not isinstance(s, ast.Assign) for s in between)
        ):
            body.insert(at, body.pop(i))
            moved, last = moved + 1, at
        else:
            last = i  # one it leaves in place: the next stays below it
    return _with_body(fn, body) if moved else None


def _pdl_first(form):
    """`form` applied to the kernel without its PDL wait, which then
    opens the launched kernel again (the one keeping the kernel's name): what
    a form moves up stays behind the wait."""

    def apply(fn: ast.FunctionDef) -> list[ast.FunctionDef] | None:
        if not (fn.body and is_pdl_block(fn.body[0])):
            return form(fn)
        rest = copy.copy(fn)
        rest.body = fn.body[1:]
        new = form(rest)
        for out in new or []:
            if out.name == fn.name:
                out.body = [copy.deepcopy(fn.body[0]), *out.body]
        return new

    return apply


def _without_triggers(body: list[ast.stmt]) -> list[ast.stmt]:
    """body without any gdc_launch_dependents, and without the `if` blocks
    that held nothing else (a tile kernel's EARLY_TRIGGER branches)."""
    out = []
    for stmt in body:
        if ast.unparse(stmt) == GDC_LAUNCH:
            continue
        if isinstance(stmt, ast.If):
            stmt.body = _without_triggers(stmt.body)
            stmt.orelse = _without_triggers(stmt.orelse)
            real = [s for s in stmt.body if not _is_note(s)]
            if not real and not stmt.orelse:
                continue
        out.append(stmt)
    return out


def _is_note(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _trigger_moved(where: str):
    """The pdl-early, pdl-loaded or pdl-wait form: every gdc_launch_dependents
    of the kernel taken out (a tile kernel's EARLY_TRIGGER branches with
    them), and one put back right after its gdc_wait ("early"), under `if
    LAUNCH_PDL:` after its last top-level statement that loads ("loaded"), or
    not at all ("wait")."""

    def form(fn: ast.FunctionDef) -> list[ast.FunctionDef] | None:
        if not (fn.body and is_pdl_block(fn.body[0])):
            return None
        # The kernel's own handshake (common.py's pdl_wait, pdl_release) out,
        # the bare wait back in its place.
        body = [copy.deepcopy(s) for s in fn.body[1:] if not is_pdl_release(s)]
        body = [ast.parse(f"if {LAUNCH_PDL}:\n    {GDC_WAIT}").body[0], *body]
        body = _without_triggers(body)
        if where == "early":
            body[0].body.append(ast.parse(GDC_LAUNCH).body[0])
        elif where == "loaded":
            loading = [i for i, s in enumerate(body) if i and loads(s)]
            at = loading[-1] + 1 if loading else 1
            body.insert(at, ast.parse(f"if {LAUNCH_PDL}:\n    {GDC_LAUNCH}").body[0])
        return _with_body(fn, body)

    return form


LOOP_STAGES = 3
LOOP_UNROLL = 2


def _loop_keyword(name: str, value: int):
    """The form that sets `name=value` on every `tl.range` loop of a kernel;
    None for a kernel without such a loop."""

    def form(fn: ast.FunctionDef) -> list[ast.FunctionDef] | None:
        out = copy.deepcopy(fn)
        loops = [
            n.iter
            for n in ast.walk(out)
            if isinstance(n, ast.For) and is_call(n.iter, "tl.range")
        ]
        for call in loops:
            call.keywords = [k for k in call.keywords if k.arg != name]
            call.keywords.append(ast.keyword(name, ast.Constant(value)))
        return [out] if loops else None

    return form


# The kernel with every `tl.range` loop pipelined (`num_stages=LOOP_STAGES`):
# its loads issued that many blocks ahead, through shared memory, where the
# scaffold's loop loads one block at a time.
loop_stages = _loop_keyword("num_stages", LOOP_STAGES)
# The kernel with every `tl.range` loop unrolled LOOP_UNROLL times by Triton
# (`loop_unroll_factor`), whatever LLVM's own unroller decides.
loop_unroll = _loop_keyword("loop_unroll_factor", LOOP_UNROLL)


FORMS = {
    "stream-helper": _pdl_first(stream_helper),
    "int32-offsets": _pdl_first(int32_offsets),
    "hint-always": _pdl_first(hint_always),
    "loads-first": _pdl_first(loads_first),
    "pdl-early": _trigger_moved("early"),
    "pdl-loaded": _trigger_moved("loaded"),
    "pdl-wait": _trigger_moved("wait"),
    "loop-stages": loop_stages,
    "loop-unroll": loop_unroll,
}


def variant(source: str, form: str) -> tuple[str, list[str]]:
    """The module's source with `form` applied to every kernel it fits, and the
    names of those kernels."""
    tree = ast.parse(source)
    out, changed = [], []
    for node in tree.body:
        new = FORMS[form](node) if isinstance(node, ast.FunctionDef) else None
        if new is None:
            out.append(node)
        else:
            out += new
            changed.append(node.name)
    tree.body = out
    if not changed:
        return source, []
    text = ast.unparse(ast.fix_missing_locations(tree))
    try:
        import black

        text = black.format_str(text, mode=black.Mode())
    except ImportError:  # the GPU machine may lack it; the code is the same
        pass
    return text, changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("form", choices=sorted(FORMS))
    ap.add_argument("kernel", help="a scaffold's kernel.py")
    ap.add_argument("-o", "--out", required=True, help="where the variant goes")
    args = ap.parse_args()
    src = Path(args.kernel)
    if not src.is_file():
        print(f"kernel_variant: {src}: no such file", file=sys.stderr)
        return 1
    text, changed = variant(src.read_text(), args.form)
    if not changed:
        print(
            f"kernel_variant: {src}: no kernel that {args.form} applies to "
            "(stream-helper and hint-always: a persistent kernel with "
            "STREAM_ROWS branches; int32-offsets: a kernel with int64 program ids or "
            "strides; loads-first: a load of an unstored pointer behind other "
            "statements it does not need; pdl-early, pdl-loaded and pdl-wait: a kernel "
            "opening with the PDL wait; loop-stages and loop-unroll: a kernel "
            "with a tl.range loop)",
            file=sys.stderr,
        )
        return 1
    Path(args.out).write_text(text)
    print(f"kernel_variant: wrote {args.out} ({args.form}: {', '.join(changed)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
