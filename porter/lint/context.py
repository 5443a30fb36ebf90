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
            # A launched kernel needs a pointer to write its result; without one it is
            # a helper that other kernels call (Inductor's triton_helpers are like that).
            helper = k.name in helpers or not any(p.kind == POINTER for p in k.params)
            kernels.append(KernelContext(k, analyze(k, module.aliases, helper), helper))
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
