"""Stage: a buffer only its own looped kernel reads is recomputed, not stored.

Inductor's looped kernel keeps a value that several later loops need (min-p's
probabilities exp(x - max): their max, then the mask) in a scratch buffer of
its own, written once and read back by each of those loops: an fp32 element
written and read twice where the row's 2-byte input, read again, gives the
same value. Where no other kernel and no extern call reads that buffer, each
later loop computes the value again from what the storing loop read
(recompute.recompute_into, which takes the same care for a temporary kept in
an output) and the store goes; so do the stores to it in the kernel's other
forms, which had forwarded it from registers (persist.forward_stores). An fp32
buffer returned the value unrounded: the recomputed one is. One in the inputs'
dtype (silu(x) * y in bf16 before an fp8 quantization, over 14336 columns)
rounded it: the recomputed one keeps that cast, which Inductor's GPU kernel
drops. The buffer, read by nothing then, leaves the launch
(params.drop_unread_parameters; finish.dtype_pointers where it was kept for
its dtype).

A buffer of the kernel's own in any dtype (fused_add_rms_norm's bf16
residual + x, stored by the looped kernel for its second loop) is stored in
vain by a form that never loads it, the persistent one holding the row in
registers: drop_dead_scratch_stores drops those stores, which wrote a row more
per row (a fifth of that kernel's traffic), and keeps the value's rounding to
the buffer's dtype.
"""

from __future__ import annotations

import ast
import copy
import re

from porter.ast_tools import is_call, ptr_base, read_counts, read_only_at, set_hint
from porter.port.forms.persist import (
    drop_needless_barriers,
    is_col_loop,
    reuse_loads,
    store_key,
)
from porter.port.forms.recompute import recompute_into, row_loads, store_stmts
from porter.port.launch.launcher import follows_inputs
from porter.port.model import KernelPort, PortState


def recompute_scratch_buffers(port: PortState) -> None:
    """Each later loop of a looped kernel computes again a value the kernel
    stored in a buffer no one else reads, instead of reloading it."""
    done = 0
    for kp in port.kernels:
        if kp.record.kind != "reduction":
            continue
        for p, b in _own_scratch(port, kp):
            # one in the inputs' dtype keeps its rounding (the buffer stays
            # for its dtype alone until finish.dtype_pointers)
            rounded = not _fp32(port, b)
            done += recompute_scratch(kp, p.name, rounded)
    if done:
        port.notes.append(
            "the looped kernel recomputes a value it kept in a buffer of its own "
            "for later loops, instead of storing and reloading it"
        )


def drop_dead_scratch_stores(port: PortState) -> None:
    """A form that never loads a buffer of its own kernel's (the persistent
    form, which forwards the row from registers) does not store to it."""
    done = 0
    for kp in port.kernels:
        for p, _ in _own_scratch(port, kp):
            for form in kp.forms():
                if _only_stored(form, p.name):
                    _drop_stores(form, p.name, keep_casts=True)
                    done += 1
    if done:
        port.notes.append(
            "a kernel form that holds the row in registers no longer stores it "
            "to a scratch buffer only the kernel's looped form reads back"
        )


def _one_name(kp: KernelPort, p) -> bool:
    """Whether the kernel reaches p's buffer through p alone: no other
    parameter takes it, or a view of it (a load through the view would read
    what p stores)."""
    word = re.compile(rf"\b{re.escape(p.value)}\b")
    return not p.view and not any(
        q is not p and (q.value == p.value or word.search(q.view or ""))
        for q in kp.params
    )


def _only_stored(fn: ast.FunctionDef, base: str) -> bool:
    """Whether `fn` stores to `base` and reads it nowhere: every use of the
    name is a store's pointer or its dtype (`base.dtype.element_ty`)."""
    stores = [n for n in ast.walk(fn) if is_call(n, "tl.store") and _at(n, base)]
    seen = set()
    for store in stores:
        node = store.args[0]
        while isinstance(node, ast.BinOp):
            node = node.left
        seen.add(id(node))
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and n.attr == "dtype":
            seen.add(id(n.value))
    return bool(stores) and read_only_at(fn, base, seen)


def _own_scratch(port: PortState, kp: KernelPort):
    """(parameter, buffer) of each scratch buffer the kernel takes under one
    name (_one_name) that its launch alone takes (no other kernel, no extern
    call), under its name or a view's, and no output returns."""
    module = port.module
    found = []
    for p in list(kp.params):
        if p.kind != "pointer" or not _one_name(kp, p):
            continue
        buffers = [b for b in module.buffers if module.buffer_var(b.name) == p.value]
        if len(buffers) != 1 or module.output_of(buffers[0].name) is not None:
            continue
        if _users(module, buffers[0].name) == 1:
            found.append((p, buffers[0]))
    return found


def _users(module, buffer: str) -> int:
    """How many steps take `buffer` or a view of it (Inductor's buf0, a
    reinterpret_tensor of buf2, which another kernel then reads as buf2)."""
    names = {buffer} | {
        a.value
        for step in module.steps
        for a in getattr(step, "args", [])
        if a.target == buffer
    }
    word = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
    users = 0
    for step in module.steps:
        if step.kind == "launch":
            users += any(buffer in (a.target, a.value) for a in step.args)
        else:
            users += bool(word.search(getattr(step, "text", "") or ""))
    return users


def _fp32(port: PortState, b) -> bool:
    """Whether scratch buffer b holds fp32 at every call."""
    # (the launcher allocates it in the inputs' dtype where it follows them)
    extern_read = port.module.extern_reads(matmul=True)
    return b.dtype == "torch.float32" and not follows_inputs(port.cap, b, extern_read)


def recompute_scratch(kp: KernelPort, base: str, rounded: bool = False) -> int:
    """1 where every reload of `base` in kp.tree became a recomputation and
    every store to it left every form; 0 (nothing changed) otherwise. With
    `rounded` the recomputed value keeps its cast to the buffer's dtype."""
    fn = copy.deepcopy(kp.tree)
    body = fn.body
    stores = [n for n in ast.walk(fn) if is_call(n, "tl.store") and _at(n, base)]
    loops = [i for i, s in enumerate(body) if is_col_loop(s)]
    found = [
        (ia, s) for ia in loops for s in store_stmts(body[ia]) if s.value in stores
    ]
    if len(stores) != 1 or len(found) != 1:
        return 0
    ia, store = found[0]
    later = [
        ib
        for ib in loops
        if ib > ia
        and any(is_call(n, "tl.load") and _at(n, base) for n in ast.walk(body[ib]))
    ]
    loads = [n for n in ast.walk(fn) if is_call(n, "tl.load") and _at(n, base)]
    if not later or len(loads) != len(later):
        return 0  # a load outside the later loops, or two in one
    copied = []
    for ib in later:
        copies = recompute_into(
            fn, ia, ib, store, store_key(store.value), base, True, rounded
        )
        if copies is None:
            return 0
        copied.append(copies)
    others = [f for f in (kp.persistent, kp.online) if f is not None]
    if any(is_call(n, "tl.load") and _at(n, base) for f in others for n in ast.walk(f)):
        return 0
    body[ia].body.remove(store)
    # Only the last recomputation reads the row for the last time.
    for copies in copied[:-1]:
        for n in row_loads(copies):
            set_hint(n, "evict_last")
    # A loop that read the row itself as well reads it once (min-p's mask).
    for ib in later:
        loop = ast.FunctionDef("loop", fn.args, body[ib].body, [], None, None)
        reuse_loads(loop)
    drop_needless_barriers(fn)
    kp.tree = fn
    for form in others:
        _drop_stores(form, base, keep_casts=rounded)
    # The buffer and its strides leave the kernel; its allocation goes once no
    # launch takes it (params.drop_unread_parameters). A rounded value still
    # reads the buffer's dtype: its pointer stays for that
    # (finish.dtype_pointers), its strides go, so the launch counts no row of it.
    strides = kp.strides_of(next(p.value for p in kp.params if p.name == base))
    read = {n for f in kp.forms() for n in read_counts(f)}
    if strides & read:
        return 1  # a stride read elsewhere keeps them all (never seen)
    kp.drop_params(({base} | strides) - read)
    return 1


def _at(call: ast.Call, base: str) -> bool:
    return bool(call.args) and ptr_base(call.args[0]) == base


def _drop_stores(fn: ast.FunctionDef, base: str, keep_casts: bool = False) -> None:
    """The stores to `base` leave `fn`, and a value cast to its (fp32) element
    type is the value itself (unless `keep_casts`: the buffer stays, and a
    value forwarded from it keeps its rounding to its dtype)."""
    cast = f"{base}.dtype.element_ty"

    class Drop(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr):
            if is_call(node.value, "tl.store") and _at(node.value, base):
                return None
            return node

        def visit_Call(self, node: ast.Call):
            self.generic_visit(node)
            if (
                not keep_casts
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "to"
                and len(node.args) == 1
                and ast.unparse(node.args[0]) == cast
            ):
                return node.func.value
            return node

    Drop().visit(fn)
    for node in ast.walk(fn):  # a branch that only stored keeps a statement
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list) and not block and field == "body":
                block.append(ast.Pass())
    ast.fix_missing_locations(fn)
