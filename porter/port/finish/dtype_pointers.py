"""Stage: a buffer a kernel takes for its dtype alone is not allocated
(drop_dtype_pointers).

A buffer of the kernel's own that forms.scratch recomputes, in the inputs'
dtype, leaves a cast to its element type behind (`v.to(buf_ptr.dtype.
element_ty)`: the rounding its reload gave): the launcher allocated a buffer
of tokens x columns for that dtype alone. The cast now names the element type
of the tensor the buffer took its dtype from (`x_ptr.dtype.element_ty`), or
the dtype itself where the buffer's is fixed, and the buffer goes.
"""

from __future__ import annotations

import ast
import re

from porter.ast_tools import read_only_at
from porter.port.model import PortState

# A buffer's fixed dtype, as the kernel spells it.
_TL = {
    "torch.float32": "tl.float32",
    "torch.float16": "tl.float16",
    "torch.bfloat16": "tl.bfloat16",
    "torch.float64": "tl.float64",
    "torch.int8": "tl.int8",
    "torch.int32": "tl.int32",
    "torch.int64": "tl.int64",
}


def drop_dtype_pointers(port: PortState) -> None:
    """A pointer parameter every form reads only as `name.dtype.element_ty` is
    dropped, its reads naming the dtype another way, and its buffer with it."""
    allocs = {a.var: a for a in port.launcher.allocs}
    dropped = []
    for kp, step in zip(port.kernels, port.launches()):
        forms = kp.forms(matmul=True)
        for p in list(kp.params):
            alloc = allocs.get(p.value)
            if p.kind != "pointer" or alloc is None or p.view:
                continue
            if not all(_dtype_only(f, p.name) for f in forms):
                continue
            spelled = _dtype_of(alloc.dtype, kp.params, p.name)
            if spelled is None:
                continue
            for f in forms:
                _respell(f, p.name, spelled)
            # its strides go with it, where no form reads them
            read = {n.id for f in forms for n in ast.walk(f) if isinstance(n, ast.Name)}
            gone = {p.name} | (kp.strides_of(p.value) - read)
            kp.drop_params(gone)
            step.args = [(n, v) for n, v in step.args if n not in gone]
            dropped.append(p.value)
    if dropped:
        port.notes.append(
            f"{', '.join(sorted(set(dropped)))}: a buffer the kernel took for its "
            "dtype alone is not allocated"
        )


def _dtype_only(fn: ast.FunctionDef, name: str) -> bool:
    """Whether fn reads `name` and only as `name.dtype.element_ty`."""
    inside = {
        id(n.value.value)
        for n in ast.walk(fn)
        if isinstance(n, ast.Attribute)
        and n.attr == "element_ty"
        and isinstance(n.value, ast.Attribute)
        and n.value.attr == "dtype"
    }
    return read_only_at(fn, name, inside)


def _dtype_of(dtype: str, params, name: str) -> str | None:
    """The buffer's dtype `dtype` (the launcher's `x.dtype` or `torch.bfloat16`)
    as the kernel can spell it without the buffer, or None."""
    if dtype in _TL:
        return _TL[dtype]
    like = re.fullmatch(r"(\w+)\.dtype", dtype)
    if like is None:
        return None
    ptr = next(
        (
            q.name
            for q in params
            if q.kind == "pointer" and q.value == like.group(1) and q.name != name
        ),
        None,
    )
    return None if ptr is None else f"{ptr}.dtype.element_ty"


def _respell(fn: ast.FunctionDef, name: str, spelled: str) -> None:
    new = ast.parse(spelled, mode="eval").body

    class Respell(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute):
            if ast.unparse(node) == f"{name}.dtype.element_ty":
                return ast.copy_location(new, node)
            self.generic_visit(node)
            return node

    Respell().visit(fn)
    ast.fix_missing_locations(fn)
