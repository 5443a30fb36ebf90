"""Before/after tests for the looped kernel's recompute pass (porter.port.forms.recompute)."""

import ast
import textwrap

from porter.port.forms.recompute import recompute_reloads


def _fn(body: str) -> ast.FunctionDef:
    src = (
        "def k(x_ptr, r_ptr, w_ptr, out_ptr, n, x_stride0, "
        "hidden: tl.constexpr, BLOCK_COLS: tl.constexpr):\n"
    )
    return ast.parse(src + textwrap.indent(textwrap.dedent(body), "    ")).body[0]


def _body(fn: ast.FunctionDef) -> str:
    return "\n".join(ast.unparse(s) for s in fn.body)


# Inductor's CPU softmax in looped form: the second loop stores exp into out,
# the third reloads it, divides and stores again.
SOFTMAX = """\
rows = tl.program_id(0) + tl.arange(0, 1)[:, None]
col_base = tl.arange(0, BLOCK_COLS)[None, :]
m_acc = tl.full([1, BLOCK_COLS], float('-inf'), tl.float32)
for col_start in tl.range(0, hidden, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < hidden
    x = tl.load(x_ptr + (cols + rows * x_stride0), col_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    t = maximum_nan(m_acc, x)
    m_acc = tl.where(col_mask, t, m_acc)
row_max = max_nan(m_acc, 1)[:, None]
s_acc = tl.full([1, BLOCK_COLS], 0, tl.float32)
for col_start in tl.range(0, hidden, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < hidden
    x_2 = tl.load(x_ptr + (cols + rows * x_stride0), col_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
    e = tl.exp(x_2 - row_max)
    u = s_acc + e
    s_acc = tl.where(col_mask, u, s_acc)
    tl.store(out_ptr + (cols + rows * x_stride0), e.to(out_ptr.dtype.element_ty), col_mask)
row_sum = tl.sum(s_acc, 1)[:, None]
tl.debug_barrier()
for col_start in tl.range(0, hidden, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < hidden
    out = tl.load(out_ptr + (cols + rows * x_stride0), col_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
    y = out * (1.0 / row_sum)
    tl.store(out_ptr + (cols + rows * x_stride0), y.to(out_ptr.dtype.element_ty), col_mask)
"""


def _loops(fn):
    return [s for s in fn.body if isinstance(s, ast.For)]


def test_softmax_recomputes_exp_and_writes_out_once():
    fn = _fn(SOFTMAX)
    assert recompute_reloads(fn) == 1
    body = _body(fn)
    assert body.count("tl.store(") == 1  # only the normalized value is written
    assert "tl.load(out_ptr" not in body and "tl.debug_barrier" not in body
    second, third = _loops(fn)[1], _loops(fn)[2]
    assert "eviction_policy='evict_last'" in ast.unparse(second)  # read again later
    third_src = "\n".join(ast.unparse(s) for s in third.body)
    # cols and col_mask are reused; the load and exp are copied under new names,
    # and the value stays fp32: the store it replaces held a temporary, which
    # eager keeps in fp32 (rounding it to a bf16 output's type cost an F2F an
    # element: 1536 SASS instructions against 1408 for the looped kernel over
    # 32768 bf16 columns, sm_90)
    assert third_src == (
        "cols = col_start + col_base\n"
        "col_mask = cols < hidden\n"
        "x_3 = tl.load(x_ptr + (cols + rows * x_stride0), col_mask, "
        "eviction_policy='evict_first', other=0.0).to(tl.float32)\n"
        "e_2 = tl.exp(x_3 - row_max)\n"
        "out = e_2.to(tl.float32)\n"
        "y = out * (1.0 / row_sum)\n"
        "tl.store(out_ptr + (cols + rows * x_stride0), "
        "y.to(out_ptr.dtype.element_ty), col_mask)"
    )


def test_an_output_written_once_is_kept_and_reloaded():
    # fused_add_rmsnorm: the sum is a real output (never overwritten), so the
    # second loop reloads it rather than reading x and the residual again
    src = SOFTMAX.replace(
        "tl.store(out_ptr + (cols + rows * x_stride0), y.to",
        "tl.store(r_ptr + (cols + rows * x_stride0), y.to",
    )
    fn = _fn(src)
    assert recompute_reloads(fn) == 0
    assert _body(fn) == _body(_fn(src))


def test_a_value_from_two_row_loads_is_reloaded():
    # recomputing would read two rows where the reload reads one
    src = SOFTMAX.replace(
        "e = tl.exp(x_2 - row_max)",
        "r = tl.load(r_ptr + (cols + rows * x_stride0), col_mask, other=0.0)\n"
        "    e = tl.exp(x_2 + r - row_max)",
    )
    assert recompute_reloads(_fn(src)) == 0


def test_a_per_column_load_does_not_count_as_a_row():
    src = SOFTMAX.replace(
        "e = tl.exp(x_2 - row_max)",
        "w = tl.load(w_ptr + cols, col_mask, other=0.0)\n"
        "    e = tl.exp(x_2 * w - row_max)",
    )
    fn = _fn(src)
    assert recompute_reloads(fn) == 1
    assert "w_2 = tl.load(w_ptr + cols" in ast.unparse(_loops(fn)[2])


def test_a_value_reading_an_accumulator_is_reloaded():
    # the running sum changes every block: the third loop cannot rebuild it
    src = SOFTMAX.replace(
        "tl.store(out_ptr + (cols + rows * x_stride0), e.to",
        "tl.store(out_ptr + (cols + rows * x_stride0), (e + s_acc).to",
    )
    assert recompute_reloads(_fn(src)) == 0


def test_a_name_changed_between_the_loops_stops_it():
    # row_max is recomputed between the loops: the copy would read the new one
    src = SOFTMAX.replace(
        "row_sum = tl.sum(s_acc, 1)[:, None]",
        "row_sum = tl.sum(s_acc, 1)[:, None]\nrow_max = row_max * 2.0",
    )
    assert recompute_reloads(_fn(src)) == 0


def test_a_second_reader_of_the_stored_values_stops_it():
    src = SOFTMAX.replace(
        "row_sum = tl.sum(s_acc, 1)[:, None]",
        "row_sum = tl.sum(s_acc, 1)[:, None]\n"
        "peek = tl.load(out_ptr + rows * x_stride0, rows < n)",
    )
    assert recompute_reloads(_fn(src)) == 0


def test_a_statement_the_later_loop_changes_again_is_copied():
    # the third loop sets col_mask twice: its value at the reload is not the
    # first loop's, so the copy computes its own
    src = SOFTMAX.replace(
        "    out = tl.load(",
        "    col_mask = col_mask & (cols >= 0)\n    out = tl.load(",
    )
    fn = _fn(src)
    assert recompute_reloads(fn) == 1
    third = "\n".join(ast.unparse(s) for s in _loops(fn)[2].body)
    assert "col_mask_2 = cols < hidden" in third
    assert "x_3 = tl.load(x_ptr + (cols + rows * x_stride0), col_mask_2," in third
