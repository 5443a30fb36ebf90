"""Before/after tests for the (rows, cols) launch of pointwise kernels (porter.port.tile)."""

import ast
import textwrap

from porter.port.model import KernelPort, Param
from porter.port.tile import _exact_quotient, tile_rows_by_cols
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
    assert "offsets" not in body and "%" not in body and "BLOCK_SIZE" not in body
    assert "cols = tl.program_id(1) * BLOCK_COLS" in body
    assert "mask = (rows < num_rows) & (cols < inner)" in body
    assert "x2 = rows // heads" in body
    assert "x_ptr + (cols + rows * x_stride0)" in body
    names = [p.name for p in kp.params]
    assert "numel" not in names and "inner_times_heads" not in names
    assert names[-2:] == ["BLOCK_ROWS", "BLOCK_COLS"] and "heads" in names
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
    assert "(v * c + offsets)" in text and "%" not in text


def test_tile_without_other_uses_has_no_flat_offset():
    kp = _kp(FLAT, "num_tokens * d", "d", "d * 2")
    assert tile_rows_by_cols(kp)
    assert "offsets" not in ast.unparse(kp.tree)


def test_tile_needs_whole_rows():
    kp = _kp(FLAT, "num_tokens * d + 3", "d", "d * 2")
    assert not tile_rows_by_cols(kp)
