"""tl.full constants turned into typed literals (typed_constants)."""

from __future__ import annotations

import ast

from porter.ast_tools import is_call
from porter.port.model import KernelPort


def typed_constants(kp: KernelPort) -> None:
    """`tl.full([1, 1], c, tl.float32)` becomes the literal `c` (an fp32
    constant in Triton); block-shaped fills stay, and so does any in a load's
    or store's pointer (its shape is the access's)."""
    count = 0

    class Fix(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if is_call(node.value, "tl.full"):
                # a method of the tensor is called (a 0-d output's offset,
                # `tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)`):
                # a Python literal has none
                return node
            self.generic_visit(node)
            return node

        def visit_Call(self, node: ast.Call) -> ast.AST:
            if (is_call(node, "tl.store") or is_call(node, "tl.load")) and node.args:
                # a pointer's offset keeps its block shape: `out_ptr +
                # tl.full([1, 1], 0, tl.int32)` stores a [1, 1] value (a 0-d
                # output beside a reduction), which a scalar pointer refuses
                node.args[1:] = [self.visit(a) for a in node.args[1:]]
                node.keywords = [self.visit(k) for k in node.keywords]
                return node
            self.generic_visit(node)
            nonlocal count
            if not is_call(node, "tl.full") or len(node.args) != 3:
                return node
            shape, value, dtype = node.args
            ones = isinstance(shape, ast.List) and all(
                isinstance(e, ast.Constant) and e.value == 1 for e in shape.elts
            )
            dt = ast.unparse(dtype)
            if ones and dt in ("tl.float32", "tl.int32"):
                literal = ast.unparse(value)
                if (
                    dt == "tl.float32"
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, int)
                ):
                    value = ast.Constant(float(value.value))
                count += 1
                return value if literal[:5] != "float" else node
            return node

    Fix().visit(kp.tree)
    if count:
        kp.notes.append(f"turned {count} tl.full constant(s) into typed literals")
