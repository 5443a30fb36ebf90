"""Stage: a `tl.where(mask, v, fallback)` that gives v wherever the mask is
off drops.

Inductor guards each reduction's input with the block's mask
(`x_sq_masked = tl.where(mask, x_sq, 0)`, `acc = tl.where(mask, acc + x * x,
acc)`) whatever its loads fill the masked lanes with. Where every load v
reads under that mask fills them with a value that makes v the fallback
itself (x loaded with other=0.0: x * x is 0, acc + x * x is acc), the where
selects what v already is: a hand-written kernel (Liger's rms_norm) sums
`x * x` of a load with other=0 directly.
"""

from __future__ import annotations

import ast
import itertools
import math

import numpy as np

from porter.ast_tools import (
    assigned_call,
    bindings,
    is_call,
    is_fp32_cast,
    keyword,
    names_in,
    read_counts,
    rename_names,
    stmt_lists,
)
from porter.port.model import PortState

# The values a name v reads besides the masked loads is tried at: v must be the
# fallback at every one of them (an inf or NaN accumulator too).
SAMPLES = (0.0, -0.0, 1.0, -2.5, math.inf, -math.inf, math.nan)
MOST_FREE = 3  # names tried at every combination of SAMPLES
_OPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply}
_CALLS = {"tl.exp": np.exp, "tl.abs": np.abs}


class _Unknown(Exception):
    """An expression this pass does not evaluate: the where stays."""


def _fill(value: ast.AST, mask: str) -> float | None:
    """What a load under `mask` fills the masked lanes with (its float
    `other`), through an fp32 cast; None for any other value."""
    if is_fp32_cast(value):
        value = value.func.value
    if not is_call(value, "tl.load") or len(value.args) < 2:
        return None
    if ast.unparse(value.args[1]) != mask:
        return None
    other = keyword(value, "other") or (value.args[2] if len(value.args) > 2 else None)
    try:
        fill = ast.literal_eval(other) if other is not None else None
    except ValueError:
        fill = _float_call(other)
    return float(fill) if isinstance(fill, float) else None


def _float_call(node: ast.AST) -> float | None:
    """float("-inf") and the like."""
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "float"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
    ):
        return float(node.args[0].value)
    return None


def _evaluate(node: ast.AST, env: dict, once: dict, fills: dict, depth: int = 0):
    """node's fp32 value at a masked lane: loads under the mask at their fill,
    names bound once to their value, other names from env."""
    if depth > 30:
        raise _Unknown
    again = lambda n: _evaluate(n, env, once, fills, depth + 1)  # noqa: E731
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return np.float32(node.value)
    if (value := _float_call(node)) is not None:
        return np.float32(value)
    if isinstance(node, ast.Name):
        if node.id in fills:
            return np.float32(fills[node.id])
        if node.id in env:
            return env[node.id]
        if node.id in once:
            return again(once[node.id])
        raise _Unknown
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](again(node.left), again(node.right))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return np.divide(again(node.left), again(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return np.negative(again(node.operand))
    if isinstance(node, ast.Call) and ast.unparse(node.func) in _CALLS:
        return _CALLS[ast.unparse(node.func)](again(node.args[0]))
    if is_fp32_cast(node):
        return again(node.func.value)
    raise _Unknown


def _free(node: ast.AST, once: dict, fills: dict, seen=None) -> set[str]:
    """The names node's value reads that are neither masked loads nor bound once."""
    seen = set() if seen is None else seen
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id not in fills and n.id not in seen:
            seen.add(n.id)
            if n.id in once and not _reads_memory(once[n.id]):
                out |= _free(once[n.id], once, fills, seen)
            else:
                out.add(n.id)
    return out


def _reads_memory(node: ast.AST) -> bool:
    """A load (under another mask, or none) is a value like any argument's."""
    return any(is_call(n, "tl.load") for n in ast.walk(node))


def _load_fill(name: str, values: list[ast.AST], mask: str) -> float | None:
    """The fill of a name every binding of which is a load under `mask` with
    the same float `other`, or its own cast to fp32 (`x = x.to(tl.float32)`)."""
    fills = set()
    for v in values:
        if is_fp32_cast(v) and ast.unparse(v.func.value) == name:
            continue
        fill = _fill(v, mask)
        if fill is None:
            return None
        fills.add(repr(fill))
    return float(fills.pop()) if len(fills) == 1 else None


def _same(a, b) -> bool:
    return bool((np.isnan(a) and np.isnan(b)) or a == b)


def is_identity(where: ast.Call, once: dict, bound: dict) -> bool:
    """Whether `tl.where(mask, v, fallback)` equals v at every lane: where the
    mask is off, v (its masked loads at their fill) is the fallback at every
    value of the other names it reads."""
    mask = ast.unparse(where.args[0])
    value, fallback = where.args[1], where.args[2]
    fills = {}
    for name, values in bound.items():
        if (fill := _load_fill(name, values, mask)) is not None:
            fills[name] = fill
    free = (_free(value, once, fills) | _free(fallback, once, fills)) - {"tl"}
    if not fills or len(free) > MOST_FREE:
        return False
    try:
        for combo in itertools.product(SAMPLES, repeat=len(free)):
            env = {n: np.float32(v) for n, v in zip(sorted(free), combo)}
            with np.errstate(all="ignore"):
                a = _evaluate(value, env, once, fills)
                b = _evaluate(fallback, env, once, fills)
            if not _same(a, b):
                return False
    except _Unknown:
        return False
    # v must read a masked load: otherwise nothing fills its masked lanes
    return bool(_free(value, once, {}) & set(fills))


def drop_masked_identity_wheres(port: PortState) -> None:
    """`t = tl.where(mask, v, fallback)` becomes `t = v` where v is the
    fallback wherever the mask is off (its loads under the mask fill those
    lanes with a value that makes it so, at every value of the names it also
    reads): `x_sq_masked` is `x_sq`, `acc = tl.where(mask, acc + x * x, acc)`
    is `acc = acc + x * x` for x loaded with other=0.0."""
    dropped = 0
    for _, form, _ in port.forms():
        dropped += _drop(form)
    if dropped:
        port.notes.append(
            f"{dropped} tl.where(mask, ...) of a value its masked loads already "
            "make the fallback (a sum of squares of a load with other=0.0) dropped"
        )


def _drop(fn: ast.FunctionDef) -> int:
    bound = bindings(fn)
    once = {n: v[0] for n, v in bound.items() if len(v) == 1}
    dropped = 0
    for body in list(stmt_lists(fn)):
        for stmt in list(body):
            if not (
                assigned_call(stmt, "tl.where", 3)
                and is_identity(
                    stmt.value,
                    {n: v for n, v in once.items() if n != stmt.targets[0].id},
                    bound,
                )
            ):
                continue
            target, value = stmt.targets[0].id, stmt.value.args[1]
            dropped += 1
            alias = isinstance(value, ast.Name) and len(bound.get(target, [])) == 1
            if alias and target not in names_in(stmt.value):
                body.remove(stmt)  # `x_sq_masked = x_sq`: its readers read x_sq
                rename_names(fn, {target: value.id})
                continue
            stmt.value = value
            _inline_once(fn, body, stmt)
    return dropped


def _inline_once(fn: ast.FunctionDef, body: list[ast.stmt], stmt: ast.Assign) -> None:
    """`val = acc + x * x; acc = val` as `acc = acc + x * x` where nothing
    else reads val and it is bound just before."""
    if not isinstance(stmt.value, ast.Name):
        return
    name, at = stmt.value.id, body.index(stmt)
    before = body[at - 1] if at else None
    if (
        isinstance(before, ast.Assign)
        and len(before.targets) == 1
        and isinstance(before.targets[0], ast.Name)
        and before.targets[0].id == name
        and read_counts(fn).get(name) == 1
        and len(bindings(fn).get(name, [])) == 1
    ):
        stmt.value = before.value
        body.remove(before)
