"""Before/after tests for fusing back-to-back tiled pointwise kernels (porter.port.launch.fuse)."""

import ast
import textwrap

from porter.port.launch.fuse import fusable, fuse_pointwise, loads_before_stores
from porter.port.model import KernelPort, Param
from porter.records import KernelRecord

HEAD = """\
row_block = tl.program_id(0) // COL_BLOCKS
col_block = tl.program_id(0) % COL_BLOCKS
rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
mask = (rows < num_rows) & (cols < half)
"""

FIRST = HEAD + """\
a = tl.load(x_ptr + (cols + rows * x_stride0), mask).to(tl.float32)
b = tl.load(x_ptr + (half + cols + rows * x_stride0), mask).to(tl.float32)
tl.store(out_ptr + (cols + rows * out_stride0), (a - b).to(out_ptr.dtype.element_ty), mask)
"""

SECOND = HEAD.replace("half)", "rest)") + """\
a = tl.load(x_ptr + (half + cols + rows * x_stride0), mask).to(tl.float32)
b = tl.load(x_ptr + (cols + rows * x_stride0), mask).to(tl.float32)
tl.store(out_ptr + (cols + rows * out_stride0), (a + b).to(out_ptr.dtype.element_ty), mask)
"""


def _kp(name: str, body: str, out: str, cols: str, rows="num_tokens * heads"):
    params = [
        Param("x_ptr", "pointer", "x"),
        Param("out_ptr", "pointer", out, view=f"{out}_base.as_strided(...)"),
        Param("num_rows", "runtime", rows),
        Param("x_stride0", "stride", "x.stride(1)", "tl.int64"),
        Param("out_stride0", "stride", f"{out}.stride(1)", "tl.int64"),
        Param("half", "model", "d // 2", "tl.constexpr"),
        Param("BLOCK_ROWS", "block", "BLOCK_ROWS", "tl.constexpr"),
        Param("BLOCK_COLS", "block", "BLOCK_COLS", "tl.constexpr"),
        Param("COL_BLOCKS", "block", "COL_BLOCKS", "tl.constexpr"),
    ]
    if "rest" in body:
        params.insert(6, Param("rest", "model", "d - d // 2", "tl.constexpr"))
    args = ", ".join(p.name for p in params)
    src = f"def {name}({args}):\n" + textwrap.indent(body, "    ")
    kp = KernelPort(KernelRecord(name, src, "pointwise", [], {}, None, None, 0), None)
    kp.tree = ast.parse(src).body[0]
    kp.params = params
    kp.tile = ("half" if "rest" not in body else "rest", cols, rows)
    return kp


def _body(kp: KernelPort) -> str:
    return "\n".join(ast.unparse(s) for s in kp.tree.body)


def test_two_slices_of_one_output_fuse_into_one_kernel():
    k0 = _kp("k0", FIRST, "out", "d // 2")
    k1 = _kp("k1", SECOND, "out_view0", "d - d // 2")
    (fused,) = fuse_pointwise([k0, k1], ["k0", "k1"])
    body = _body(fused)
    # The first kernel's statements up to its store, then the second's loads
    # and the mask they read, then the first's store, then the second's rest.
    assert body.splitlines() == [
        *HEAD.splitlines(),
        "a = tl.load(x_ptr + (cols + rows * x_stride0), mask).to(tl.float32)",
        "b = tl.load(x_ptr + (half + cols + rows * x_stride0), mask).to(tl.float32)",
        "mask_2 = (rows < num_rows) & (cols < rest)",
        "a_2 = tl.load(x_ptr + (half + cols + rows * x_stride0), mask_2).to(tl.float32)",
        "b_2 = tl.load(x_ptr + (cols + rows * x_stride0), mask_2).to(tl.float32)",
        "tl.store(out_ptr + (cols + rows * out_stride0), (a - b).to(out_ptr.dtype.element_ty), mask)",
        "tl.store(out_ptr_2 + (cols + rows * out_stride0_2), (a_2 + b_2).to(out_ptr_2.dtype.element_ty), mask_2)",
    ]
    # Shared by launcher value: x, its stride, the row count, `half`.
    names = [p.name for p in fused.params]
    assert names.count("x_ptr") == 1 and "x_ptr_2" not in names
    assert "num_rows_2" not in names and "half_2" not in names
    # Bound to other values: the second output and its stride, `rest`.
    assert {"out_ptr_2", "out_stride0_2", "rest"} <= set(names)
    assert names[-3:] == ["BLOCK_ROWS", "BLOCK_COLS", "COL_BLOCKS"]
    assert [a.arg for a in fused.tree.args.args] == names
    # rows and cols are computed once; the second mask keeps its own bound.
    assert body.count("rows = ") == 1 and body.count("cols = ") == 1
    # The grid covers both column ranges; the second launch is gone.
    assert fused.tile == ("half", "max(d // 2, d - d // 2)", "num_tokens * heads")
    assert fused.fused == ["k1"]
    assert any(n.startswith("fused 2 pointwise kernels") for n in fused.notes)
    assert any(n.startswith("issued the fused kernels' loads") for n in fused.notes)


def test_a_kernel_reading_what_the_first_writes_is_not_fused():
    k0 = _kp("k0", FIRST, "out", "d // 2")
    reader = SECOND.replace("x_ptr + (half", "out_ptr + (half")
    k1 = _kp("k1", reader, "out_view0", "d - d // 2")
    # out_view0 is a view of out_view0_base; make it a view of k0's output.
    k1.params[1] = Param("out_ptr", "pointer", "out_view0", view="out.as_strided(...)")
    k0.params[1] = Param("out_ptr", "pointer", "out")
    assert not fusable(k0, k1)
    assert len(fuse_pointwise([k0, k1], ["k0", "k1"])) == 2


def test_a_kernel_reading_what_the_first_adds_atomically_is_not_fused():
    # Before: a scatter_add (tl.atomic_add into out) then a copy that reads
    # out, back to back over the same rows; fused, a program could copy a
    # column before another program's atomic lands there (issue 8's class).
    scatter = FIRST.replace(
        "tl.store(out_ptr + (cols + rows * out_stride0), (a - b).to(out_ptr.dtype.element_ty), mask)",
        "tl.atomic_add(out_ptr + (cols + rows * out_stride0), a - b, mask)",
    )
    k0 = _kp("k0", scatter, "out", "d // 2")
    reader = SECOND.replace("x_ptr + (half", "out_ptr + (half")
    k1 = _kp("k1", reader, "out_view0", "d - d // 2")
    k1.params[1] = Param("out_ptr", "pointer", "out_view0", view="out.as_strided(...)")
    k0.params[1] = Param("out_ptr", "pointer", "out")
    assert "tl.atomic_add" in _body(k0) and "tl.store" not in _body(k0)
    assert not fusable(k0, k1)
    assert len(fuse_pointwise([k0, k1], ["k0", "k1"])) == 2


def test_kernels_over_other_rows_or_not_back_to_back_are_not_fused():
    k0 = _kp("k0", FIRST, "out", "d // 2")
    k1 = _kp("k1", SECOND, "out_view0", "d - d // 2", rows="num_tokens")
    assert not fusable(k0, k1)
    k1 = _kp("k1", SECOND, "out_view0", "d - d // 2")
    # An extern call ("") between the launches keeps them apart.
    assert len(fuse_pointwise([k0, k1], ["k0", "", "k1"])) == 2


def test_untiled_kernels_are_not_fused():
    k0 = _kp("k0", FIRST, "out", "d // 2")
    k1 = _kp("k1", SECOND, "out_view0", "d - d // 2")
    k1.tile = None
    assert not fusable(k0, k1)


def _parse_body(src: str) -> list[ast.stmt]:
    return ast.parse(textwrap.dedent(src)).body


def _unparsed(body) -> list[str]:
    return [ast.unparse(s) for s in body]


def test_loads_before_stores_moves_loads_and_what_they_read():
    first = _parse_body("m = c < n\na = tl.load(p + c, m)\ntl.store(q + c, a, m)\n")
    second = _parse_body(
        "m_2 = c < k\nb = tl.load(p + c, m_2)\ny = b * 2\ntl.store(r + c, y, m_2)\n"
    )
    out = loads_before_stores(first, second, {"p", "q", "r", "n", "k", "c"})
    assert _unparsed(out) == [
        "m = c < n",
        "a = tl.load(p + c, m)",
        "m_2 = c < k",
        "b = tl.load(p + c, m_2)",
        "tl.store(q + c, a, m)",
        "y = b * 2",
        "tl.store(r + c, y, m_2)",
    ]


def test_loads_before_stores_moves_an_index_check_with_the_gather_after_it():
    # mrope's second row of positions: its check had stayed behind the first
    # kernel's store while the gather it guards moved up, reading outside t
    first = _parse_body("i = tl.load(p + c)\na = tl.load(t + i)\ntl.store(q + c, a)\n")
    second = _parse_body(
        "j = tl.load(p + k + c)\n"
        "tl.device_assert((0 <= j) & (j < n))\n"
        "b = tl.load(t + j)\n"
        "tl.store(r + c, b)\n"
    )
    out = _unparsed(
        loads_before_stores(first, second, {"p", "q", "r", "t", "n", "k", "c"})
    )
    check = "tl.device_assert((0 <= j) & (j < n))"
    assert out.index(check) < out.index("b = tl.load(t + j)")
    assert out.index("b = tl.load(t + j)") < out.index("tl.store(q + c, a)")


def test_loads_before_stores_keeps_the_order_where_a_value_would_change():
    params = {"p", "q", "r", "n", "c"}
    # first reassigns c after its store: the moved load would read the old c.
    first = _parse_body("a = tl.load(p + c)\ntl.store(q + c, a)\nc = c + 1\n")
    second = _parse_body("b = tl.load(p + c)\ntl.store(r + c, b)\n")
    assert loads_before_stores(first, second, params) is None
    # second assigns its mask twice.
    first = _parse_body("a = tl.load(p + c)\ntl.store(q + c, a)\n")
    second = _parse_body(
        "m = c < n\nm = m & (c > 0)\nb = tl.load(p + c, m)\ntl.store(r + c, b, m)\n"
    )
    assert loads_before_stores(first, second, params) is None
    # A branch in either body.
    second = _parse_body("if n > 1:\n    b = tl.load(p + c)\n    tl.store(r + c, b)\n")
    assert loads_before_stores(first, second, params) is None
    # Nothing to load in second.
    second = _parse_body("tl.store(r + c, 0.0)\n")
    assert loads_before_stores(first, second, params) is None
