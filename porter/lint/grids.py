"""Python-side reasoning about launch grids, shared by the grid rules."""

from __future__ import annotations

import ast

from porter.ast_tools import call_name
from porter.lint import names
from porter.lint.source import Scope

_TILING = {"cdiv", "ceil", "ceildiv", "div_up", "round_up"}


def _first_dim(expr: ast.AST) -> bool:
    """`t.shape[0]` or `t.size(0)`."""
    if isinstance(expr, ast.Subscript):
        return (
            isinstance(expr.value, ast.Attribute)
            and expr.value.attr == "shape"
            and isinstance(expr.slice, ast.Constant)
            and expr.slice.value == 0
        )
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and call_name(expr) == "size"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ast.Constant)
        and expr.args[0].value == 0
    )


def runtime_size(
    expr: ast.AST, scope: Scope, seen: frozenset = frozenset()
) -> str | None:
    """Why `expr` grows with a runtime size (the name or expression responsible), or None.

    Runtime sizes: token/batch/row counts by name, `x.shape[0]`, `x.size(0)`,
    `x.numel()`, and anything computed from them (cdiv included).
    Per-model sizes (heads, hidden, `x.shape[1]`) and constants are not, nor
    a per-model name bound to a first dim (`out_features = weight.shape[0]`).
    """
    if isinstance(expr, ast.Name):
        values = [v for v in scope.values(expr.id) if isinstance(v, ast.expr)]
        if expr.id not in seen and any(_capped(v, scope) for v in values):
            return None  # one branch caps it at the grid limit: the author handled it
        if names.is_runtime_size(expr.id):
            return expr.id
        if expr.id in seen:
            return None
        for value in values:
            if isinstance(value, ast.expr):
                if names.names_a_model_dim(expr.id) and _first_dim(value):
                    # `out_features = weight.shape[0]`: the name says what
                    # this tensor's first dim is, better than the dim-0 guess.
                    continue
                why = runtime_size(value, scope, seen | {expr.id})
                if why:
                    return why
        return None
    if isinstance(expr, ast.Attribute):
        return ast.unparse(expr) if names.is_runtime_size(expr.attr) else None
    if isinstance(expr, ast.Subscript):
        return ast.unparse(expr) if _first_dim(expr) else None
    if isinstance(expr, ast.Call):
        name = call_name(expr)
        if name == "size" and isinstance(expr.func, ast.Attribute):
            # `x.size()` (all dims) counts as well as `x.size(0)`
            return ast.unparse(expr) if not expr.args or _first_dim(expr) else None
        if name == "numel":  # not len(): launchers call it on lists of weights too
            return ast.unparse(expr)
        if name == "min":  # min(n, CAP) is bounded by the cap
            reasons = [runtime_size(a, scope, seen) for a in expr.args]
            return reasons[0] if reasons and all(reasons) else None
        if name in _TILING and _capped(expr, scope):
            return None  # cdiv(n, cdiv(n, 65535)): the launcher caps the axis
        if name in _TILING | {"max", "int", "ceil"}:
            for a in expr.args:
                why = runtime_size(a, scope, seen)
                if why:
                    return why
        return None
    if isinstance(expr, ast.BinOp):
        return runtime_size(expr.left, scope, seen) or runtime_size(
            expr.right, scope, seen
        )
    if isinstance(expr, ast.IfExp):
        return runtime_size(expr.body, scope, seen) or runtime_size(
            expr.orelse, scope, seen
        )
    return None


def _capped(expr: ast.AST, scope: Scope, seen: frozenset = frozenset()) -> bool:
    """The expression divides by something derived from a grid limit (65,535 or a
    name like GRID_Y_LIMIT / MAX_GRID)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Constant) and node.value == 65535:
            return True
        if isinstance(node, ast.Name):
            if "LIMIT" in node.id.upper() or "MAX_GRID" in node.id.upper():
                return True
            if node.id not in seen:
                for v in scope.values(node.id):
                    if isinstance(v, ast.expr) and _capped(v, scope, seen | {node.id}):
                        return True
    return False


def is_tiled(expr: ast.AST, scope: Scope, seen: frozenset = frozenset()) -> bool:
    """`triton.cdiv(n, BLOCK)`, `n // BLOCK`, or a name bound to one."""
    if isinstance(expr, ast.Call):
        return call_name(expr) in _TILING
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, (ast.FloorDiv, ast.Div))
    if isinstance(expr, ast.Name) and expr.id not in seen:
        values = [v for v in scope.values(expr.id) if isinstance(v, ast.expr)]
        return bool(values) and all(
            is_tiled(v, scope, seen | {expr.id}) for v in values
        )
    return False


def head_count(
    expr: ast.AST, scope: Scope, seen: frozenset = frozenset()
) -> str | None:
    """The head-count name in `expr` (num_heads, n_kv_heads, cfg.num_heads), or None."""
    if isinstance(expr, ast.Name):
        if names.is_head_count(expr.id):
            return expr.id
        if expr.id in seen:
            return None
        for value in scope.values(expr.id):
            if isinstance(value, ast.expr):
                found = head_count(value, scope, seen | {expr.id})
                if found:
                    return found
        return None
    if isinstance(expr, ast.Attribute):
        return ast.unparse(expr) if names.is_head_count(expr.attr) else None
    if isinstance(expr, ast.BinOp):
        return head_count(expr.left, scope, seen) or head_count(expr.right, scope, seen)
    return None
