"""What the rules look at: a parsed file's kernels, their parameters and launch sites.

Parsing only; nothing here is imported or executed. Kernel bodies are analyzed
further in `dataflow`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from porter.ast_tools import arg_names, keyword
from porter.lint import names

# The conventional aliases, assumed when a file does not import them (snippets), and
# kept when a project re-exports them (`from vllm.triton_utils import tl, triton`).
_DEFAULT_ALIASES = {
    "tl": "triton.language",
    "triton": "triton",
    "libdevice": "triton.language.extra.libdevice",
}

POINTER = "pointer"
CONSTEXPR = "constexpr"
FLOAT = "float"
INT = "int"

_FLOAT_DTYPES = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "fp16",
    "bf16",
    "fp32",
    "fp64",
    "float",
}
_BOOL_DTYPES = {"int1", "bool", "u1", "i1"}
_WIDE_DTYPES = {"int64", "uint64", "i64", "u64"}
_MEMORY_CALLS = {
    "load",
    "store",
    "make_block_ptr",
    "make_tensor_descriptor",
    "prefetch",
}


class Aliases:
    """Maps local names to canonical dotted names (`tl.load` -> `triton.language.load`)."""

    def __init__(self, tree: ast.Module):
        self.roots = dict(_DEFAULT_ALIASES)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.roots[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.roots[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    local = a.asname or a.name
                    if a.name in _DEFAULT_ALIASES and not node.module.startswith(
                        "triton"
                    ):
                        self.roots[local] = _DEFAULT_ALIASES[a.name]
                    else:
                        self.roots[local] = f"{node.module}.{a.name}"

    def canon(self, expr: ast.AST) -> str | None:
        parts = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        root = self.roots.get(expr.id, expr.id)
        return ".".join([root, *reversed(parts)])

    def tl_name(self, expr: ast.AST) -> str | None:
        """`load` for `tl.load`, `exp` for `tl.math.exp` or `libdevice.exp`; None otherwise."""
        name = self.canon(expr)
        if name and name.startswith("triton.language."):
            return name.rsplit(".", 1)[1]
        return None

    def dtype(self, expr: ast.AST | None) -> str | None:
        """`int64` for `tl.int64` or "int64"; `element_ty` for `p.dtype.element_ty`."""
        if expr is None:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return expr.value
        if isinstance(expr, ast.Attribute) and expr.attr in ("element_ty", "dtype"):
            return "element_ty"
        return self.tl_name(expr)


@dataclass
class Param:
    name: str
    index: int
    node: ast.arg
    kind: str  # POINTER, CONSTEXPR, FLOAT or INT
    dtype: str = ""  # annotated Triton dtype, e.g. "int64", "float32"; "" when none

    @property
    def annotated(self) -> bool:
        return bool(self.dtype)

    @property
    def is_wide(self) -> bool:
        return self.dtype in _WIDE_DTYPES

    @property
    def is_bool(self) -> bool:
        # Triton does not specialize u1 (bool) parameters.
        return self.dtype in _BOOL_DTYPES


@dataclass
class Kernel:
    name: str  # the name launch sites use
    func: ast.FunctionDef
    jit: ast.AST  # the `triton.jit` decorator or call
    options: dict[str, ast.expr]  # keyword options given to triton.jit
    autotune: ast.AST | None = None
    heuristics: ast.AST | None = None
    # Names autotune configs or heuristics supply: compile-time by construction.
    meta_params: set[str] = field(default_factory=set)
    params: list[Param] = field(default_factory=list)

    @property
    def do_not_specialize(self) -> set[str]:
        return self._name_list("do_not_specialize")

    def _name_list(self, option: str) -> set[str]:
        value = self.options.get(option)
        out: set[str] = set()
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            for elt in value.elts:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    out.add(elt.value)
                elif isinstance(elt, ast.Constant) and isinstance(elt.value, int):
                    if 0 <= elt.value < len(self.params):
                        out.add(self.params[elt.value].name)
        return out

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


@dataclass
class Scope:
    """Python-side name resolution in a launcher: local assignments, flow-insensitive."""

    assigns: dict[str, list[ast.expr]]
    parent: Scope | None = None

    def values(self, name: str) -> list[ast.expr]:
        if name in self.assigns:
            return self.assigns[name]
        return self.parent.values(name) if self.parent else []


@dataclass
class Launch:
    kernel: str
    node: ast.Subscript  # `kernel[grid]`
    call: ast.Call
    grid: list[ast.expr] | None  # grid elements, None when they cannot be resolved
    launcher: ast.FunctionDef | None
    scope: Scope


@dataclass
class Module:
    path: str
    source: str
    tree: ast.Module
    aliases: Aliases
    kernels: list[Kernel]
    launches: list[Launch]
    functions: dict[str, ast.FunctionDef]


def parse_module(
    source: str, path: str, known_kernels: set[str] = frozenset()
) -> Module:
    """Parse `source`; raises SyntaxError."""
    tree = ast.parse(source, filename=path)
    aliases = Aliases(tree)
    functions = {
        n.name: n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    kernels = _find_kernels(tree, aliases, functions)
    for k in kernels:
        k.params = _classify_params(k, aliases, functions)
    module = Module(path, source, tree, aliases, kernels, [], functions)
    find_launches(module, known_kernels)
    return module


def find_launches(module: Module, known_kernels: set[str] = frozenset()) -> None:
    """(Re)collect launch sites, counting kernels defined in other files too."""
    names_ = {k.name for k in module.kernels} | set(known_kernels)
    module.launches = _find_launches(module.tree, names_)


# -- kernels ----------------------------------------------------------------


def _decorator_kind(node: ast.AST, aliases: Aliases) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    name = aliases.canon(target) or ""
    for kind in ("jit", "autotune", "heuristics"):
        if name in (
            f"triton.{kind}",
            f"triton.runtime.{kind}",
            f"triton.runtime.jit.{kind}",
        ):
            return kind
    return None


def _find_kernels(tree: ast.Module, aliases: Aliases, functions: dict) -> list[Kernel]:
    kernels: list[Kernel] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            parts = {}
            for dec in node.decorator_list:
                kind = _decorator_kind(dec, aliases)
                if kind:
                    parts.setdefault(kind, dec)
            if "jit" in parts:
                kernels.append(_make_kernel(node.name, node, parts))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            # Functional form: `k = triton.autotune(...)(triton.jit(fn, ...))`.
            target = node.targets[0]
            if not isinstance(target, ast.Name):
                continue
            parts = {}
            fn = _unwrap_functional(node.value, aliases, parts)
            if fn in functions and "jit" in parts:
                kernels.append(_make_kernel(target.id, functions[fn], parts))
    return kernels


def _unwrap_functional(expr: ast.AST, aliases: Aliases, parts: dict) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if not isinstance(expr, ast.Call):
        return None
    if isinstance(expr.func, ast.Call):  # factory(...)(inner)
        kind = _decorator_kind(expr.func, aliases)
        if kind and expr.args:
            parts.setdefault(kind, expr.func)
            return _unwrap_functional(expr.args[0], aliases, parts)
        return None
    kind = _decorator_kind(expr, aliases)
    if kind == "jit" and expr.args:  # triton.jit(fn, do_not_specialize=...)
        parts.setdefault("jit", expr)
        return _unwrap_functional(expr.args[0], aliases, parts)
    return None


def _make_kernel(name: str, func: ast.FunctionDef, parts: dict) -> Kernel:
    jit = parts["jit"]
    options = (
        {kw.arg: kw.value for kw in jit.keywords if kw.arg}
        if isinstance(jit, ast.Call)
        else {}
    )
    kernel = Kernel(
        name, func, jit, options, parts.get("autotune"), parts.get("heuristics")
    )
    kernel.meta_params = _meta_params(kernel)
    return kernel


def _meta_params(kernel: Kernel) -> set[str]:
    """Names autotune configs or heuristics supply: compile-time by construction."""
    out: set[str] = set()
    for dec in (kernel.autotune, kernel.heuristics):
        if not isinstance(dec, ast.Call):
            continue
        for node in ast.walk(dec):
            if isinstance(node, ast.Dict):
                out |= {
                    k.value
                    for k in node.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                }
    return out


# -- parameters -------------------------------------------------------------


def _annotation_dtype(ann: ast.expr | None, aliases: Aliases) -> str:
    if ann is None:
        return ""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        text = ann.value.strip()
        if text.startswith("*") or "pointer" in text:
            return "pointer"
        return text.rsplit(".", 1)[-1]
    if isinstance(ann, ast.Call) and (aliases.tl_name(ann.func) or "") in (
        "pointer_type",
        "block_type",
    ):
        return "pointer"
    if isinstance(ann, ast.Name) and ann.id in ("int", "float", "bool"):
        return {"int": "int32", "float": "float32", "bool": "int1"}[ann.id]
    return aliases.tl_name(ann) or ast.unparse(ann)


def _classify_params(
    kernel: Kernel, aliases: Aliases, functions: dict | None = None
) -> list[Param]:
    args = kernel.func.args
    all_args = args.posonlyargs + args.args + args.kwonlyargs
    pointer_uses = _pointer_bases(kernel.func, aliases, functions or {}, {})
    in_offsets = _offset_names(kernel.func, aliases)
    params = []
    for i, a in enumerate(all_args):
        dtype = _annotation_dtype(a.annotation, aliases)
        if "constexpr" in dtype or a.arg in kernel.meta_params:
            kind = CONSTEXPR
        elif (
            dtype == "pointer" or names.is_pointer_name(a.arg) or a.arg in pointer_uses
        ):
            kind = POINTER
        elif dtype in _FLOAT_DTYPES or (
            # a name like `output_scale_stride_k` that offsets a pointer is an integer
            not dtype
            and names.is_float_scalar_name(a.arg)
            and not names.is_stride_name(a.arg)
            and a.arg not in in_offsets
        ):
            kind = FLOAT
        else:
            kind = INT
        params.append(Param(a.arg, i, a, kind, "" if dtype in ("pointer",) else dtype))
    return params


def _assigns(func: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    assigns: dict[str, list[ast.expr]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigns.setdefault(t.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            assigns.setdefault(node.target.id, []).append(node.value)
    return assigns


def _offset_names(func: ast.FunctionDef, aliases: Aliases) -> set[str]:
    """Every name inside the pointer argument of a load or store, through assignments."""
    assigns = _assigns(func)
    out: set[str] = set()
    todo = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and (aliases.tl_name(node.func) or "") in (
            "load",
            "store",
        ):
            if node.args:
                todo.append(node.args[0])
    while todo:
        for n in ast.walk(todo.pop()):
            if isinstance(n, ast.Name) and n.id not in out:
                out.add(n.id)
                todo += assigns.get(n.id, [])
    return out


def _pointer_bases(
    func: ast.FunctionDef, aliases: Aliases, functions: dict, memo: dict
) -> set[str]:
    """Parameters used as the base of a loaded/stored pointer, asked for
    `.dtype.element_ty`, or passed where a helper of this file takes a pointer."""
    if func.name in memo:
        return memo[func.name]
    memo[func.name] = set()  # a recursive call sees no pointers rather than looping
    params = set(arg_names(func))
    assigns = _assigns(func)
    bases: set[str] = set()

    def add(ptr: ast.expr) -> None:
        cands = _additive_params(ptr, params, assigns, set())
        named = [c for c in cands if names.is_pointer_name(c)]
        if named or cands:
            bases.add((named or cands)[0])

    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            fn = aliases.tl_name(node.func) or ""
            if fn in _MEMORY_CALLS or fn.startswith("atomic_"):
                ptr = (
                    node.args[0]
                    if node.args
                    else keyword(node, "pointer", "base", "ptr")
                )
                if ptr is not None:
                    add(ptr)
            elif isinstance(node.func, ast.Name) and node.func.id in functions:
                helper = functions[node.func.id]
                taken = _pointer_bases(helper, aliases, functions, memo)
                formal = arg_names(helper)
                for i, arg in enumerate(node.args):
                    if i < len(formal) and formal[i] in taken:
                        add(arg)
                for kw in node.keywords:
                    if kw.arg in taken:
                        add(kw.value)
        elif isinstance(node, ast.Attribute) and node.attr == "element_ty":
            inner = node.value
            if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name):
                bases.add(inner.value.id)
    memo[func.name] = bases & params
    return memo[func.name]


def _additive_params(
    expr: ast.AST, params: set[str], assigns: dict, seen: set
) -> list[str]:
    """Parameters in additive position of a pointer expression (not inside a product)."""
    if isinstance(expr, ast.Name):
        if expr.id in params:
            return [expr.id]
        if expr.id in seen:
            return []
        seen.add(expr.id)
        out = []
        for value in assigns.get(expr.id, []):
            out += _additive_params(value, params, assigns, seen)
        return out
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        return _additive_params(expr.left, params, assigns, seen) + _additive_params(
            expr.right, params, assigns, seen
        )
    if isinstance(expr, ast.Subscript):
        return _additive_params(expr.value, params, assigns, seen)
    if isinstance(expr, ast.IfExp):
        return _additive_params(expr.body, params, assigns, seen) + _additive_params(
            expr.orelse, params, assigns, seen
        )
    if (
        isinstance(expr, ast.Call)
        and expr.args
        and isinstance(expr.func, ast.Attribute)
    ):
        if expr.func.attr in ("advance", "make_block_ptr"):
            return _additive_params(expr.args[0], params, assigns, seen)
    return []


# -- launch sites -----------------------------------------------------------


def _looks_like_kernel(name: str, kernel_names: set[str]) -> bool:
    return name in kernel_names or "kernel" in name.lower()


def _find_launches(tree: ast.Module, kernel_names: set[str]) -> list[Launch]:
    launches: list[Launch] = []
    module_scope = Scope(_collect_assigns(tree.body))

    def visit(
        body_owner: ast.AST, launcher: ast.FunctionDef | None, scope: Scope
    ) -> None:
        for node in ast.iter_child_nodes(body_owner):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                local = Scope(_collect_assigns(node.body), scope)
                # A launcher's own parameters shadow module names.
                for a in args.posonlyargs + args.args + args.kwonlyargs:
                    local.assigns.setdefault(a.arg, [])
                visit(node, node, local)
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
                sub = node.func
                target = sub.value
                name = (
                    target.id
                    if isinstance(target, ast.Name)
                    else getattr(target, "attr", None)
                )
                if name and _looks_like_kernel(name, kernel_names):
                    grid = _resolve_grid(sub.slice, scope, set())
                    launches.append(Launch(name, sub, node, grid, launcher, scope))
            visit(node, launcher, scope)

    visit(tree, None, module_scope)
    return launches


def _collect_assigns(body: list[ast.stmt]) -> dict[str, list[ast.expr]]:
    """Assignments in a function body (not in nested functions); tuple unpacking of
    `x.shape` maps each name to `x.shape[i]`."""
    out: dict[str, list[ast.expr]] = {}

    def add(target: ast.AST, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            out.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(
                target.elts
            ):
                for t, v in zip(target.elts, value.elts):
                    add(t, v)
                return
            for i, t in enumerate(target.elts):
                if isinstance(t, ast.Starred):
                    break
                element = ast.Subscript(
                    value=value, slice=ast.Constant(i), ctx=ast.Load()
                )
                ast.copy_location(element, value)
                add(t, element)

    def walk(nodes: list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            ):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.setdefault(node.name, []).append(node)  # grid functions
                continue
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    add(t, node.value)
            elif (
                isinstance(node, (ast.AnnAssign, ast.AugAssign))
                and node.value is not None
            ):
                add(node.target, node.value)
            elif isinstance(node, ast.NamedExpr):
                add(node.target, node.value)
            walk(list(ast.iter_child_nodes(node)))

    walk(body)
    return out


def _resolve_grid(expr: ast.AST, scope: Scope, seen: set[str]) -> list[ast.expr] | None:
    """The grid's elements: from a tuple, a lambda, a grid function, or a name bound to one."""
    if isinstance(expr, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in expr.elts):
            return None
        return list(expr.elts)
    if isinstance(expr, ast.Lambda):
        return _resolve_grid(expr.body, scope, seen)
    if isinstance(expr, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for node in ast.walk(expr):
            if isinstance(node, ast.Return) and node.value is not None:
                return _resolve_grid(node.value, scope, seen)
        return None
    if isinstance(expr, ast.Name) and expr.id not in seen:
        seen.add(expr.id)
        values = scope.values(expr.id)
        if len(values) == 1:
            return _resolve_grid(values[0], scope, seen)
    if isinstance(expr, ast.expr) and not isinstance(
        expr, (ast.Name, ast.Call, ast.Subscript)
    ):
        return [expr]  # a bare expression is a 1-D grid
    return None
