"""ModelNew's class body for a KernelBench or KernelBook reference: the
model class's own __init__, class attributes and methods but forward, read
from the reference file (not from the live class, whose methods Dynamo may
have patched), with `super(Model, self)` made `super()` and the file's
module-level helpers they name carried along."""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from pathlib import Path

import torch

from porter.errors import PorterError

# Names a scaffold defines itself (its imports).
_PROVIDED = {"torch", "nn", "triton", "tl"}


# ModelNew's own methods: Model's are not copied over them.
_OWN = {"forward", "as_op"}


def model_init(source: str, path: Path, name: str = "Model") -> tuple[str, list[str]]:
    """(ModelNew's class body but forward: Model's __init__, class attributes
    (ResNet's `expansion = 1`) and other methods; or "", the module-level
    definitions they need)."""
    tree = ast.parse(source)
    model = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name),
        None,
    )
    if model is None:
        raise PorterError(f"{path}: no `class {name}` at the top level of the file")
    members = [
        n
        for i, n in enumerate(model.body)
        if not (i == 0 and isinstance(n, ast.Expr))  # its docstring
        and not (isinstance(n, ast.FunctionDef) and n.name in _OWN)
    ]
    if not members:
        return "", []  # nn.Module's own constructor
    needed = _helpers(tree, members, source, name)
    # The file's own text (its comments and number spellings), dedented.
    text = "\n".join(textwrap.dedent(_segment(source, n)) for n in members)
    # super(Model, self): ModelNew is not a Model.
    own_super = re.compile(rf"\bsuper\(\s*{re.escape(name)}\s*,\s*self\s*\)")
    return own_super.sub("super()", text), needed


def model_base(model: type, path: Path) -> str:
    """The class ModelNew subclasses, as the scaffold spells it: Model's own
    base where it is torch.nn's (CLIP's LayerNorm(nn.LayerNorm), OPT's
    positional embedding(nn.Embedding): their constructor and parameters)."""
    bases = [b for b in model.__bases__ if b is not object]
    if bases == [torch.nn.Module] or not bases:
        return "nn.Module"
    base = bases[0]
    if len(bases) == 1 and getattr(torch.nn, base.__name__, None) is base:
        return f"nn.{base.__name__}"
    names = ", ".join(b.__name__ for b in bases)
    raise PorterError(
        f"{path}: Model subclasses {names}, which the scaffold cannot hold "
        "(its ModelNew subclasses nn.Module or one torch.nn module); nothing "
        "was written: make Model subclass one of those"
    )


def _segment(source: str, node: ast.stmt) -> str:
    """A statement's source text, decorators included, indented as in the file."""
    lines = source.splitlines(keepends=True)
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(lines[first - 1 : node.end_lineno])


def _free_names(node: ast.AST) -> set[str]:
    bound = {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
    bound |= {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    used = {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return used - bound - set(dir(builtins)) - _PROVIDED


def _helpers(
    tree: ast.Module, members: list[ast.stmt], source: str, model: str
) -> list[str]:
    """Top-level statements of the file that define the names `members` use,
    and those they use in turn, in file order. Imports come as they are; a
    name the file does not define is left to fail where it is used."""
    defines: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        for name in _defined(stmt):
            defines.setdefault(name, stmt)
    wanted: list[ast.stmt] = []
    # Model itself is named only by super(Model, self), which becomes super().
    used = set().union(*(_free_names(m) for m in members))
    todo = list(used - {model})
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in defines:
            continue
        seen.add(name)
        stmt = defines[name]
        if stmt not in wanted:
            wanted.append(stmt)
            if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                todo.extend(_free_names(stmt))
    order = {id(s): i for i, s in enumerate(tree.body)}
    wanted.sort(key=lambda s: order[id(s)])
    return [_segment(source, s).strip() for s in wanted]


def _defined(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    if isinstance(stmt, ast.Assign):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    return []
