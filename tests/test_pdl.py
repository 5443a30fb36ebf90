"""Programmatic dependent launch: the pass that opens a kernel with the wait
(before/after), which launches take it, and the scaffold's device check."""

import ast
import contextlib
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from porter.pipeline import capture
from porter.port.finish.pdl import (
    EARLY_TRIGGER,
    LAUNCH_PDL,
    dependent_launch,
    is_pdl_block,
    is_pdl_release,
    trigger_after_loads,
)
from porter.testing.parity import common_module, import_kernel

ROOT = Path(__file__).resolve().parents[1]
CASES = sorted(p.parent for p in (ROOT / "captured").glob("*/kernel.py"))

BEFORE = """
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2, offs < n)
"""

AFTER = """
def k(x_ptr, n, BLOCK: tl.constexpr, LAUNCH_PDL: tl.constexpr):
    pdl_wait(LAUNCH_PDL)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2, offs < n)
"""


# A pointwise kernel as dependent_launch leaves it, then trigger_after_loads.
TILE_BEFORE = """
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, offs < n)
    y = tl.load(x_ptr + n + offs, offs < n)
    z = x * y
    tl.store(x_ptr + offs, z, offs < n)
"""

TILE_AFTER = """
def k(x_ptr, n, BLOCK: tl.constexpr, LAUNCH_PDL: tl.constexpr, EARLY_TRIGGER: tl.constexpr):
    pdl_wait(LAUNCH_PDL, EARLY_TRIGGER)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, offs < n)
    y = tl.load(x_ptr + n + offs, offs < n)
    'NOTE(porter): a block over a long row lets the next kernel launch once its loads are issued'
    pdl_release(LAUNCH_PDL, EARLY_TRIGGER)
    z = x * y
    tl.store(x_ptr + offs, z, offs < n)
"""


def _fn(src: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(src)).body[0]


def test_dependent_launch_waits_before_anything_else():
    fn = _fn(BEFORE)
    assert dependent_launch(fn)
    assert ast.unparse(fn) == ast.unparse(_fn(AFTER))


def test_dependent_launch_applies_once():
    fn = _fn(AFTER)
    assert not dependent_launch(fn)
    assert ast.unparse(fn) == ast.unparse(_fn(AFTER))


def test_dependent_launch_keeps_a_docstring_first():
    fn = _fn('def k(x_ptr):\n    """Doubles x."""\n    tl.store(x_ptr, 1)\n')
    dependent_launch(fn)
    assert isinstance(fn.body[0].value, ast.Constant)
    assert is_pdl_block(fn.body[1])


def test_trigger_after_loads_keeps_the_wait_first_and_triggers_after_the_last_load():
    fn = _fn(TILE_BEFORE)
    assert dependent_launch(fn) and trigger_after_loads(fn)
    assert ast.unparse(fn) == ast.unparse(_fn(TILE_AFTER))
    assert not trigger_after_loads(fn)  # once
    assert ast.unparse(fn) == ast.unparse(_fn(TILE_AFTER))


def test_a_kernel_switches_on_its_own_constexpr_without_a_new_parameter():
    # Before: TILE_BEFORE opened by dependent_launch. After: the split on
    # `BLOCK == 1`, the kernel's own constexpr (a persistent kernel's
    # BLOCK_ROWS == 1), and no EARLY_TRIGGER parameter for a launcher to pass.
    fn = _fn(TILE_BEFORE)
    assert dependent_launch(fn)
    assert trigger_after_loads(fn, when="BLOCK == 1")
    after = ast.unparse(_fn(TILE_AFTER)).replace("EARLY_TRIGGER)", "BLOCK == 1)")
    after = after.replace(", EARLY_TRIGGER: tl.constexpr", "")
    assert ast.unparse(fn) == after
    assert not trigger_after_loads(fn, when="BLOCK == 1")  # once
    assert not trigger_after_loads(fn)
    assert ast.unparse(fn) == after


def test_trigger_after_loads_leaves_a_kernel_without_the_block_or_loads():
    plain = _fn(BEFORE)
    assert not trigger_after_loads(plain)
    assert ast.unparse(plain) == ast.unparse(_fn(BEFORE))
    no_loads = _fn(
        "def k(x_ptr, LAUNCH_PDL: tl.constexpr):\n"
        "    pdl_wait(LAUNCH_PDL)\n"
        "    tl.store(x_ptr, 1.0)\n"
    )
    before = ast.unparse(no_loads)
    assert not trigger_after_loads(no_loads)
    assert ast.unparse(no_loads) == before


def _kernels_and_launches(case: Path):
    tree = ast.parse((case / "kernel.py").read_text())
    kernels = [
        f
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef)
        and any("triton.jit" in ast.unparse(d) for d in f.decorator_list)
        and any("tl.program_id" in ast.unparse(n) for n in f.body)
    ]
    launches = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
    ]
    return kernels, launches


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_every_launch_not_behind_an_extern_call_takes_pdl(case):
    kernels, launches = _kernels_and_launches(case)
    source = (case / "kernel.py").read_text()
    has_matmul = "torch.addmm(" in source or "torch.mm(" in source

    def behind_matmul(kernel: str) -> bool:
        # Behind the extern matmul: every kernel but the one that computes the
        # matmul itself for small calls (porter.port.launch.matmul).
        return has_matmul and not re.search(r"_matmul_kernel(_\d+)?$", kernel)

    assert kernels and launches
    for fn in kernels:
        assert is_pdl_block(fn.body[0]) != behind_matmul(fn.name), fn.name
    for call in launches:
        kw = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
        behind = behind_matmul(ast.unparse(call.func.value))
        want = {} if behind else {LAUNCH_PDL: "pdl", "launch_pdl": "pdl"}
        assert {k: kw[k] for k in (LAUNCH_PDL, "launch_pdl") if k in kw} == want


def test_a_kernel_right_after_the_matmul_launches_without_pdl(tmp_path):
    # The generator's rule, from a fresh capture: linear_gelu's epilogue follows
    # the extern addmm in its launcher.
    capture(
        ROOT / "examples" / "linear_gelu.py",
        out=tmp_path,
        device="cpu",
        progress=lambda _: None,
    )
    source = (tmp_path / "linear_gelu" / "kernel.py").read_text()
    assert "torch.addmm(" in source
    tree = ast.parse(source)
    kernel = next(
        f for f in tree.body if getattr(f, "name", "") == "linear_gelu_kernel"
    )
    assert LAUNCH_PDL not in ast.unparse(kernel)
    launcher = source[source.index("def linear_gelu(") :]
    epilogue = launcher[launcher.index("linear_gelu_kernel[") :]
    assert LAUNCH_PDL not in epilogue and "launch_pdl" not in epilogue
    assert "No programmatic dependent launch right after the extern call" in source
    # The kernel computing small matmuls itself follows no extern call.
    matmul = launcher[launcher.index("linear_gelu_matmul_kernel[") :]
    assert matmul.index("launch_pdl=pdl") < matmul.index("return out")


@contextlib.contextmanager
def _runtime_knobs_restored():
    """triton.knobs.runtime, restored afterwards (knobs and environment): a
    knob set by monkeypatch stays set on undo (and writes TRITON_INTERPRET), so
    a later test in the worker would no longer see the variable it sets."""
    import triton

    with triton.knobs.runtime.scope():
        yield triton.knobs.runtime


@pytest.fixture
def runtime_knobs():
    with _runtime_knobs_restored() as knobs:
        yield knobs


def test_runtime_knobs_leave_triton_interpret_as_it_was():
    # On the GPU a leaked interpret=False kept a later test's
    # TRITON_INTERPRET=1 from reaching @triton.jit.
    import triton

    before = os.environ.get("TRITON_INTERPRET")
    # as it was: another test of the worker may have set the knob itself
    knob = vars(triton.knobs.runtime).get("interpret", "unset")
    with _runtime_knobs_restored() as knobs:
        knobs.interpret = not knobs.interpret
        assert os.environ.get("TRITON_INTERPRET") != before  # set writes it
    assert vars(triton.knobs.runtime).get("interpret", "unset") == knob
    assert os.environ.get("TRITON_INTERPRET") == before


def _scaffold(name: str):
    return import_kernel(ROOT / "captured" / name / "kernel.py", f"pdl_{name}")


def _common(name: str):
    """The common.py module a captured scaffold takes its PDL switch from."""
    return sys.modules[_scaffold(name).pdl_enabled.__module__]


def test_pdl_enabled_only_on_hopper_and_later(monkeypatch, runtime_knobs):
    mod = _common("rmsnorm")
    # The suite runs under the interpreter, where PDL is off whatever the GPU.
    runtime_knobs.interpret = False
    asked = []

    def capability(device):
        asked.append(device)
        return capability.value

    monkeypatch.setattr(torch.cuda, "get_device_capability", capability)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(mod, "_HOPPER", {})
    assert not mod.pdl_enabled(torch.device("cpu"))
    assert asked == []  # a CPU tensor never asks CUDA
    capability.value = (9, 0)
    assert mod.pdl_enabled(torch.device("cuda", 0))
    capability.value = (8, 6)
    assert not mod.pdl_enabled(torch.device("cuda", 1))
    assert mod.pdl_enabled(torch.device("cuda", 0))  # kept, not asked again
    assert asked == [torch.device("cuda", 0), torch.device("cuda", 1)]
    monkeypatch.setattr(mod, "_HOPPER", {})
    monkeypatch.setattr(torch.version, "hip", "6.2")
    capability.value = (9, 4)
    assert not mod.pdl_enabled(torch.device("cuda", 0))  # ROCm: no gdc_* there


def test_pdl_enabled_never_under_the_interpreter(monkeypatch, runtime_knobs):
    mod = _common("rmsnorm")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d: (9, 0))
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(mod, "_HOPPER", {})
    runtime_knobs.interpret = True
    assert not mod.pdl_enabled(torch.device("cuda", 0))  # no gdc_wait there
    runtime_knobs.interpret = False
    assert mod.pdl_enabled(torch.device("cuda", 0))


PDL_CASES = [c for c in CASES if "pdl_enabled(" in (c / "kernel.py").read_text()]


@pytest.mark.parametrize("case", PDL_CASES, ids=lambda p: p.name)
def test_one_switch_turns_pdl_off(case, monkeypatch, runtime_knobs):
    # docs/port.md: behind a kernel that never lets the next one launch early,
    # PDL costs a call 0.2-0.3 us on the H200; an engine turns it off there.
    runtime_knobs.interpret = False
    monkeypatch.setattr(torch.version, "hip", None)
    asked = []
    monkeypatch.setattr(
        torch.cuda, "get_device_capability", lambda d: asked.append(d) or (9, 0)
    )
    gpu = torch.device("cuda", 0)
    mod = import_kernel(case / "kernel.py", f"pdl_switch_{case.name}")
    common = sys.modules[mod.pdl_enabled.__module__]
    assert mod.pdl_enabled(gpu)
    monkeypatch.setattr(common, "PDL", False)  # every scaffold of the folder
    asked.clear()
    assert not mod.pdl_enabled(gpu) and asked == []  # off asks CUDA nothing
    monkeypatch.setattr(common, "PDL", True)
    assert mod.pdl_enabled(gpu)
    # PORTER_PDL=0: read when common.py is imported, for the whole process.
    monkeypatch.setenv("PORTER_PDL", "0")
    off = import_kernel(case.parent / "common.py", f"pdl_env_{case.name}")
    assert not off.pdl_enabled(gpu)


TILE_CASES = [
    c
    for c in CASES
    if "EARLY_TRIGGER=BLOCK_COLS <= DECODE_BLOCK" in (c / "kernel.py").read_text()
]
# Reductions whose persistent kernel switches on the rows a program holds,
# its own constexpr (Inductor's persistent kernel, or porter's beside the
# looped one): the launcher passes nothing for it.
ROWS_SWITCH = "pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)"
ROWS_CASES = [c for c in CASES if ROWS_SWITCH in (c / "kernel.py").read_text()]


def test_the_tile_kernels_take_the_trigger_switch():
    # Every pointwise (tile) scaffold whose tile kernel launches with PDL, and
    # no other: linear_gelu's follows its matmul and launches without it
    # (only its matmul kernel takes PDL).
    tiled = {
        c.name
        for c in CASES
        if "tile_settings(" in (c / "kernel.py").read_text()
        and "pdl_enabled(" in (c / "kernel.py").read_text()
        and "torch.mm(" not in (c / "kernel.py").read_text()
    }
    assert tiled and {c.name for c in TILE_CASES} == tiled


def test_the_reductions_take_the_rows_trigger_switch():
    # Every scaffold that sizes a reduction by launch_settings, and no tile one.
    reductions = {
        c.name
        for c in CASES
        if re.search(r"= (launch_settings|row_launch)\(", (c / "kernel.py").read_text())
        and "pdl_enabled(" in (c / "kernel.py").read_text()
    }
    assert reductions and {c.name for c in ROWS_CASES} == reductions
    assert not set(ROWS_CASES) & set(TILE_CASES)


def _late_blocks(fn: ast.FunctionDef) -> list[ast.stmt]:
    return [s for s in fn.body[1:] if is_pdl_release(s)]


@pytest.mark.parametrize("case", TILE_CASES, ids=lambda p: p.name)
def test_a_tile_launch_triggers_early_only_in_a_decode_sized_block(case):
    kernels, launches = _kernels_and_launches(case)
    for fn in kernels:
        assert EARLY_TRIGGER in [a.arg for a in fn.args.args]
        late = _late_blocks(fn)
        assert len(late) == 1
        assert ast.unparse(fn.body[0]) == "pdl_wait(LAUNCH_PDL, EARLY_TRIGGER)"
    mod = import_kernel(case / "kernel.py", f"trigger_{case.name}")
    # Early in every decode-sized block and in blocks of short rows; after
    # the loads in a block over a long row.
    for rows, cols, early in ((1, 4096, True), (4096, 4096, False), (4096, 64, True)):
        _, block_cols, _ = mod.tile_settings(rows, cols)
        assert (block_cols <= mod.DECODE_BLOCK) == early
    for call in launches:
        kw = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
        assert kw[EARLY_TRIGGER] == "BLOCK_COLS <= DECODE_BLOCK"


@pytest.mark.parametrize("case", ROWS_CASES, ids=lambda p: p.name)
def test_a_reduction_triggers_late_only_where_a_program_holds_several_rows(case):
    kernels, launches = _kernels_and_launches(case)
    switched = [f for f in kernels if ast.unparse(f.body[0]) == ROWS_SWITCH]
    # The persistent kernel, alone: the looped and online kernels keep the
    # trigger beside the wait; none takes an EARLY_TRIGGER argument, and no
    # launch passes one.
    assert [f.name for f in switched] == [
        f.name for f in kernels if not f.name.endswith(("_looped", "_online"))
    ]
    assert not any(EARLY_TRIGGER in [a.arg for a in f.args.args] for f in kernels)
    assert not any(
        k.arg == EARLY_TRIGGER for call in launches for k in call.keywords
    )
    for fn in kernels:
        late = _late_blocks(fn)
        if fn in switched:
            assert len(late) == 1
            assert ast.unparse(late[0]) == "pdl_release(LAUNCH_PDL, BLOCK_ROWS == 1)"
            # After the last top-level statement that loads, before the row's
            # reduction.
            at = fn.body.index(late[0])
            loads = [i for i, st in enumerate(fn.body) if "tl.load" in ast.unparse(st)]
            assert loads and loads[-1] < at
            # right after it, or after the cast of what it loaded
            between = [ast.unparse(st) for st in fn.body[loads[-1] + 1 : at]]
            assert all(re.fullmatch(r"(\w+) = \1\.to\(tl\.float32\)", t) for t in between)
        else:
            assert not late
            assert ast.unparse(fn.body[0]) == "pdl_wait(LAUNCH_PDL)"
    mod = common_module(import_kernel(case / "kernel.py", f"rows_trigger_{case.name}"))
    # One row a program (decode sizes, wide rows) triggers early; several
    # narrow rows a program late.
    for rows, row_size, early in (
        (16, 512, True),
        (4096, 512, False),
        (4096, 4096, True),
    ):
        block_rows, _, _ = mod.launch_settings(rows, row_size, 4)
        assert (block_rows == 1) == early


@pytest.mark.parametrize("early", [True, False])
def test_the_helpers_wait_first_and_trigger_once(monkeypatch, early):
    # common.py's pdl_wait and pdl_release, run as Python with the two
    # instructions recorded: a kernel waits once and triggers exactly once.
    common = import_kernel(CASES[0] / "kernel.py", "pdl_helpers").__dict__
    mod = sys.modules[common["pdl_wait"].fn.__module__]
    calls = []
    cuda = mod.tl.extra.cuda
    monkeypatch.setattr(cuda, "gdc_wait", lambda: calls.append("wait"))
    monkeypatch.setattr(cuda, "gdc_launch_dependents", lambda: calls.append("go"))
    mod.pdl_wait.fn(True, early)
    calls.append("loads")
    mod.pdl_release.fn(True, early)
    assert calls == (["wait", "go", "loads"] if early else ["wait", "loads", "go"])
    calls.clear()
    mod.pdl_wait.fn(True)  # a kernel that never splits the handshake
    assert calls == ["wait", "go"]
    calls.clear()
    mod.pdl_wait.fn(False, early)
    mod.pdl_release.fn(False, early)
    assert calls == []


def test_the_cpu_launch_passes_pdl_off(monkeypatch):
    # Triton's interpreter cannot run gdc_wait: a CPU launch must pass False.
    mod = _scaffold("silu_and_mul")
    seen = {}

    class Recorder:
        def __getitem__(self, grid):
            def launch(**kwargs):
                seen.update(kwargs)

            return launch

    monkeypatch.setattr(mod, "silu_and_mul_kernel", Recorder())
    mod.silu_and_mul(torch.randn(3, 16))
    assert seen[LAUNCH_PDL] is False and seen["launch_pdl"] is False


@pytest.mark.parametrize("pdl", [True, False])
def test_the_case_readme_says_how_to_turn_pdl_off_where_it_is_on(pdl):
    from porter.store import read_manifest
    from porter.records import Capture
    from porter.render import render_text

    case = ROOT / "captured" / "rmsnorm"
    cap = Capture.from_dict(read_manifest(case))
    readme = render_text(
        "case_readme.md.j2",
        cap=cap,
        name="rmsnorm",
        folder="captured/rmsnorm",
        title="t",
        todos=[],
        pdl=pdl,
    )
    switch = "`PDL = False` in `../common.py`"
    assert (switch in readme and "PORTER_PDL=0" in readme) == pdl
    if pdl:  # as the committed README says it
        assert switch in (case / "README.md").read_text()
