"""Before/after tests for the persistent-form passes (porter.port.forms.persist)."""

import ast
import shutil
import textwrap
from pathlib import Path

import pytest
import torch

from porter.pipeline import port
from porter.port.forms import persist
from porter.testing import check_parity, load_case
from porter.testing.parity import Scenario
from porter.testing.parity import import_kernel


def _fn(body: str) -> ast.FunctionDef:
    src = "def k(x_ptr, out_ptr, n, hidden: tl.constexpr, BLOCK_COLS: tl.constexpr):\n"
    return ast.parse(src + textwrap.indent(textwrap.dedent(body), "    ")).body[0]


def _body(fn: ast.FunctionDef) -> str:
    return "\n".join(ast.unparse(s) for s in fn.body)


def _assert_unchanged(step, body: str) -> None:
    """The pass finds nothing to rewrite in body and leaves it as it was."""
    fn = _fn(body)
    before = ast.unparse(fn)
    assert step(fn) == 0
    assert ast.unparse(fn) == before


LOOPED = """\
col_base = tl.arange(0, BLOCK_COLS)[None, :]
acc = tl.full([1, BLOCK_COLS], 0, tl.float32)
for col_start in tl.range(0, hidden, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < hidden
    x = tl.load(x_ptr + cols, col_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    sq = x * x
    t = acc + sq
    acc = tl.where(col_mask, t, acc)
total = tl.sum(acc, 1)[:, None]
for col_start in tl.range(0, hidden, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < hidden
    x_2 = tl.load(x_ptr + cols, col_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
    tl.store(out_ptr + cols, (x_2 / total).to(out_ptr.dtype.element_ty), col_mask)
"""


def test_can_persist_only_column_loops():
    assert persist.can_persist(_fn(LOOPED))
    assert not persist.can_persist(_fn("for i in tl.range(0, n, 4):\n    pass\n"))
    assert not persist.can_persist(_fn("y = 1\n"))  # nothing to inline


def test_inline_single_block_sets_col_start_to_zero():
    fn = _fn(LOOPED)
    assert persist.inline_single_block(fn) == 2
    body = _body(fn)
    assert "for " not in body and "col_start" not in body
    assert body.count("cols = col_base") == 2


def test_drop_repeated_assignments():
    fn = _fn("a = f(b)\nc = g(a)\na = f(b)\nb = h()\na = f(b)\n")
    assert persist.drop_repeated_assignments(fn) == 1
    # the third `a = f(b)` stays: b changed in between
    assert _body(fn) == "a = f(b)\nc = g(a)\nb = h()\na = f(b)"


def test_fold_into_source_names_the_source_after_its_copy():
    fn = _fn("col_base = tl.arange(0, BLOCK_COLS)\ncols = col_base\ny = cols + 1\n")
    assert persist.fold_into_source(fn) == 1
    assert _body(fn) == "cols = tl.arange(0, BLOCK_COLS)\ny = cols + 1"


def test_forward_stores_casts_through_the_output_type():
    fn = _fn(
        "tl.store(out_ptr + cols, v.to(out_ptr.dtype.element_ty), m)\n"
        "o = tl.load(out_ptr + cols, m, other=0.0).to(tl.float32)\n"
    )
    assert persist.forward_stores(fn) == 1
    assert _body(fn).endswith("o = v.to(out_ptr.dtype.element_ty).to(tl.float32)")


def test_forward_stores_keeps_a_temporary_in_fp32():
    # Before: softmax's exp goes into the output, is read back and overwritten
    # by the normalized value. After: the read is the fp32 exp itself (eager
    # keeps the temporary in fp32); the output written once is still cast.
    fn = _fn(
        "tl.store(out_ptr + cols, e.to(out_ptr.dtype.element_ty), m)\n"
        "o = tl.load(out_ptr + cols, m, other=0.0).to(tl.float32)\n"
        "tl.store(out_ptr + cols, (o / s).to(out_ptr.dtype.element_ty), m)\n"
    )
    assert persist.forward_stores(fn) == 1
    assert "o = e.to(tl.float32)\n" in _body(fn)
    # Overwritten under another mask, or read under one between: an output.
    for later in (
        "tl.store(out_ptr + cols, (o / s).to(out_ptr.dtype.element_ty), m2)\n",
        "p = tl.load(out_ptr + cols, m2)\n"
        "tl.store(out_ptr + cols, (o / s).to(out_ptr.dtype.element_ty), m)\n",
    ):
        fn = _fn(
            "tl.store(out_ptr + cols, e.to(out_ptr.dtype.element_ty), m)\n"
            "o = tl.load(out_ptr + cols, m, other=0.0).to(tl.float32)\n" + later
        )
        assert persist.forward_stores(fn) == 1
        assert "o = e.to(out_ptr.dtype.element_ty).to(tl.float32)" in _body(fn)


def test_forward_stores_needs_the_same_mask():
    fn = _fn(
        "tl.store(out_ptr + cols, v, m)\n"
        "o = tl.load(out_ptr + cols, m2).to(tl.float32)\n"
    )
    assert persist.forward_stores(fn) == 0


def test_reuse_loads_keeps_the_later_hint():
    fn = _fn(
        "a = tl.load(x_ptr + c, m, eviction_policy='evict_last').to(tl.float32)\n"
        "b = tl.load(x_ptr + c, m, eviction_policy='evict_first').to(tl.float32)\n"
        "y = a + b\n"
    )
    assert persist.reuse_loads(fn) == 1
    assert _body(fn) == (
        "a = tl.load(x_ptr + c, m, eviction_policy='evict_first').to(tl.float32)\n"
        "y = a + a"
    )


def test_reuse_loads_not_across_a_store_to_the_same_pointer():
    fn = _fn(
        "a = tl.load(x_ptr + c, m)\n"
        "tl.store(x_ptr + c, a + 1, m)\n"
        "b = tl.load(x_ptr + c, m)\n"
    )
    assert persist.reuse_loads(fn) == 0


def test_drop_overwritten_stores():
    fn = _fn(
        "tl.store(out_ptr + c, a, m)\n" "b = a * 2\n" "tl.store(out_ptr + c, b, m)\n"
    )
    assert persist.drop_overwritten_stores(fn) == 1
    assert _body(fn) == "b = a * 2\ntl.store(out_ptr + c, b, m)"
    kept = _fn(
        "tl.store(out_ptr + c, a, m)\n"
        "b = tl.load(out_ptr + c, m)\n"
        "tl.store(out_ptr + c, b, m)\n"
    )
    assert persist.drop_overwritten_stores(kept) == 0


def test_drop_needless_barriers():
    fn = _fn("tl.store(out_ptr + c, a, m)\ntl.debug_barrier()\ny = a + 1\n")
    assert persist.drop_needless_barriers(fn) == 1
    reload = _fn(
        "tl.store(out_ptr + c, a, m)\ntl.debug_barrier()\ny = tl.load(out_ptr + c, m)\n"
    )
    assert persist.drop_needless_barriers(reload) == 0


def test_fold_identity_accumulators():
    fn = _fn(
        "acc = tl.full([1, B], float('-inf'), tl.float32)\n"
        "t = maximum_nan(acc, v)\n"
        "acc = tl.where(m, t, acc)\n"
        "r = max_nan(acc, 1)\n"
    )
    assert persist.fold_identity_accumulators(fn) == 1
    assert _body(fn) == "acc = tl.where(m, v, float('-inf'))\nr = max_nan(acc, 1)"
    # an init that is not op's identity is a real initial value: kept
    other = _fn(
        "acc = tl.full([1, B], 1, tl.float32)\nt = acc + v\nacc = tl.where(m, t, acc)\n"
    )
    assert persist.fold_identity_accumulators(other) == 0


def test_two_pass_welford():
    fn = _fn(
        "mean = tl.zeros([1, B], tl.float32)\n"
        "m2 = tl.zeros([1, B], tl.float32)\n"
        "w = tl.zeros([1, B], tl.float32)\n"
        "mean_n, m2_n, w_n = welford_accumulate(v, mean, m2, w, 0 == 0)\n"
        "mean = tl.where(m, mean_n, mean)\n"
        "m2 = tl.where(m, m2_n, m2)\n"
        "w = tl.where(m, w_n, w)\n"
        "a, b, c = welford_finish(mean, m2, w, 1)\n"
    )
    assert persist.two_pass_welford(fn) == (1, {"row_mean_m2"})
    # No column mask to read the row's length from: the mask's sum counts it.
    assert _body(fn) == (
        "a, b, c = row_mean_m2(v, m, 1, "
        "tl.sum(tl.broadcast_to(m, v.shape).to(tl.float32), 1))"
    )


def test_two_pass_welford_counts_the_row_by_its_size():
    fn = _fn(
        "cols = tl.arange(0, BLOCK_COLS)[None, :]\n"
        "col_mask = cols < hidden\n"
        "row_mask = rows < n\n"
        "mean = tl.zeros([1, B], tl.float32)\n"
        "m2 = tl.zeros([1, B], tl.float32)\n"
        "w = tl.zeros([1, B], tl.float32)\n"
        "mean_n, m2_n, w_n = welford_accumulate(v, mean, m2, w, 0 == 0)\n"
        "mean = tl.where(col_mask & row_mask, mean_n, mean)\n"
        "m2 = tl.where(col_mask & row_mask, m2_n, m2)\n"
        "w = tl.where(col_mask & row_mask, w_n, w)\n"
        "a, b, c = welford_finish(mean, m2, w, 1)\n"
    )
    assert persist.two_pass_welford(fn) == (1, {"row_mean_m2"})
    assert _body(fn).splitlines()[-1] == (
        "a, b, c = row_mean_m2(v, col_mask & row_mask, 1, hidden)"
    )


def test_persist_reads_x_once():
    out, helpers = persist.persist(_fn(LOOPED))
    body = _body(out)
    assert body.count("tl.load(") == 1 and "for " not in body
    assert "acc = tl.where(col_mask, sq, 0)" in body
    assert "x / total" in body and helpers == set()
    # No row mask here, so no row count to branch on: the last read keeps its hint.
    assert "eviction_policy='evict_first'" in body and "STREAM_ROWS" not in body


HINTED = """\
row_mask = rows < n
a = tl.load(x_ptr + c, m, eviction_policy='evict_first').to(tl.float32)
w = tl.load(w_ptr + c, m, eviction_policy='evict_last').to(tl.float32)
"""


def test_hint_row_loads_branches_on_the_row_count():
    fn = _fn(HINTED)
    assert persist.hint_row_loads(fn) == 1
    assert _body(fn) == (
        "row_mask = rows < n\n"
        "if n < STREAM_ROWS:\n"
        "    a = tl.load(x_ptr + c, m, eviction_policy='evict_first').to(tl.float32)\n"
        "else:\n"
        "    a = tl.load(x_ptr + c, m).to(tl.float32)\n"
        "w = tl.load(w_ptr + c, m, eviction_policy='evict_last').to(tl.float32)"
    )
    assert ast.unparse(fn.args).endswith("STREAM_ROWS: tl.constexpr")


def test_hint_row_loads_gives_adjacent_loads_one_branch():
    fn = _fn(
        "row_mask = rows < n\n"
        "a = tl.load(x_ptr + c, m, eviction_policy='evict_first')\n"
        "b = tl.load(r_ptr + c, m, eviction_policy='evict_first')\n"
        "s = a + b\n"
        "d = tl.load(y_ptr + c, m, eviction_policy='evict_first')\n"
    )
    assert persist.hint_row_loads(fn) == 3
    branches = [s for s in fn.body if isinstance(s, ast.If)]
    assert [len(b.body) for b in branches] == [2, 1]
    assert [len(b.orelse) for b in branches] == [2, 1]
    assert "evict_first" not in "".join(
        ast.unparse(s) for b in branches for s in b.orelse
    )
    assert [a.arg for a in fn.args.args].count("STREAM_ROWS") == 1


def test_hint_row_loads_leaves_a_kernel_without_evict_first_alone():
    _assert_unchanged(
        persist.hint_row_loads,
        "row_mask = rows < n\na = tl.load(x_ptr + c, m, eviction_policy='evict_last')\n",
    )


def test_hint_row_loads_needs_the_row_count():
    _assert_unchanged(
        persist.hint_row_loads,
        "a = tl.load(x_ptr + c, m, eviction_policy='evict_first')\n",
    )


def test_drop_row_hints_keeps_the_weights_evict_last():
    fn = _fn(HINTED)
    assert persist.drop_row_hints(fn) == 1
    assert _body(fn) == (
        "row_mask = rows < n\n"
        "a = tl.load(x_ptr + c, m).to(tl.float32)\n"
        "w = tl.load(w_ptr + c, m, eviction_policy='evict_last').to(tl.float32)"
    )


def test_drop_row_hints_leaves_a_kernel_without_evict_first_alone():
    _assert_unchanged(
        persist.drop_row_hints,
        "a = tl.load(x_ptr + c, m, eviction_policy='evict_last')\n",
    )


@pytest.mark.parametrize("case", ["kb_layernorm", "kb_scaled_rmsnorm"])
def test_inductors_persistent_kernels_port_without_evict_first(case):
    # H200, 20 calls a graph: kb_layernorm and kb_scaled_rmsnorm took
    # 0.968-0.988 of the hinted time at 32768-65536 rows without it (1.040 in
    # bf16 at 32768 rows of 512).
    source = Path(__file__).resolve().parents[1] / "captured" / case / "kernel.py"
    text = source.read_text()
    assert 'eviction_policy="evict_first"' not in text and "STREAM_ROWS" not in text
    assert 'eviction_policy="evict_last"' in text  # the weight's


def test_gpu_config_gives_way_to_porters_launch_heuristics():
    # The autotuner chose its config at the traced shape alone: a GPU capture
    # whose kernel porter derives a persistent form for launches as one from
    # the codegen-only target, the looped branch by looped_settings too
    # (natively captured rmsnorm 4096 bf16 at 1024 tokens took 1.22x the time
    # with the config's 2 rows and 8 warps, 1 stage; H200, 2026-12-03).
    from pathlib import Path

    from porter.pipeline import load_reference, read_manifest
    from porter.port import port_capture
    from porter.render import render_kernel
    from porter.records import Capture, LaunchConfig

    case = Path(__file__).resolve().parents[1] / "captured" / "rmsnorm"
    module = load_reference(case / "reference.py").module
    cap = Capture.from_dict(read_manifest(case))
    plain = render_kernel(port_capture(cap, module))
    cap.kernels[0].config = LaunchConfig({"XBLOCK": 2, "R0_BLOCK": 2048}, 8, 1)
    text = render_kernel(port_capture(cap, module))
    assert text == plain
    # row_launch sizes both forms (looped_settings for the looped one)
    assert "form, launch = row_launch(" in text
    assert (
        'kernel = rmsnorm_kernel if form == "persistent" else rmsnorm_kernel_looped'
        in text
    )
    assert "autotuner" not in text and "num_stages=1" not in text


EPILOGUE = """\
x = tl.load(x_ptr + c, m, other=0.0).to(tl.float32)
total = tl.sum(x * x, 1)[:, None]
scale = total / hidden
w = tl.load(w_ptr + c, m, eviction_policy='evict_last', other=0.0).to(tl.float32)
tl.store(out_ptr + c, x * scale * w, m)
"""


def test_hoist_late_loads_moves_the_epilogue_load_above_the_reduction():
    fn = _fn(EPILOGUE)
    assert persist.hoist_late_loads(fn) == 1
    assert _body(fn) == (
        "x = tl.load(x_ptr + c, m, other=0.0).to(tl.float32)\n"
        "w = tl.load(w_ptr + c, m, eviction_policy='evict_last', other=0.0)"
        ".to(tl.float32)\n"
        "total = tl.sum(x * x, 1)[:, None]\n"
        "scale = total / hidden\n"
        "tl.store(out_ptr + c, x * scale * w, m)"
    )


def test_hoist_late_loads_keeps_a_load_by_a_checked_index_after_its_check():
    # x[ids] hoisted above the device_assert on ids read outside x where eager
    # raises (the suite's far index: "a mask is missing", not the index check).
    fn = _fn(
        "x = tl.load(x_ptr + c, m, other=0.0).to(tl.float32)\n"
        "top = tl.max(x, 1)[:, None]\n"
        "ids = tl.load(ids_ptr + r, rm)\n"
        "tl.device_assert((0 <= ids) & (ids < hidden), 'ids out of bounds')\n"
        "p = tl.load(x_ptr + ids, rm).to(tl.float32)\n"
        "tl.store(out_ptr + r, p - top, rm)\n"
    )
    assert persist.hoist_late_loads(fn) == 1
    assert _body(fn) == (
        "x = tl.load(x_ptr + c, m, other=0.0).to(tl.float32)\n"
        "ids = tl.load(ids_ptr + r, rm)\n"
        "top = tl.max(x, 1)[:, None]\n"
        "tl.device_assert((0 <= ids) & (ids < hidden), 'ids out of bounds')\n"
        "p = tl.load(x_ptr + ids, rm).to(tl.float32)\n"
        "tl.store(out_ptr + r, p - top, rm)"
    )


def test_hoist_late_loads_moves_the_epilogue_load_above_an_earlier_store():
    # fused_add_rmsnorm stores the sum before reducing it: the weight's load
    # goes up to just after the mask it reads, ahead of the store.
    fn = _fn(
        "m = c < hidden\n"
        "x = tl.load(x_ptr + c, m, other=0.0).to(tl.float32)\n"
        "tl.store(sum_ptr + c, x, m)\n"
        "total = tl.sum(x * x, 1)[:, None]\n"
        "w = tl.load(w_ptr + c, m, other=0.0).to(tl.float32)\n"
        "tl.store(out_ptr + c, x * total * w, m)\n"
    )
    assert persist.hoist_late_loads(fn) == 1
    assert _body(fn) == (
        "m = c < hidden\n"
        "w = tl.load(w_ptr + c, m, other=0.0).to(tl.float32)\n"
        "x = tl.load(x_ptr + c, m, other=0.0).to(tl.float32)\n"
        "tl.store(sum_ptr + c, x, m)\n"
        "total = tl.sum(x * x, 1)[:, None]\n"
        "tl.store(out_ptr + c, x * total * w, m)"
    )


def test_hoist_late_loads_stays_below_a_store_when_it_reads_a_later_name():
    # The load reads y, assigned after the first store: it can go no higher
    # than the reduction.
    fn = _fn(
        "x = tl.load(x_ptr + c, m)\n"
        "tl.store(sum_ptr + c, x, m)\n"
        "y = c + 1\n"
        "total = tl.sum(x, 1)[:, None]\n"
        "w = tl.load(w_ptr + y, m)\n"
        "tl.store(out_ptr + c, w / total, m)\n"
    )
    assert persist.hoist_late_loads(fn) == 1
    assert _body(fn) == (
        "x = tl.load(x_ptr + c, m)\n"
        "tl.store(sum_ptr + c, x, m)\n"
        "y = c + 1\n"
        "w = tl.load(w_ptr + y, m)\n"
        "total = tl.sum(x, 1)[:, None]\n"
        "tl.store(out_ptr + c, w / total, m)"
    )


def test_hoist_late_loads_keeps_a_load_that_needs_the_reduction():
    # The address depends on the reduced value: it cannot be issued before it.
    _assert_unchanged(
        persist.hoist_late_loads,
        "x = tl.load(x_ptr + c, m)\n"
        "i = tl.argmax(x, 1)[:, None]\n"
        "g = tl.load(w_ptr + i, m)\n"
        "tl.store(out_ptr + c, g, m)\n",
    )


def test_hoist_late_loads_keeps_a_load_of_what_the_kernel_stores():
    # A reload of the kernel's own output must stay after the store it reads.
    _assert_unchanged(
        persist.hoist_late_loads,
        "x = tl.load(x_ptr + c, m)\n"
        "tl.store(out_ptr + c, x, m)\n"
        "total = tl.sum(x, 1)[:, None]\n"
        "y = tl.load(out_ptr + c, m)\n"
        "tl.store(out_ptr + c, y / total, m)\n",
    )


def test_hoist_late_loads_leaves_a_kernel_without_a_reduction_alone():
    _assert_unchanged(
        persist.hoist_late_loads,
        "x = tl.load(x_ptr + c, m)\nw = tl.load(w_ptr + c, m)\n",
    )


def test_persist_issues_the_epilogue_loads_first():
    # rmsnorm's looped kernel loads the weight in its last loop; the persistent
    # one loads it before the row's reduction.
    fn = _fn(
        LOOPED.replace(
            "    tl.store(out_ptr + cols, (x_2 / total)",
            "    w = tl.load(w_ptr + cols, col_mask, eviction_policy='evict_last')\n"
            "    tl.store(out_ptr + cols, (x_2 / total * w)",
        )
    )
    out, _ = persist.persist(fn)
    order = [ast.unparse(s).split(" =")[0] for s in out.body]
    assert order.index("w") < order.index("total")


ROW_MEAN_M2_KERNEL = """
import triton
import triton.language as tl

from porter.testing.parity import import_kernel

row_mean_m2 = import_kernel(SCAFFOLD, "row_mean_m2_scaffold").row_mean_m2


@triton.jit
def kernel(x_ptr, mean_ptr, m2_ptr, num_rows, n_cols: tl.constexpr,
           BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr, ROW_MASK_ONLY: tl.constexpr):
    rows = tl.arange(0, BLOCK_ROWS)[:, None]
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    row_mask = rows < num_rows
    if ROW_MASK_ONLY:
        # The row fills the block: no column term, the count is the fallback's.
        x = tl.load(x_ptr + rows * BLOCK_COLS + cols, row_mask, other=0.0)
        mean, m2, count = row_mean_m2(
            x, row_mask, 1, tl.sum(tl.broadcast_to(row_mask, x.shape).to(tl.float32), 1)
        )
    else:
        col_mask = cols < n_cols
        x = tl.load(x_ptr + rows * n_cols + cols, col_mask & row_mask, other=0.0)
        mean, m2, count = row_mean_m2(x, col_mask & row_mask, 1, n_cols)
    tl.store(mean_ptr + rows, mean[:, None], row_mask)
    tl.store(m2_ptr + rows, m2[:, None], row_mask)
"""


@pytest.mark.parametrize(
    "n_cols, block_cols, row_mask_only", [(6, 8, False), (8, 8, True)]
)
def test_row_mean_m2_counts_the_row_either_way(
    porter_device, tmp_path, n_cols, block_cols, row_mask_only
):
    # The helper as rendered into a scaffold, with the row size as its count
    # and with the fallback's count of a row-only mask (one a row, unbroadcast).
    scaffold = Path(__file__).resolve().parents[1] / "captured/add_layernorm/kernel.py"
    src = tmp_path / "row_mean_m2_kernel.py"
    src.write_text(f"SCAFFOLD = {str(scaffold)!r}\n" + ROW_MEAN_M2_KERNEL)
    kernel = import_kernel(src, f"row_mean_m2_kernel_{n_cols}").kernel
    x = torch.randn(3, n_cols, dtype=torch.float64)
    x[1] += 1000.0  # a large mean: m2 must come from deviations, not sum(x^2)
    mean = torch.full((3,), float("nan"), dtype=torch.float32, device=porter_device)
    m2 = mean.clone()
    kernel[(1,)](
        x.float().to(porter_device), mean, m2, 3, n_cols, 4, block_cols, row_mask_only
    )
    expected_mean = x.float().double().mean(dim=1)
    expected_m2 = ((x.float().double() - expected_mean[:, None]) ** 2).sum(dim=1)
    torch.testing.assert_close(mean.double().cpu(), expected_mean, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(m2.double().cpu(), expected_m2, rtol=1e-5, atol=1e-5)


_WELFORD = (
    "mean = tl.zeros([1, B], tl.float32)\n"
    "m2 = tl.zeros([1, B], tl.float32)\n"
    "w = tl.zeros([1, B], tl.float32)\n"
    "mean_n, m2_n, w_n = welford_accumulate(v, mean, m2, w, 0 == 0)\n"
    "mean = tl.where(m, mean_n, mean)\n"
    "m2 = tl.where(m, m2_n, m2)\n"
    "w = tl.where(m, w_n, w)\n"
    "a, b, c = welford_finish(mean, m2, w, 1)\n"
)


def test_two_pass_welford_gives_a_stored_mean_eagers_nan():
    # var_mean's mean as an output: eager's Welford makes it NaN where the row
    # holds an inf (inf - inf); sum / count made it inf.
    fn = _fn(
        _WELFORD
        + "out1 = a[:, None]\ntl.store(out_ptr + rows, out1.to(tl.bfloat16), m)\n"
    )
    persist.two_pass_welford(fn)
    assert "a = tl.where(b == b, a, b)" in _body(fn).splitlines()


def test_two_pass_welford_leaves_a_mean_only_used_in_a_term_alone():
    # LayerNorm: (x - mean) * rstd is NaN on such a row either way.
    fn = _fn(
        _WELFORD
        + "y = (v - a[:, None]) * tl.rsqrt(b[:, None] + 1e-05)\ntl.store(out_ptr + cols, y, m)\n"
    )
    persist.two_pass_welford(fn)
    assert "tl.where" not in _body(fn)


def test_a_ported_var_mean_gives_eagers_nan_mean_on_a_row_with_inf(tmp_path):
    # tests/cases/var_mean_rows returns (x - mean) * rsqrt(var + eps), mean, var.
    case = tmp_path / "var_mean_rows"
    shutil.copytree(Path(__file__).parent / "cases" / "var_mean_rows", case)
    port(case, progress=lambda _: None)
    loaded = load_case(case)
    # rows of large values, an inf, a NaN, tiny values and mixed signs
    sizes = {"num_tokens": 5, "hidden": 64}
    check_parity(loaded, Scenario("float32", sizes, values="difficult"), "cpu", 0)


def test_a_batch_norms_stored_mean_keeps_the_sum_over_count():
    # BatchNorm's statistics on the CPU sum the row: its running mean is inf
    # on a row with an inf, where var_mean's Welford gives NaN. The NaN mean
    # made KernelBench's 33_BatchNorm fail its difficult rows.
    fn = _fn(
        _WELFORD
        + "out1 = a[:, None]\ntl.store(out_ptr + rows, out1.to(tl.bfloat16), m)\n"
    )
    persist.two_pass_welford(fn, nan_mean=False)
    assert "tl.where(b == b" not in _body(fn)
