"""Stage: a float argument the kernel reads in fp64 math is passed as fp64.

Inductor passes every float argument as an fp64 scalar and casts it to fp32
where it meets fp32 values (`eps.to(tl.float32)`); Triton takes a Python float
argument as fp32, which those uses never tell apart. Some uses stay in fp64:
AdamW's bias correction `1 - beta2 ** step` is `libdevice.pow(beta2,
tl.cast(step, tl.float64))`, which has no (fp32, fp64) variant, so the
scaffold did not compile. Such an argument is annotated `tl.float64`, and its
casts to fp32 stay (finish.scalars leaves it alone).
"""

from __future__ import annotations

import ast

from porter.ast_tools import cast_of
from porter.port.bind.generalize import set_signature
from porter.port.model import KernelPort

FP64 = "tl.float64"


def _cast_to_fp32(node: ast.AST, names: set[str]) -> ast.Name | None:
    """The name node in `name.to(tl.float32)` or `tl.cast(name, tl.float32)`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in names
        and node.args
        and ast.unparse(node.args[0]) == "tl.float32"
    ):
        return node.func.value
    return node.args[0] if cast_of(node, names, "tl.float32") else None


def fp64_scalars(kp: KernelPort) -> None:
    """A float argument Inductor reads as fp64 and uses other than cast to fp32
    (`libdevice.pow(beta2, step)`) is annotated tl.float64, so Triton passes
    it as fp64; one only ever cast to fp32 stays a plain (fp32) argument."""
    fp64 = {a.name for a in kp.record.signature if a.type == "fp64"}
    scalars = {p.name for p in kp.params if p.kind == "scalar" and p.original in fp64}
    if not scalars:
        return
    cast = {
        id(name)
        for node in ast.walk(kp.tree)
        if (name := _cast_to_fp32(node, scalars)) is not None
    }
    wide = {
        n.id
        for n in ast.walk(kp.tree)
        if isinstance(n, ast.Name) and n.id in scalars and id(n) not in cast
    }
    for p in kp.params:
        if p.name in wide and p.kind == "scalar":
            p.annotation = FP64
            kp.notes.append(
                f"{p.name} is passed as fp64: the kernel computes with it in fp64"
            )
    # the signature too: a kernel no later pass re-signs kept the argument
    # fp32 beside libdevice.pow(temperature, 2.0 in fp64), which has no variant
    set_signature(kp)
