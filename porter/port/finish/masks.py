"""One name for a kernel's combined mask: Inductor writes `col_mask & row_mask`
again in every load, store and where of a block; a hand-written kernel binds
`mask = col_mask & row_mask` once where the two are known and uses the name,
and writes a mask read only there into it: `mask = (cols < n) & row_mask`.
"""

from __future__ import annotations

import ast
from collections import Counter

from porter.ast_tools import names_in, read_counts, stmt_lists, stored_names
from porter.port.model import PortState

MASK = "mask"


def _pair(node: ast.AST) -> frozenset[str] | None:
    """{a, b} for `a & b` of two different names that end in `mask`."""
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.BitAnd)
        and isinstance(node.left, ast.Name)
        and isinstance(node.right, ast.Name)
        and node.left.id != node.right.id
        and node.left.id.endswith("mask")
        and node.right.id.endswith("mask")
    ):
        return frozenset((node.left.id, node.right.id))
    return None


class _Replace(ast.NodeTransformer):
    def __init__(self, pair: frozenset[str]):
        self.pair = pair

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if _pair(node) == self.pair:
            return ast.Name(MASK, ast.Load())
        return self.generic_visit(node)


def bind_mask(fn: ast.FunctionDef) -> int:
    """Where a statement list ANDs the same two masks at two or more places
    after the last statement that binds either, `mask = a & b` goes right
    there and those places read `mask`; returns how many were bound. Nothing
    changes where the kernel already has a `mask`, where a mask is stored
    again after that point, or inside a list another binding covers."""
    if MASK in names_in(fn):
        return 0
    covered: set[int] = set()  # statements under a binding already made
    bound = 0
    for body in list(stmt_lists(fn)):
        if any(id(s) in covered for s in body):
            continue
        uses = Counter(
            p for s in body for n in ast.walk(s) if (p := _pair(n)) is not None
        )
        if not uses:
            continue
        pair, _ = uses.most_common(1)[0]
        last = max(
            (i for i, s in enumerate(body) if pair & stored_names(s)), default=None
        )
        if last is None:
            continue  # the masks come from outside this list: bind them there
        rest = body[last + 1 :]
        if pair & set().union(*map(stored_names, rest)):
            continue
        places = [n for s in rest for n in ast.walk(s) if _pair(n) == pair]
        if len(places) < 2:
            continue
        first = places[0]
        binding = ast.Assign(
            [ast.Name(MASK, ast.Store())],
            ast.BinOp(
                ast.Name(first.left.id, ast.Load()),
                ast.BitAnd(),
                ast.Name(first.right.id, ast.Load()),
            ),
            lineno=0,
        )
        body[last + 1 :] = [binding, *(_Replace(pair).visit(s) for s in rest)]
        # Nothing under this list binds it again: Triton would carry it into a loop.
        covered.update(id(n) for s in body for n in ast.walk(s))
        bound += 1
    return bound


def bind_masks(port: PortState) -> None:
    """Every kernel form's repeated `col_mask & row_mask` bound once as `mask` (bind_mask)."""
    for _, form, _ in port.forms():
        bind_mask(form)


def _bound_mask(stmt: ast.stmt) -> str | None:
    """The name stmt binds, where it is one name ending in `mask`."""
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id.endswith("mask")
    ):
        return stmt.targets[0].id
    return None


def _and_of(stmt: ast.stmt, name: str) -> ast.BinOp | None:
    """The `name & other` (or `other & name`) that stmt binds to a mask."""
    if (
        _bound_mask(stmt) is not None
        and isinstance(stmt.value, ast.BinOp)
        and isinstance(stmt.value.op, ast.BitAnd)
        and name in {ast.unparse(stmt.value.left), ast.unparse(stmt.value.right)}
    ):
        return stmt.value
    return None


def inline_single_mask(fn: ast.FunctionDef) -> int:
    """Where every binding of a mask is read once, by the next statement's
    `mask = that & other`, that statement ANDs its value in place and the
    binding goes; returns how many bindings went."""
    sites: dict[str, list[tuple[list[ast.stmt], int]]] = {}
    stores = Counter(
        n.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    )
    for body in stmt_lists(fn):
        for i, stmt in enumerate(body):
            name = _bound_mask(stmt)
            if (
                name not in (None, MASK)
                and i + 1 < len(body)
                and _and_of(body[i + 1], name) is not None
            ):
                sites.setdefault(name, []).append((body, i))
    reads = read_counts(fn)
    dropped = 0
    for name, places in sites.items():
        if not (len(places) == stores.get(name) == reads.get(name)):
            continue  # read elsewhere, or bound where the next line does not read it
        for body, i in sorted(places, key=lambda p: -p[1]):
            both = _and_of(body[i + 1], name)
            side = "left" if ast.unparse(both.left) == name else "right"
            setattr(both, side, body[i].value)
            del body[i]
            dropped += 1
    return dropped


def inline_single_masks(port: PortState) -> None:
    """A mask read only by the next line's `mask = that & other` is written
    into it, as `mask = (cols < n) & row_mask` (inline_single_mask)."""
    for _, form, _ in port.forms():
        inline_single_mask(form)
