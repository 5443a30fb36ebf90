"""The port pipeline: every pass, in the order it runs, by phase.

A pass is a function with a docstring, in its own module, registered here
with one line. Its scope says what it takes:
- "kernel": `fn(kp: KernelPort)`, run on each kernel in turn; it rewrites
  kp.tree (or derives kp.persistent, kp.online) and records what it changed
  in kp.notes.
- "port": `fn(port: PortState)`, run once; it reads and rewrites the kernels
  and the launcher, with the capture, the reference and the options
  (PortOptions) at hand, and records notes in port.notes.
docs/port.md's pass table is generated from this list (pass_table;
`python tools/pass_table.py --write` rewrites it, tests/test_docs.py checks it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from porter.port.bind import (
    float_ints,
    float_mod,
    generalize,
    keywords,
    scalar_width,
    shifts,
)
from porter.port.clean import (
    barriers,
    casts,
    constants,
    copies,
    core_math,
    dead,
    dtype_tests,
    heuristics,
    narrow_casts,
    negative_index,
    program_id,
)
from porter.port.finish import (
    asserts,
    divisors,
    dtype_pointers,
    empty,
    fastexp,
    fp8,
    int_powers,
    loops,
    int_width,
    masked_where,
    masks,
    params,
    pdl,
    raises,
    refusals,
    remainders,
    roundings,
    rows,
    scalars,
    shared,
    sizes,
    tanh,
    tidy,
    views,
    zero_divisors,
)
from porter.port.forms import online, persist, recompute, scratch, split
from porter.port.launch import bias, fuse, launcher, matmul
from porter.port.model import PortState
from porter.port.speed import guards, reciprocal, tile
from porter.port.start import cast_copies, identity_views, start

PHASES = {
    "start": "the capture split into one kernel a launch",
    "clean": "Inductor's code cleaned up, kernel by kernel",
    "bind": "parameters bound to the launch, dtypes made explicit, names given",
    "speed": "rewrites for speed that read those names",
    "forms": "a reduction's other forms: persistent, single-pass, split over rows",
    "launch": "kernels fused and named, the launcher planned",
    "finish": "the last rewrites of every kernel form",
}


@dataclass(frozen=True)
class Pass:
    phase: str
    run: Callable
    scope: str = "kernel"

    def __post_init__(self) -> None:
        if self.phase not in PHASES or self.scope not in ("kernel", "port"):
            raise ValueError(
                f"{self.run.__name__}: no phase {self.phase!r} or scope {self.scope!r}"
            )

    @property
    def name(self) -> str:
        return self.run.__name__

    @property
    def module(self) -> str:
        return self.run.__module__

    @property
    def summary(self) -> str:
        """Its docstring as one paragraph."""
        return " ".join(inspect.cleandoc(self.run.__doc__ or "").split())

    def __call__(self, port: PortState) -> None:
        if self.scope == "kernel":
            for kp in port.kernels:
                self.run(kp)
        else:
            self.run(port)


PIPELINE = [
    Pass("start", start.one_launch_a_kernel, "port"),
    Pass("start", identity_views.drop_identity_views, "port"),
    Pass("start", cast_copies.fold_cast_copies, "port"),
    Pass("start", start.start_kernels, "port"),
    Pass("clean", heuristics.strip_heuristics),
    Pass("clean", core_math.core_math),
    Pass("clean", dtype_tests.compare_dtypes_by_value),
    Pass("clean", constants.typed_constants),
    Pass("clean", casts.noop_casts_and_broadcasts),
    Pass("clean", narrow_casts.narrow_int_casts),
    Pass("clean", negative_index.keep_negative_indices),
    Pass("clean", negative_index.keep_negative_indices_of_raising_inputs, "port"),
    Pass("clean", copies.fold_copies),
    Pass("clean", dead.drop_dead_aliases),
    Pass("clean", barriers.barrier_before_reload),
    Pass("clean", barriers.drop_store_only_barriers),
    Pass("clean", program_id.widen_program_id),
    Pass("bind", generalize.bind_kernel_parameters, "port"),
    Pass("bind", float_ints.runtime_float_ints, "port"),
    Pass("bind", scalar_width.fp64_scalars),
    Pass("bind", generalize.explicit_dtypes),
    Pass("bind", float_mod.exact_float_remainders),
    Pass("bind", shifts.exact_shifts),
    Pass("bind", generalize.readable_names),
    Pass("bind", keywords.rename_launch_keywords),
    Pass("speed", reciprocal.reciprocal_divisors),
    Pass("speed", guards.drop_finite_row_guard),
    Pass("speed", tile.tile_rows_by_cols),
    Pass("speed", tile.column_masked_loads),
    Pass("speed", tile.row_masked_loads),
    Pass("forms", persist.drop_inductor_row_hints),
    Pass("forms", persist.derive_persistent),
    Pass("forms", online.derive_online),
    Pass("forms", recompute.recompute_looped_reloads),
    Pass("forms", scratch.recompute_scratch_buffers, "port"),
    Pass("forms", scratch.drop_dead_scratch_stores, "port"),
    Pass("forms", split.plan_split),
    Pass("launch", fuse.fuse_pointwise_kernels, "port"),
    Pass("launch", generalize.name_kernels, "port"),
    Pass("launch", launcher.plan_launch, "port"),
    Pass("launch", bias.bias_after_matmul, "port"),
    Pass("launch", matmul.matmul_with_epilogue, "port"),
    Pass("launch", launcher.bind_tensor_layouts, "port"),
    Pass("launch", launcher.launch_chosen_kernel, "port"),
    Pass("finish", fastexp.fast_exp, "port"),
    Pass("finish", split.split_looped_kernel),
    Pass("finish", tanh.sigmoid_gelu, "port"),
    Pass("finish", pdl.launch_dependents, "port"),
    Pass("finish", scalars.drop_number_casts, "port"),
    Pass("finish", int_powers.exact_int_powers, "port"),
    Pass("finish", masked_where.drop_masked_identity_wheres, "port"),
    Pass("finish", int_width.read_ints_whole, "port"),
    Pass("finish", tidy.tidy_kernels, "port"),
    Pass("finish", roundings.drop_repeated_rounding, "port"),
    Pass("finish", fp8.eager_fp8_overflow, "port"),
    Pass("finish", masks.bind_masks, "port"),
    Pass("finish", masks.inline_single_masks, "port"),
    Pass("finish", rows.bind_row_pointers, "port"),
    Pass("finish", sizes.tidy_launcher_sizes, "port"),
    Pass("finish", asserts.name_index_checks, "port"),
    Pass("finish", zero_divisors.check_zero_divisors, "port"),
    Pass("finish", remainders.refuse_negative_sizes, "port"),
    Pass("finish", empty.refuse_empty_extrema, "port"),
    Pass("finish", views.refuse_short_views, "port"),
    Pass("finish", divisors.refuse_zero_divisors, "port"),
    Pass("finish", raises.refuse_sizes_eager_rejects, "port"),
    Pass("finish", remainders.refuse_zero_size_divisors, "port"),
    Pass("finish", remainders.refuse_zero_constant_divisors, "port"),
    Pass("finish", refusals.drop_repeated_refusals, "port"),
    Pass("finish", dtype_pointers.drop_dtype_pointers, "port"),
    Pass("finish", params.drop_unread_parameters, "port"),
    Pass("finish", shared.share_identical_kernels, "port"),
    Pass("finish", loops.loop_repeated_launches, "port"),
]


def run_pipeline(port: PortState, until: str | None = None) -> PortState:
    """Run the passes in order on `port`; with `until`, stop after that pass."""
    for p in PIPELINE:
        p(port)
        if p.name == until:
            break
    return port


TABLE_START = "<!-- pass table: generated from porter/port/pipeline.py -->"
TABLE_END = "<!-- end of pass table -->"


def pass_table() -> str:
    """The Markdown table of PIPELINE that docs/port.md holds, between
    TABLE_START and TABLE_END."""
    rows = [
        TABLE_START,
        "| # | phase | pass | module | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for i, p in enumerate(PIPELINE, 1):
        module = p.module.replace(".", "/") + ".py"
        summary = p.summary.replace("|", "\\|")
        rows.append(f"| {i} | {p.phase} | `{p.name}` | `{module}` | {summary} |")
    return "\n".join(rows + [TABLE_END])
