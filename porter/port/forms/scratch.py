"""Stage: a buffer only its own looped kernel reads is recomputed, not stored.

Inductor's looped kernel keeps a value that several later loops need (min-p's
probabilities exp(x - max): their max, then the mask) in a scratch buffer of
its own, written once and read back by each of those loops: an fp32 element
written and read twice where the row's 2-byte input, read again, gives the
same value. Where no other kernel and no extern call reads that buffer and it
holds fp32 (so a reload returns the value stored, unrounded), each later loop
computes the value again from what the storing loop read
(recompute.recompute_into, which takes the same care for a temporary kept in
an output) and the store goes; so do the stores to it in the kernel's other
forms, which had forwarded it from registers (persist.forward_stores). The
buffer, read by nothing then, leaves the launch (params.drop_unread_parameters).
"""

from __future__ import annotations

import ast
import copy
import re

from porter.ast_tools import is_call, ptr_base, read_counts, set_hint
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
    stored in an fp32 buffer no one else reads, instead of reloading it."""
    done = 0
    for kp in port.kernels:
        if kp.record.kind != "reduction":
            continue
        for p in kp.params:
            if p.kind == "pointer" and _own_fp32_scratch(port, p.value):
                done += recompute_scratch(kp, p.name)
    if done:
        port.notes.append(
            "the looped kernel recomputes a value it kept in a buffer of its own "
            "for later loops, instead of storing and reloading it"
        )


def _own_fp32_scratch(port: PortState, var: str) -> bool:
    """Whether `var` names a scratch buffer held in fp32 that one launch alone
    takes (no other kernel, no extern call)."""
    module = port.module
    buffers = [b for b in module.buffers if module.buffer_var(b.name) == var]
    if len(buffers) != 1 or module.output_of(buffers[0].name) is not None:
        return False
    b = buffers[0]
    word = re.compile(rf"\b{re.escape(b.name)}\b")
    users = 0
    for step in module.steps:
        if step.kind == "launch":
            users += any(a.value == b.name for a in step.args)
        else:
            users += bool(word.search(getattr(step, "text", "") or ""))
    # (the launcher allocates it in the inputs' dtype where it follows them)
    extern_read = module.extern_reads(matmul=True)
    return (
        users == 1
        and b.dtype == "torch.float32"
        and not follows_inputs(port.cap, b, extern_read)
    )


def recompute_scratch(kp: KernelPort, base: str) -> int:
    """1 where every reload of `base` in kp.tree became a recomputation and
    every store to it left every form; 0 (nothing changed) otherwise."""
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
            fn, ia, ib, store, store_key(store.value), base, scratch=True
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
        _drop_stores(form, base)
    # The buffer and its strides leave the kernel; its allocation goes once no
    # launch takes it (params.drop_unread_parameters).
    var = next(p.value for p in kp.params if p.name == base)
    gone = {base} | {
        p.name
        for p in kp.params
        if p.kind == "stride" and p.value.startswith(f"{var}.stride(")
    }
    if any(gone & set(read_counts(f)) for f in kp.forms()):
        return 1  # a stride read elsewhere keeps them all (never seen)
    kp.params = [p for p in kp.params if p.name not in gone]
    for f in kp.forms():
        f.args.args = [a for a in f.args.args if a.arg not in gone]
    return 1


def _at(call: ast.Call, base: str) -> bool:
    return bool(call.args) and ptr_base(call.args[0]) == base


def _drop_stores(fn: ast.FunctionDef, base: str) -> None:
    """The stores to `base` leave `fn`, and a value cast to its (fp32) element
    type is the value itself."""
    cast = f"{base}.dtype.element_ty"

    class Drop(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr):
            if is_call(node.value, "tl.store") and _at(node.value, base):
                return None
            return node

        def visit_Call(self, node: ast.Call):
            self.generic_visit(node)
            if (
                isinstance(node.func, ast.Attribute)
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
