"""The shipped scaffolds stay standalone, black-formatted and lint-clean."""

import ast
from pathlib import Path

import black
import pytest

from porter.lint import lint_paths

CASES = sorted(
    p.parent
    for p in (Path(__file__).resolve().parents[1] / "captured").glob("*/kernel.py")
)


def test_corpus_is_not_empty():
    assert len(CASES) >= 6


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_scaffold_is_lint_clean(case):
    findings = lint_paths([case / "kernel.py"])
    assert findings == [], "\n".join(str(f) for f in findings)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_scaffold_is_what_the_generator_writes(case):
    # The H200 rows carry the hash of the kernel.py they timed: a committed
    # scaffold that porter port would not write again byte for byte is stale.
    from porter.pipeline import port_files
    from porter.records import Capture
    from porter.reference import load_reference
    from porter.store import read_manifest

    cap = Capture.from_dict(read_manifest(case))
    ref = load_reference(case / "reference.py")
    files = port_files(cap, ref.module, case.name).files
    assert files["kernel.py"] == (case / "kernel.py").read_text()


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_scaffold_is_black_formatted(case):
    source = (case / "kernel.py").read_text()
    assert black.format_str(source, mode=black.Mode()) == source


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_scaffold_imports_only_torch_and_triton(case):
    roots = _imported_roots(case / "kernel.py")
    # Standalone: torch and triton, and the common.py beside the case folder
    # (a relative import); nothing of porter's and no other package.
    assert roots <= {"torch", "triton", "..common"}, roots
    assert "torch._inductor" not in (case / "kernel.py").read_text()
    # common.py itself: torch, triton and the standard library's os for one
    # switch (PORTER_PDL).
    assert _imported_roots(case.parent / "common.py") <= {"torch", "triton", "os"}


def _imported_roots(path):
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add("." * node.level + node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_no_capture_literal_survives(case):
    """Shape generality: the captured example sizes appear nowhere in the kernels."""
    import json

    manifest = json.loads((case / "manifest.json").read_text())
    tree = ast.parse((case / "kernel.py").read_text())
    kernels = [
        f
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
        and any("triton.jit" in ast.unparse(d) for d in f.decorator_list)
    ]
    assert kernels
    sizes = {d["size"] for d in manifest["dims"] if d["symbolic"]}
    literals = {
        n.value
        for f in kernels
        for n in ast.walk(f)
        if isinstance(n, ast.Constant) and isinstance(n.value, int)
    }
    assert not (literals & sizes), literals & sizes


@pytest.mark.parametrize(
    "case, size, message",
    [
        ("kb_layernorm", 1024, r"normalized_shape == \(768,\)"),
        ("kb_scaled_rmsnorm", 256, r"x \(_, 512\)"),
    ],
)
def test_a_fixed_size_the_kernel_hardcodes_is_refused(case, size, message):
    """KernelBench's feature size is a literal in the scaffold: a model built for
    another size says so instead of computing on the captured one's columns."""
    import torch

    from porter.testing.parity import import_kernel

    folder = next(p for p in CASES if p.name == case)
    module = import_kernel(folder / "kernel.py", f"fixed_{case}")
    model = module.ModelNew(size)  # both take the feature size first
    with pytest.raises(NotImplementedError, match=message):
        model(torch.randn(2, size))
