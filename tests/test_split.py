"""Before/after tests for the split launch of a looped kernel
(porter.port.forms.split), and the rule that takes it (common.py's row_launch)."""

import ast
import textwrap
from pathlib import Path

import pytest

from porter.pipeline import load_reference, read_manifest
from porter.port import port_capture
from porter.port.forms.split import split_rows
from porter.records import Capture
from porter.render import render_kernel
from porter.testing.launches import jit_kernel
from porter.testing.parity import common_module, import_kernel

CAPTURED = Path(__file__).resolve().parents[1] / "captured"


def _ported(case: str) -> ast.Module:
    cap = Capture.from_dict(read_manifest(CAPTURED / case))
    ref = load_reference(CAPTURED / case / "reference.py").module
    return ast.parse(render_kernel(port_capture(cap, ref)))


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name
    )


def test_softmax_looped_kernel_runs_a_loop_a_phase():
    tree = _ported("softmax")
    looped = _function(tree, "softmax_kernel_looped")
    # launched as SplitRows: max, sum, then the output loop; two partials
    assert [ast.unparse(d) for d in looped.decorator_list][0] == (
        "split_rows(phases=3, partials=2)"
    )
    text = ast.unparse(looped)
    # PHASE -1 is the looped kernel as it was: whole rows, every loop
    assert "start, stop = split_cols(vocab, BLOCK_COLS, SPLITS, PHASE)" in text
    guards = [
        ast.unparse(s.test)
        for s in looped.body
        if isinstance(s, ast.If) and isinstance(s.body[0], ast.For)
    ]
    assert guards == [
        "PHASE <= 0",
        "PHASE < 0 or PHASE == 1",
        "PHASE < 0 or PHASE == 2",
    ]
    # a slice's max goes to the workspace; later phases reduce the row's partials
    assert (
        "acc = split_partial(acc, 'max', partials, 0, 0, row_mask, SPLITS, PHASE)"
        in text
    )
    assert (
        "acc_2 = split_partial(acc_2, 'sum', partials, 1, 1, row_mask, SPLITS, PHASE)"
        in text
    )
    # the persistent kernel is untouched, and the launcher offers the split
    assert "PHASE" not in ast.unparse(_function(tree, "softmax_kernel"))
    launcher = ast.unparse(_function(tree, "softmax"))
    assert "split=True" in launcher
    assert (
        "kernel = softmax_kernel if form == 'persistent' else softmax_kernel_looped"
        in launcher
    )


def _kernel(body: str) -> ast.FunctionDef:
    text = textwrap.dedent("""
        def k(x_ptr, out_ptr, num_rows, vocab: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
            rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
            row_mask = rows < num_rows
            col_base = tl.arange(0, BLOCK_COLS)[None, :]
        """)
    return ast.parse(text + textwrap.indent(textwrap.dedent(body), "    ")).body[0]


SUM_THEN_SCALE = """
acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    x = tl.load(x_ptr + rows * vocab + cols, (cols < vocab) & row_mask, other=0.0)
    t = acc + x * x
    acc = tl.where((cols < vocab) & row_mask, t, acc)
row_sum = tl.sum(acc, 1)[:, None]
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    x = tl.load(x_ptr + rows * vocab + cols, (cols < vocab) & row_mask, other=0.0)
    tl.store(out_ptr + rows * vocab + cols, x / row_sum, (cols < vocab) & row_mask)
"""


def test_a_sum_then_a_scaled_write_is_split_in_two_phases():
    fn = _kernel(SUM_THEN_SCALE)
    assert split_rows(fn) == (2, 1)
    text = ast.unparse(fn)
    assert (
        "acc = split_partial(acc, 'sum', partials, 0, 0, row_mask, SPLITS, PHASE)"
        in text
    )
    assert [a.arg for a in fn.args.args][-1] == "PHASE"
    assert "SPLITS" in [a.arg for a in fn.args.args]


def test_a_phases_row_stores_and_its_loop_share_one_guard():
    # quant_int8's shape: the row's scale stored, then the loop that uses it;
    # both run in phase 1, under one `if` (and one `if start == 0`).
    body = SUM_THEN_SCALE.replace(
        "row_sum = tl.sum(acc, 1)[:, None]\n",
        "row_sum = tl.sum(acc, 1)[:, None]\n"
        "tl.store(out_ptr + rows, row_sum, row_mask)\n"
        "tl.store(out_ptr + rows + 1, row_sum, row_mask)\n",
    )
    fn = _kernel(body)
    assert split_rows(fn) == (2, 1)
    (phase_1,) = [
        s
        for s in fn.body
        if isinstance(s, ast.If) and "PHASE == 1" in ast.unparse(s.test)
    ]
    first, loop = phase_1.body
    assert ast.unparse(first.test) == "start == 0" and len(first.body) == 2
    assert isinstance(loop, ast.For)


@pytest.mark.parametrize(
    "change, why",
    [
        # a Welford step: three accumulators combined by their own rule
        (("t = acc + x * x", "t = welford_step(acc, x)"), "not a max, min or sum"),
        # an argmax's int index beside its value
        (("tl.float32)", "tl.int32)"), "an int accumulator"),
        # a sum from 1: each slice's lanes would count the 1 again
        (("BLOCK_COLS], 0, tl.float32", "BLOCK_COLS], 1.0, tl.float32"), "not from 0"),
        # the write loop reads a column another program writes
        (
            (
                "tl.load(x_ptr + rows * vocab + cols, (cols < vocab) & row_mask, other=0.0)\n"
                "    tl.store(",
                "tl.load(out_ptr + rows * vocab + vocab - 1 - cols, (cols < vocab) & row_mask, other=0.0)\n"
                "    tl.store(",
            ),
            "a loop reads what it writes elsewhere",
        ),
    ],
)
def test_kernels_the_split_would_change_are_left_whole(change, why):
    old, new = change
    body = SUM_THEN_SCALE.replace(old, new)
    assert body != SUM_THEN_SCALE
    fn = _kernel(body)
    before = ast.dump(fn)
    assert split_rows(fn) is None, why
    assert ast.dump(fn) == before


def test_a_row_value_read_back_outside_the_loops_is_left_whole():
    # stored once a row, then loaded by every split in a later phase
    body = SUM_THEN_SCALE + "tl.store(out_ptr + rows, row_sum, row_mask)\n"
    body += "y = tl.load(out_ptr + rows, row_mask)\n"
    assert split_rows(_kernel(body)) is None


def test_few_wide_rows_take_the_split_launch():
    common = common_module(import_kernel(CAPTURED / "softmax" / "kernel.py", "split"))
    for rows in (1, 16):
        form, launch = common.row_launch(rows, 151936, 2, split=True)
        splits = launch["SPLITS"]
        assert form == "split" and 1 < splits <= common.MAX_SPLITS
        # up to SPLIT_PROGRAMS programs, each at least two blocks of the row
        assert rows * splits <= common.SPLIT_PROGRAMS
        assert 2 * splits * launch["BLOCK_COLS"] <= 151936
    # many rows fill the GPU one row a program; narrow rows stay held
    assert common.row_launch(4096, 151936, 2, split=True)[0] == "looped"
    assert common.row_launch(1, 8192, 2, split=True)[0] == "persistent"
    assert common.row_launch(1, 151936, 2)[0] == "looped"


@pytest.mark.parametrize("case", ["softmax", "logsumexp", "rmsnorm", "quant_int8"])
def test_split_rows_match_float64_with_inf_and_nan_rows(
    case, monkeypatch, porter_device
):
    # A split from 4096 columns, at 5 rows of any walk (common.py's rule
    # patched; the suite runs the real one at SPLIT_MIN_COLS + 3): 5 rows of 4099, one each of huge, inf,
    # NaN, subnormal and mixed values, across 8 uneven slices a row. The whole
    # row's result must come back from the partials, NaN where float64 has it.
    from porter.testing.parity import Scenario, check_parity, load_case

    loaded = load_case(CAPTURED / case)
    common = common_module(loaded.kernel)
    monkeypatch.setattr(common, "SPLIT_MIN_COLS", 4096)
    monkeypatch.setattr(common, "SPLIT_WARP_COLS", 0)
    monkeypatch.setattr(common, "SPLIT_ROW_COLS", 1)
    monkeypatch.setattr(common, "SPLIT_BLOCK_COLS", 256)
    dim = next(d["name"] for d in loaded.runtime_dims())
    width = next(d["name"] for d in loaded.model_dims())
    sizes = {dim: 5, width: 4099}
    taken = []
    kernel = next(v for v in vars(loaded.kernel).values() if jit_kernel(v) is not v)
    run = kernel.run
    monkeypatch.setattr(
        kernel, "run", lambda *a, **kw: taken.append(kw["PHASE"]) or run(*a, **kw)
    )
    for values in ("difficult", "random"):
        check_parity(
            loaded, Scenario("float32", sizes, values=values), porter_device, 0
        )
    assert taken and min(taken) == 0  # the split phases ran


def test_a_split_kernel_copies_and_forwards_to_its_kernel():
    # SplitRows forwards what it lacks to the kernel it holds; a copy (made
    # before __init__ runs) must not recurse looking for that kernel.
    import copy

    module = import_kernel(CAPTURED / "softmax" / "kernel.py", "split_copy")
    kernel = module.softmax_kernel_looped
    assert kernel.fn is kernel.kernel.fn and kernel.phases == 3
    assert copy.copy(kernel).kernel is kernel.kernel


def test_the_suites_split_row_takes_the_split_launch():
    # The suite's one wide row must run the split form at one row, bf16 and
    # fp32, under the scaffold's own rule: SPLIT_MIN_COLS + 3 (16387) no longer
    # did once the rule asks for a looped walk past SPLIT_WARP_COLS a warp.
    from porter.testing.parity import load_case, split_min_cols

    loaded = load_case(CAPTURED / "softmax")
    common = common_module(loaded.kernel)
    width = split_min_cols(loaded.kernel) + 3
    for elem_bytes in (2, 4):
        assert common.row_launch(1, width, elem_bytes, split=True)[0] == "split"
