"""Stage: no wrapping of a negative index where eager raises on one.

Inductor lowers every indexing op alike: a negative index i is read as
i + n (`tl.where(i < 0, i + n, i)`), then checked against [0, n). That is
Python's x[i], but torch.index_select, index_copy, index_add, gather, scatter
and embedding raise on a negative index: there the scaffold read row n - 1
and returned numbers (or wrote it: a KV cache's padding slot -1).
In a kernel whose only indexing ops are of that kind (the aten ops Inductor
names above the kernel), the wrap is dropped, so the bound check the kernel
keeps stops a negative index as eager does; so it is for an index one of them
writes through (index_add_ at seg beside a read of table[ids]).
"""

from __future__ import annotations

import ast

from porter.ast_tools import bindings, is_call
from porter.port.finish.asserts import checks
from porter.port.model import KernelPort, PortState

# Indexing ops that raise on a negative index in eager.
NO_WRAP_OPS = frozenset(
    {
        "aten.index_select",
        "aten.index_copy",
        "aten.index_add",
        "aten.index_reduce",
        "aten.gather",
        "aten.scatter",
        "aten.scatter_add",
        "aten.scatter_reduce",
        "aten.embedding",
    }
)
# Those of them that write at the index.
WRITE_OPS = frozenset(
    {
        "aten.index_copy",
        "aten.index_add",
        "aten.index_reduce",
        "aten.scatter",
        "aten.scatter_add",
        "aten.scatter_reduce",
    }
)
# Words that make an aten op an indexing op (aten.index, aten.take,
# aten.index_put, aten._unsafe_index wrap, as Python's x[i] does).
_INDEXING = ("index", "take", "put", "gather", "scatter", "embedding")


def eager_rejects_negative(aten: list[str]) -> bool:
    """Whether every indexing op among a kernel's aten ops raises on a
    negative index (and there is one)."""
    indexing = [op for op in aten if any(word in op for word in _INDEXING)]
    return bool(indexing) and all(op in NO_WRAP_OPS for op in indexing)


def _wraps(fn: ast.FunctionDef) -> list[ast.Assign]:
    """The assignments `tmp4 = tl.where(tmp0 < 0, tmp0 + n, tmp0)` (through
    its named condition and sum) of an index a bound check reads: without
    one, an unwrapped negative index would read before the tensor instead of
    stopping."""
    values = {n: v[0] for n, v in bindings(fn).items() if len(v) == 1}

    def named(node: ast.expr) -> ast.expr:
        return values.get(node.id, node) if isinstance(node, ast.Name) else node

    checked = {
        n.id for check in checks(fn) for n in ast.walk(check) if isinstance(n, ast.Name)
    }
    found = []
    for node in ast.walk(fn):
        if not (
            isinstance(node, ast.Assign)
            and is_call(node.value, "tl.where")
            and len(node.value.args) == 3
        ):
            continue
        cond, wrapped = (named(a) for a in node.value.args[:2])
        raw = ast.unparse(node.value.args[2])
        if (
            isinstance(cond, ast.Compare)
            and ast.unparse(cond) == f"{raw} < 0"
            and isinstance(wrapped, ast.BinOp)
            and isinstance(wrapped.op, ast.Add)
            and ast.unparse(wrapped.left) == raw
            and isinstance(node.value.args[2], ast.Name)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in checked
        ):
            found.append(node)
    return found


def unwrapped_indices(fn: ast.FunctionDef, sources: set[str] | None = None) -> int:
    """`tmp4 = tl.where(tmp0 < 0, tmp0 + n, tmp0)` (through its named
    condition and sum) becomes `tmp4 = tmp0`, for every index or those of
    the loaded values `sources`; how many did."""
    found = [n for n in _wraps(fn) if sources is None or n.value.args[2].id in sources]
    for node in found:
        node.value = ast.Name(node.value.args[2].id, ast.Load())
    return len(found)


def written_indices(fn: ast.FunctionDef, aten: list[str]) -> set[str]:
    """The loaded indices an op that raises on a negative index writes
    through (a store's or an atomic's address reads their wrap), where every
    op of the kernel that writes at an index is such an op: MoE's combine
    `out.index_add_(0, idx, src * w[idx][:, None])` reads w[idx] (which
    wraps) and adds at idx (which raises), so eager raises at a negative idx;
    `pooled.index_add_(0, seg, table[ids])` raises at a negative seg, and
    reads table at a negative id."""
    if not set(aten) & WRITE_OPS or any("put" in op for op in aten):
        return set()
    wraps = _wraps(fn)
    wrapped = {n.targets[0].id: n.value.args[2].id for n in wraps}
    written = set()
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Call)
            and ast.unparse(n.func) in ("tl.store", "tl.atomic_add")
            and n.args
        ):
            names = {m.id for m in ast.walk(n.args[0]) if isinstance(m, ast.Name)}
            written |= {wrapped[m] for m in names & set(wrapped)}
    return written


def keep_negative_indices(kp: KernelPort) -> None:
    """A negative index is not wrapped (`tl.where(i < 0, i + n, i)` -> `i`) in
    a kernel whose indexing ops all raise on one in eager (index_select,
    index_copy, index_add, gather, scatter, embedding), nor an index such an
    op writes through (MoE's combine, index_add_ at idx beside a read of
    w[idx]; index_add_ at seg of table[ids], whose ids still wrap): its bound
    check stops it."""
    aten = kp.record.aten
    if eager_rejects_negative(aten):
        done = unwrapped_indices(kp.tree)
    else:
        written = written_indices(kp.tree, aten)
        done = unwrapped_indices(kp.tree, written) if written else 0
    if done:
        kp.notes.append(
            f"{done} index(es) of {', '.join(sorted(set(kp.record.aten) & NO_WRAP_OPS))}"
            " not wrapped when negative: the bound check stops one, as eager raises"
        )


def _address_names(address: ast.expr, values: dict[str, ast.expr]) -> set[str]:
    """The names an address reads, through names bound once to arithmetic."""
    found, todo = set(), [address]
    while todo:
        for n in ast.walk(todo.pop()):
            if isinstance(n, ast.Name) and n.id not in found:
                found.add(n.id)
                value = values.get(n.id)
                if value is not None and not isinstance(value, ast.Call):
                    todo.append(value)
    return found


def keep_negative_indices_of_raising_inputs(port: PortState) -> None:
    """A loaded index a kernel reads or writes an input at, where only ops
    that raise on a negative index index that input (the capture's
    raise_on_negative), is not wrapped, though the kernel's other indexing
    ops wrap theirs: `cache.index_select(0, table[pos])` reads cache at
    table's entry unwrapped, and table at pos wrapped, as eager does."""
    raising = set(port.cap.raise_on_negative)
    if not raising or port.module is None:
        return
    sources = {gi.wrapper_name: gi.source for gi in port.module.inputs}
    for kp in port.kernels:
        if kp.launch is None or eager_rejects_negative(kp.record.aten):
            continue  # keep_negative_indices unwrapped every index there
        pointers = {
            b.param
            for b in kp.launch.args
            if b.kind == "input" and sources.get(b.value) in raising
        }
        wrapped = {n.targets[0].id: n.value.args[2].id for n in _wraps(kp.tree)}
        if not pointers or not wrapped:
            continue
        values = {n: v[0] for n, v in bindings(kp.tree).items() if len(v) == 1}
        at = set()
        for n in ast.walk(kp.tree):
            if (
                isinstance(n, ast.Call)
                and ast.unparse(n.func) in ("tl.load", "tl.store", "tl.atomic_add")
                and n.args
            ):
                names = _address_names(n.args[0], values)
                if names & pointers:
                    at |= {wrapped[m] for m in names & set(wrapped)}
        if at and unwrapped_indices(kp.tree, at):
            kp.notes.append(
                f"{len(at)} index(es) of {', '.join(sorted(set(kp.record.aten) & NO_WRAP_OPS))}"
                " not wrapped when negative: the bound check stops one, as eager raises"
            )
