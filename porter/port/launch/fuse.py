"""Stage: one launch for consecutive tiled pointwise kernels over the same rows.

Inductor can split one pointwise computation into a kernel per output slice
(`torch.cat([q1 * c - q2 * s, q2 * c + q1 * s])` with a dynamic token count
becomes two kernels), and each reads the same inputs: q is read from memory
twice. Fused into one kernel that writes both slices, a program loads its block
of q once from memory. The second kernel's loads go before the first's stores
(loads_before_stores): after a store the compiler must reload (the pointers
might alias), while issued together, loads of one address under one mask
compile to one (rotary_neox: 8 global loads to 4, offline under triton 3.6).

Two kernels fuse when both run on a (rows, column blocks) grid (porter.port.speed.tile)
over the same row count, they are launched one after the other, and the second
reads nothing the first writes. The second's statements follow the first's in
one body: its arguments bound to the same launcher value become the first's,
its names that clash get a suffix, and an assignment identical to one of the
first's is dropped (rows, cols, the row's token index).
"""

from __future__ import annotations

import ast
import copy
import re
from collections import Counter

from porter.port.bind.generalize import set_signature
from porter.port.model import KernelPort, Param
from porter.ast_tools import (
    assigned_names,
    is_call,
    names_in,
    rename_names,
    ptr_base,
    unique_name,
)
from porter.port.forms.persist import name_counts, stored_bases

FUSED_NOTE = (
    "fused {n} pointwise kernels that read the same inputs into one launch "
    "(each input read once from memory)"
)
LOADS_FIRST_NOTE = (
    "issued the fused kernels' loads before their stores, so that loads of one "
    "address under one mask compile to one"
)


def _pointer_bases(kp: KernelPort, call: str) -> set[str]:
    """Launcher tensors (a view's base, not the view) that `call` (tl.load or
    tl.store) addresses in this kernel."""
    by_name = {p.name: p for p in kp.params if p.kind == "pointer"}
    bases = set()
    for node in ast.walk(kp.tree):
        if is_call(node, call) and node.args:
            p = by_name.get(ptr_base(node.args[0]))
            if p is not None:
                bases.add(_base(p))
    return bases


def _pointers(kp: KernelPort, call: str) -> set[str]:
    """Launcher tensors, views as themselves, that `call` addresses."""
    by_name = {p.name: p for p in kp.params if p.kind == "pointer"}
    return {
        by_name[ptr_base(node.args[0])].value
        for node in ast.walk(kp.tree)
        if is_call(node, call) and node.args and ptr_base(node.args[0]) in by_name
    }


def _base(p: Param) -> str:
    """`out` for `out_view0 = out.as_strided(...)`; the value itself otherwise."""
    if p.view:
        m = re.match(r"\s*([A-Za-z_][A-Za-z_0-9]*)", p.view)
        if m:
            return m.group(1)
    return p.value


ATOMICS = tuple(
    f"tl.atomic_{op}" for op in ("add", "max", "min", "xchg", "cas", "and", "or", "xor")
)


def _strided_axes(kp: KernelPort) -> dict[str, set[int]]:
    """Per tensor the kernel takes a pointer to, the axes whose strides it
    takes as arguments (the others it assumes as captured)."""
    out: dict[str, set[int]] = {
        p.value: set() for p in kp.params if p.kind == "pointer"
    }
    for p in kp.params:
        m = re.fullmatch(r"(\w+)\.stride\((\d+)\)", p.value)
        if p.kind == "stride" and m and m.group(1) in out:
            out[m.group(1)].add(int(m.group(2)))
    return out


def fusable(a: KernelPort, b: KernelPort) -> bool:
    if a.tile is None or b.tile is None or a.persistent or b.persistent:
        return False
    if a.tile[2] != b.tile[2]:
        return False
    # A tensor one kernel reads at any strides and the other at the captured
    # ones (mrope's cos[0] by its strides, cos[1] at a packed offset): fused,
    # the launcher would see its strides taken and copy nothing.
    axes_a, axes_b = _strided_axes(a), _strided_axes(b)
    if any(axes_a[t] != axes_b[t] for t in axes_a.keys() & axes_b.keys()):
        return False
    # b must not read what a writes (any view of it), nor write the same
    # tensor again (a fill, then a scatter into it): in one kernel, another
    # program's store need not have happened yet, and may land after b's.
    # Stores to two views of one buffer (the halves of a concatenation) are
    # apart.
    # An atomic (scatter_add's) both reads and writes.
    reads, writes = ("tl.load", *ATOMICS), ("tl.store", *ATOMICS)
    if set().union(*(_pointer_bases(b, c) for c in reads)) & set().union(
        *(_pointer_bases(a, c) for c in writes)
    ):
        return False
    return not (
        set().union(*(_pointers(a, c) for c in writes))
        & set().union(*(_pointers(b, c) for c in writes))
    )


def _is_load(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assign) and any(
        is_call(n, "tl.load") for n in ast.walk(stmt.value)
    )


def loads_before_stores(
    first: list[ast.stmt], second: list[ast.stmt], params: set[str]
) -> list[ast.stmt] | None:
    """The fused body with the second kernel's loads (and the indices and masks
    they read) before the first kernel's first store: first's statements up to
    its first store, those of second's, then the rest of each in order. The
    compiler cannot move a load above a store to another pointer (they might
    alias), so in plain order second's loads wait on a round trip after
    first's store; issued together, loads of the same address under the same
    mask are one load. Safe because second reads nothing first writes
    (fusable). None (keep the plain order) for bodies other than assignments
    and stores, or where a moved statement would read another value than it
    did after all of first."""
    if not all(isinstance(st, (ast.Assign, ast.Expr)) for st in first + second):
        return None
    cut = next((i for i, st in enumerate(first) if stored_bases(st)), len(first))
    need: set[str] = set()
    for st in reversed(second):
        if _is_load(st) or (
            isinstance(st, ast.Assign) and set(assigned_names(st)) & need
        ):
            need |= names_in(st.value)
    moved = [
        st
        for st in second
        if isinstance(st, ast.Assign)
        and not stored_bases(st)
        and (_is_load(st) or set(assigned_names(st)) & need)
    ]
    if not any(_is_load(st) for st in moved):
        return None
    # an index check goes with the loads after it: a gather by an index out of
    # range read outside its table before the check stopped it
    last = max(i for i, st in enumerate(second) if st in moved and _is_load(st))
    moved = [
        st
        for i, st in enumerate(second)
        if st in moved
        or (
            i < last
            and isinstance(st, ast.Expr)
            and is_call(st.value, "tl.device_assert")
        )
    ]
    # A moved statement reads names assigned before the cut and not again
    # after it, parameters, or names moved before it, each assigned once.
    later = {n for st in first[cut:] for n in assigned_names(st)}
    known = (
        set(params) | {n for st in first[:cut] for n in assigned_names(st)}
    ) - later
    counts = Counter(n for st in second for n in assigned_names(st))
    for st in moved:
        targets = assigned_names(st)
        if not names_in(st.value) <= known | _BUILTINS or any(
            counts[n] > 1 for n in targets
        ):
            return None
        known |= set(targets)
    rest = [st for st in second if st not in moved]
    return first[:cut] + moved + first[cut:] + rest


# Modules a kernel reads that no statement assigns.
_BUILTINS = {"tl", "triton", "libdevice", "math"}


def fuse_pair(a: KernelPort, b: KernelPort) -> KernelPort:
    """a with b's statements after its own, on a grid covering both."""
    b_tree = copy.deepcopy(b.tree)
    taken = {p.name for p in a.params} | set(name_counts(a.tree))
    mapping: dict[str, str] = {}
    new_params: list[Param] = []
    for bp in b.params:
        if bp.kind == "block":
            continue
        same = next(
            (
                ap
                for ap in a.params
                if (ap.kind, ap.value, ap.annotation, ap.view)
                == (bp.kind, bp.value, bp.annotation, bp.view)
            ),
            None,
        )
        if same is not None:
            mapping[bp.name] = same.name
            continue
        name = bp.name if bp.name not in taken else unique_name(bp.name, taken)
        taken.add(name)
        mapping[bp.name] = name
        new_params.append(Param(name, bp.kind, bp.value, bp.annotation, "", bp.view))
    for local in sorted(name_counts(b_tree)):
        if local in taken and local not in mapping:
            mapping[local] = unique_name(local, taken)
            taken.add(mapping[local])
    rename_names(b_tree, mapping)
    # An assignment a already made, the same expression of the same names, is
    # dropped and its later readers read a's name.
    a_values: dict[str, str] = {}
    a_counts = name_counts(a.tree)
    for s in a.tree.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            t = s.targets[0]
            if isinstance(t, ast.Name) and a_counts[t.id] == 1:
                a_values.setdefault(ast.dump(s.value), t.id)
    body = []
    for s in b_tree.body:
        if (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and ast.dump(s.value) in a_values
        ):
            alias = {s.targets[0].id: a_values[ast.dump(s.value)]}
            for later in b_tree.body:
                rename_names(later, alias)
            continue
        body.append(s)
    fused = copy.copy(a)
    fused.tree = copy.deepcopy(a.tree)
    params = {arg.arg for arg in fused.tree.args.args} | {p.name for p in new_params}
    ordered = loads_before_stores(fused.tree.body, body, params)
    fused.tree.body = ordered if ordered is not None else fused.tree.body + body
    blocks = [p for p in a.params if p.kind == "block"]
    fused.params = [p for p in a.params if p.kind != "block"] + new_params + blocks
    set_signature(fused)
    cols = a.tile[1] if a.tile[1] == b.tile[1] else f"max({a.tile[1]}, {b.tile[1]})"
    fused.tile = (a.tile[0], cols, a.tile[2])
    fused.helpers = a.helpers | b.helpers
    fused.combine_fns = a.combine_fns + [
        f for f in b.combine_fns if f.name not in {g.name for g in a.combine_fns}
    ]
    fused.uses_libdevice = a.uses_libdevice or b.uses_libdevice
    fused.heavy_math = a.heavy_math or b.heavy_math
    fused.notes = a.notes + [n for n in b.notes if n not in a.notes]
    if ordered is not None and LOADS_FIRST_NOTE not in fused.notes:
        fused.notes.append(LOADS_FIRST_NOTE)
    fused.todos = a.todos + b.todos
    fused.fused = a.fused + [b.record.name]
    return fused


def fuse_pointwise(ports: list[KernelPort], order: list[str]) -> list[KernelPort]:
    """Fuse runs of kernels launched back to back (`order`: the record names in
    launch order, with "" for anything else the launcher does in between)."""
    by_name = {kp.record.name: kp for kp in ports}
    out: list[KernelPort] = []
    prev = ""
    for name in order:
        kp = by_name.get(name)
        if kp is None:
            prev = ""
            continue
        if prev and fusable(out[-1], kp):
            out[-1] = fuse_pair(out[-1], kp)
        else:
            out.append(kp)
        prev = name
    for kp in out:
        if kp.fused:
            kp.notes.append(FUSED_NOTE.format(n=len(kp.fused) + 1))
            if LOADS_FIRST_NOTE in kp.notes:  # said after the fusion it follows
                kp.notes.remove(LOADS_FIRST_NOTE)
                kp.notes.append(LOADS_FIRST_NOTE)
    return out


def fuse_pointwise_kernels(port: PortState) -> None:
    """Pointwise kernels launched one after another over the same elements
    become one kernel (fuse_pointwise, in Inductor's launch order)."""
    order = [s.name if s.kind == "launch" else "" for s in port.module.steps]
    port.kernels = fuse_pointwise(port.kernels, order)
