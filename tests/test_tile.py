"""Before/after tests for the (rows, cols) launch of pointwise kernels (porter.port.speed.tile)."""

import ast
import re
import textwrap

from porter.port.model import KernelPort, Param
from porter.port.speed.tile import (
    _exact_quotient,
    _model_factor,
    column_masked_loads,
    row_masked_loads,
    tile_rows_by_cols,
)
from porter.records import KernelRecord

FLAT = """\
block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE
offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
mask = offsets < numel
x0 = offsets % inner
x1 = offsets // inner
x2 = offsets // inner_times_heads
v = tl.load(x_ptr + (x0 + x1 * x_stride0), mask).to(tl.float32)
c = tl.load(c_ptr + (x0 + x2 * c_stride0), mask).to(tl.float32)
tl.store(out_ptr + (x0 + x1 * inner), (v * c).to(out_ptr.dtype.element_ty), mask)
"""


def _kp(body: str, numel: str, inner: str, wide: str) -> KernelPort:
    params = [
        Param("x_ptr", "pointer", "x"),
        Param("c_ptr", "pointer", "c"),
        Param("out_ptr", "pointer", "out"),
        Param("numel", "runtime", numel),
        Param("x_stride0", "stride", "x.stride(0)", "tl.int64"),
        Param("c_stride0", "stride", "c.stride(0)", "tl.int64"),
        Param("inner", "model", inner, "tl.constexpr"),
        Param("inner_times_heads", "model", wide, "tl.constexpr"),
        Param("BLOCK_SIZE", "block", "BLOCK_SIZE", "tl.constexpr"),
    ]
    args = ", ".join(p.name for p in params)
    src = f"def k({args}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    kp = KernelPort(KernelRecord("k", src, "pointwise", [], {}, None, None, 0), None)
    kp.tree = ast.parse(src).body[0]
    kp.params = params
    return kp


def test_exact_quotient():
    assert _exact_quotient("(num_tokens * (x.shape[1] // 2))", "(x.shape[1] // 2)") == (
        "num_tokens"
    )
    assert _exact_quotient("num_tokens * num_heads * d", "d") == "num_heads*num_tokens"
    assert _exact_quotient("num_tokens * d + 1", "d") is None  # not whole rows
    assert _exact_quotient("num_tokens", "d") is None
    # launcher expressions read sizes from tensors
    assert _exact_quotient("num_tokens * x.shape[1]", "x.shape[1]") == "num_tokens"


def test_tile_rewrites_flat_index():
    kp = _kp(FLAT, "num_tokens * heads * d", "d", "heads * d")
    assert tile_rows_by_cols(kp)
    body = "\n".join(ast.unparse(s) for s in kp.tree.body)
    assert "offsets" not in body and "% inner" not in body and "BLOCK_SIZE" not in body
    # One grid axis: COL_BLOCKS column blocks a row block, in memory order.
    assert body.startswith(
        "row_block = tl.program_id(0) // COL_BLOCKS\n"
        "col_block = tl.program_id(0) % COL_BLOCKS\n"
        "rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]\n"
        "cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]\n"
        "mask = (rows < num_rows) & (cols < inner)\n"
    )
    assert "x2 = rows // heads" in body
    assert "x_ptr + (cols + rows * x_stride0)" in body
    names = [p.name for p in kp.params]
    assert "numel" not in names and "inner_times_heads" not in names
    assert names[-3:] == ["BLOCK_ROWS", "BLOCK_COLS", "COL_BLOCKS"]
    assert "heads" in names
    assert kp.tile == ("inner", "d", "heads*num_tokens")
    # the signature follows the params
    assert [a.arg for a in kp.tree.args.args] == names


def test_tile_names_the_rows_after_a_single_dim():
    kp = _kp(FLAT, "num_tokens * d", "d", "d * 2")
    assert tile_rows_by_cols(kp)
    assert "num_tokens" in [p.name for p in kp.params]


def test_tile_rebuilds_the_flat_offset_for_other_uses():
    body = FLAT.replace("v * c", "v * c + offsets")
    kp = _kp(body, "num_tokens * d", "d", "d * 2")
    assert tile_rows_by_cols(kp)
    text = "\n".join(ast.unparse(s) for s in kp.tree.body)
    assert "offsets = rows * inner + cols" in text
    assert "(v * c + offsets)" in text and "% inner" not in text


def test_tile_without_other_uses_has_no_flat_offset():
    kp = _kp(FLAT, "num_tokens * d", "d", "d * 2")
    assert tile_rows_by_cols(kp)
    assert "offsets" not in ast.unparse(kp.tree)


def test_tile_splits_rows_inside_expressions_and_by_per_call_sizes():
    # A transposed layout (merge_attn_states: rows are (head, token) pairs):
    # Inductor splits the flat offset into the token, nested in a modulo, and
    # the head, by a per-call product. Both become per-row arithmetic.
    body = (
        FLAT.replace("x1 = offsets // inner", "x1 = offsets // inner % num_tokens")
        .replace("x2 = offsets // inner_times_heads", "x2 = offsets // inner_times_t")
        .replace("(v * c)", "(v * c + (offsets // inner_times_t).to(tl.float32))")
    )
    kp = _kp(body, "num_tokens * heads * d", "d", "heads * d")
    kp.params.insert(4, Param("inner_times_t", "runtime", "d * num_tokens"))
    kp.params.insert(4, Param("num_tokens", "runtime", "num_tokens"))
    kp.runtime_dims = frozenset({"num_tokens"})
    assert tile_rows_by_cols(kp)
    text = "\n".join(ast.unparse(s) for s in kp.tree.body)
    assert "x1 = rows % num_tokens" in text
    assert "x2 = rows // num_tokens" in text
    assert "(v * c + (rows // num_tokens).to(tl.float32))" in text
    assert "offsets" not in text
    # the per-call product is read no more; the per-call dim stays an argument
    names = [p.name for p in kp.params]
    assert "inner_times_t" not in names and "num_tokens" in names


def test_tile_split_by_a_per_call_size_not_named_yet_is_a_new_argument():
    body = FLAT.replace("x2 = offsets // inner_times_heads", "x2 = offsets // wide")
    kp = _kp(body, "num_tokens * heads * d", "d", "heads * d")
    kp.params.insert(4, Param("wide", "runtime", "d * num_tokens"))
    kp.runtime_dims = frozenset({"num_tokens"})
    assert tile_rows_by_cols(kp)
    assert "x2 = rows // num_tokens" in ast.unparse(kp.tree)
    added = next(p for p in kp.params if p.name == "num_tokens")
    assert (added.kind, added.value, added.annotation) == ("runtime", "num_tokens", "")


def test_tile_keeps_the_flat_offset_for_a_split_that_is_not_whole_rows():
    body = FLAT.replace("x2 = offsets // inner_times_heads", "x2 = offsets // odd")
    kp = _kp(body, "num_tokens * d", "d", "d * 2")
    kp.params.insert(4, Param("odd", "model", "d + 1", "tl.constexpr"))
    assert tile_rows_by_cols(kp)
    text = "\n".join(ast.unparse(s) for s in kp.tree.body)
    assert "offsets = rows * inner + cols" in text and "x2 = offsets // odd" in text


def test_tile_leaves_a_kernel_that_already_uses_a_head_name():
    # `rows` would be assigned twice: the flat launch stays.
    kp = _kp(
        FLAT.replace("x2 = ", "rows = ").replace("x2 *", "rows *"),
        "num_tokens * d",
        "d",
        "d * 2",
    )
    assert not tile_rows_by_cols(kp)
    assert kp.tile is None


def test_tile_needs_whole_rows():
    kp = _kp(FLAT, "num_tokens * d + 3", "d", "d * 2")
    assert not tile_rows_by_cols(kp)


EPILOGUE = """\
block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE
offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
mask = offsets < numel
v = tl.load(out_ptr + offsets, mask).to(tl.float32)
tl.store(out_ptr + offsets, (v * 0.5).to(out_ptr.dtype.element_ty), mask)
"""


def _epilogue(numel: str) -> KernelPort:
    params = [
        Param("out_ptr", "pointer", "out"),
        Param("numel", "runtime", numel),
        Param("BLOCK_SIZE", "block", "BLOCK_SIZE", "tl.constexpr"),
    ]
    src = "def k(out_ptr, numel, BLOCK_SIZE):\n" + textwrap.indent(EPILOGUE, "    ")
    kp = KernelPort(KernelRecord("k", src, "pointwise", [], {}, None, None, 0), None)
    kp.tree = ast.parse(src).body[0]
    kp.params = params
    kp.runtime_dims = frozenset({"num_tokens"})
    return kp


def test_model_factor():
    runtime = frozenset({"num_tokens"})
    assert _model_factor("(out_features * num_tokens)", runtime) == "out_features"
    assert _model_factor("num_tokens * x.shape[1]", runtime) == "x.shape[1]"
    assert _model_factor("num_tokens * (x.shape[1] // 2)", runtime) == (
        "(x.shape[1] // 2)"
    )
    assert _model_factor("num_tokens * heads * d", runtime) == "d*heads"
    assert _model_factor("num_tokens", runtime) is None  # nothing per model
    assert _model_factor("out_features * 4", runtime) is None  # nothing per call
    assert _model_factor("num_tokens + out_features", runtime) is None  # a sum
    assert _model_factor("2 * num_tokens", runtime) is None  # a small literal only
    # A size the capture fixed (KernelBench's features) is a row of its own.
    assert _model_factor("(96 * num_tokens)", runtime) == "96"
    assert _model_factor("31 * num_tokens", runtime) is None
    # a floor that reads a per-call dim is per-call, however opaque
    assert _model_factor("num_tokens * (num_tokens // 2)", runtime) is None
    assert _model_factor("d * (num_tokens // 2)", runtime) == "d"


def test_tile_gives_a_flat_epilogue_rows_of_its_model_factor():
    # Before: one runtime element count, so Triton cannot tell that a
    # thread's elements share one mask value and loads them one at a time.
    kp = _epilogue("(out_features * num_tokens)")
    assert tile_rows_by_cols(kp)
    body = "\n".join(ast.unparse(s) for s in kp.tree.body)
    assert "mask = (rows < num_tokens) & (cols < out_features)" in body
    assert "offsets = rows * out_features + cols" in body
    assert "BLOCK_SIZE" not in body and "numel" not in body
    names = [p.name for p in kp.params]
    assert names == [
        "out_ptr",
        "num_tokens",
        "out_features",
        "BLOCK_ROWS",
        "BLOCK_COLS",
        "COL_BLOCKS",
    ]
    kinds = {p.name: p.kind for p in kp.params}
    assert kinds["num_tokens"] == "runtime" and kinds["out_features"] == "model"
    assert kp.tile == ("out_features", "out_features", "num_tokens")
    assert [a.arg for a in kp.tree.args.args] == names


def test_tile_takes_a_scalar_broadcast_to_the_flat_block_along():
    # A per-tensor scale (static int8 quant): Inductor broadcasts it to
    # [XBLOCK]; on the tile it spans the tile's block.
    body = EPILOGUE.replace(
        "(v * 0.5)", "(v / tl.broadcast_to(scale, [BLOCK_SIZE]))"
    ).replace(
        "mask = offsets < numel\n",
        "mask = offsets < numel\nscale = tl.load(s_ptr + 0)\n",
    )
    kp = _epilogue("(out_features * num_tokens)")
    kp.tree = ast.parse(
        "def k(out_ptr, numel, BLOCK_SIZE):\n" + textwrap.indent(body, "    ")
    ).body[0]
    assert tile_rows_by_cols(kp)
    text = ast.unparse(kp.tree)
    assert "(v / tl.broadcast_to(scale, [BLOCK_ROWS, BLOCK_COLS]))" in text
    assert "BLOCK_SIZE" not in text


def test_tile_gives_a_flat_epilogue_of_literal_rows_a_row_size():
    kp = _epilogue("(96 * num_tokens)")
    assert tile_rows_by_cols(kp)
    body = "\n".join(ast.unparse(s) for s in kp.tree.body)
    assert "mask = (rows < num_tokens) & (cols < row_size)" in body
    assert "offsets = rows * row_size + cols" in body
    assert kp.tile == ("row_size", "96", "num_tokens")
    assert {p.name: p.value for p in kp.params}["row_size"] == "96"


def test_tile_keeps_a_flat_epilogue_without_a_model_factor():
    kp = _epilogue("num_tokens")
    assert not tile_rows_by_cols(kp)
    assert "mask = offsets < numel" in ast.unparse(kp.tree)
    assert kp.tile is None


# Inductor's flat kernel for a GPU loads a per-column vector under the whole
# mask (linear_gelu's bias, `in_ptr1 + x0` with xmask).
PER_COLUMN = "".join(FLAT.splitlines(True)[:6]) + textwrap.dedent("""\
    x3 = x0 // 2
    v = tl.load(x_ptr + (x0 + x1 * x_stride0), mask).to(tl.float32)
    b = tl.load(c_ptr + x3, mask, eviction_policy="evict_last").to(tl.float32)
    h = tl.load(c_ptr + (x0 + x2 * c_stride0), mask).to(tl.float32)
    s = tl.load(c_ptr + x0, x0 < 3).to(tl.float32)
    tl.store(out_ptr + (x0 + x1 * inner), (v * b * h * s).to(out_ptr.dtype.element_ty), mask)
    """)


def test_per_column_loads_take_the_column_bound_alone():
    kp = _kp(PER_COLUMN, "num_tokens * heads * d", "d", "heads * d")
    assert tile_rows_by_cols(kp)
    before = ast.unparse(kp.tree)
    assert "tl.load(c_ptr + x3, mask, eviction_policy='evict_last')" in before
    assert column_masked_loads(kp)
    after = ast.unparse(kp.tree)
    # After: the address reads only columns (x3 = cols // 2): one row of
    # values a block, broadcast over its rows.
    assert "tl.load(c_ptr + x3, cols < inner, eviction_policy='evict_last')" in after
    # Addresses that read the rows (directly, or through x2 = rows // heads)
    # keep the tile's mask; a load under another mask is left as it is.
    assert "tl.load(x_ptr + (cols + rows * x_stride0), mask)" in after
    assert "tl.load(c_ptr + (cols + x2 * c_stride0), mask)" in after
    assert "tl.load(c_ptr + cols, cols < 3)" in after
    assert kp.notes[-1].startswith("per-column vectors (a bias, a scale)")


def test_per_column_loads_need_a_tiled_kernel_and_such_a_load():
    kp = _kp(PER_COLUMN, "num_tokens * heads * d", "d", "heads * d")
    assert not column_masked_loads(kp)  # not tiled (yet): nothing to bound
    assert "tl.load(c_ptr + x3, mask" in ast.unparse(kp.tree)
    flat = _kp(FLAT, "num_tokens * heads * d", "d", "heads * d")
    assert tile_rows_by_cols(flat)
    before = ast.unparse(flat.tree)
    assert not column_masked_loads(flat)  # every load reads the rows
    assert ast.unparse(flat.tree) == before


# A per-row value (a token's position, merge_attn_states' weight) under the
# whole mask: every column of the block loads it again.
PER_ROW = "".join(FLAT.splitlines(True)[:6]) + textwrap.dedent("""\
    v = tl.load(x_ptr + (x0 + x1 * x_stride0), mask).to(tl.float32)
    w = tl.load(c_ptr + x1, mask, eviction_policy="evict_last").to(tl.float32)
    p = tl.load(c_ptr + x2, mask)
    g = tl.load(c_ptr + (x0 + p * inner), mask).to(tl.float32)
    tl.store(out_ptr + (x0 + x1 * inner), (v * w * g).to(out_ptr.dtype.element_ty), mask)
    """)


def test_per_row_loads_take_the_row_bound_alone():
    kp = _kp(PER_ROW, "num_tokens * heads * d", "d", "heads * d")
    assert tile_rows_by_cols(kp)
    assert not column_masked_loads(kp)  # no load reads only columns
    before = ast.unparse(kp.tree)
    assert "tl.load(c_ptr + rows, mask, eviction_policy='evict_last')" in before
    assert row_masked_loads(kp)
    after = ast.unparse(kp.tree)
    # After: the addresses read only rows (x1 = rows, x2 = rows // heads): one
    # column of values a block, broadcast over its columns.
    bound = "rows < num_rows"
    assert f"tl.load(c_ptr + rows, {bound}, eviction_policy='evict_last')" in after
    assert f"tl.load(c_ptr + x2, {bound})" in after
    # An address that reads columns (the gather at p) keeps the tile's mask.
    assert "tl.load(c_ptr + (cols + p * inner), mask)" in after
    assert "tl.load(x_ptr + (cols + rows * x_stride0), mask)" in after
    assert kp.notes[-1].startswith("per-row values (a position, a weight)")
    assert not row_masked_loads(_kp(PER_ROW, "n", "d", "d"))  # not tiled


def test_two_row_splits_named_alike_keep_their_own_sizes():
    # Before: `offsets // (d * h * w)` and `offsets // (8 * d * h * w)` both
    # became rows // x_shape_size (the name drops the 8): Conv3d -> softmax over 8 channels
    # read its batch's max at the spatial index (out of bounds). After: two
    # names, two values.
    body = FLAT.replace(
        "x2 = offsets // inner_times_heads\n",
        "x2 = offsets // inner_times_heads\nx3 = offsets // eight_wide\n",
    ).replace("(v * c)", "(v * c + x3)")
    area = "(x.shape[2] - 2) * (x.shape[3] - 2)"
    kp = _kp(body, f"num_tokens * 8 * {area} * d", "d", f"{area} * d")
    kp.params.insert(
        -1, Param("eight_wide", "model", f"8 * {area} * d", "tl.constexpr")
    )
    assert tile_rows_by_cols(kp)
    text = "\n".join(ast.unparse(s) for s in kp.tree.body)
    values = {p.name: p.value for p in kp.params}
    first = re.search(r"x2 = rows // (\w+)", text).group(1)
    second = re.search(r"x3 = rows // (\w+)", text).group(1)
    assert first != second
    assert _exact_quotient(values[second], values[first]) == "8"
