"""What every rule receives: one parsed file and the dataflow of each kernel in it."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from porter.lint.dataflow import Flow, analyze
from porter.lint.source import POINTER, Kernel, Module


@dataclass
class KernelContext:
    kernel: Kernel
    flow: Flow
    helper: (
        bool  # called from other kernels rather than launched: no launch-argument rules
    )


@dataclass
class Context:
    module: Module
    kernels: list[KernelContext]

    @classmethod
    def build(cls, module: Module, helpers: set[str] = frozenset()) -> Context:
        """`helpers`: kernels called from kernels in other files (see `helper_names`)."""
        helpers = set(helpers) | helper_names([module])
        kernels = []
        for k in module.kernels:
            # A launched kernel needs a pointer to write its result and returns
            # nothing; without one, or returning a value, it is a helper that
            # other kernels call (Inductor's triton_helpers, porter's bucketize).
            helper = (
                k.name in helpers
                or not any(p.kind == POINTER for p in k.params)
                or _returns_value(k.func)
            )
            fp32 = frozenset() if helper else fp32_pointers(module, k)
            flow = analyze(k, module.aliases, helper, fp32)
            kernels.append(KernelContext(k, flow, helper))
        return cls(module, kernels)


def helper_names(modules: list[Module]) -> set[str]:
    """Jit functions called as functions inside kernels and never launched with a grid."""
    called: set[str] = set()
    launched: set[str] = set()
    for m in modules:
        launched |= {launch.kernel for launch in m.launches}
        for k in m.kernels:
            for node in ast.walk(k.func):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    called.add(node.func.id)
    return called - launched


_FP32 = {"torch.float32", "torch.float", "float32"}


def _is_fp32_tensor(expr: ast.AST, scope, seen: frozenset = frozenset()) -> bool:
    """`torch.empty(..., dtype=torch.float32)`, `x.float()`, `x.to(torch.float32)`,
    or a name the launcher bound to one."""
    if isinstance(expr, ast.Name):
        if expr.id in seen:
            return False
        values = [v for v in scope.values(expr.id) if isinstance(v, ast.expr)]
        return bool(values) and all(
            _is_fp32_tensor(v, scope, seen | {expr.id}) for v in values
        )
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr == "float" and not expr.args:
        return True
    dtypes = [kw.value for kw in expr.keywords if kw.arg == "dtype"]
    if isinstance(func, ast.Attribute) and func.attr == "to" and expr.args:
        dtypes.append(expr.args[0])
    return any(ast.unparse(d) in _FP32 for d in dtypes)


def fp32_pointers(module: Module, kernel: Kernel) -> frozenset:
    """Pointer parameters that every launch site in the file passes an fp32 tensor."""
    launches = [x for x in module.launches if x.kernel == kernel.name]
    out = set()
    for p in kernel.params:
        if p.kind != POINTER or not launches:
            continue
        args = []
        for launch in launches:
            call = launch.call
            arg = call.args[p.index] if p.index < len(call.args) else None
            arg = next((k.value for k in call.keywords if k.arg == p.name), arg)
            args.append((arg, launch.scope))
        if all(a is not None and _is_fp32_tensor(a, sc) for a, sc in args):
            out.add(p.name)
    return frozenset(out)


def _returns_value(fn: ast.FunctionDef) -> bool:
    """A `return <value>` in fn (a jit function holds no nested function)."""
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn))
