"""A shift by an amount the kernel does not know to be in range, as torch
shifts: Triton's `a << b` and `a >> b` are LLVM's shl and ashr, undefined
where b is negative or the width or more. torch gives 0 for a left shift
there and the sign (-1 or 0) for a right one; an H200 gave 0 for a whole
`lo | (hi << bits)` at bits = -4, where eager gives lo. The interpreter's
numpy shifts hid it on the CPU.
"""

from __future__ import annotations

import ast

from porter.port.model import KernelPort

# A literal shift below the narrowest integer width is in range at any dtype.
_SAFE = range(8)
_HELPERS = {ast.LShift: "shift_left", ast.RShift: "shift_right"}


def exact_shifts(kp: KernelPort) -> None:
    """Each `a << b` and `a >> b` but by a literal from 0 to 7 becomes
    shift_left(a, b) or shift_right(a, b), which give torch's values for a
    shift out of range."""
    changed = 0

    class Fix(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            helper = _HELPERS.get(type(node.op))
            right = node.right
            if helper is None or (
                isinstance(right, ast.Constant)
                and type(right.value) is int
                and right.value in _SAFE
            ):
                return node
            changed += 1
            kp.helpers.add(helper)
            return ast.Call(ast.Name(helper, ast.Load()), [node.left, right], [])

    Fix().visit(kp.tree)
    if changed:
        kp.notes.append(
            f"{changed} shift(s) by an amount held at run time as torch's, "
            "defined past the width"
        )
