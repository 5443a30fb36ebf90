"""A float remainder as libdevice's fmod: Inductor writes torch.remainder and
Python's % of floats as Triton's `a % b`, whose LLVM frem the NVIDIA backend
computes as a - trunc(a / b) * b in fp32. That loses the sign of a zero
remainder (-0.0 % -3.0 read +0.0) and, once a / b is large, the remainder
itself (an H100 returned 3.4e10 where eager gives 0.5). libdevice.fmod is
exact, and the interpreter's frem already is (numpy's fmod), so only a GPU
showed it.
"""

from __future__ import annotations

import ast
import re

from porter.ast_tools import bindings, cast_to, is_call
from porter.port.model import KernelPort

_FLOATS = {"tl.float16", "tl.bfloat16", "tl.float32", "tl.float64"}
# libdevice functions whose result is an integer or a bool.
_INT_RESULTS = {
    "popc",
    "clz",
    "ffs",
    "signbit",
    "isnan",
    "isinf",
    "isfinited",
    "finitef",
    "ilogb",
    "llrint",
    "llround",
    "float_as_int",
    "float_as_uint",
    "double_as_longlong",
}
_TO_INT = re.compile(r"(float|double)2(int|uint|ll|ull)_")


def is_float(node: ast.AST, bound: dict[str, list[ast.AST]], seen=frozenset()) -> bool:
    """Whether node is a float value for certain: a float number, a cast to a
    float type, a libdevice result, or arithmetic and selections of those,
    through names bound once."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, float)
    if isinstance(node, ast.UnaryOp):
        return is_float(node.operand, bound, seen)
    if isinstance(node, ast.Name):
        values = bound.get(node.id, [])
        return (
            len(values) == 1
            and node.id not in seen
            and is_float(values[0], bound, seen | {node.id})
        )
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod)
    ):
        return is_float(node.left, bound, seen) or is_float(node.right, bound, seen)
    if isinstance(node, ast.Call):
        if cast_to(node) is not None:
            return cast_to(node) in _FLOATS
        func = ast.unparse(node.func)
        if func in ("tl.cast", "tl.full"):
            return bool(node.args) and ast.unparse(node.args[-1]) in _FLOATS
        if func.startswith("libdevice."):
            name = func.removeprefix("libdevice.")
            return name not in _INT_RESULTS and not _TO_INT.match(name)
        if is_call(node, "tl.where") and len(node.args) == 3:
            return is_float(node.args[1], bound, seen) or is_float(
                node.args[2], bound, seen
            )
    return False


def exact_float_remainders(kp: KernelPort) -> None:
    """Each `a % b` of floats (a float number, a cast to a float type, a
    libdevice result, arithmetic of those) becomes libdevice.fmod(a, b): the
    same C remainder, computed exactly on the GPU."""
    bound = bindings(kp.tree)
    changed = 0

    class Fix(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            if isinstance(node.op, ast.Mod) and (
                is_float(node.left, bound) or is_float(node.right, bound)
            ):
                changed += 1
                fmod = ast.parse("libdevice.fmod", mode="eval").body
                return ast.Call(fmod, [node.left, node.right], [])
            return node

    Fix().visit(kp.tree)
    if changed:
        kp.uses_libdevice = True
        kp.heavy_math = True  # fmod is a loop of instructions, not one
        kp.notes.append(
            f"{changed} float remainder(s) as libdevice.fmod, exact on GPUs"
        )
