"""The AST toolkit porter's port passes and linter share: small queries and
edits of kernel trees.

Public and stable: a pass or a lint rule imports these from here, never another
module's private helpers.
"""

from __future__ import annotations

import ast
import math
import re


def is_call(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == name


def cast_to(node: ast.AST) -> str | None:
    """T's text for `v.to(T)`; None for any other node."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and len(node.args) == 1
    ):
        return ast.unparse(node.args[0])
    return None


def is_fp32_cast(node: ast.AST) -> bool:
    """`v.to(tl.float32)`."""
    return cast_to(node) == "tl.float32"


def assigned_call(stmt: ast.stmt, name: str, nargs: int) -> ast.Call | None:
    """The call of `name` with `nargs` arguments that `stmt` binds to one name
    (`t = tl.where(m, a, b)`), or None."""
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and is_call(stmt.value, name)
        and len(stmt.value.args) == nargs
    ):
        return stmt.value
    return None


def call_name(call: ast.Call) -> str:
    """The called name's last part: `cdiv` for triton.cdiv(...) and cdiv(...)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def keyword(call: ast.Call, *names: str) -> ast.expr | None:
    """The value of the first of `names` passed to the call by keyword."""
    for kw in call.keywords:
        if kw.arg in names:
            return kw.value
    return None


def arg_names(fn: ast.FunctionDef) -> list[str]:
    """fn's parameters, positional-only, positional and keyword-only."""
    args = fn.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def stored_names(node: ast.AST) -> set[str]:
    """Names node assigns anywhere, inside its blocks and loop targets too."""
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def assigned_names(stmt: ast.stmt) -> list[str]:
    targets = []
    if isinstance(stmt, ast.Assign):
        for t in stmt.targets:
            targets += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        targets.append(stmt.target.id)
    return targets


def rename_names(tree: ast.AST, mapping: dict[str, str]) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
        elif isinstance(node, ast.arg) and node.arg in mapping:
            node.arg = mapping[node.arg]


def unique_name(name: str, taken: set[str]) -> str:
    """The next free `base_N` (q -> q_3 when q_2 is taken; q_2 -> q_4 then)."""
    base = re.sub(r"_\d+$", "", name) or name
    i = 2
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"


def comment_stmt(text: str) -> ast.stmt:
    """A marker statement the renderer turns into a `# ...` comment (a why)."""
    return ast.Expr(ast.Constant(f"NOTE(porter): {text}"))


def walk_stmts(body: list[ast.stmt]):
    """Every statement, depth first, with the list that holds it."""
    for stmt in list(body):
        yield stmt, body
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from walk_stmts(inner)


def stmt_lists(node: ast.AST):
    """Every statement list in node (function body, loop and if bodies),
    outermost first."""
    for n in ast.walk(node):
        for field in ("body", "orelse"):
            body = getattr(n, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def read_only_at(tree: ast.AST, name: str, allowed: set[int]) -> bool:
    """Whether tree mentions `name` and only as the nodes whose ids are in
    `allowed` (a pointer only stored through, an int only cast to a float)."""
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
    return bool(uses) and all(id(n) in allowed for n in uses)


def read_counts(tree: ast.AST) -> dict[str, int]:
    """How many times each name is read."""
    used: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            used[node.id] = used.get(node.id, 0) + 1
    return used


def full_names(fn: ast.FunctionDef, block_vars: set[str]) -> set[str]:
    """Names whose value spans the whole block (depends on a block index)."""
    full = set(block_vars)
    changed = True
    while changed:
        changed = False
        for stmt, _ in walk_stmts(fn.body):
            for t in assigned_names(stmt):
                value = getattr(stmt, "value", None)
                if t not in full and value is not None and names_in(value) & full:
                    full.add(t)
                    changed = True
    return full


def set_hint(load: ast.Call, policy: str) -> None:
    """Give a tl.load call the cache hint `policy`, replacing the one it has."""
    for k in load.keywords:
        if k.arg == "eviction_policy":
            k.value = ast.Constant(policy)
            return
    load.keywords.append(ast.keyword("eviction_policy", ast.Constant(policy)))


def ptr_base(node: ast.AST) -> str | None:
    """The pointer argument a `ptr + offset` expression starts from."""
    while isinstance(node, ast.BinOp):
        node = node.left
    return node.id if isinstance(node, ast.Name) else None


def bindings(fn: ast.FunctionDef) -> dict[str, list[ast.AST]]:
    """Each name's values, from every `name = value` in fn, in order."""
    bound: dict[str, list[ast.AST]] = {}
    for stmt, _ in walk_stmts(fn.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            if isinstance(stmt.targets[0], ast.Name):
                bound.setdefault(stmt.targets[0].id, []).append(stmt.value)
    return bound


def split_sum(node: ast.AST) -> list[ast.AST]:
    """The terms of a sum, left to right (`a + b + c` -> [a, b, c])."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return split_sum(node.left) + split_sum(node.right)
    return [node]


def join_sum(terms: list[ast.AST]) -> ast.AST:
    """The sum of terms, added left to right."""
    out = terms[0]
    for t in terms[1:]:
        out = ast.BinOp(out, ast.Add(), t)
    return out


def cast_of(node: ast.AST, names: set[str], dtype: str) -> str | None:
    """The argument name in `tl.cast(name, <dtype>)`, for one of `names`."""
    if (
        is_call(node, "tl.cast")
        and len(node.args) == 2
        and not node.keywords
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in names
        and ast.unparse(node.args[1]) == dtype
    ):
        return node.args[0].id
    return None


def literal_text(value) -> str:
    """A Python literal of `value` for generated code: repr, but float("inf"),
    float("-inf") and float("nan") where repr's `inf` and `nan` name nothing."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)
