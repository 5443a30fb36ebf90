"""Stage: a view of a buffer at the buffer's own layout is the buffer.

Inductor allocates a keepdim row result (a per-token quant scale, (n, 1)) at
strides (1, n) and returns `reinterpret_tensor(buf0, (n, 1), (1, 1), 0)`: the
same sizes, and strides that differ only on the axis of size 1, which no
element reaches through. Rendered as written, the launcher allocated with
`torch.empty_strided`, made an `out1_view0` for the kernel and returned a
third `as_strided` of the same memory. The view is the buffer itself.
"""

from __future__ import annotations

import ast
import copy
import re

from porter.port.model import PortState
from porter.records import Buffer, CompiledModule


def same_layout(view: dict, buffer: Buffer) -> bool:
    """Whether a view (sizes, strides, offset) is `buffer` itself: offset 0,
    its sizes, its strides at every axis whose size is not 1."""
    return (
        view["offset"] == "0"
        and view["sizes"] == buffer.sizes
        and len(view["strides"]) == len(buffer.strides)
        and all(
            a == b or size == "1"
            for a, b, size in zip(view["strides"], buffer.strides, buffer.sizes)
        )
    )


def _named(expr: str, symbols: dict[str, str]) -> str:
    """`expr` with its size symbols (s77) written as dims (num_tokens)."""
    return re.sub(r"\b\w+\b", lambda m: symbols.get(m[0], m[0]), expr)


def _view_call(node: ast.AST, symbols: dict[str, str]) -> tuple[str, dict] | None:
    """(the base name, the view) of `reinterpret_tensor(buf, sizes, strides,
    offset)`, its size symbols (s77) written as the buffers' sizes are."""
    if not (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "reinterpret_tensor"
        and len(node.args) >= 3
        and isinstance(node.args[0], ast.Name)
    ):
        return None

    def items(n):
        elts = n.elts if isinstance(n, (ast.Tuple, ast.List)) else [n]
        return [_named(ast.unparse(e), symbols) for e in elts]

    offset = ast.unparse(node.args[3]) if len(node.args) > 3 else "0"
    view = {"sizes": items(node.args[1]), "strides": items(node.args[2])}
    return node.args[0].id, {**view, "offset": offset}


def _unviewed(text: str, buffers: dict[str, Buffer], symbols: dict[str, str]) -> str:
    """`text` with each reinterpret_tensor of a buffer at its own layout
    written as the buffer's name."""
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return text
    changed = False

    class Drop(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            found = _view_call(node, symbols)
            if (
                found
                and found[0] in buffers
                and same_layout(found[1], buffers[found[0]])
            ):
                changed = True
                return ast.Name(found[0], ast.Load())
            return node

    tree = Drop().visit(tree)
    return ast.unparse(tree) if changed else text


def _identity_views(module: CompiledModule) -> bool:
    """Drop them from `module` (changed in place); whether there were any."""

    def named(exprs: list[str]) -> list[str]:
        return [_named(e, module.symbols) for e in exprs]

    buffers = {
        b.name: Buffer(b.name, named(b.sizes), named(b.strides), b.dtype)
        for b in module.buffers
    }
    changed = False
    outputs = [_unviewed(o, buffers, module.symbols) for o in module.outputs]
    if outputs != module.outputs:
        module.outputs[:] = outputs
        changed = True
    for step in module.steps:
        if step.kind == "extern":
            text = _unviewed(step.text, buffers, module.symbols)
            changed |= text != step.text
            step.text = text
        for b in step.args:
            if b.view is None:
                continue
            if b.kind == "output":
                out = module.outputs[int(b.target)]
                base = out if out.isidentifier() else None
            else:
                base = b.target
            view = {
                "sizes": named(b.view["sizes"]),
                "strides": named(b.view["strides"]),
                "offset": b.view["offset"],
            }
            if base in buffers and same_layout(view, buffers[base]):
                b.view = None
                changed = True
    return changed


def drop_identity_views(port: PortState) -> None:
    """A reinterpret_tensor view with its buffer's sizes, offset 0 and strides
    that differ only on axes of size 1 is the buffer: the launcher passes and
    returns the buffer itself, allocated with torch.empty."""
    trial = copy.deepcopy(port.module)
    if not _identity_views(trial):
        return
    if port.cap.modules[0] is port.module:  # the stored capture stays as it was
        port.cap = copy.deepcopy(port.cap)
        port.module = port.cap.modules[0]
    _identity_views(port.module)
