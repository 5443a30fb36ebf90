"""Inductor's heuristics decorator and meta dropped (strip_heuristics)."""

from __future__ import annotations

import ast

from porter.ast_tools import rename_names
from porter.port.model import KernelPort


def strip_heuristics(kp: KernelPort) -> None:
    """Keep only the @triton.jit function: Inductor's heuristics decorator, its
    meta and imports go (the launcher chooses the config)."""
    tree = ast.parse(kp.record.source)
    fn = next(
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == kp.record.name
    )
    fn.decorator_list = []
    kp.tree = fn
    # A scan's or custom reduction's combine function is generated beside the
    # kernel (`_triton_helper_fn_add0`): keep it, under a readable name.
    renames = {}
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and n.name.startswith("_triton_helper_fn_"):
            new = "combine_" + n.name[len("_triton_helper_fn_") :]
            renames[n.name] = new
            n.name = new
            n.decorator_list = []
            kp.combine_fns.append(n)
    rename_names(fn, renames)
    kp.notes.append("dropped Inductor's @triton_heuristics decorator and its meta")
