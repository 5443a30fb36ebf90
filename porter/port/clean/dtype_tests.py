"""A dtype compared by value: Inductor's signbit tests `x.dtype is tl.float32`,
which is false for a value a libdevice function returned (fmod, copysign),
whose dtype is an equal object of its own; the kernel then took `x < 0` and
lost the sign of -0.0, on the GPU and in the interpreter alike.
"""

from __future__ import annotations

import ast

import triton.language as tl

from porter.port.model import KernelPort


def _is_dtype(node: ast.AST) -> bool:
    """`x.dtype` or a dtype of tl (`tl.float32`)."""
    text = ast.unparse(node)
    return text.endswith(".dtype") or (
        text.startswith("tl.") and isinstance(getattr(tl, text[3:], None), tl.dtype)
    )


def compare_dtypes_by_value(kp: KernelPort) -> None:
    """`x.dtype is tl.float32` becomes `x.dtype == tl.float32` (and `is not`,
    `!=`) in kp's kernel: a compile-time test by value, which holds for a
    libdevice result's dtype too."""
    changed = 0
    for node in ast.walk(kp.tree):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            continue
        if not isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            continue
        if _is_dtype(node.left) and _is_dtype(node.comparators[0]):
            node.ops = [ast.Eq() if isinstance(node.ops[0], ast.Is) else ast.NotEq()]
            changed += 1
    if changed:
        kp.notes.append(f"{changed} dtype tests compare by value (`==`), not identity")
