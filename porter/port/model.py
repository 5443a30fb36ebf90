"""The state one kernel carries through the port passes."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from porter.records import Binding, KernelRecord, Step


@dataclass
class Param:
    """One parameter of the ported kernel.

    kind: "pointer" | "runtime" (int that varies per call: do_not_specialize) |
    "model" (int fixed per model: constexpr) | "stride" (int64 row stride) |
    "block" (constexpr block size the launcher picks).
    value: the launcher expression passed for it.
    """

    name: str
    kind: str
    value: str
    annotation: str = ""
    original: str = ""
    view: str = ""  # launcher expression creating the view this pointer needs


@dataclass
class KernelPort:
    record: KernelRecord
    launch: Step | None
    tree: ast.FunctionDef | None = None
    names: dict[str, str] = field(default_factory=dict)  # original param -> new name
    params: list[Param] = field(default_factory=list)
    bindings: dict[str, Binding] = field(default_factory=dict)
    pointer_dtype: dict[str, str] = field(
        default_factory=dict
    )  # new ptr name -> "*fp32"
    helpers: set[str] = field(default_factory=set)
    # Inductor's own combine functions for tl.associative_scan / tl.reduce
    # (`_triton_helper_fn_add0`), renamed and carried into the scaffold.
    combine_fns: list[ast.FunctionDef] = field(default_factory=list)
    uses_libdevice: bool = False
    notes: list[str] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)
    capture_dtype: str = "float32"
    static_sizes: dict[str, int] = field(default_factory=dict)  # name -> literal it had
    # The row-in-registers form of a looped reduction (porter.port.persist);
    # `tree` then stays as the looped kernel for rows too wide for registers.
    persistent: ast.FunctionDef | None = None
    looped_name: str = ""
    # A single-pass form of the looped kernel (porter.port.online), which the
    # launcher takes for many very wide rows.
    online: ast.FunctionDef | None = None
    # (K param, K launcher expr, rows launcher expr) of a (rows, cols) launch
    # (porter.port.tile); None keeps the flat 1-D launch.
    tile: tuple[str, str, str] | None = None
    # Names of the per-call dims (num_tokens): a flat kernel's element count
    # splits into them and per-model sizes (porter.port.tile).
    runtime_dims: frozenset[str] = frozenset()
    # Record names of the kernels fused into this one (porter.port.fuse); their
    # launches are this kernel's.
    fused: list[str] = field(default_factory=list)
    # The matmul-and-epilogue form of a tile kernel after a matmul
    # (porter.port.matmul), launched instead of both for small matmuls.
    matmul: ast.FunctionDef | None = None

    @property
    def name(self) -> str:
        return self.tree.name if self.tree is not None else self.record.name


def module_attr(target: str) -> str:
    """The launcher expression for a module's parameter or buffer by its
    state-dict name: `net.0.weight` (inside an nn.Sequential) is
    `self.net[0].weight`."""
    parts = [f"[{p}]" if p.isdigit() else f".{p}" for p in target.split(".")]
    return "self" + "".join(parts)
