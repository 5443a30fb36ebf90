"""No-op casts and broadcasts removed (noop_casts_and_broadcasts)."""

from __future__ import annotations

import ast

from porter.ast_tools import assigned_names, full_names, is_call, walk_stmts
from porter.port.model import KernelPort


def noop_casts_and_broadcasts(kp: KernelPort) -> None:
    """Drop `.to(T)` applied to a value already of type T by the same cast, and
    `tl.broadcast_to` of a value that already spans the block."""
    fn = kp.tree
    cast_of: dict[str, str] = {}
    for stmt, _ in walk_stmts(fn.body):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            v = stmt.value
            if (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Attribute)
                and v.func.attr == "to"
                and len(v.args) == 1
            ):
                cast_of[stmt.targets[0].id] = ast.unparse(v.args[0])
    # In a (rows, columns) kernel a value spans the block only if it depends
    # on both axes: a column index alone is (1, R0_BLOCK), and a tuple
    # reduction (min_with_index) needs its indices at the values' shape.
    full = full_names(fn, {"xindex", "x0"})
    columns = {"r0_index", "r0_base", "r0_1"}
    if columns & {t for stmt, _ in walk_stmts(fn.body) for t in assigned_names(stmt)}:
        full &= full_names(fn, columns)
    else:
        full |= full_names(fn, columns)
    count = 0

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal count
            f = node.func
            if (
                isinstance(f, ast.Attribute)
                and f.attr == "to"
                and len(node.args) == 1
                and not node.keywords
            ):
                target = ast.unparse(node.args[0])
                inner = f.value
                if isinstance(inner, ast.Name) and cast_of.get(inner.id) == target:
                    count += 1
                    return inner
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr == "to"
                    and ast.unparse(inner.args[0]) == target
                ):
                    count += 1
                    return inner
            if is_call(node, "tl.broadcast_to") and isinstance(node.args[0], ast.Name):
                if node.args[0].id in full:
                    count += 1
                    return node.args[0]
            return node

    Fix().visit(fn)
    if count:
        kp.notes.append(f"removed {count} no-op cast(s) / broadcast(s)")
