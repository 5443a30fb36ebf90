"""Stage: `1 + tanh(u)` as `2 / (1 + exp(-2u))` (the tanh GELU's sigmoid form).

Inductor writes the tanh GELU, 0.5 * x * (1 + tanh(u)), with libdevice's tanh
and an add of 1. The two are equal: 1 + tanh(u) = 2 * sigmoid(2u). The sigmoid
form takes an exp (exp_ftz, templates/helpers.py.j2) and a fast division
(`libdevice.fast_dividef`, div.approx.f32) where libdevice's tanh takes a
polynomial and branches: the kernel of gelu_tanh_and_mul in bf16 over 4096
columns compiles to 184 SASS instructions for 8 elements a thread, against 272
(sm_90, triton 3.9). It is also the more accurate form: where tanh(u) is near
-1, the sum 1 + tanh(u) cancels tanh's rounding error into a large relative
one, while 2 / (1 + exp(-2u)) keeps a few ulps. Where exp(-2u) overflows to
inf, the division gives 0, the limit; NaN stays NaN. Results under 2^-125
become 0 (div.approx gives 0 for divisors from 2^126), as exp_ftz's under
2^-126 do: a GELU output that small is 0 to any tolerance.

Only `s = t + one` (either order) is rewritten, where `t = libdevice.tanh(u)`
is read nowhere else, u is a name bound at most once (so it holds the same
value where s is computed) and `one` is 1.0, written out or a name bound to it
once. The tanh statement goes; a name bound to 1.0 that nothing reads any more
goes too.

exp_ftz rather than tl.exp, although this is no reduction (fastexp.KINDS):
with tl.exp the GELU's kernel took the same time on an H200; the division is
what counts (lab/NOTES.md, "Calls CU-CX").
"""

from __future__ import annotations

import ast

from porter.port.finish.fastexp import HELPER as EXP_HELPER
from porter.ast_tools import assigned_call, assigned_names, read_counts
from porter.port.model import PortState

NOTE = (
    "1 + tanh(u) as 2 / (1 + exp(-2u)) (the same value: 2 * sigmoid(2u)), with "
    "exp_ftz and a fast division in place of libdevice's tanh"
)
HELPERS = {EXP_HELPER}


def _binds(fn: ast.FunctionDef, name: str) -> list[ast.stmt]:
    """The statements of fn that assign name."""
    return [s for s in ast.walk(fn) if name in assigned_names(s)]


def _is_one(fn: ast.FunctionDef, node: ast.AST) -> bool:
    """1.0 written out, or a name bound once, to 1.0."""
    if isinstance(node, ast.Constant):
        return node.value == 1 and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        binds = _binds(fn, node.id)
        return len(binds) == 1 and _is_one(fn, binds[0].value)
    return False


def one_plus_tanh(fn: ast.FunctionDef) -> int:
    """Rewrite each `1 + tanh(u)` of fn's top level in the sigmoid form, in
    place; how many."""
    rewritten = 0
    for stmt in list(fn.body):
        if not assigned_call(stmt, "libdevice.tanh", 1):
            continue
        t = stmt.targets[0].id
        if read_counts(fn).get(t, 0) != 1 or len(_binds(fn, t)) != 1:
            continue
        arg = stmt.value.args[0]
        if not isinstance(arg, ast.Name) or len(_binds(fn, arg.id)) > 1:
            continue
        add = next(
            (
                s
                for s in fn.body
                if isinstance(s, ast.Assign)
                and isinstance(s.value, ast.BinOp)
                and isinstance(s.value.op, ast.Add)
                and any(
                    isinstance(side, ast.Name) and side.id == t
                    for side in (s.value.left, s.value.right)
                )
            ),
            None,
        )
        if add is None:
            continue
        left, right = add.value.left, add.value.right
        one = right if isinstance(left, ast.Name) and left.id == t else left
        if not _is_one(fn, one):
            continue
        add.value = ast.parse(
            f"libdevice.fast_dividef(2.0, 1.0 + {EXP_HELPER}(-2.0 * {arg.id}))",
            mode="eval",
        ).body
        fn.body.remove(stmt)
        if isinstance(one, ast.Name) and one.id not in read_counts(fn):
            for bind in _binds(fn, one.id):
                if bind in fn.body:
                    fn.body.remove(bind)
        rewritten += 1
    return rewritten


def sigmoid_gelu(port: PortState) -> None:
    """The tanh GELU's 1 + tanh(u) becomes 2 * sigmoid(2u) (one_plus_tanh)."""
    for kp, form, _ in port.forms():
        if one_plus_tanh(form):
            kp.helpers |= HELPERS
            if NOTE not in kp.notes:
                kp.notes.append(NOTE)
