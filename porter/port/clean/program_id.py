"""The program id widened to int64 before offset arithmetic (widen_program_id)."""

from __future__ import annotations

import ast

from porter.ast_tools import is_call
from porter.port.model import KernelPort


def widen_program_id(kp: KernelPort) -> None:
    """`tl.program_id(0)` becomes `tl.program_id(0).to(tl.int64)` so every
    offset built from it is computed in int64 (no 2^31 overflow)."""

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if is_call(node, "tl.program_id"):
                return ast.parse(f"{ast.unparse(node)}.to(tl.int64)", mode="eval").body
            return node

    Fix().visit(kp.tree)
    kp.notes.append("widened the program id to int64 before any offset arithmetic")
