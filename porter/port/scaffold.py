"""The port's output: a typed model of the scaffold, which porter.render
turns into kernel.py without reading generated text."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from pathlib import Path

from porter.port.finish import asserts, fastexp
from porter.port.custom_op import CustomOp, plan_custom_op
from porter.port.launch.launcher import EARLY_TRIGGER_EXPR, Calls, Launcher
from porter.port.model import KernelPort, PortState
from porter.port.model_class import model_base, model_init
from porter.records import Capture
from porter.reference import read_source


@dataclass
class KernelSource:
    source: str
    do_not_specialize: list[str]
    # It holds an index check (tl.device_assert), which only debug compiles in.
    debug: bool = False
    # A decorator above @triton.jit: a looped kernel that can run split over
    # each row (common.py's split_rows).
    decorator: str = ""


@dataclass
class Scaffold:
    cap: Capture
    title: str
    kernels: list[KernelSource]
    launcher: Launcher
    op: CustomOp
    # The Triton helpers of common.py the kernels call, in common.py's order.
    helpers: list[str] = field(default_factory=list)
    # Inductor's combine functions for scans and custom reductions.
    combine_fns: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)
    # A KernelBench module's __init__ and the helpers it calls.
    module_class: dict | None = None
    # Every scaffold helper the launcher calls, with the options it passes.
    calls: Calls = field(default_factory=Calls)
    # The forms some kernel has: "tile", "persistent", "online", "split", "matmul".
    forms: set[str] = field(default_factory=set)
    libdevice: bool = False
    # Some kernel launches with programmatic dependent launch.
    pdl: bool = False
    # Some tile kernel's launch passes EARLY_TRIGGER.
    early_trigger: bool = False
    # The matmul kernels take fp32 operands (at PortOptions.matmul_fp32).
    matmul_fp32: bool = False


def build_scaffold(port: PortState) -> Scaffold:
    """The scaffold of a port the pipeline has run on."""
    cap, ports, launcher = port.cap, port.kernels, port.launcher
    every_step = port.steps()
    kernels = [_kernel_source(kp, form) for kp, form, _ in port.forms()]
    for _, form, step in port.forms(shared=True):
        # debug=True also compiles Triton's int32 overflow checks, which
        # Inductor turns off: eager wraps (a hash's x * 1000003).
        step.debug = step.debug or bool(asserts.checks(form))
    combine_fns, seen = [], set()
    for kp in ports:
        for f in kp.combine_fns:
            if f.name not in seen:
                seen.add(f.name)
                combine_fns.append(ast.unparse(f))
    calls = launcher.calls
    for step in every_step:
        calls = calls | step.calls
    forms = {
        name
        for kp in ports
        for name, form in (
            ("tile", kp.tile),
            ("persistent", kp.persistent),
            ("online", kp.online),
            ("split", kp.tree if kp.split_launch[0] else None),
            ("matmul", kp.matmul),
        )
        if form is not None
    }
    return Scaffold(
        cap=cap,
        title=_title(port),
        kernels=kernels,
        launcher=launcher,
        op=_custom_op(port),
        helpers=sorted(
            set().union(*(kp.helpers for kp in ports)), key=_HELPER_ORDER.index
        ),
        combine_fns=combine_fns,
        notes=_merge_notes(ports) + _helper_notes(ports) + port.notes,
        todos=[t for kp in ports for t in kp.todos],
        module_class=_module_class(port),
        calls=calls,
        forms=forms,
        libdevice=any(kp.uses_libdevice for kp in ports),
        pdl=any(step.pdl for step in every_step),
        early_trigger=any(
            step.early_trigger == EARLY_TRIGGER_EXPR for step in port.launches()
        ),
        matmul_fp32=port.options.matmul_fp32 is not None,
    )


def _kernel_source(kp: KernelPort, form: ast.FunctionDef) -> KernelSource:
    runtime = [p.name for p in kp.params if p.kind == "runtime"]
    if form is not kp.tree or not kp.split_launch[0]:
        return KernelSource(ast.unparse(form), runtime, bool(asserts.checks(form)))
    phases, partials = kp.split_launch
    return KernelSource(
        ast.unparse(form),
        runtime + ["SPLITS"],
        bool(asserts.checks(form)),
        f"split_rows(phases={phases}, partials={partials})",
    )


def _custom_op(port: PortState) -> CustomOp:
    ref = port.ref_module
    fn = (
        ref.Model.forward if port.cap.reference_kind == "kernelbench" else ref.REFERENCE
    )
    return plan_custom_op(port.cap, port.launcher, inspect.signature(fn), port.module)


def _module_class(port: PortState) -> dict | None:
    if port.cap.reference_kind != "kernelbench":
        return None
    path = Path(port.ref_module.__file__)
    init, helpers = model_init(read_source(path), path, port.ref_module.Model.__name__)
    base = model_base(port.ref_module.Model, path)
    return {"init": init, "helpers": helpers, "base": base}


def _title(port: PortState) -> str:
    """The first line of the reference's docstring (the class's, for a
    KernelBench module; else the file's)."""
    cap, ref = port.cap, port.ref_module
    doc = (
        inspect.getdoc(ref.REFERENCE)
        if cap.reference_kind == "porter"
        # the class's own: getdoc would give nn.Module's "Base class for all..."
        else inspect.cleandoc(vars(ref.Model).get("__doc__") or "")
    ) or (inspect.getdoc(ref) or "")
    return doc.splitlines()[0] if doc else f"{cap.reference_name}, ported from Inductor"


def _helper_notes(ports: list[KernelPort]) -> list[str]:
    """The note of a helper some pass gave a kernel (exp_ftz: fast_exp, or
    sigmoid_gelu for its sigmoid)."""
    if any(fastexp.HELPER in kp.helpers for kp in ports):
        return [fastexp.NOTE]
    return []


def _merge_notes(ports: list[KernelPort]) -> list[str]:
    seen, out = set(), []
    for kp in ports:
        for note in kp.notes:
            if note not in seen:
                seen.add(note)
                out.append(note)
    return out


_HELPER_ORDER = [
    "exp_ftz",
    "maximum_nan",
    "minimum_nan",
    "max_nan",
    "min_nan",
    "any_true",
    "welford_accumulate",
    "welford_merge",
    "welford_finish",
    "row_mean_m2",
    "online_softmax_accumulate",
    "online_softmax_finish",
    "rescale_sum",
    "argmax_step",
    "argmax_rows",
    "argmin_step",
    "argmin_rows",
    "select_masked",
    "floor_div",
    "shift_left",
    "shift_right",
    "floor_div_float",
    "floor_mod",
    "int_pow",
    "bucketize",
    "multiply",
    "row_product",
    "to_e5m2_eager",
]
