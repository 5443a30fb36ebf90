"""One name for a kernel's combined mask: Inductor writes `col_mask & row_mask`
again in every load, store and where of a block; a hand-written kernel binds
`mask = col_mask & row_mask` once where the two are known and uses the name.
"""

from __future__ import annotations

import ast
from collections import Counter

from porter.ast_tools import names_in, stmt_lists, stored_names
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
