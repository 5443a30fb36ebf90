"""The state the port passes read and rewrite: one kernel's (KernelPort),
the whole port's (PortState), and the options a port runs under."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from porter.records import Binding, Capture, CompiledModule, KernelRecord, Step

if TYPE_CHECKING:
    from porter.port.launch.launcher import Launcher, LaunchStep


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
    # It calls a libdevice function of many instructions (tanh, not a rounding):
    # arithmetic, more than memory, bounds its blocks (tile_settings' heavy).
    heavy_math: bool = False
    notes: list[str] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)
    capture_dtype: str = "float32"
    static_sizes: dict[str, int] = field(default_factory=dict)  # name -> literal it had
    # The row-in-registers form of a looped reduction (porter.port.forms.persist);
    # `tree` then stays as the looped kernel for rows too wide for registers.
    persistent: ast.FunctionDef | None = None
    looped_name: str = ""
    # A single-pass form of the looped kernel (porter.port.forms.online), which the
    # launcher takes for many very wide rows.
    online: ast.FunctionDef | None = None
    # The looped kernel's launch split over each row for few wide rows
    # (porter.port.forms.split): (phases, partials a row and split); 0 phases
    # where it has none.
    split_launch: tuple[int, int] = (0, 0)
    # (K param, K launcher expr, rows launcher expr) of a (rows, cols) launch
    # (porter.port.speed.tile); None keeps the flat 1-D launch.
    tile: tuple[str, str, str] | None = None
    # Names of the per-call dims (num_tokens): a flat kernel's element count
    # splits into them and per-model sizes (porter.port.speed.tile).
    runtime_dims: frozenset[str] = frozenset()
    # Axes that grow with a per-call dim without being it (x of [2 * num_tokens, H]).
    runtime_axes: frozenset[tuple[str, int]] = frozenset()
    # Record names of the kernels fused into this one (porter.port.launch.fuse); their
    # launches are this kernel's.
    fused: list[str] = field(default_factory=list)
    # The matmul-and-epilogue form of a tile kernel after a matmul
    # (porter.port.launch.matmul), launched instead of both for small matmuls.
    matmul: ast.FunctionDef | None = None
    # The kernel whose code this one is under other names
    # (porter.port.finish.shared): the scaffold launches that one for it.
    same_as: str = ""

    @property
    def name(self) -> str:
        return self.tree.name if self.tree is not None else self.record.name

    def forms(self, matmul: bool = False) -> list[ast.FunctionDef]:
        """Its kernel forms in the scaffold's order: persistent, looped, online;
        with `matmul`, the matmul-and-epilogue form last."""
        forms = (self.persistent, self.tree, self.online)
        return [f for f in forms + ((self.matmul,) if matmul else ()) if f is not None]

    def strides_of(self, var: str) -> set[str]:
        """The stride parameters of the tensor the launcher calls `var`."""
        return {
            p.name
            for p in self.params
            if p.kind == "stride" and p.value.startswith(f"{var}.stride(")
        }

    def drop_params(self, names: set[str]) -> None:
        """The parameters `names` leave the kernel and every form of it (its
        launch step is the caller's)."""
        self.params = [p for p in self.params if p.name not in names]
        for form in self.forms(matmul=True):
            form.args.args = [a for a in form.args.args if a.arg not in names]


@dataclass(frozen=True)
class PortOptions:
    """Rules a port runs under; tools/port_variant.py writes a case under
    others, to time them against the generator's."""

    # A kernel right after an extern call (a cuBLAS matmul) launches with
    # programmatic dependent launch too. Off: behind a cuBLAS matmul it took
    # 0.92-1.10x the time at 1-256 tokens on an H200 (porter.port.finish.pdl).
    pdl_after_extern: bool = False
    # tl.dot's input precision for fp32 operands of a small matmul fused with
    # its epilogue (porter.port.launch.matmul): "tf32x3" (three TF32 products a term)
    # took 0.67-0.88 of Inductor's time at 128 -> 256 on an H200, "ieee" up to
    # 1.5x. None leaves fp32 to cuBLAS.
    matmul_fp32: str | None = "tf32x3"


@dataclass
class PortState:
    """What the whole-port passes read and rewrite (porter.port.pipeline)."""

    cap: Capture
    # The capture's one compiled graph (set by the first pass)
    module: CompiledModule | None
    ref_module: Any
    options: PortOptions
    kernels: list[KernelPort] = field(default_factory=list)
    launcher: "Launcher | None" = None
    # Notes on the whole port, after the kernels' own.
    notes: list[str] = field(default_factory=list)

    def steps(self) -> list["LaunchStep"]:
        """Every launcher step, with those nested in an if/else."""
        return list(all_steps(self.launcher.steps))

    def forms(self, shared: bool = False):
        """(kernel, form, the step that launches it) for every kernel form, in
        the order the scaffold holds them: persistent, looped, online, then
        a matmul form with its matmul step; with `shared`, the forms of
        kernels the scaffold launches another's code for too."""
        matmul = {s.kernel: s for s in self.steps() if s.kind == "matmul"}
        for kp, step in zip(self.kernels, self.launches()):
            if kp.same_as and not shared:
                continue
            for form in kp.forms():
                yield kp, form, step
            if kp.matmul is not None:
                yield kp, kp.matmul, matmul[kp.matmul.name]

    def launches(self) -> list["LaunchStep"]:
        """The launch steps, one a kernel, in the kernels' order."""
        steps = [s for s in self.steps() if s.kind == "launch"]
        assert len(steps) == len(self.kernels), "a launch step for each kernel"
        return steps


def all_steps(steps: list["LaunchStep"]):
    """Every launcher step, with those nested in an if/else (`otherwise`)."""
    for step in steps:
        yield step
        yield from all_steps(step.otherwise)


def module_attr(target: str) -> str:
    """The launcher expression for a module's parameter or buffer by its
    state-dict name: `net.0.weight` (inside an nn.Sequential) is
    `self.net[0].weight`."""
    parts = [f"[{p}]" if p.isdigit() else f".{p}" for p in target.split(".")]
    return "self" + "".join(parts)
