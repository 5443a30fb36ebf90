"""A pointer to each tensor's rows, bound once: Inductor writes
`x_ptr + (cols + rows * x_stride0)` in every load and store; a hand-written
kernel binds `x_rows = x_ptr + rows * x_stride0` where the rows are known and
reads `x_rows + cols`. The address is the same sum: for the captured/ cases
it compiles to the same SASS (docs/port.md).
"""

from __future__ import annotations

import ast
import re

from porter.ast_tools import (
    arg_names,
    assigned_names,
    full_names,
    join_sum,
    names_in,
    split_sum,
    stored_names,
    unique_name,
    walk_stmts,
)
from porter.port.model import PortState


def _row_offset(
    node: ast.AST, params: set[str], row_names: set[str]
) -> tuple[str, str, list[ast.AST], list[ast.AST]] | None:
    """(pointer, rows, row terms, other terms) for `pointer + (a + b + ...)`
    whose terms split into those of one row index and the kernel's parameters
    (`rows * stride`, `rows // heads * stride0 + rows % heads * stride1`) and
    the rest (the columns), with the pointer a parameter of the kernel."""
    if not (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and isinstance(node.left, ast.Name)
        and node.left.id in params
        and re.search(r"_ptr(_\d+)?$", node.left.id)
        and isinstance(node.right, ast.BinOp)
        and isinstance(node.right.op, ast.Add)
    ):
        return None
    terms = split_sum(node.right)
    for rows in sorted(row_names):
        of_rows = [t for t in terms if rows in names_in(t) <= params | {rows}]
        rest = [t for t in terms if not any(t is r for r in of_rows)]
        if of_rows and rest:
            return node.left.id, rows, of_rows, rest
    return None


def _row_indices(
    fn: ast.FunctionDef, top_binding: dict[str, int], store_count: dict[str, int]
) -> set[str]:
    """Names bound once, at the top of the body, to a row index: derived
    (full_names) from the program id or a `[:, None]` axis and from no
    `[None, :]` (column) axis, nor building one (a 2-d grid's column block)."""
    seeds: dict[str, set[str]] = {"rows": set(), "cols": set()}
    col_sources: set[str] = set()
    for stmt, _ in walk_stmts(fn.body):
        if not isinstance(stmt, ast.Assign):
            continue
        text = ast.unparse(stmt.value)
        if "[None, :]" in text:
            seeds["cols"].update(assigned_names(stmt))
            col_sources |= names_in(stmt.value)
        elif "tl.program_id" in text or "[:, None]" in text:
            seeds["rows"].update(assigned_names(stmt))
    rows = full_names(fn, seeds["rows"]) - full_names(fn, seeds["cols"]) - col_sources
    return {n for n in rows if store_count.get(n) == 1 and n in top_binding}


def row_pointers(fn: ast.FunctionDef) -> int:
    """Each pointer parameter whose loads and stores all offset it by the same
    rows (`rows * stride`, or a sum of such terms) gets `p_rows = p_ptr + rows
    * stride`, bound in the
    function's body before the first statement that uses it (and after the
    one that binds rows); the loads and stores read `p_rows + cols`. Nothing
    changes for a pointer read another way too, or rows bound more than once
    or inside a block. Returns how many pointers were bound."""
    params = set(arg_names(fn))
    stores = [n for s in fn.body for n in ast.walk(s) if isinstance(n, ast.Name)]
    store_count: dict[str, int] = {}
    for n in stores:
        if isinstance(n.ctx, ast.Store):
            store_count[n.id] = store_count.get(n.id, 0) + 1
    top_binding = {
        name: i
        for i, s in enumerate(fn.body)
        if isinstance(s, ast.Assign)
        for name in stored_names(s)
    }
    row_names = _row_indices(fn, top_binding, store_count)
    fixed = {p for p in params if p not in store_count}
    # Each pointer's row offsets (rows, the terms' text) and how many there
    # are; every other reading of it but its dtype's (`out_ptr.dtype.element_ty`)
    # counts against it below.
    found: dict[str, set[tuple[str, str]]] = {}
    matched: dict[str, int] = {}
    for node in ast.walk(fn):
        hit = _row_offset(node, fixed, row_names)
        if hit is not None:
            key = (hit[1], ast.unparse(join_sum(hit[2])))
            found.setdefault(hit[0], set()).add(key)
            matched[hit[0]] = matched.get(hit[0], 0) + 1
    if not found:
        return 0
    typed = {
        id(n.value)
        for n in ast.walk(fn)
        if isinstance(n, ast.Attribute) and n.attr == "dtype"
    }
    reads: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in found and id(node) not in typed:
            reads[node.id] = reads.get(node.id, 0) + 1
    taken = names_in(fn) | params
    names: dict[str, tuple[str, str, str]] = {}  # pointer -> (new name, rows, offset)
    order = arg_names(fn)
    for ptr, keys in sorted(found.items(), key=lambda item: order.index(item[0])):
        if len(keys) != 1 or reads[ptr] != matched[ptr]:
            continue
        rows, offset = next(iter(keys))
        new = re.sub(r"_ptr(_\d+)?$", r"\1", ptr) + f"_{rows}"
        new = unique_name(new, taken) if new in taken else new
        taken.add(new)
        names[ptr] = (new, rows, offset)
    if not names:
        return 0

    class Fix(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            hit = _row_offset(node, fixed, row_names)
            if hit is not None and hit[0] in names:
                rest = join_sum([self.visit(t) for t in hit[3]])
                return ast.BinOp(
                    ast.Name(names[hit[0]][0], ast.Load()), ast.Add(), rest
                )
            return self.generic_visit(node)

    first = min(
        i for i, s in enumerate(fn.body) if any(p in names_in(s) for p in names)
    )
    fn.body = [Fix().visit(s) for s in fn.body]
    # Grouped before the first statement that reads one, each after its rows.
    placed: dict[int, list[ast.stmt]] = {}
    for ptr, (new, rows, offset) in names.items():
        # (a read of the pointer's dtype alone may come before the rows)
        at = max(first, top_binding[rows] + 1)
        bound = ast.parse(f"{new} = {ptr} + ({offset})").body[0]
        _reuse_row_names(bound, fn, row_names, top_binding, at)
        placed.setdefault(at, []).append(bound)
    body = []
    for i, stmt in enumerate(fn.body):
        body += placed.get(i, [])
        body.append(stmt)
    fn.body = body
    return len(names)


def _reuse_row_names(
    stmt: ast.Assign,
    fn: ast.FunctionDef,
    row_names: set[str],
    top_binding: dict[str, int],
    at: int,
) -> None:
    """In a row pointer's offset, a row index bound above it by name
    (`rows // num_heads` where `token = rows // num_heads` is bound)."""
    values = {
        ast.unparse(fn.body[top_binding[n]].value): n
        for n in row_names
        if top_binding[n] < at
    }

    class Reuse(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if isinstance(node, ast.expr) and ast.unparse(node) in values:
                return ast.Name(values[ast.unparse(node)], ast.Load())
            return super().visit(node)

    stmt.value.right = Reuse().visit(stmt.value.right)


def bind_row_pointers(port: PortState) -> None:
    """Every kernel form's `p_ptr + (cols + rows * p_stride0)` read through one
    `p_rows = p_ptr + rows * p_stride0` bound where the rows are, a row part of
    several terms too (row_pointers)."""
    for _, form, _ in port.forms():
        row_pointers(form)
