"""Programmatic dependent launch: the pass that opens a kernel with the wait
(before/after), which launches take it, and the scaffold's device check."""

import ast
import textwrap
from pathlib import Path

import pytest
import torch

from porter.pipeline import capture
from porter.port.pdl import LAUNCH_PDL, dependent_launch, is_pdl_block
from porter.testing.parity import _import

ROOT = Path(__file__).resolve().parents[1]
CASES = sorted(p.parent for p in (ROOT / "captured").glob("*/kernel.py"))

BEFORE = """
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2, offs < n)
"""

AFTER = """
def k(x_ptr, n, BLOCK: tl.constexpr, LAUNCH_PDL: tl.constexpr):
    if LAUNCH_PDL:
        'NOTE(porter): wait for the kernel before this one, then let the next one launch'
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2, offs < n)
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
    behind_matmul = "torch.addmm(" in source or "torch.mm(" in source
    assert kernels and launches
    for fn in kernels:
        assert is_pdl_block(fn.body[0]) != behind_matmul, fn.name
    for call in launches:
        kw = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
        want = {} if behind_matmul else {LAUNCH_PDL: "pdl", "launch_pdl": "pdl"}
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
    assert LAUNCH_PDL not in source and "launch_pdl" not in source
    assert "No programmatic dependent launch right after the extern call" in source
    assert "pdl_enabled" not in source


def _scaffold(name: str):
    return _import(ROOT / "captured" / name / "kernel.py", f"pdl_{name}")


def test_pdl_enabled_only_on_hopper_and_later(monkeypatch):
    mod = _scaffold("rmsnorm")
    asked = []

    def capability(device):
        asked.append(device)
        return capability.value

    monkeypatch.setattr(torch.cuda, "get_device_capability", capability)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(mod, "_PDL_BY_DEVICE", {})
    assert not mod.pdl_enabled(torch.device("cpu"))
    assert asked == []  # a CPU tensor never asks CUDA
    capability.value = (9, 0)
    assert mod.pdl_enabled(torch.device("cuda", 0))
    capability.value = (8, 6)
    assert not mod.pdl_enabled(torch.device("cuda", 1))
    assert mod.pdl_enabled(torch.device("cuda", 0))  # kept, not asked again
    assert asked == [torch.device("cuda", 0), torch.device("cuda", 1)]
    monkeypatch.setattr(mod, "_PDL_BY_DEVICE", {})
    monkeypatch.setattr(torch.version, "hip", "6.2")
    capability.value = (9, 4)
    assert not mod.pdl_enabled(torch.device("cuda", 0))  # ROCm: no gdc_* there


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
