"""An int argument a kernel reads only as a float is a runtime argument
(runtime_float_ints).

An int the reference takes per call and the graph keeps symbolic (an
optimizer's `step` in `beta2 ** step`, a decay's `t`) became a constexpr like a
per-model size, so every new value compiled the kernel again: a second or so a
training step. Read only through a cast to a float it gains nothing from being
a constant, so it is a runtime argument (do_not_specialize) like a per-call
size; an int that indexes or divides (a shard size, a group size) stays
constexpr, where its arithmetic folds.
"""

from __future__ import annotations

import ast

from porter.ast_tools import read_only_at
from porter.port.bind.generalize import set_signature
from porter.port.model import PortState

_FLOATS = ("tl.float16", "tl.bfloat16", "tl.float32", "tl.float64")


def runtime_float_ints(port: PortState) -> None:
    """A per-model int parameter bound to an int argument of the reference,
    which its kernel reads only cast to a float, becomes a runtime one."""
    symints = {gi.target for gi in port.module.inputs if gi.kind == "symint"}
    done = []
    for kp in port.kernels:
        changed = False
        for p in kp.params:
            b = kp.bindings.get(p.original)
            expr = (b.expr or "") if b is not None else ""
            if (
                p.kind == "model"
                and expr in symints
                and _only_as_float(kp.tree, p.name)
            ):
                p.kind, p.annotation = "runtime", ""
                done.append(p.name)
                changed = True
        if changed:
            # the signature drops its tl.constexpr: Triton refuses a constexpr
            # in do_not_specialize (a GPU compile; the interpreter runs it)
            set_signature(kp)
    if done:
        names = ", ".join(sorted(set(done)))
        port.notes.append(
            f"{names}: an int argument read only as a float is a runtime kernel "
            "argument, so a new value does not compile the kernel again"
        )


def _only_as_float(fn: ast.FunctionDef, name: str) -> bool:
    """Whether every read of `name` in fn is cast to a float:
    `tl.cast(name, tl.float64)` or `name.to(tl.float64)`."""
    cast = set()
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Call) and n.args):
            continue
        func = ast.unparse(n.func)
        if func == "tl.cast" and len(n.args) == 2 and ast.unparse(n.args[1]) in _FLOATS:
            cast.add(id(n.args[0]))
        elif (
            isinstance(n.func, ast.Attribute)
            and n.func.attr == "to"
            and ast.unparse(n.args[0]) in _FLOATS
        ):
            cast.add(id(n.func.value))
    return read_only_at(fn, name, cast)
