"""Stage: replace Inductor's per-element finite-row guard in softmax(x / c) and
softmax(x * c) by a per-row one.

Inductor's CPU lowering of softmax(x / c), for a constant c > 0 (likewise of
softmax(x * c) and of log_softmax), computes the exponent two ways and picks
per row: (x - max(x)) * (1 / c) when every x / c of the row is finite,
x / c - max(x / c) otherwise. The test costs, per element, a finiteness check
and its any-reduction, a second row max and the second form's arithmetic:
about half of the work of each loop.

The first form is the one to keep. It is exactly 0 at the row's max, where the
second is not on the GPU: x * (1 / c) - m contracts to one fused multiply-add
whose unrounded product differs from the rounded m by up to half an ulp of
x / c, and exp of that overflows for rows of large x (2.5e16: inf / inf = NaN).
The first form is wrong only for a row whose max(x) / c overflows, where torch
gives NaN (inf - inf) and it would give finite values. Other rows agree: x / c
is finite or -inf wherever max(x) / c is finite, and NaN and inf in x reach
both forms alike. So the guard becomes one test a row, on max(x) * (1 / c):
rows that fail it are shifted by NaN, which makes the whole row NaN as in torch.

The pass checks the pattern symbolically (each name expanded back to loads,
constants and row reductions) and leaves anything else as it is.
"""

from __future__ import annotations

import ast

from porter.port.model import KernelPort
from porter.ast_tools import (
    assigned_names,
    comment_stmt,
    is_call,
    read_counts,
    names_in,
    rename_names,
    walk_stmts,
    unique_name,
)
from porter.port.clean.copies import fold_plain_copies
from porter.port.clean.dead import drop_unread
from porter.port.forms.persist import masked_update, op_of

_OPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.BitAnd: "and",
    ast.BitOr: "or",
    ast.Eq: "eq",
    ast.NotEq: "ne",
}


class _Expander:
    """Names expanded back to what they compute, as canonical strings."""

    def __init__(self, fn: ast.FunctionDef):
        self.fn = fn
        self.params = {a.arg for a in fn.args.args}
        self.defs: dict[str, list[ast.Assign]] = {}
        self.loop_vars = set()
        for stmt, _ in walk_stmts(fn.body):
            if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
                self.loop_vars.add(stmt.target.id)
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                self.defs.setdefault(stmt.targets[0].id, []).append(stmt)

    def name(self, n: str) -> str:
        if n in self.params or n in self.loop_vars:
            return n
        defs = self.defs.get(n, [])
        if defs and len({ast.dump(d.value) for d in defs}) == 1:
            return self.expr(defs[0].value)
        return f"acc:{n}"  # set differently in several places: an accumulator

    def reduced(self, acc: str, combine: str) -> str | None:
        """E of `acc = tl.where(m, t, acc)`, `t = combine(acc, E)` (or E | acc)."""
        for d in self.defs.get(acc, []):
            t = masked_update(d, acc)[1]
            for t_def in self.defs.get(t, []) if t else []:
                op, other = op_of(t_def.value, acc)
                if op == combine:
                    return self.expr(other)
        return None

    def _uncast(self, node: ast.AST) -> ast.AST:
        """`acc.to(T)`, directly or through a name set once to it, is acc."""
        if isinstance(node, ast.Name) and len(self.defs.get(node.id, [])) == 1:
            value = self.defs[node.id][0].value
            if _is_cast(value):
                return value.func.value
        if _is_cast(node):
            return node.func.value
        return node

    def expr(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Constant):
            return repr(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = self.expr(node.left), self.expr(node.right)
            if isinstance(node.op, ast.Mult) and right == "1.0":
                return left
            if isinstance(node.op, ast.Div) and left != "1.0" and _is_number(right):
                # x / c as x * (1 / c), the form reciprocal_divisors leaves
                return f"(mul {left} (div 1.0 {right}))"
            return f"({_OPS[type(node.op)]} {left} {right})"
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = _OPS.get(type(node.ops[0]), type(node.ops[0]).__name__)
            return f"({op} {self.expr(node.left)} {self.expr(node.comparators[0])})"
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call):
            # `max_nan(acc, 1)[:, None]`: a row reduction of what acc combines
            call = node.value
            kinds = {"max_nan": ("rowmax", "maximum_nan"), "any_true": ("rowany", "|")}
            func = ast.unparse(call.func)
            if func in kinds and call.args:
                acc = call.args[0]
                acc = self._uncast(acc)  # the int8 cast before any_true
                if isinstance(acc, ast.Name):
                    what, combine = kinds[func]
                    inner = self.reduced(acc.id, combine)
                    if inner is not None:
                        return f"({what} {inner})"
        if isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            if is_call(node, "tl.full") and len(node.args) >= 2:
                return self.expr(node.args[1])
            if func in ("float",) and node.args:
                return repr(float(ast.literal_eval(node.args[0])))
            if func == "tl.load":
                args = [self.expr(a) for a in node.args[:2]]
                return f"(load {' '.join(args)})"
            if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
                return f"(to {ast.unparse(node.args[0])} {self.expr(node.func.value)})"
            args = " ".join(self.expr(a) for a in node.args)
            return f"({func} {args})"
        return ast.dump(node)


def _is_cast(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _positive_constant(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False


def _split(text: str) -> list[str]:
    """The top-level parts of `(op a b)`."""
    parts, depth, cur = [], 0, ""
    for ch in text[1:-1]:
        if ch == " " and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    parts.append(cur)
    return parts


def _guarded_softmax(ex: _Expander, select: ast.Call) -> tuple[str, str] | None:
    """(v, k) of `tl.where(no_nonfinite, (v - max v) * k, v*k - max(v*k))`, k > 0
    (a constant, or 1 / c for a constant c, as Python source); else None."""
    cond, fast, general = (ex.expr(a) for a in select.args)
    g = _split(general) if general.startswith("(sub ") else []
    if len(g) != 3 or g[2] != f"(rowmax {g[1]})":
        return None
    scaled = g[1]
    s = _split(scaled) if scaled.startswith("(mul ") else []
    if len(s) != 3:
        return None
    # v * k, with k a positive constant or 1 / c for a positive constant c
    _, v, k = s
    k_value = _split(k)[2] if k.startswith("(div 1.0 ") else k
    if not _positive_constant(k_value):
        return None
    finite = f"(and (eq {scaled} {scaled}) (ne (tl.abs {scaled}) inf))"
    if cond != f"(eq (rowany (eq {finite} 0)) 0)":
        return None
    if fast != f"(mul (sub {v} (rowmax {v})) {k})":
        return None
    return v, (f"(1.0 / {k_value})" if k != k_value else k_value)


def _drop_self_accumulators(fn: ast.FunctionDef) -> int:
    """Accumulators read only by their own updates (init, `t = op(acc, e)`,
    `acc = tl.where(m, t, acc)`): all three go."""
    dropped = 0
    while True:
        reads = read_counts(fn)
        hit = None
        for stmt, body in walk_stmts(fn.body):
            if not (
                isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
            ):
                continue
            acc = stmt.targets[0].id
            t = masked_update(stmt, acc)[1]
            if t is None:
                continue
            t_defs = [
                (s, b)
                for s, b in walk_stmts(fn.body)
                if isinstance(s, ast.Assign) and t in assigned_names(s)
            ]
            # acc is read by the where (once) and by t's combine (once), t by the where
            if (
                len(t_defs) == 1
                and reads.get(acc, 0) == 2
                and reads.get(t, 0) == 1
                and acc in names_in(t_defs[0][0].value)
            ):
                hit = (acc, stmt, body, t_defs[0])
                break
        if hit is None:
            return dropped
        acc, stmt, body, (t_stmt, t_body) = hit
        body.remove(stmt)
        t_body.remove(t_stmt)
        for s, b in list(walk_stmts(fn.body)):
            if isinstance(s, ast.Assign) and assigned_names(s) == [acc]:
                b.remove(s)
        dropped += 1


def _guard_row_max(fn: ast.FunctionDef, ex: _Expander, v: str, k: str) -> bool:
    """After `m = max_nan(acc, 1)[:, None]`, the row max of v: `row_shift = m`
    where m * k is below inf, else NaN; row_shift replaces every other read of m."""
    for stmt, body in walk_stmts(fn.body):
        if not (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Name)
            and ex.expr(stmt.value) == f"(rowmax {v})"
        ):
            continue
        row_max = stmt.targets[0].id
        taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        shift = (
            "row_shift" if "row_shift" not in taken else unique_name("row_shift", taken)
        )
        rename_names(fn, {row_max: shift})
        stmt.targets[0].id = row_max
        guard = ast.parse(
            f"{shift} = tl.where({row_max} * {k} < float('inf'), "
            f"{row_max}, float('nan'))"
        ).body[0]
        at = body.index(stmt) + 1
        body[at:at] = [
            comment_stmt(
                "where max(x) / c overflows, torch's row is NaN (inf - inf): "
                "a NaN shift keeps it so"
            ),
            guard,
        ]
        return True
    return False


def drop_finite_row_guard(kp: KernelPort) -> None:
    """Keep softmax's form that is exact at the row max, with a per-row guard
    where Inductor tested every element (see the module doc)."""
    fn = kp.tree
    ex = _Expander(fn)
    found = []
    for stmt, _ in walk_stmts(fn.body):
        v = getattr(stmt, "value", None)
        if isinstance(stmt, ast.Assign) and is_call(v, "tl.where") and len(v.args) == 3:
            match = _guarded_softmax(ex, v)
            if match is not None:
                found.append((stmt, match))
    # one row max, one scale: each select picks between the same two forms
    if not found or len({m for _, m in found}) != 1:
        return
    v, k = found[0][1]
    if not _guard_row_max(fn, ex, v, k):
        return
    for stmt, _ in found:
        stmt.value = stmt.value.args[1]
    fold_plain_copies(fn)  # `tmp30 = tmp27`, left where the select was
    while drop_unread(fn) + _drop_self_accumulators(fn):
        pass
    if "any_true" not in ast.unparse(fn):
        kp.helpers.discard("any_true")
    kp.notes.append(
        "replaced Inductor's per-element finite-row test in softmax(x/c) by one "
        "test a row: (x - max x) / c, exact at the max, and NaN rows where "
        "max(x) / c overflows, as in torch"
    )
