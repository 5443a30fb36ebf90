"""Stage: an integer argument a kernel divides by is refused at 0, as eager
refuses it.

`ids // shard` and `ids % shard` on int tensors raise ZeroDivisionError in
eager at shard=0. Inductor's floor division swaps a 0 divisor for 1 and
returns 0 (`tl.where(shard == 0, 1, shard)`), and its `%` by 0 is undefined
on a GPU: the scaffold returned zeros. The launcher refuses such a call in
one line.
"""

from __future__ import annotations

import ast
import re

from porter.ast_tools import bindings
from porter.port.model import KernelPort, PortState

# Params that hold Python ints: sizes, and the int arguments Dynamo kept symbolic.
_INT_KINDS = ("model", "runtime")


def divisor_names(node: ast.AST, bound: dict[str, ast.AST], depth=0) -> set[str]:
    """The names `node` is, up to sign, a cast (`.to`, `tl.cast`) and the
    where that swaps a 0 for 1 (`safe = tl.where(d == 0, 1, d)`;
    `tl.where(s < 0, 0 - safe, safe)`)."""
    if depth > 12:
        return set()
    again = lambda n: divisor_names(n, bound, depth + 1)  # noqa: E731
    if isinstance(node, ast.Name):
        return {node.id} | (again(bound[node.id]) if node.id in bound else set())
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return again(node.operand)
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Sub)
        and isinstance(node.left, ast.Constant)
        and node.left.value == 0
    ):
        return again(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "to":
            return again(node.func.value)
        if ast.unparse(node.func) == "tl.cast" and node.args:
            return again(node.args[0])  # an int argument widened for int64 ids
        if ast.unparse(node.func) == "tl.where" and len(node.args) == 3:
            return set().union(*(again(a) for a in node.args[1:]))
    return set()


def divided_by(kp: KernelPort, names: set[str]) -> list[str]:
    """The params among `names` that a kernel of kp divides by (`//` or `%`,
    as the divisor itself), in the order met."""
    found: list[str] = []
    for fn in (kp.tree, kp.persistent, kp.online):
        if fn is None or not names:
            continue
        bound = {n: v[0] for n, v in bindings(fn).items() if len(v) == 1}
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp) and isinstance(
                node.op, (ast.FloorDiv, ast.Mod)
            ):
                found += sorted(divisor_names(node.right, bound) & names - set(found))
    return found


def refuse_zero_divisors(port: PortState) -> None:
    """Each int argument of the reference that a kernel divides by (`//` or
    `%`, as the divisor itself), or that eager raises ZeroDivisionError on at 0
    (`1.0 / k` in Python, as the capture tried), is refused at 0 in the
    launcher, as eager raises, instead of the kernel returning zeros or inf."""
    launcher = port.launcher
    # ints the reference takes as arguments (sizes of tensors are not: at 0 a
    # kernel computes nothing)
    arguments = {
        i.target
        for i in port.module.inputs
        if i.kind == "symint" and re.fullmatch(r"L\['\w+'\]", i.source)
    }
    seen: list[str] = []
    for kp in port.kernels:
        ints = {
            p.name: p.value
            for p in kp.params
            if p.kind in _INT_KINDS and p.value in arguments
        }
        for name in divided_by(kp, set(ints)):
            if ints[name] not in seen:
                seen.append(ints[name])
    # and those eager raises on at 0 in Python (`1.0 / k`), as the capture saw
    seen += [n for n in port.cap.zero_divisors if n not in seen]
    refusals = []
    for value in seen:
        said = (
            f"{value} is 0: a division by it, which eager refuses (ZeroDivisionError)"
        )
        refusals.append(f"if {value} == 0:\n    refuse({said!r})")
        port.notes.append(f"a call where {value} == 0 is refused: a division by it")
    # first of all checks: a view's check (`x.shape[1] % group == 0`) divides too
    launcher.checks[:0] = refusals
