"""Size ties: the equalities of sizes a reference's views rely on, folded into
the fewest readable checks.

`x.view(t, hidden // group, group)` holds only where group divides hidden;
Dynamo records that as equalities over floor divisions
(`hidden*t == group*t*(hidden // group)`, `hidden % (hidden // group) == 0`,
...). Eager raises where they fail, while kernels compiled for them index past
the row. fold_ties turns them into `hidden % group == 0` where that alone is
what they say, and keeps any it cannot say more simply as written.
"""

from __future__ import annotations

import ast
import itertools
import random
import re
from typing import Any

# Implication is tested on every small size (each name from 1 to the bound)
# where that many points stay under the budget, else on a seeded sample.
_POINTS = 4096
_SMALLEST_BOUND = 6


def sym_expr(expr: str):
    """A size expression as sympy reads it (`x.size(1)` as the symbol
    x__size1, a stride likewise); None where it cannot."""
    import sympy

    text = re.sub(r"(\w+)\.size\((\d+)\)", r"\1__size\2", expr)
    text = re.sub(r"(\w+)\.stride\((\d+)\)", r"\1__stride\2", text)
    # Every name not called is a size: KernelBench's N or S is not sympy's N()
    # or S singleton.
    names = set(re.findall(r"\b([A-Za-z_]\w*)\b(?!\s*\()", text))
    local = {n: sympy.Symbol(n) for n in names}
    local.update(max=sympy.Max, min=sympy.Min)
    try:
        value = sympy.sympify(text, locals=local)
    except (sympy.SympifyError, TypeError, SyntaxError, AttributeError, ValueError):
        return None  # not an expression sympy can read: compared as text only
    return value if isinstance(value, sympy.Basic) else None


def is_tie(cond: str) -> bool:
    """An equality over a floor division or a remainder of sizes: what a
    view into groups or halves leaves in Dynamo's guards."""
    try:
        node = ast.parse(cond, mode="eval").body
    except SyntaxError:
        return False
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
        and any(
            isinstance(n, ast.BinOp) and isinstance(n.op, (ast.FloorDiv, ast.Mod))
            for n in ast.walk(node)
        )
    )


def fold_ties(conditions: list[str], at: dict[str, Any] | None = None) -> list[str]:
    """`conditions` with its ties replaced by the divisibility checks they
    imply (`a % b == 0` for an innermost `a // b`), then those ties the
    checks do not imply, in the order met; other conditions are kept as they
    are. `at`: the capture's arguments by name, whose sizes meet every tie;
    they and sizes near them join the sampled ones."""
    ties = [c for c in conditions if is_tie(c)]
    if not ties:
        return conditions
    low = _Lowered()
    for tie in ties:
        low.learn(tie)
    candidates = []
    for tie in ties:
        for cand in _divisibility(tie):
            if cand not in candidates:
                candidates.append(cand)
    points = _points(len(low.names)) + _near(low.names, at)
    holding = [p for p in points if all(low.holds(t, p) for t in ties)]
    if not holding:
        # No sampled size meets them (a width pinned past the sample by fixed
        # sections): every check would hold vacuously, so none is derived.
        return conditions
    kept = [c for c in candidates if all(low.holds(c, p) for p in holding)]
    # A check the others imply goes, the longest first: where n > 0,
    # `(n * q) % (h * n) == 0` says no more than `q % h == 0`.
    for cand in sorted(kept, key=len, reverse=True):
        others = [c for c in kept if c != cand]
        given = [p for p in points if all(low.holds(c, p) for c in others)]
        if others and given and all(low.holds(cand, p) for p in given):
            kept.remove(cand)
    implied = [p for p in points if all(low.holds(c, p) for c in kept)]
    rest = [t for t in ties if not all(low.holds(t, p) for p in implied)]
    # A tie the checks and the other ties imply goes too, the longest first
    # (`h - h // 2 == c` where `h % 2 == 0` and `h // 2 == c` say it).
    for tie in sorted(rest, key=len, reverse=True):
        others = kept + [t for t in rest if t != tie]
        given = [p for p in points if all(low.holds(c, p) for c in others)]
        if given and all(low.holds(tie, p) for p in given):
            rest.remove(tie)
    folded = kept + [t for t in rest if t not in kept]
    out, placed = [], False
    for cond in conditions:
        if cond not in ties:
            out.append(cond)
        elif not placed:
            out += folded
            placed = True
    return out


def _divisibility(tie: str) -> list[str]:
    """`a % b == 0` for each innermost `a // b` or `a % b` of `tie`."""
    out = []
    for node in ast.walk(ast.parse(tie, mode="eval").body):
        if not (
            isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod))
        ):
            continue
        inner = [
            n
            for side in (node.left, node.right)
            for n in ast.walk(side)
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.FloorDiv, ast.Mod))
        ]
        if not inner:
            left, right = ast.unparse(node.left), ast.unparse(node.right)
            if isinstance(node.right, ast.BinOp):
                right = f"({right})"
            if isinstance(node.left, ast.BinOp):
                left = f"({left})"
            out.append(f"{left} % {right} == 0")
    return out


# Functions a condition may call on sizes (Dynamo's guards spell a
# `int(t ** 0.5)` of the reference's this way).
_CALLS = {"int": int, "float": float, "abs": abs, "max": max, "min": min}


class _Lowered:
    """Conditions over the sizes and arguments they read (x.shape[1], group),
    compiled with those as the names v0, v1, ..."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.code: dict[str, object] = {}

    def learn(self, cond: str) -> None:
        if cond not in self.code:
            tree = self._leaves(ast.parse(cond, mode="eval"))
            self.code[cond] = compile(ast.fix_missing_locations(tree), "<tie>", "eval")

    def holds(self, cond: str, point: tuple[int, ...]) -> bool:
        self.learn(cond)
        try:
            return bool(
                eval(
                    self.code[cond],
                    {"__builtins__": {}, **_CALLS},
                    {f"v{i}": v for i, v in enumerate(point)},
                )
            )
        except ZeroDivisionError:  # a group of none: eager raises there too
            return False

    def _leaves(self, tree: ast.AST) -> ast.AST:
        names = self.names

        class Lower(ast.NodeTransformer):
            def _leaf(self, node):
                text = ast.unparse(node)
                if text not in names:
                    names.append(text)
                return ast.Name(id=f"v{names.index(text)}", ctx=ast.Load())

            visit_Name = visit_Attribute = visit_Subscript = _leaf

            def visit_Call(self, node):
                # int(float(t) ** 0.5) (DiT's unpatchify): the function is
                # called, not a size
                if isinstance(node.func, ast.Name) and node.func.id in _CALLS:
                    node.args = [self.visit(a) for a in node.args]
                    return node
                return self._leaf(node)

        return Lower().visit(tree)


def _near(names: list[str], at: dict[str, Any] | None) -> list[tuple[int, ...]]:
    """The capture's sizes and their halves, doubles and neighbours, each name
    on its own scale (one name at a time past _POINTS of them); none where
    `at` is not given or a name cannot be read from it."""
    if not at:
        return []
    try:
        # our own size texts (x.shape[1]), read from the capture's arguments
        values = [int(eval(n, {}, dict(at))) for n in names]  # noqa: S307
    except Exception:  # noqa: BLE001 - an attribute or argument `at` does not hold
        return []
    scales = [sorted({max(1, v // 2), v, v + 1, 2 * v, 3 * v}) for v in values]
    if 5 ** len(names) <= _POINTS:
        return list(itertools.product(*scales))
    return [
        tuple(x if j == i else v for j, v in enumerate(values))
        for i, scale in enumerate(scales)
        for x in scale
    ]


def _points(count: int) -> list[tuple[int, ...]]:
    bound = max(_SMALLEST_BOUND, int(_POINTS ** (1 / max(count, 1))))
    if bound**count <= _POINTS:
        return list(itertools.product(range(1, bound + 1), repeat=count))
    rng = random.Random(0)
    return [tuple(rng.randint(1, 64) for _ in range(count)) for _ in range(_POINTS)]
