"""Stage: render generated files from the Jinja2 templates and format them with black."""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from importlib import resources
from pathlib import Path

import black
import jinja2

from porter.errors import PorterError
from porter.port.launch.launcher import LOOPED_MAX_BLOCK, LOOPED_MIN_ROW_BYTES
from porter.port.scaffold import Scaffold


def _template_dir() -> Path:
    # Installed: the porter.templates package; from a checkout: ../templates.
    try:
        path = Path(str(resources.files("porter.templates")))
        if (path / "kernel.py.j2").is_file():
            return path
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "templates"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_template_dir())),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["pyrepr"] = repr  # a Python literal of a string or list
    return env


_TODO = re.compile(r"^(\s*)['\"]TODO\(porter\): (.*)['\"]$", re.M)
_NOTE = re.compile(r"^(\s*)['\"]NOTE\(porter\): (.*)['\"]$", re.M)


def todo_comments(source: str) -> str:
    """Marker strings left by the passes become comments: `# TODO(porter): ...`
    for what an engineer must do, `# ...` for why the code is as it is."""
    source = _NOTE.sub(lambda m: f"{m.group(1)}# {m.group(2)}", source)
    return _TODO.sub(lambda m: f"{m.group(1)}# TODO(porter): {m.group(2)}", source)


def render_text(template: str, **context) -> str:
    """A non-Python file (Markdown) from its template."""
    return environment().get_template(template).render(**context)


def render(template: str, **context) -> str:
    """A Python file from its template, formatted by black."""
    return format_python(todo_comments(render_text(template, **context)), template)


_COMMON_IMPORT = "# porter: the names of common.py used here"


@functools.cache
def render_common() -> str:
    """common.py: the same text for every case, so writing it for one case
    never changes another's launches."""
    from porter import __version__

    source = (_template_dir() / "helpers.py.j2").read_text()
    return render(
        "common.py.j2",
        porter_version=__version__,
        helpers=re.findall(r"\{% macro (\w+)\(\) %\}", source),
        looped_block_cols=LOOPED_MAX_BLOCK,
        looped_min_row_bytes=LOOPED_MIN_ROW_BYTES,
    )


@functools.cache
def common_names() -> frozenset[str]:
    """The public names common.py defines."""
    return frozenset(
        name
        for name in _top_level_names(ast.parse(render_common()))
        if not name.startswith("_")
    )


def _top_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


_STDLIB = {"math", "operator"}  # modules a launcher may call unimported


def render_kernel(scaffold: Scaffold) -> str:
    """A scaffold's kernel.py, importing from common.py the names it uses."""
    fields = {f.name: getattr(scaffold, f.name) for f in dataclasses.fields(scaffold)}
    text = todo_comments(
        render_text("kernel.py.j2", **fields, common_import=_COMMON_IMPORT)
    )
    # Read off the rendered code, so the import can neither miss a name nor
    # carry an unused one, whichever pass or template branch added it.
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        raise PorterError(
            f"porter generated invalid Python for kernel.py ({err}); please report it"
        ) from err
    unused = _unused_sizes(tree)
    if unused:
        lines = text.split("\n")
        text = "\n".join(l for i, l in enumerate(lines, 1) if i not in unused)
        tree = ast.parse(text)
    unpacked = _unpacked_shapes(text, tree)
    if unpacked != text:
        text, tree = unpacked, ast.parse(unpacked)
    tidied = _tidy_size_arithmetic(text, tree)
    if tidied != text:
        text, tree = tidied, ast.parse(tidied)
    split = _split_long_loads(text, tree)
    if split != text:
        text, tree = split, ast.parse(split)
    loaded, bound = set(), _top_level_names(tree)
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)  # a parameter that happens to share a name
    used = sorted((loaded - bound) & common_names())
    line = f"from ..common import {', '.join(used)}" if used else ""
    # Inductor's size arithmetic can call math (math.floor(math.log2(n))).
    imported = {
        a.asname or a.name
        for n in tree.body
        if isinstance(n, ast.Import)
        for a in n.names
    }
    stdlib = sorted((loaded - bound - imported) & _STDLIB)
    if stdlib:
        line = "".join(f"import {m}\n" for m in stdlib) + "\n" + line
    return format_python(text.replace(_COMMON_IMPORT, line), "kernel.py.j2")


def _unused_sizes(tree: ast.Module) -> set[int]:
    """The lines of `name = t.shape[i]` a function binds but never reads (a
    dim the launcher names for no check or launch of this kernel)."""
    out = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        read = {
            n.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        for stmt in fn.body:
            size = _size_read(stmt)
            if size is not None and size[0] not in read:
                out.add(stmt.lineno)
    return out


def _size_read(stmt: ast.stmt) -> tuple[str, ast.Subscript] | None:
    """(name, `t.shape[...]`) of a one-line `name = t.shape[...]`."""
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Subscript)
        and isinstance(stmt.value.value, ast.Attribute)
        and stmt.value.value.attr == "shape"
        and stmt.lineno == stmt.end_lineno
    ):
        return stmt.targets[0].id, stmt.value
    return None


def _ranks(fn: ast.FunctionDef) -> dict[str, int]:
    """The rank each tensor is checked to have (`if x.dim() != 2`, or
    `if (x.dim(), w.dim()) != (2, 1)`) before the function reads its shape."""
    out = {}
    for node in ast.walk(fn):
        if not (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.NotEq)
        ):
            continue
        left, right = node.left, node.comparators[0]
        pairs = (
            zip(left.elts, right.elts)
            if isinstance(left, ast.Tuple) and isinstance(right, ast.Tuple)
            else [(left, right)]
        )
        for call, rank in pairs:
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "dim"
                and isinstance(call.func.value, ast.Name)
                and isinstance(rank, ast.Constant)
            ):
                out[call.func.value.id] = rank.value
    return out


def _shape_axis(stmt: ast.stmt) -> tuple[str, str, int] | None:
    """(name, tensor, axis) of `name = tensor.shape[axis]`."""
    size = _size_read(stmt)
    if size is None:
        return None
    name, read = size
    if isinstance(read.value.value, ast.Name) and isinstance(read.slice, ast.Constant):
        return name, read.value.value.id, read.slice.value
    return None


def _unpacked_shapes(text: str, tree: ast.Module) -> str:
    """`num_tokens = x.shape[0]`, `hidden = x.shape[1]` as `num_tokens, hidden =
    x.shape`, as hand-written launchers read, where they name every axis of a
    tensor whose rank the function checked before."""
    lines = text.split("\n")
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        ranks = _ranks(fn)
        body = fn.body
        i = 0
        while i < len(body):
            first = _shape_axis(body[i])
            if first is None or first[2] != 0 or first[1] not in ranks:
                i += 1
                continue
            tensor, n = first[1], ranks[first[1]]
            run = body[i : i + n]
            axes = [_shape_axis(s) for s in run]
            if (
                n > 1
                and len(run) == n
                and all(
                    a is not None and a[1] == tensor and a[2] == k
                    for k, a in enumerate(axes)
                )
            ):
                indent = lines[run[0].lineno - 1][: run[0].col_offset]
                names = ", ".join(a[0] for a in axes)
                lines[run[0].lineno - 1] = f"{indent}{names} = {tensor}.shape"
                for s in run[1:]:
                    lines[s.lineno - 1] = None
                i += n
            else:
                i += 1
    return "\n".join(l for l in lines if l is not None)


class _Minus(ast.NodeTransformer):
    """`a + -1 * b` (Inductor's sympy printing) as `a - b`."""

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


def _tidy_size_arithmetic(text: str, tree: ast.Module) -> str:
    """A launcher's size arithmetic as written by hand: `head_dim - head_dim
    // 2` for Inductor's `(head_dim + -1 * (head_dim // 2))`, without the
    parentheses around a whole argument. Launchers only: the kernels' own
    arithmetic is what they compile."""
    lines = text.split("\n")
    edits = []  # (line, start, end, text)
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or any(
            "jit" in ast.unparse(d) for d in fn.decorator_list
        ):
            continue
        arith = {
            id(n)
            for n in ast.walk(fn)
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
            for n in ast.walk(fn)
            if id(n) in arith
            for c in ast.walk(n)
            if c is not n
        }
        for n in ast.walk(fn):
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
            new = ast.unparse(
                _Minus().visit(ast.parse(ast.unparse(n), mode="eval").body)
            )
            if new != line[start:end]:
                edits.append((n.lineno - 1, start, end, new))
    for row, start, end, new in sorted(edits, reverse=True):
        lines[row] = lines[row][:start] + new + lines[row][end:]
    return "\n".join(lines)


LINE = 88  # black's line length


def _split_long_loads(text: str, tree: ast.Module) -> str:
    """`x = tl.load(...).to(tl.float32)` too long for a line as two where the
    load alone fits: the load, then `x = x.to(tl.float32)`, as hand-written
    kernels read (black would break it inside `.to(...)`)."""
    lines = text.split("\n")
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.lineno == node.end_lineno
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "to"
            and isinstance(node.value.func.value, ast.Call)
            and ast.unparse(node.value.func.value.func) == "tl.load"
            and not node.value.keywords
            and len(lines[node.lineno - 1]) > LINE
            # a comment after it would be lost
            and not lines[node.lineno - 1][node.end_col_offset :].strip()
        ):
            continue
        name, indent = node.targets[0].id, " " * node.col_offset
        load = ast.unparse(node.value.func.value)
        if len(f"{indent}{name} = {load}") > LINE:
            continue  # black breaks the load itself: one statement reads better
        cast = ", ".join(ast.unparse(a) for a in node.value.args)
        lines[node.lineno - 1] = (
            f"{indent}{name} = {load}\n{indent}{name} = {name}.to({cast})"
        )
    return "\n".join(lines)


def format_python(text: str, what: str = "generated file") -> str:
    try:
        return black.format_str(text, mode=black.Mode())
    except black.InvalidInput as err:
        raise PorterError(
            f"porter generated invalid Python for {what} ({err}); please report it"
        ) from err
