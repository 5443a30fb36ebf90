"""common.py: the launch rules, PDL switch and helpers the cases of a folder
share, written beside them and imported by each kernel.py."""

import ast
import shutil
import sys
from pathlib import Path

import pytest
import torch

from porter.bench.fingerprint import kernel_fingerprint
from porter.errors import PorterError
from porter.render import common_names, render_common, render_kernel
from porter.store import COMMON, COMMON_BASE, write_common
from porter.testing.parity import common_module, import_kernel

ROOT = Path(__file__).resolve().parents[1]
CAPTURED = ROOT / "captured"
CASES = sorted(p.parent for p in CAPTURED.glob("*/kernel.py"))
sys.path.insert(0, str(ROOT / "tools"))
import scaffold_size  # noqa: E402


def test_captured_common_is_porters_text():
    assert (CAPTURED / COMMON).read_text() == render_common()


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_a_kernel_imports_exactly_the_common_names_it_uses(case):
    tree = ast.parse((case / "kernel.py").read_text())
    imported = {
        a.name
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.level == 2 and n.module == "common"
        for a in n.names
    }
    loaded = {
        n.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    assert imported == loaded & common_names()
    # common.py holds no case's own code: nothing it defines is defined here too
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert not defined & common_names()


def test_the_cases_of_a_folder_share_one_common_module():
    rms = import_kernel(CAPTURED / "rmsnorm" / "kernel.py", "common_share_rmsnorm")
    silu = import_kernel(CAPTURED / "silu_and_mul" / "kernel.py", "common_share_silu")
    assert common_module(rms) is common_module(silu)
    assert rms.pdl_enabled is silu.pdl_enabled


def test_a_common_module_imported_without_the_interpreter_is_not_reused_under_it(
    monkeypatch,
):
    # common.py's @triton.jit and EXP_FTZ read the mode at import: a module
    # imported for its launch rules alone must not serve interpreted kernels.
    import triton

    monkeypatch.setattr(triton.knobs.runtime, "interpret", False)
    compiled = import_kernel(CAPTURED / "softmax" / "kernel.py", "mode_compiled")
    monkeypatch.setattr(triton.knobs.runtime, "interpret", True)
    interpreted = import_kernel(CAPTURED / "softmax" / "kernel.py", "mode_interp")
    assert common_module(compiled) is not common_module(interpreted)
    assert common_module(compiled).EXP_FTZ and not common_module(interpreted).EXP_FTZ


def _fresh(tmp_path):
    write_common(tmp_path, COMMON, "A = 1\n")
    return tmp_path / COMMON


def test_an_unedited_common_py_takes_porters_new_text(tmp_path):
    path = _fresh(tmp_path)
    result = write_common(tmp_path, COMMON, "A = 2\n")
    assert path.read_text() == "A = 2\n"
    assert not (result.merged or result.kept or result.backups or result.conflicts)
    assert (tmp_path / COMMON_BASE).read_text() == "A = 2\n"


def test_an_edited_common_py_gets_porters_changes_merged_and_is_backed_up(tmp_path):
    base = "A = 1\nB = 1\nC = 1\nD = 1\n"
    write_common(tmp_path, COMMON, base)
    path = tmp_path / COMMON
    path.write_text(base.replace("D = 1", "D = 4  # mine"))
    result = write_common(tmp_path, COMMON, base.replace("A = 1", "A = 2"))
    assert path.read_text() == "A = 2\nB = 1\nC = 1\nD = 4  # mine\n"
    assert result.merged == [COMMON] and len(result.backups) == 1
    assert "D = 4  # mine" in (tmp_path / result.backups[0]).read_text()
    # porter's text unchanged since: the edit stands, untouched
    path.write_text("A = 7\n")
    kept = write_common(tmp_path, COMMON, base.replace("A = 1", "A = 2"))
    assert kept.kept == [COMMON] and path.read_text() == "A = 7\n"


def test_overlapping_edits_leave_common_py_beside_a_merge_file(tmp_path):
    path = _fresh(tmp_path)
    path.write_text("A = 5\n")
    result = write_common(tmp_path, COMMON, "A = 2\n")
    assert result.conflicts == [COMMON]
    assert path.read_text() == "A = 5\n"
    merge = (tmp_path / f"{COMMON}.porter-merge").read_text()
    assert "A = 5" in merge and "A = 2" in merge
    # the base stays what the edit was made against, for the next merge
    assert (tmp_path / COMMON_BASE).read_text() == "A = 1\n"


def test_a_common_py_porter_did_not_write_is_refused_then_kept_with_force(tmp_path):
    path = tmp_path / COMMON
    path.write_text("MINE = 1\n")
    with pytest.raises(PorterError, match="porter did not write it.*--force"):
        write_common(tmp_path, COMMON, "A = 1\n")
    assert path.read_text() == "MINE = 1\n"
    result = write_common(tmp_path, COMMON, "A = 1\n", force=True)
    assert path.read_text() == "A = 1\n"
    assert (tmp_path / result.backups[0]).read_text() == "MINE = 1\n"


def test_a_kernel_without_its_common_py_says_what_to_do(tmp_path):
    folder = tmp_path / "rmsnorm"
    shutil.copytree(CAPTURED / "rmsnorm", folder)
    with pytest.raises(PorterError, match="imports from common.py.*porter port"):
        import_kernel(folder / "kernel.py", "common_missing_rmsnorm")
    # a variant written elsewhere names the common.py it goes with
    module = import_kernel(
        folder / "kernel.py", "common_given_rmsnorm", CAPTURED / COMMON
    )
    assert common_module(module).launch_settings(1, 4096)[1] == 4096


def test_capture_refuses_the_case_name_common(tmp_path):
    from porter.pipeline import capture, default_case_name

    with pytest.raises(PorterError, match="taken by the module the cases share"):
        capture(ROOT / "examples" / "rmsnorm.py", name="common", out=tmp_path)
    assert default_case_name(Path("common.py")) == "case_common"
    assert list(tmp_path.iterdir()) == []


def test_a_change_to_common_py_code_changes_the_kernel_fingerprint(tmp_path):
    shutil.copytree(CAPTURED / "rmsnorm", tmp_path / "rmsnorm")
    common = tmp_path / COMMON
    common.write_text(render_common())
    before = kernel_fingerprint(tmp_path / "rmsnorm")
    common.write_text(render_common() + "\n# a comment alone keeps it\n")
    assert kernel_fingerprint(tmp_path / "rmsnorm") == before
    common.write_text(
        render_common().replace("HELD_MAX_BYTES = 16384", "HELD_MAX_BYTES = 1")
    )
    assert kernel_fingerprint(tmp_path / "rmsnorm") != before


def test_scaffold_size_counts_runs_of_copied_lines(tmp_path):
    body = "def helper(a, b):\n    total = a + b\n    return total * 2\n"
    for i in range(4):
        own = f"def own_{i}(x):\n    return x + {i}\n"
        (tmp_path / f"c{i}").mkdir()
        (tmp_path / f"c{i}" / "kernel.py").write_text(own + "\n\n" + body)
    figures = scaffold_size.measure(tmp_path)
    case = figures["cases"]["c0"]
    assert case["code"] == 5 and case["repeated_runs"] == 3
    assert figures["max_repeated_runs"] == 3


def test_a_launcher_calling_math_imports_it(tmp_path):
    # ALiBi's 2 ** math.floor(math.log2(heads)) reaches the launcher through
    # Inductor's size arithmetic: the scaffold imported no math and every
    # call raised NameError.
    import json

    from porter.port import port_capture
    from porter.records import Capture
    from porter.reference import load_reference

    case = Path(__file__).resolve().parent / "cases" / "alibi_math"
    cap = Capture.from_dict(json.loads((case / "manifest.json").read_text()))
    text = render_kernel(
        port_capture(cap, load_reference(case / "reference.py").module)
    )
    assert "math.floor(math.log2(" in text and "\nimport math\n" in text
    (tmp_path / "alibi").mkdir()
    (tmp_path / "alibi" / "kernel.py").write_text(text)
    (tmp_path / COMMON).write_text(render_common())
    mod = import_kernel(tmp_path / "alibi" / "kernel.py", "alibi_math_case")
    assert mod.math.floor(mod.math.log2(6.0)) == 2
    # float64 would run in the kernels' fp32: refused in a line, not computed.
    scores = torch.randn(2, 6, 5, 7, dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="would compute float64 in fp32"):
        mod.alibi_scores(scores)


def test_an_fp32_value_a_sort_reads_that_no_bf16_compile_told_apart_serves_fp32():
    from porter.records import Buffer, CompiledModule, Step

    def module(follows, call):
        return CompiledModule(
            0,
            [],
            {},
            [Buffer("buf0", ["n"], ["1"], "torch.float32", follows=follows)],
            [Step("extern", call, text=f"buf1 = {call}(buf0, 4)")],
            ["buf1"],
            [],
        )

    assert module(None, "torch.ops.aten.topk.default").unmatched_fp32() == ["buf0"]
    assert module(False, "torch.ops.aten.topk.default").unmatched_fp32() == []
    assert module(None, "extern_kernels.mm").unmatched_fp32() == []


def test_a_module_attribute_the_kernels_take_as_a_number_refuses_a_tensor(tmp_path):
    # KernelBench's Model(temperature): ModelNew(torch.tensor(0.5)) reached
    # the kernel as a pointer and failed inside Triton instead of in a line.
    import json

    from porter.port import port_capture
    from porter.records import Capture
    from porter.reference import load_reference

    case = Path(__file__).resolve().parent / "cases" / "softmax_temperature_attr"
    cap = Capture.from_dict(json.loads((case / "manifest.json").read_text()))
    text = render_kernel(
        port_capture(cap, load_reference(case / "reference.py").module)
    )
    assert "if not isinstance(self.temperature, (int, float)):" in text
    (tmp_path / "sm").mkdir()
    (tmp_path / "sm" / "kernel.py").write_text(text)
    (tmp_path / COMMON).write_text(render_common())
    mod = import_kernel(tmp_path / "sm" / "kernel.py", "softmax_attr_case")
    with pytest.raises(NotImplementedError, match="self.temperature a number"):
        mod.ModelNew(torch.tensor(0.5))(torch.randn(2, 5, 3, 4))


def test_a_load_too_long_for_a_line_casts_on_the_next():
    # Before: black broke `x = tl.load(...).to(tl.float32)` inside `.to(`.
    # After: the load, then the cast; a load too long alone stays one statement.
    from porter.render import _split_long_loads

    pad = "x" * 40
    source = (
        "def k(x_rows, cols, mask):\n"
        f"    x = tl.load(x_rows + cols, mask, other=0.0, eviction_policy='evict_first').to(tl.float32)\n"
        f"    y = tl.load(x_rows + cols + {pad}, mask, other=0.0, eviction_policy='evict_first').to(tl.float32)\n"
        "    z = tl.load(x_rows + cols).to(tl.float32)\n"
        f"    w = tl.load(x_rows + cols, mask, other=0.0, eviction_policy='evict_first').to(tl.float32)  # kept\n"
    )
    lines = _split_long_loads(source, ast.parse(source)).split("\n")
    assert lines[1:3] == [
        "    x = tl.load(x_rows + cols, mask, other=0.0, eviction_policy='evict_first')",
        "    x = x.to(tl.float32)",
    ]
    # too long alone, short already, or with a comment after it: as it was
    assert lines[3:6] == source.split("\n")[2:5]


def test_strided_as_packs_any_stride_axes_where_the_known_ones_need_them():
    # a column-major capture's (1, None): a contiguous (3, 8) tensor was
    # refused as one that "cannot have" those strides
    strided_as = common_module(
        import_kernel(CAPTURED / "rmsnorm" / "kernel.py", "sa")
    ).strided_as
    t = torch.randn(3, 8)
    out = strided_as(t, (1, None))
    assert out.stride() == (1, 3) and torch.equal(out, t)
    assert strided_as(t, (8, 1)) is t
    with pytest.raises(NotImplementedError, match="cannot have"):
        strided_as(t, (2, 1))
    # captured on x = y.transpose(0, 1) of y [3, T, 14]: (None, T * 14, 1),
    # the any-stride axis between the other two; refused as "cannot have"
    t = torch.randn(8, 3, 14)
    out = strided_as(t, lambda t: (None, t.shape[0] * 14, 1))
    assert out.stride() == (14, 112, 1) and torch.equal(out, t)


def test_common_names_are_imported_on_filled_lines():
    # Before: one `from ..common import (...)` black listed a name a line,
    # 10-18 lines of each scaffold. After: lines filled up to black's width,
    # which black leaves as they are, every name imported once.
    import black

    from porter.render import LINE, _packed_import

    names = sorted(common_names())[:20]
    text = _packed_import("..common", names)
    lines = text.splitlines()
    assert 1 < len(lines) < len(names) and all(len(line) <= LINE for line in lines)
    assert black.format_str(text + "\n", mode=black.Mode()) == text + "\n"
    imported = [n for node in ast.parse(text).body for n in node.names]
    assert [a.name for a in imported] == names
    assert _packed_import("..common", []) == ""


def test_laid_out_like_lays_outputs_out_as_the_capture_probe_expects():
    # The capture records an output as following an input where eager lays it
    # out as capture._strides_like says; the scaffold's laid_out_like must lay
    # it out the same way, or the record and the launcher disagree.
    from porter.capture import _follows, _strides_like

    laid_out_like = import_kernel(
        CAPTURED / "rmsnorm" / "kernel.py", "common_layout_rmsnorm"
    ).laid_out_like
    x = torch.randn(2, 3, 4, 5)
    column_major = torch.randn(7, 6).t()
    for t, out in (
        (x.to(memory_format=torch.channels_last), torch.empty(2, 3, 4, 5)),
        (x, torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)),
        (column_major, torch.empty(6, 7)),
        (column_major[:, :3], torch.empty(6, 3)),  # a slice: another shape
        (torch.randn(1, 5, 6).transpose(1, 2), torch.empty(1, 6, 5)),
    ):
        got = laid_out_like(out, t)
        assert _follows(got, t), (t.stride(), got.stride())
        assert got.stride() == tuple(_strides_like(t, got.shape)) or got is out
    same = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
    assert laid_out_like(same, x.to(memory_format=torch.channels_last)) is same
