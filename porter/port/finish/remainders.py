"""Stage: a size the launcher computes as a difference is checked not to be
negative.

`x[:, 64:]` beside `x[:, :64]` at a width of 96: Dynamo sizes the first
slice 64 and the rest `hidden - 64`, taking `hidden >= 64` from the capture
without a guard. At a width of 40 eager takes 40 columns and an empty rest;
the kernels wrote 64 columns, past the row, and a view of `hidden - 64`
columns failed. The launcher refuses such a call in one line.

So does a size the launcher divides by that sizes can make 0: pixel_shuffle
then pixel_unshuffle sized its rows `c // (2 * (c // 4))`, which at fewer
than 4 channels raised ZeroDivisionError in the launcher.

And so does a size a kernel divides its indices by as a compile-time
constant (`cols % l`): Triton compiles a kernel even for an empty grid, and
on a GPU a constant 0 divisor fails to compile ("PassManager::run failed").
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator

from porter.ast_tools import bindings
from porter.port.finish.divisors import divisor_names
from porter.port.launch.launcher import off_module, spell_dims
from porter.port.model import PortState

_SIZE_KINDS = ("runtime", "model")


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def size_less_a_number(expr: str) -> bool:
    """expr is sizes less a number (`-64 + hidden`, `hidden - 64`)."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return False
    terms, signs = [node], [1]
    out = []
    while terms:
        t, sign = terms.pop(), signs.pop()
        if isinstance(t, ast.BinOp) and isinstance(t.op, (ast.Add, ast.Sub)):
            terms += [t.left, t.right]
            signs += [sign, sign if isinstance(t.op, ast.Add) else -sign]
        else:
            out.append((t, sign))
    numbers = [sign * v for t, sign in out if (v := _number(t)) is not None]
    sized = [t for t, _ in out if _number(t) is None]
    return bool(sized) and sum(numbers) < 0


# The values each size takes when a buffer's size is checked for a sign.
_SAMPLES = (0, 1, 2, 3, 7, 64)


def _sampled(expr: str) -> tuple[list[str], Iterator[int | None]] | None:
    """(the sizes expr reads, its value at every combination of _SAMPLES for
    them, None where evaluating it divided by 0); None where it cannot be
    tried (not Python, or more than 4 sizes)."""
    text = re.sub(r"(\w+)\.shape\[(\d+)\]", r"\1__size\2", expr)
    try:
        code = compile(text, "<size>", "eval")
    except SyntaxError:
        return None
    names = sorted(set(code.co_names) - {"max", "min"})
    if len(names) > 4:
        return None

    def values() -> Iterator[int | None]:
        for combo in itertools.product(_SAMPLES, repeat=len(names)):
            scope = {"__builtins__": {}, "max": max, "min": min}
            scope.update(zip(names, combo))
            try:
                yield eval(code, scope)
            except (ZeroDivisionError, TypeError, NameError):
                yield None

    return names, values()


def maybe_negative(expr: str) -> bool:
    """Whether sizes (each 0 or more) can make expr negative: `seq * batch -
    batch`, the rows of `x[:, :-1]` flattened, can (at seq 0); `2 * hidden`
    and `h - h // 2` cannot. Tried at every combination of a few values."""
    sampled = _sampled(expr)
    if sampled is None:
        return size_less_a_number(expr)
    return any(v is not None and v < 0 for v in sampled[1])


def maybe_zero(expr: str) -> bool:
    """Whether sizes (each 0 or more) can make expr 0, or a division inside it
    by 0: `2 * (c // 4)` can (c below 4), `hidden + 1` cannot. Tried as
    maybe_negative tries."""
    sampled = _sampled(expr)
    if sampled is None or not sampled[0]:
        return False
    return any(v is None or v == 0 for v in sampled[1])


def size_divisors(expr: str) -> list[str]:
    """The divisors of `//` and `%` in a size expression that are sizes."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return []
    return [
        ast.unparse(n.right)
        for n in ast.walk(node)
        if isinstance(n, ast.BinOp)
        and isinstance(n.op, (ast.FloorDiv, ast.Mod))
        and _number(n.right) is None
    ]


def refuse_zero_size_divisors(port: PortState) -> None:
    """Each size the launcher divides by (`//`, `%` in a kernel's size or a
    buffer's) that sizes could make 0 is checked not to be: a call where it is
    is refused in one line, not stopped by ZeroDivisionError."""
    launcher = port.launcher
    named = {d.name: d.expr for d in launcher.dims}
    exprs = [p.value for kp in port.kernels for p in kp.params if p.kind in _SIZE_KINDS]
    exprs += [size for alloc in launcher.allocs for size in alloc.sizes]
    seen: list[str] = []
    for expr in exprs:
        for divisor in size_divisors(expr):
            if divisor not in seen and maybe_zero(divisor):
                seen.append(divisor)
    for divisor in seen:
        spelled = spell_dims(divisor, named)
        said = (
            f"{spelled} is 0 at these sizes, and the kernels' sizes divide by it; "
            "call it with sizes where it is not"
        )
        launcher.shape_checks.append(f"if {divisor} == 0:\n    refuse({said!r})")
        port.notes.append(f"a call where {divisor} == 0 is refused")


def refuse_negative_sizes(port: PortState) -> None:
    """Each size a kernel takes that the launcher computes by subtracting
    (`-64 + hidden`, the rest of a row after a literal slice), and each size
    of a buffer it allocates that sizes could make negative (`seq * batch -
    batch`: `x[:, :-1]` flattened), is checked to be at least 0: a call where
    it is not is refused in one line, not written past the row nor failed in
    torch.empty."""
    launcher = port.launcher
    named = {d.name: d.expr for d in launcher.dims}
    seen: list[str] = []
    for kp in port.kernels:
        for p in kp.params:
            if (
                p.kind in _SIZE_KINDS
                and size_less_a_number(p.value)
                and p.value not in seen
            ):
                seen.append(p.value)
    for alloc in launcher.allocs:
        for size in alloc.sizes:
            if size not in seen and not size.isdigit() and maybe_negative(size):
                seen.append(size)
    for value in seen:
        spelled = spell_dims(value, named)
        said = f"the kernels assume {spelled} >= 0, as the capture's sizes had it"
        launcher.shape_checks.append(f"if {value} < 0:\n    refuse({said!r})")
        port.notes.append(f"a call where {value} < 0 is refused")


def _in_constants(node: ast.AST, constants: dict[str, str], bound, depth=0):
    """node as a launcher expression when it is made of compile-time
    constants alone (`floor_div(hw, window)` -> `hw // window`), else None."""
    if depth > 12:
        return None
    again = lambda n: _in_constants(n, constants, bound, depth + 1)  # noqa: E731
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return str(node.value)
    if isinstance(node, ast.Name):
        if node.id in constants:
            return f"({constants[node.id]})"
        return again(bound[node.id]) if node.id in bound else None
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)
    ):
        left, right = again(node.left), again(node.right)
        if left is None or right is None:
            return None
        op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}
        return f"({left} {op.get(type(node.op), '%')} {right})"
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "floor_div":
        if len(node.args) == 2:
            return again(ast.BinOp(node.args[0], ast.FloorDiv(), node.args[1]))
    return None


def _factors(expr: str) -> list[str]:
    """The factors of a product other than numbers (`2 * h * (q // h)`:
    h, q // h): it is 0 where one of them is, so each is checked alone."""
    out, todo = [], [ast.parse(expr, mode="eval").body]
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            todo[:0] = [node.left, node.right]
        elif _number(node) is None:
            out.append(ast.unparse(node))
    return out


def _constant_divisors(fn: ast.FunctionDef, constants: dict[str, str]) -> list[str]:
    """Launcher expressions of each divisor in fn (`a // d`, `a % d`,
    `floor_div(a, d)`) made of compile-time constants alone."""
    bound = {n: v[0] for n, v in bindings(fn).items() if len(v) == 1}
    found = []
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            divisor = node.right
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "floor_div":
            divisor = node.args[1] if len(node.args) == 2 else None
        else:
            continue
        names = divisor_names(divisor, bound) & set(constants)
        spelled = [constants[n] for n in sorted(names)]
        if not names and (expr := _in_constants(divisor, constants, bound)):
            spelled = [ast.unparse(ast.parse(expr, mode="eval"))]
        found += [e for e in spelled if e not in found]
    return found


def refuse_zero_constant_divisors(port: PortState) -> None:
    """Each size a kernel takes as a compile-time constant and divides by
    (`cols % l`, `floor_div(x2, hw // window)`) that sizes could make 0 is
    checked not to be: a call where it is is refused in one line, where the
    GPU compiler failed on the constant 0 divisor."""
    launcher = port.launcher
    named = {d.name: d.expr for d in launcher.dims}
    seen: list[str] = []
    for kp in port.kernels:
        constants = {p.name: p.value for p in kp.params if p.kind == "model"}
        for fn in (kp.tree, kp.persistent, kp.online):
            if fn is None or not constants:
                continue
            for divisor in _constant_divisors(fn, constants):
                for value in _factors(divisor):
                    if value not in seen and maybe_zero(value):
                        seen.append(value)
    if not seen:
        return
    # checked before the prelude binds a module's tensors
    values = [off_module(v, port.module, set(port.cap.input_names)) for v in seen]
    spelled = " or ".join(spell_dims(v, named) for v in values)
    said = (
        f"{spelled} is 0, and a kernel divides by it as a compile-time "
        "constant, which does not compile at 0"
    )
    test = f"{values[0]} == 0" if len(values) == 1 else f"0 in ({', '.join(values)})"
    launcher.shape_checks.append(f"if {test}:\n    refuse({said!r})")
    port.notes.append(
        f"a call where {' or '.join(seen)} is 0 is refused: a constant divisor"
    )
