"""Stage: a returned view that takes a literal number of elements along a
size is checked to fit it.

`y[:, :16]` of a [num_tokens, hidden] result: the wrapper returns a view of
16 columns, taken from the capture, where hidden was 64. At a width of 5
eager clamps the slice to 5 columns; the scaffold's view of 16 columns ran
past the buffer and as_strided raised. The launcher refuses such a call in
one line. A view that takes `hidden - 16` elements (`y[:, 16:]`) is checked
not to be negative the same way.
"""

from __future__ import annotations

import ast

from porter.port.finish.remainders import size_less_a_number
from porter.port.launch.launcher import Alloc, spell_dims
from porter.port.model import PortState


def _literal(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    return None


def _views(text: str, allocs: dict[str, Alloc]):
    """(alloc, sizes, strides, offset) of each `buf.as_strided(...)` in text
    whose buf the launcher allocated; offset is the literal number of elements
    past buf's storage offset (0 where there is none or it is not a number)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "as_strided"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in allocs
            and len(node.args) == 3
            and all(isinstance(a, ast.Tuple) for a in node.args[:2])
        ):
            continue
        start = node.args[2]
        offset = _literal(start.right) if isinstance(start, ast.BinOp) else 0
        yield (
            allocs[node.func.value.id],
            [ast.unparse(s) for s in node.args[0].elts],
            [ast.unparse(s) for s in node.args[1].elts],
            offset or 0,
        )


def refuse_short_views(port: PortState) -> None:
    """Each returned view of a buffer the launcher allocated that takes a
    literal count of elements along one of its sizes (a slice like `[:16]`
    at capture) refuses a call where that size is smaller, and one whose
    count is that size less a number refuses it below 0: eager clamps such a
    slice, the scaffold's view would run past the buffer."""
    launcher = port.launcher
    named = {d.name: d.expr for d in launcher.dims}
    allocs = {a.var: a for a in launcher.allocs}
    seen: set[str] = set()
    for alloc, sizes, strides, offset in _views(launcher.returns, allocs):
        for size, stride in zip(sizes, strides):
            if size_less_a_number(size):
                test, said = (
                    f"{size} < 0",
                    f"the returned view takes {spell_dims(size, named)} elements, "
                    "below 0 here (a slice like [16:] of a shorter size)",
                )
            elif (count := _literal(ast.parse(size, mode="eval").body)) is not None:
                if count < 2 or stride not in alloc.strides:
                    continue
                whole = alloc.sizes[alloc.strides.index(stride)]
                if not whole.isidentifier():
                    # a literal, or a flattened axis (16 * batch read as
                    # [batch, 16]): empty where the view is
                    continue
                # A literal start counts along the innermost size only.
                need = count + (offset if stride == "1" else 0)
                test = f"{whole} < {need}"
                said = (
                    f"the returned view takes {need} along {spell_dims(whole, named)}, "
                    f"as at capture (a slice like [:{need}]), which is shorter here; "
                    "re-capture at such a size"
                )
            else:
                continue
            if test not in seen:
                seen.add(test)
                launcher.shape_checks.append(f"if {test}:\n    refuse({said!r})")
                port.notes.append(f"a call where {test} is refused: a returned view")
