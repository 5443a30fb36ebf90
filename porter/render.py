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
    _refuse_clobbered_arguments(tree, scaffold.launcher.name)
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
    line = _packed_import("..common", used)
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


# Reads of an argument that take only its metadata (an output allocated with
# its dtype and device), not its values.
_METADATA = {"dtype", "device", "shape", "ndim", "element_size", "stride", "dim"}


def _reads_values(node: ast.AST, name: str) -> bool:
    """Whether `node` reads `name` (or the launcher's `<name>_given`) for more
    than its metadata."""
    parents = {id(c): p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in (name, f"{name}_given"):
            up = parents.get(id(n))
            if not (isinstance(up, ast.Attribute) and up.attr in _METADATA):
                return True
    return False


def _refuse_clobbered_arguments(tree: ast.Module, launcher: str) -> None:
    """The launcher (`launcher`, or a KernelBench module's forward) must not
    bind an argument's name to a value of its own (an output named `out`,
    `pdl`, `kernel`, `launch`): the lines after would read that value where
    the reference's argument was meant. A relayout of the argument (`x =
    x.contiguous()`, `out = strided_as(out_given, ...)`) is the argument
    still. The reference's own code the scaffold keeps (a module's
    __init__) is its business."""
    # ModelNew's forward, not the forward of a class the reference's own code
    # brought along (SwinMLP's blocks reassign x)
    owners = [tree] + [
        c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "ModelNew"
    ]
    for fn in [f for owner in owners for f in owner.body]:
        if not isinstance(fn, ast.FunctionDef) or fn.name != launcher:
            continue
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs} - {"self"}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.For):
                targets, value = [node.target], node.iter
            else:
                continue
            for target in targets:
                for n in ast.walk(target):
                    if (
                        isinstance(n, ast.Name)
                        and n.id in params
                        and not _reads_values(value, n.id)
                    ):
                        raise PorterError(
                            f"the reference's argument `{n.id}` has a name the scaffold's "
                            f"launcher gives a value of its own (`{ast.unparse(node).splitlines()[0]}`); "
                            "rename the argument in the reference and capture again"
                        )


LINE = 88  # black's line length


def _packed_import(module: str, names: list[str]) -> str:
    """`from module import ...` lines filled up to LINE: black would list a
    long import one name a line, a dozen lines of a scaffold saying little."""
    lines, head = [], f"from {module} import "
    for name in names:
        if lines and len(lines[-1]) + 2 + len(name) <= LINE:
            lines[-1] += f", {name}"
        else:
            lines.append(head + name)
    return "\n".join(lines)


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
