"""A pointer to each tensor's rows, bound once: Inductor writes
`x_ptr + (cols + rows * x_stride0)` in every load and store; a hand-written
kernel binds `x_rows = x_ptr + rows * x_stride0` where the rows are known and
reads `x_rows + cols`. The address is the same sum: for the captured/ cases
it compiles to the same SASS (docs/port.md).
"""

from __future__ import annotations

import ast

from porter.ast_tools import arg_names, names_in, stored_names, unique_name
from porter.port.model import PortState


def _row_offset(
    node: ast.AST, params: set[str]
) -> tuple[str, str, str, ast.AST] | None:
    """(pointer, rows, stride, rest) for `pointer + (rest + rows * stride)`,
    with pointer and stride parameters of the kernel."""
    if not (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and isinstance(node.left, ast.Name)
        and node.left.id in params
        and node.left.id.endswith("_ptr")
        and isinstance(node.right, ast.BinOp)
        and isinstance(node.right.op, ast.Add)
    ):
        return None
    rest, scaled = node.right.left, node.right.right
    if not (
        isinstance(scaled, ast.BinOp)
        and isinstance(scaled.op, ast.Mult)
        and isinstance(scaled.left, ast.Name)
        and isinstance(scaled.right, ast.Name)
        and scaled.right.id in params
    ):
        return None
    return node.left.id, scaled.left.id, scaled.right.id, rest


def row_pointers(fn: ast.FunctionDef) -> int:
    """Each pointer parameter whose loads and stores all offset it by the same
    `rows * stride` gets `p_rows = p_ptr + rows * stride`, bound in the
    function's body before the first statement that uses it (and after the
    one that binds rows); the loads and stores read `p_rows + cols`. Nothing
    changes for a pointer read another way too, or rows bound more than once
    or inside a block. Returns how many pointers were bound."""
    params = set(arg_names(fn))
    # Each pointer's (rows, stride) offsets and how many there are; every
    # other reading of it but its dtype's (`out_ptr.dtype.element_ty`) counts
    # against it below.
    found: dict[str, set[tuple[str, str]]] = {}
    matched: dict[str, int] = {}
    for node in ast.walk(fn):
        hit = _row_offset(node, params)
        if hit is not None:
            found.setdefault(hit[0], set()).add(hit[1:3])
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
    taken = names_in(fn) | params
    names: dict[str, tuple[str, str, str]] = {}  # pointer -> (new name, rows, stride)
    order = arg_names(fn)
    for ptr, pairs in sorted(found.items(), key=lambda item: order.index(item[0])):
        if len(pairs) != 1 or reads[ptr] != matched[ptr]:
            continue
        rows, stride = next(iter(pairs))
        if (
            store_count.get(rows) != 1
            or rows not in top_binding
            or stride in store_count
        ):
            continue
        new = f"{ptr.removesuffix('_ptr')}_{rows}"
        new = unique_name(new, taken) if new in taken else new
        taken.add(new)
        names[ptr] = (new, rows, stride)
    if not names:
        return 0

    class Fix(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            hit = _row_offset(node, params)
            if hit is not None and hit[0] in names:
                return ast.BinOp(
                    ast.Name(names[hit[0]][0], ast.Load()),
                    ast.Add(),
                    self.visit(hit[3]),
                )
            return self.generic_visit(node)

    first = min(
        i for i, s in enumerate(fn.body) if any(p in names_in(s) for p in names)
    )
    fn.body = [Fix().visit(s) for s in fn.body]
    # Grouped before the first statement that reads one, each after its rows.
    placed: dict[int, list[ast.stmt]] = {}
    for ptr, (new, rows, stride) in names.items():
        # (a read of the pointer's dtype alone may come before the rows)
        at = max(first, top_binding[rows] + 1)
        placed.setdefault(at, []).append(
            ast.Assign(
                [ast.Name(new, ast.Store())],
                ast.BinOp(
                    ast.Name(ptr, ast.Load()),
                    ast.Add(),
                    ast.BinOp(
                        ast.Name(rows, ast.Load()),
                        ast.Mult(),
                        ast.Name(stride, ast.Load()),
                    ),
                ),
                lineno=0,
            )
        )
    body = []
    for i, stmt in enumerate(fn.body):
        body += placed.get(i, [])
        body.append(stmt)
    fn.body = body
    return len(names)


def bind_row_pointers(port: PortState) -> None:
    """Every kernel form's `p_ptr + (cols + rows * p_stride0)` read through one
    `p_rows = p_ptr + rows * p_stride0` bound where the rows are (row_pointers)."""
    for _, form, _ in port.forms():
        row_pointers(form)
