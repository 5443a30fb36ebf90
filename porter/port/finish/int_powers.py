"""Integer powers of int arguments, computed exactly: Inductor writes `1 << bits`
and `2 ** bits` of an int argument as `libdevice.pow(2.0, bits)` in float64 and
casts the result to int64, which rounds from 2 ** 53 on: `(1 << 54) - 1` became
2 ** 54, with no error. The power becomes an int64 shift, exact wherever the
value fits in int64 (int64 sums and products wrap, so `-1 + (1 << 63)` is right
too), and the launcher computes the value with Python's ints and refuses a call
where it leaves int64, where eager raises (OverflowError). Powers of another
base (rare in index math) stay in float64.
"""

from __future__ import annotations

import ast

from porter.ast_tools import cast_to, is_call
from porter.port.model import PortState

_INT_TYPES = {f"tl.{t}{b}" for t in ("int", "uint") for b in (8, 16, 32, 64)}


def _constant(node: ast.AST) -> int | None:
    """An integral number, bare or as `tl.full([], c, dtype)`."""
    if is_call(node, "tl.full") and len(node.args) == 3:
        node = node.args[1]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant(node.operand)
        return None if inner is None else -inner
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
        and float(node.value).is_integer()
    ):
        return int(node.value)
    return None


def _uncast(node: ast.AST) -> ast.AST:
    """node without a cast to float64 (`tl.cast(x, tl.float64)`, `x.to(tl.float64)`)."""
    if is_call(node, "tl.cast") and len(node.args) == 2:
        if ast.unparse(node.args[1]) == "tl.float64":
            return _uncast(node.args[0])
    if cast_to(node) == "tl.float64":
        return _uncast(node.func.value)
    return node


def _python(node: ast.AST, ints: dict[str, str]) -> ast.expr | None:
    """node as a Python expression of the launcher's values, for sums,
    differences, products and powers of integral numbers and int parameters
    (`ints`: kernel name -> launcher value); None for anything else."""
    node = _uncast(node)
    if (c := _constant(node)) is not None:
        return ast.Constant(c)
    if isinstance(node, ast.Name):
        return ast.parse(ints[node.id], mode="eval").body if node.id in ints else None
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, (ast.Add, ast.Sub, ast.Mult)
    ):
        left, right = _python(node.left, ints), _python(node.right, ints)
        if left is None or right is None:
            return None
        return ast.BinOp(left, node.op, right)
    if is_call(node, "libdevice.pow") and len(node.args) == 2:
        base, exp = _python(node.args[0], ints), _python(node.args[1], ints)
        if base is None or exp is None:
            return None
        return ast.BinOp(base, ast.Pow(), exp)
    return None


def _powers(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if is_call(n, "libdevice.pow")]


class _Exact(ast.NodeTransformer):
    """`libdevice.pow(2.0, e)` -> `tl.full([], 1, tl.int64) << e` and integral
    float constants -> ints, inside one integer expression."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if is_call(node, "libdevice.pow") and _constant(node.args[0]) == 2:
            exp = self.visit(_uncast(node.args[1]))
            one = ast.parse("tl.full([], 1, tl.int64)", mode="eval").body
            return ast.BinOp(one, ast.LShift(), exp)
        if is_call(node, "tl.full") and ast.unparse(node.args[0]) == "[]":
            if (c := _constant(node)) is not None:
                return ast.Constant(c)
        if _uncast(node) is not node:
            return self.visit(_uncast(node))
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, float) and node.value.is_integer():
            return ast.Constant(int(node.value))
        return node


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
            elif isinstance(value, list) and any(v is old for v in value):
                value[[id(v) for v in value].index(id(old))] = new


def _int_casts(fn: ast.FunctionDef) -> list[ast.Call]:
    """The `E.to(<int type>)` calls of fn whose E holds a libdevice.pow."""
    return [
        n for n in ast.walk(fn) if cast_to(n) in _INT_TYPES and _powers(n.func.value)
    ]


def exact_int_powers(port: PortState) -> None:
    """Each integer expression of int arguments a kernel computes through
    libdevice.pow(2.0, e) in float64 (Inductor's `1 << bits`, `2 ** bits`)
    computes 2 ** e as an int64 shift instead, exact over int64; the launcher
    computes the value with Python's ints and refuses a call where it leaves
    int64 or e leaves 0..63. Other bases are left as they are."""
    seen: set[str] = set()
    for kp in port.kernels:
        ints = {p.name: p.value for p in kp.params if p.kind in ("runtime", "model")}
        for form in kp.forms():
            for cast in _int_casts(form):
                powers = _powers(cast.func.value)
                value = _python(cast.func.value, ints)
                exps = [_python(p.args[1], ints) for p in powers]
                if (
                    value is None
                    or None in exps
                    or any(_constant(p.args[0]) != 2 for p in powers)
                ):
                    continue
                exact = _Exact().visit(cast.func.value)
                if ast.unparse(cast.args[0]) == "tl.int64":
                    # The shift is an int64 already: the cast goes.
                    _replace(form, cast, exact)
                else:
                    cast.func.value = exact
                shown = ast.unparse(value)
                # Each shift is checked before Python computes the value.
                ranges = [f"0 <= {ast.unparse(e)} <= 63" for e in exps]
                cond = " and ".join(ranges + [f"-(2**63) <= {shown} < 2**63"])
                if cond in seen:
                    continue
                seen.add(cond)
                said = (
                    f"the kernels compute {shown} in int64, for "
                    f"{' and '.join(ranges)}; eager raises past int64"
                )
                port.launcher.shape_checks.append(
                    f"if not ({cond}):\n    refuse({said!r})"
                )
                port.notes.append(
                    f"{shown} is computed exactly, and refused past int64"
                )
