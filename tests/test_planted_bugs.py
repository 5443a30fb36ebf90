"""Plant a bug in a correct scaffold and show its parity test fails.

Each plant edits one line of a shipped kernel.py (in a copy), then runs the
case's own scenarios: at least one must raise ParityError, and the unplanted
copy must pass the same scenarios (so the failure is the plant's).
"""

import re
import shutil
from pathlib import Path

import pytest

from porter.testing import (
    ParityError,
    ReferenceRejects,
    ScaffoldRefuses,
    check_parity,
    load_case,
)

CAPTURED = Path(__file__).resolve().parents[1] / "captured"

# the looped kernel's store of the new residual (the persistent one is indented less)
STORE_OUT1 = (
    "        tl.store(out1_rows + cols, out1_2.to(out1_ptr.dtype.element_ty), mask)\n"
)

PLANTS = {
    # name: (case, text in kernel.py, replacement, scenario filter)
    "missing_mask": (
        "silu_and_mul",
        "tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty), mask)",
        "tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty))",
        lambda s: s.dtype == "float32",
    ),
    "wrong_stride": (
        "rmsnorm",
        "x_rows = x_ptr + rows * x_stride0",
        "x_rows = x_ptr + rows * hidden",
        lambda s: s.dtype == "float32",
    ),
    "skipped_store": (
        "add_layernorm",
        STORE_OUT1,
        "",
        lambda s: s.dtype == "float32",
    ),
    "off_by_one_row": (
        "rmsnorm",
        "row_mask = rows < num_tokens",
        "row_mask = rows < num_tokens - 1",
        lambda s: s.dtype == "float32",
    ),
    "wrong_output_cast": (
        "rmsnorm",
        "out.to(out_ptr.dtype.element_ty)",
        "out.to(tl.bfloat16)",
        lambda s: s.dtype == "float32",
    ),
    "unwritten_int_column": (
        "quant_int8",
        "out0, mask)",
        "out0, (cols < hidden - 1) & row_mask)",
        lambda s: s.dtype == "float32",
    ),
    "bf16_math_without_upcast": (
        "add_layernorm",
        "UPCASTS",  # every load's .to(tl.float32), the fp32 Welford accumulators,
        # and the launcher forced onto the looped kernel
        "",
        lambda s: s.dtype == "bfloat16",
    ),
}


def _copy(tmp_path: Path, case: str, old: str | None, new: str) -> Path:
    folder = tmp_path / f"planted_{case}"
    shutil.copytree(
        CAPTURED / case, folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(CAPTURED / "common.py", tmp_path)  # what the case imports from
    kernel = folder / "kernel.py"
    if old == "UPCASTS":
        # A naive kernel: math and accumulation in the input's own dtype.
        source = kernel.read_text()
        assert ").to(tl.float32)" in source
        assert "tl.zeros([BLOCK_ROWS, BLOCK_COLS], tl.float32)" in source
        source = source.replace(").to(tl.float32)", ")")
        # a load too long for one line casts on the next: `x = x.to(tl.float32)`
        source = re.sub(r"\b(\w+) = \1\.to\(tl\.float32\)", r"\1 = \1", source)
        # The persistent kernel stays inside the verdict with this edit (tree
        # reductions, divisions in fp32; docs/testing.md); the looped kernel's
        # running statistics are where low precision compounds.
        # Every row takes the looped kernel: row_launch reads common.py's limit.
        common = tmp_path / "common.py"
        limit = "\nMAX_FUSED_COLS = 8192\n"
        assert "row_launch(" in source and limit in common.read_text()
        common.write_text(common.read_text().replace(limit, "\nMAX_FUSED_COLS = 0\n"))
        source = source.replace(
            "tl.zeros([BLOCK_ROWS, BLOCK_COLS], tl.float32)",
            "tl.zeros([BLOCK_ROWS, BLOCK_COLS], x_ptr.dtype.element_ty)",
        )
        kernel.write_text(source)
    elif old is not None:
        source = kernel.read_text()
        assert (
            old in source
        ), f"plant site not found in {case}/kernel.py: regenerate the plant"
        kernel.write_text(source.replace(old, new))
    return folder


def _failures(folder: Path, keep, device: str) -> list[str]:
    case = load_case(folder)
    failures = []
    for scenario in filter(keep, case.scenarios()):
        try:
            check_parity(case, scenario, device=device, seed=1234)
        except ParityError as err:
            failures.append(str(err))
        except (ScaffoldRefuses, ReferenceRejects):
            continue  # skipped by the case's own suite too, saying why
    return failures


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_planted_bug_is_caught(plant, tmp_path, porter_device):
    case, old, new, keep = PLANTS[plant]
    if plant == "missing_mask" and porter_device == "cuda":
        pytest.skip("an unmasked store would write past the buffer on the GPU")
    clean = _copy(tmp_path / "clean", case, None, "")
    assert _failures(clean, keep, porter_device) == []
    planted = _copy(tmp_path / "planted", case, old, new)
    failures = _failures(planted, keep, porter_device)
    assert failures, f"the {plant} plant in {case} went unnoticed"


def test_missing_mask_is_reported_as_out_of_bounds(tmp_path, porter_device):
    if porter_device == "cuda":
        pytest.skip("bounds checks are an interpreter feature")
    case, old, new, keep = PLANTS["missing_mask"]
    failures = _failures(_copy(tmp_path, case, old, new), keep, porter_device)
    assert failures and "out-of-bounds store" in failures[0]


@pytest.mark.parametrize(
    "store, said",
    [
        ("mask & (cols > 0))", "was never written: it holds the poison"),
        (
            "mask)\n    tl.store(out_rows + cols, out * float('nan'), mask)",
            "computed by the kernel",
        ),
    ],
    ids=["unwritten", "computed"],
)
def test_a_nan_output_says_whether_it_was_written(store, said, tmp_path, porter_device):
    # Float outputs start as NaN: a second run starting them at 77 tells a
    # missing store from a NaN the kernel computed.
    old = "tl.store(out_rows + cols, out.to(out_ptr.dtype.element_ty), mask)"
    new = old.removesuffix("mask)") + store
    keep = lambda s: s.dtype == "float32"  # noqa: E731 - as PLANTS' filters
    failures = _failures(_copy(tmp_path, "silu_and_mul", old, new), keep, porter_device)
    assert failures and said in failures[0], failures[:1]


def test_an_unwritten_integer_is_named_as_such(tmp_path, porter_device):
    case, old, new, keep = PLANTS["unwritten_int_column"]
    failures = _failures(_copy(tmp_path, case, old, new), keep, porter_device)
    assert failures and "was never written" in failures[0]
