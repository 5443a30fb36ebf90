"""tidy_launcher_sizes: the launcher's sizes as a hand-written launcher has them.

Inductor prints size arithmetic through sympy (`(head_dim + -1 * (head_dim //
2))`), and the launcher names every dim the capture had, read or not. The
kernels' own arithmetic is left as it is: it is what they compile.
"""

from __future__ import annotations

import ast

from porter.ast_tools import names_in
from porter.port.model import PortState


class _Minus(ast.NodeTransformer):
    """`a + -1 * b` as `a - b`."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        right = node.right
        if (
            isinstance(node.op, ast.Add)
            and isinstance(right, ast.BinOp)
            and isinstance(right.op, ast.Mult)
            and ast.unparse(right.left) in ("-1", "(-1)")
        ):
            return ast.BinOp(node.left, ast.Sub(), right.right)
        return node


def tidy_arithmetic(code: str) -> str:
    """code with its size arithmetic as written by hand: `head_dim - head_dim
    // 2` for `(head_dim + -1 * (head_dim // 2))`, without parentheses around a
    whole argument or value. Arithmetic over strings (a message) is left."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    arith = {
        id(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.BinOp)
        and not any(
            isinstance(c, (ast.JoinedStr, ast.Constant))
            and isinstance(getattr(c, "value", None), str)
            for c in ast.walk(n)
        )
    }
    # inside another's subtree (a call's argument too): edited with it
    inner = {
        id(c)
        for n in ast.walk(tree)
        if id(n) in arith
        for c in ast.walk(n)
        if c is not n
    }
    lines = code.split("\n")
    edits = []  # (line, start, end, text)
    for n in ast.walk(tree):
        if id(n) not in arith or id(n) in inner or n.lineno != n.end_lineno:
            continue
        line = lines[n.lineno - 1]
        start, end = n.col_offset, n.end_col_offset
        # parentheses around the whole argument group nothing
        before = line[:start].rstrip()
        after = line[end:].lstrip()
        if before.endswith("(") and after.startswith(")"):
            head = before[:-1].rstrip()
            if not head or not (head[-1].isalnum() or head[-1] in "_])"):
                start = len(before) - 1
                end = len(line) - len(after) + 1
        new = ast.unparse(_Minus().visit(ast.parse(ast.unparse(n), mode="eval").body))
        if new != line[start:end]:
            edits.append((n.lineno - 1, start, end, new))
    for row, start, end, new in sorted(edits, reverse=True):
        lines[row] = lines[row][:start] + new + lines[row][end:]
    return "\n".join(lines)


def tidy_launcher_sizes(port: PortState) -> None:
    """The launcher's size arithmetic as written by hand (`head_dim - head_dim
    // 2` for Inductor's `(head_dim + -1 * (head_dim // 2))`), and the sizes it
    names for no check or launch dropped."""
    launcher = port.launcher
    launcher.map_code(tidy_arithmetic)
    read: set[str] = set()

    def reads(code: str) -> str:
        try:
            read.update(names_in(ast.parse(code)))
        except SyntaxError:  # kept rather than guessed unread
            read.update(d.name for d in launcher.dims if d.name in code)
        return code

    launcher.map_code(reads)
    launcher.dims = [d for d in launcher.dims if d.name in read]
