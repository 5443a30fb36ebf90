"""Stage: port captured kernels into a standalone, shape-general scaffold (kernel.py)."""

from __future__ import annotations

import ast
import copy
import re
import inspect
from pathlib import Path
from dataclasses import dataclass, field

from porter.errors import PorterError
from porter.port.tidy import tidy_temporaries
from porter.port.bias import unfuse_bias
from porter.port.custom_op import plan_custom_op
from porter.port.fuse import fuse_pointwise
from porter.port.generalize import bind_parameters, explicit_dtypes, readable_names
from porter.port.guards import drop_finite_row_guard
from porter.port.launcher import (
    EARLY_TRIGGER_EXPR,
    LOOPED_MAX_BLOCK,
    ROWS_EARLY_TRIGGER_EXPR,
    LOOPED_MIN_ROW_BYTES,
    bind_layouts,
    plan_launcher,
)
from porter.port import fastexp, tanh
from porter.port import matmul as matmul_stage
from porter.port.matmul import all_steps, fuse_matmul_epilogue
from porter.port.model import KernelPort
from porter.port.model_class import model_init
from porter.port.online import online_max_sum_exp
from porter.port.passes import HELPER_DEPENDS
from porter.port.passes import PIPELINE as CLEANUP_PASSES
from porter.port.passes import reciprocal_divisors
from porter.port.pdl import (
    ROWS_NOTES,
    TILE_NOTES,
    dependent_launch,
    pdl_note,
    trigger_after_loads,
)
from porter.port.persist import drop_row_hints
from porter.port.persist import persist as persistent_form
from porter.port.recompute import recompute_reloads
from porter.port.tile import column_masked_loads, tile_rows_by_cols
from porter.records import Capture
from porter.reference import read_source
from porter.render import render

# The documented order (docs/port.md): clean up Inductor's code, then bind it to
# the launch records, then make dtypes explicit, then name things for a reader,
# then the speed rewrites that read those names (per-row divisors, softmax's
# finite-row guard, 2-D tiles and the per-column loads they allow).
PIPELINE = [
    *CLEANUP_PASSES,
    "bind_parameters",
    explicit_dtypes,
    readable_names,
    reciprocal_divisors,
    drop_finite_row_guard,
    tile_rows_by_cols,
    column_masked_loads,
]


@dataclass
class PortResult:
    kernel_py: str
    title: str = ""
    todos: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Whether its kernels launch with programmatic dependent launch (its PDL switch).
    pdl: bool = False


def port_kernel(kp: KernelPort, cap: Capture) -> KernelPort:
    module = cap.modules[kp.record.module]
    for step in PIPELINE:
        if step == "bind_parameters":
            bind_parameters(kp, cap, module)
        else:
            step(kp)
    return kp


def port_capture(cap: Capture, ref_module) -> PortResult:
    if len(cap.modules) != 1:
        raise PorterError(
            f"{cap.reference_name} compiled into {len(cap.modules)} graphs (graph breaks); "
            "porter ports one graph: remove the graph breaks (torch._dynamo.explain shows them)"
        )
    cap = relaunched_apart(cap)
    module = cap.modules[0]
    ports = []
    for record in cap.kernels:
        launch = next(
            (s for s in module.steps if s.kind == "launch" and s.name == record.name),
            None,
        )
        kp = KernelPort(record=record, launch=launch, capture_dtype=cap.capture_dtype)
        ports.append(port_kernel(kp, cap))
    for kp in ports:
        if kp.record.kind == "persistent_reduction" and drop_row_hints(kp.tree):
            kp.notes.append(
                "the rows' loads carry no evict_first hint, as Inductor's kernel "
                "compiled for a GPU has none"
            )
        if kp.record.kind == "reduction":
            persistent = persistent_form(kp.tree)
            if persistent is not None:
                kp.persistent, extra = persistent
                kp.helpers |= extra
                kp.notes.append(
                    "derived a persistent kernel for rows that fit in registers "
                    "(x read once); the looped kernel serves wider rows"
                )
                online = copy.deepcopy(kp.tree)
                if online_max_sum_exp(online):
                    kp.online = online
                    kp.helpers |= {"rescale_sum", *HELPER_DEPENDS["rescale_sum"]}
                    kp.notes.append(
                        "derived a single-pass looped kernel (a running max and sum "
                        "of exp per row) for many very wide rows"
                    )
            # After the other forms are derived from it: they keep the row in
            # registers or do not store, so this only concerns the looped one.
            if recompute_reloads(kp.tree):
                kp.notes.append(
                    "the looped kernel recomputes a value it stored only to reload "
                    "it (the output is written once)"
                )
    order = [s.name if s.kind == "launch" else "" for s in module.steps]
    ports = fuse_pointwise(ports, order)
    for i, kp in enumerate(ports):
        name = _kernel_name(cap.reference_name, i, len(ports))
        if kp.persistent is not None:
            kp.persistent.name = name
            kp.looped_name = f"{name}_looped"
        kp.tree.name = kp.looped_name or name
        if kp.online is not None:
            kp.online.name = f"{name}_online"
    launcher = plan_launcher(cap, module, ports, ref_module)
    unfuse_bias(launcher, ports, module)
    launches = [s for s in launcher.steps if s.kind == "launch"]
    fuse_matmul_epilogue(launcher, ports)
    bind_layouts(launcher, cap, module)
    every_step = list(all_steps(launcher.steps))
    matmul_steps = {s.kernel: s for s in every_step if s.kind == "matmul"}
    kernels = []
    for step, kp in zip(launches, ports):
        step.kernel = "kernel" if kp.persistent is not None else kp.tree.name
        dns = [p.name for p in kp.params if p.kind == "runtime"]
        for form in (kp.persistent, kp.tree, kp.online):
            if form is None:
                continue
            if kp.record.kind in fastexp.KINDS and fastexp.exp_ftz(form):
                kp.helpers.add(fastexp.HELPER)
                fastexp.unroll_two_blocks(form)
            _sigmoid_form(kp, form)
            if step.pdl:
                dependent_launch(form)
            if step.early_trigger:
                notes_ = TILE_NOTES if kp.tile is not None else ROWS_NOTES
                if not trigger_after_loads(form, notes_):
                    step.early_trigger = ""  # nothing loads at its top level
            elif step.persistent_trigger and form is kp.persistent:
                # The launcher passes EARLY_TRIGGER to it, having seen it load
                # at its top level, so the split holds.
                if not trigger_after_loads(form, ROWS_NOTES):
                    raise RuntimeError(f"porter: {form.name} took no EARLY_TRIGGER")
            tidy_temporaries(form)
            kernels.append({"source": ast.unparse(form), "do_not_specialize": dns})
        if kp.matmul is not None:
            # The matmul kernel's epilogue is the pointwise kernel's, computed
            # on its tile: the same rewrite.
            _sigmoid_form(kp, kp.matmul)
            if matmul_steps[kp.matmul.name].pdl:
                dependent_launch(kp.matmul)
            tidy_temporaries(kp.matmul)
            kernels.append({"source": ast.unparse(kp.matmul), "do_not_specialize": dns})
    notes = _merge_notes(ports)
    if any(fastexp.HELPER in kp.helpers for kp in ports):
        notes.append(fastexp.NOTE)
    pdl = any(step.pdl for step in every_step)
    if pdl:
        late = ["tile" for s in launches if s.early_trigger == EARLY_TRIGGER_EXPR]
        late += ["rows" for s in launches if s.persistent_trigger]
        late += ["rows" for s in launches if s.early_trigger == ROWS_EARLY_TRIGGER_EXPR]
        notes.append(pdl_note(late))
    todos = [t for kp in ports for t in kp.todos]
    helpers = sorted(set().union(*(kp.helpers for kp in ports)), key=_helper_order)
    combine_fns, seen = [], set()
    for kp in ports:
        for f in kp.combine_fns:
            if f.name not in seen:
                seen.add(f.name)
                combine_fns.append(ast.unparse(f))
    module_class = op = None
    if cap.reference_kind != "kernelbench":
        op = plan_custom_op(
            cap, launcher, inspect.signature(ref_module.REFERENCE), module
        )
    else:
        forward = inspect.signature(ref_module.Model.forward)
        op = plan_custom_op(cap, launcher, forward, module)
        path = Path(ref_module.__file__)
        init, helpers_src = model_init(read_source(path), path)
        module_class = {"init": init, "helpers": helpers_src}
    doc = (
        inspect.getdoc(ref_module.REFERENCE)
        if cap.reference_kind == "porter"
        # the class's own: getdoc would give nn.Module's "Base class for all..."
        else inspect.cleandoc(vars(ref_module.Model).get("__doc__") or "")
    ) or (
        inspect.getdoc(ref_module) or ""
    )  # else the file's docstring
    title = (
        doc.splitlines()[0] if doc else f"{cap.reference_name}, ported from Inductor"
    )
    # The launcher's setup lines, to tell which sizing helpers it calls.
    setup = "\n".join(line for step in every_step for line in step.setup)
    helper_use = sizing_options(setup)
    text = render(
        "kernel.py.j2",
        cap=cap,
        title=title,
        notes=notes,
        todos=todos,
        helpers=helpers,
        combine_fns=combine_fns,
        uses_libdevice=any(kp.uses_libdevice for kp in ports),
        kernels=kernels,
        launcher=launcher,
        module_class=module_class,
        op=op,
        uses_tile=any(kp.tile is not None for kp in ports),
        uses_persistent=any(kp.persistent is not None for kp in ports),
        uses_online=any(kp.online is not None for kp in ports),
        uses_stream_rows="stream_rows(" in setup,
        uses_pdl=pdl,
        uses_matmul=bool(matmul_steps),
        # tools/port_variant.py patches the stage's setting: read it at port time.
        matmul_fp32=matmul_stage.MATMUL_FP32_PRECISION is not None,
        uses_early_trigger=any(
            step.early_trigger == EARLY_TRIGGER_EXPR for step in launches
        ),
        looped_block_cols=LOOPED_MAX_BLOCK,
        looped_min_row_bytes=LOOPED_MIN_ROW_BYTES,
        uses_min_row_bytes="looped_min_row_bytes(" in setup,
        uses_flat="flat_settings(" in setup,
        uses_launch_settings="launch_settings(" in setup,
        # The branches of the sizing helpers this launcher's calls can reach.
        launch_row_only=helper_use.get("launch_settings.row_only", True),
        launch_reread=helper_use.get("launch_settings.reread", True),
        looped_keys=helper_use.get("looped_min_row_bytes.keys", None),
        uses_strided_as=any("strided_as(" in line for line in launcher.prelude),
        uses_reinterpret=any(
            "reinterpret(" in s.call for s in every_step if s.kind == "extern"
        )
        or "reinterpret(" in launcher.returns,
    )
    return PortResult(text, title, todos, notes, pdl=pdl)


def sizing_options(setup: str) -> dict:
    """Which options the launcher passes the sizing helpers: launch_settings'
    row_only and reread (True where some call passes them), looped_min_row_bytes'
    keys. Empty where the setup does not parse: the helpers keep every branch."""
    try:
        tree = ast.parse(setup)
    except SyntaxError:
        return {}
    out: dict = {"launch_settings.row_only": False, "launch_settings.reread": False}
    keys = set()
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        if call.func.id == "launch_settings":
            for kw in call.keywords:
                if kw.arg in ("row_only", "reread"):
                    out[f"launch_settings.{kw.arg}"] = True
        elif call.func.id == "looped_min_row_bytes" and call.args:
            try:
                keys.add(ast.literal_eval(call.args[0]))
            except ValueError:
                return {}
    out["looped_min_row_bytes.keys"] = sorted(keys)
    return out


def relaunched_apart(cap: Capture) -> Capture:
    """A copy of the capture in which a kernel Inductor launches more than once
    (the same copy for a key cache and a value cache) is one kernel a launch:
    porter binds a kernel's arguments to what one launch passes it."""
    seen: dict[str, int] = {}
    steps = [s for m in cap.modules for s in m.steps if s.kind == "launch"]
    for step in steps:
        seen[step.name] = seen.get(step.name, 0) + 1
    if all(n == 1 for n in seen.values()):
        return cap
    cap = copy.deepcopy(cap)
    records = {k.name: k for k in cap.kernels}
    count: dict[str, int] = {}
    for module in cap.modules:
        for step in module.steps:
            if step.kind != "launch" or seen.get(step.name, 1) == 1:
                continue
            k = count[step.name] = count.get(step.name, 0) + 1
            if k == 1:
                continue
            record = records[step.name]
            name = f"{step.name}_launch{k}"
            twin = copy.deepcopy(record)
            twin.name = name
            twin.source = re.sub(rf"\bdef {step.name}\(", f"def {name}(", record.source)
            cap.kernels.insert(cap.kernels.index(record) + k - 1, twin)
            module.kernels.append(name)
            step.name = name
    return cap


def _kernel_name(reference: str, i: int, n: int) -> str:
    base = reference.lower() if reference != "Model" else "model"
    return f"{base}_kernel" if n == 1 else f"{base}_kernel_{i}"


def _sigmoid_form(kp: KernelPort, fn: ast.FunctionDef) -> None:
    """porter.port.tanh on one of kp's kernels, with the helpers and the note
    it then needs."""
    if tanh.one_plus_tanh(fn):
        kp.helpers |= tanh.HELPERS
        if tanh.NOTE not in kp.notes:
            kp.notes.append(tanh.NOTE)


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
    "floor_mod",
    "int_pow",
    "multiply",
    "row_product",
]


def _helper_order(name: str) -> int:
    return _HELPER_ORDER.index(name)
