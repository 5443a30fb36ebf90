"""Kernel parameters named like a launch keyword renamed (rename_launch_keywords)."""

from __future__ import annotations

import ast

from porter.ast_tools import rename_names, unique_name
from porter.port.model import KernelPort

# The keywords a Triton launch takes for itself beside the kernel's arguments:
# run()'s own (grid, warmup) and the compile options (num_warps, debug, ...).
LAUNCH_KEYWORDS = frozenset(
    {
        "grid",
        "warmup",
        "num_warps",
        "num_ctas",
        "num_stages",
        "maxnreg",
        "enable_fp_fusion",
        "launch_cooperative_grid",
        "launch_pdl",
        "debug",
        "sanitize_overflow",
        "extern_libs",
        "stream",
        "device",
    }
)


def rename_launch_keywords(kp: KernelPort) -> None:
    """A kernel parameter named like one of Triton's launch keywords (a
    reference argument `warmup: float`, a dim called `grid`) is called
    `<name>_value`, in the kernel and where the launcher passes it: Triton
    took the name for its own keyword (`got multiple values for keyword
    argument 'warmup'`)."""
    clashes = [p for p in kp.params if p.name in LAUNCH_KEYWORDS]
    if not clashes:
        return
    taken = {p.name for p in kp.params} | {
        n.id for n in ast.walk(kp.tree) if isinstance(n, ast.Name)
    }
    mapping = {}
    for p in clashes:
        new = f"{p.name}_value"
        if new in taken:
            new = unique_name(new, taken)
        taken.add(new)
        mapping[p.name] = new
        p.name = new
    rename_names(kp.tree, mapping)
    kp.notes.append(
        "renamed "
        + ", ".join(f"{a} -> {b}" for a, b in mapping.items())
        + ": Triton's launch takes those names as its own keywords"
    )
