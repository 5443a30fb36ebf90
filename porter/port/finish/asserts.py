"""Stage: Inductor's index bound checks, said in the reference's names.

Where a kernel reads or writes at an index it loaded from a tensor (a
gather, an embedding row, a KV-cache slot), Inductor writes
`tl.device_assert((0 <= i) & (i < n) | ~mask, "index out of bounds: 0 <= tmp4
< ks1*ks2")` and compiles the kernel with debug on, so an index out of range
stops the program as eager's own device assert does. Triton drops every
device_assert of a kernel compiled without debug: the scaffold then reads
another row's memory and returns numbers. The scaffold keeps the check
(render marks the kernel `debug=True`, KernelSource.debug) and this pass
rewrites its message, whose names the port has renamed, to name the tensor
the index came from: "positions holds an index out of bounds (0 <= index <
max_position)".
"""

from __future__ import annotations

import ast

from porter.ast_tools import bindings, is_call, ptr_base
from porter.port.model import PortState


def checks(form: ast.FunctionDef) -> list[ast.Call]:
    """The tl.device_assert calls of a kernel form."""
    return [n for n in ast.walk(form) if is_call(n, "tl.device_assert")]


def _bound(cond: ast.AST) -> tuple[ast.AST, ast.AST] | None:
    """(index, bound) of the first `index < bound` in the condition."""
    for node in ast.walk(cond):
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.Lt)
        ):
            return node.left, node.comparators[0]
    return None


def loaded_from(node: ast.AST, bound: dict, seen: set[str]) -> set[str]:
    """The pointer arguments whose loads the value of `node` is computed from."""
    if is_call(node, "tl.load") and node.args:
        base = ptr_base(node.args[0])
        if base is None:
            return set()
        if base.endswith("_ptr"):
            return {base}
        return loaded_from(ast.Name(base), bound, seen)  # a row pointer's name
    if isinstance(node, ast.Name):
        if node.id in seen:
            return set()
        if node.id.endswith("_ptr"):
            return {node.id}
        seen.add(node.id)
        found: set[str] = set()
        for value in bound.get(node.id, []):
            found |= loaded_from(value, bound, seen)
        return found
    found = set()
    for child in ast.iter_child_nodes(node):
        found |= loaded_from(child, bound, seen)
    return found


def message(form: ast.FunctionDef, cond: ast.AST) -> str | None:
    """The check's message in the kernel's own names, or None where the
    condition is not an index bound."""
    pair = _bound(cond)
    if pair is None:
        return None
    index, limit = pair
    limit_text = ast.unparse(limit)
    sources = loaded_from(index, bindings(form), set())
    if len(sources) == 1:
        tensor = sources.pop().removesuffix("_ptr")
        return f"{tensor} holds an index out of bounds (0 <= index < {limit_text})"
    return f"index out of bounds: 0 <= {ast.unparse(index)} < {limit_text}"


def name_index_checks(port: PortState) -> None:
    """Every kernel form's `tl.device_assert` index check says which tensor
    holds the index and its bound in the kernel's names; the kernel is
    compiled with debug on, so the check runs (message)."""
    for kp, form, _ in port.forms():
        for call in checks(form):
            if len(call.args) < 2 or not isinstance(call.args[1], ast.Constant):
                continue
            text = message(form, call.args[0])
            if text is not None and text != call.args[1].value:
                call.args[1] = ast.Constant(text)
                note = f"{form.name}: index check says {text!r}"
                if note not in kp.notes:
                    kp.notes.append(note)
