"""porter.port.finish.rows: each tensor's row pointer bound once."""

import ast
import textwrap

from porter.port.finish.rows import row_pointers


def _rows(src: str) -> tuple[str, int]:
    fn = ast.parse(textwrap.dedent(src)).body[0]
    n = row_pointers(fn)
    return ast.unparse(fn), n


def _same(a: str, b: str) -> bool:
    return a == ast.unparse(ast.parse(textwrap.dedent(b)))


def test_loads_and_stores_read_one_row_pointer_bound_after_the_rows():
    before = """
        def k(x_ptr, w_ptr, out_ptr, n, x_stride0, out_stride0, BLOCK: tl.constexpr):
            rows = tl.program_id(0) * 4 + tl.arange(0, 4)[:, None]
            cols = tl.arange(0, BLOCK)[None, :]
            mask = (rows < n) & (cols < 64)
            w = tl.load(w_ptr + cols)
            x = tl.load(x_ptr + (cols + rows * x_stride0), mask, other=0.0)
            y = x * w
            tl.store(out_ptr + (cols + rows * out_stride0), y.to(out_ptr.dtype.element_ty), mask)
        """
    after = """
        def k(x_ptr, w_ptr, out_ptr, n, x_stride0, out_stride0, BLOCK: tl.constexpr):
            rows = tl.program_id(0) * 4 + tl.arange(0, 4)[:, None]
            cols = tl.arange(0, BLOCK)[None, :]
            mask = (rows < n) & (cols < 64)
            w = tl.load(w_ptr + cols)
            x_rows = x_ptr + rows * x_stride0
            out_rows = out_ptr + rows * out_stride0
            x = tl.load(x_rows + cols, mask, other=0.0)
            y = x * w
            tl.store(out_rows + cols, y.to(out_ptr.dtype.element_ty), mask)
        """
    text, n = _rows(before)
    assert n == 2 and _same(text, after), text


def test_a_looped_kernel_binds_them_once_outside_its_loops():
    before = """
        def k(x_ptr, n, x_stride0, BLOCK: tl.constexpr):
            row = tl.program_id(0).to(tl.int64)
            acc = tl.zeros([1, BLOCK], tl.float32)
            for start in tl.range(0, n, BLOCK):
                cols = start + tl.arange(0, BLOCK)[None, :]
                acc += tl.load(x_ptr + (cols + row * x_stride0), cols < n, other=0.0)
            for start in tl.range(0, n, BLOCK):
                cols = start + tl.arange(0, BLOCK)[None, :]
                half = cols + n // 2
                tl.store(x_ptr + (half + row * x_stride0), acc, cols < n)
        """
    text, n = _rows(before)
    body = ast.parse(text).body[0].body
    assert n == 1
    assert ast.unparse(body[2]) == "x_row = x_ptr + row * x_stride0"
    assert isinstance(body[3], ast.For)
    assert "tl.load(x_row + cols, cols < n, other=0.0)" in text
    assert "tl.store(x_row + half, acc, cols < n)" in text


def test_nothing_changes_where_a_pointer_is_read_another_way_or_rows_move():
    other_read = """
        def k(x_ptr, x_stride0, BLOCK: tl.constexpr):
            rows = tl.arange(0, 4)[:, None]
            cols = tl.arange(0, BLOCK)[None, :]
            a = tl.load(x_ptr + (cols + rows * x_stride0))
            b = tl.load(x_ptr + cols)
            tl.store(x_ptr + (cols + rows * x_stride0), a + b)
        """
    rows_rebound = """
        def k(x_ptr, x_stride0, BLOCK: tl.constexpr):
            rows = tl.arange(0, 4)[:, None]
            cols = tl.arange(0, BLOCK)[None, :]
            a = tl.load(x_ptr + (cols + rows * x_stride0))
            rows = rows + 4
            tl.store(x_ptr + (cols + rows * x_stride0), a)
        """
    in_a_block = """
        def k(x_ptr, x_stride0, n, BLOCK: tl.constexpr):
            for i in range(n):
                rows = i + tl.arange(0, 4)[:, None]
                cols = tl.arange(0, BLOCK)[None, :]
                tl.store(x_ptr + (cols + rows * x_stride0), cols)
        """
    two_strides = """
        def k(x_ptr, a_stride, b_stride, BLOCK: tl.constexpr):
            rows = tl.arange(0, 4)[:, None]
            cols = tl.arange(0, BLOCK)[None, :]
            a = tl.load(x_ptr + (cols + rows * a_stride))
            tl.store(x_ptr + (cols + rows * b_stride), a)
        """
    for src in (other_read, rows_rebound, in_a_block, two_strides):
        text, n = _rows(src)
        assert n == 0 and _same(text, src)


def test_a_taken_name_gets_a_fresh_one():
    src = """
        def k(x_ptr, x_stride0, BLOCK: tl.constexpr):
            rows = tl.arange(0, 4)[:, None]
            cols = tl.arange(0, BLOCK)[None, :]
            x_rows = cols * 2
            tl.store(x_ptr + (cols + rows * x_stride0), x_rows)
        """
    text, n = _rows(src)
    assert n == 1
    assert "x_rows_2 = x_ptr + rows * x_stride0" in text
    assert "tl.store(x_rows_2 + cols, x_rows)" in text


def test_a_dtype_read_before_the_rows_does_not_place_the_pointer_above_them():
    src = """
        def k(out_ptr, out_stride0, BLOCK: tl.constexpr):
            zero = tl.zeros([BLOCK], out_ptr.dtype.element_ty)
            rows = tl.arange(0, 4)[:, None]
            cols = tl.arange(0, BLOCK)[None, :]
            tl.store(out_ptr + (cols + rows * out_stride0), zero)
        """
    text, n = _rows(src)
    body = [ast.unparse(s) for s in ast.parse(text).body[0].body]
    assert n == 1
    assert body.index("out_rows = out_ptr + rows * out_stride0") == 2


def test_a_row_part_of_several_terms_is_bound_once_reading_row_names_above():
    # rotary's rows run over tokens and heads: the row part of q's offset is
    # two terms; the column block of a 2-d grid is no row index.
    before = """
        def k(q_ptr, out_ptr, n, q_stride0, q_stride1, out_stride0, heads: tl.constexpr, half: tl.constexpr, BLOCK: tl.constexpr, COL_BLOCKS: tl.constexpr):
            row_block = tl.program_id(0) // COL_BLOCKS
            col_block = tl.program_id(0) % COL_BLOCKS
            rows = row_block.to(tl.int64) * 4 + tl.arange(0, 4)[:, None]
            cols = col_block * BLOCK + tl.arange(0, BLOCK)[None, :]
            token = rows // heads
            a = tl.load(q_ptr + (cols + rows // heads * q_stride0 + rows % heads * q_stride1))
            b = tl.load(q_ptr + (half + cols + rows // heads * q_stride0 + rows % heads * q_stride1))
            tl.store(out_ptr + (cols + col_block * out_stride0), a + b)
        """
    after = """
        def k(q_ptr, out_ptr, n, q_stride0, q_stride1, out_stride0, heads: tl.constexpr, half: tl.constexpr, BLOCK: tl.constexpr, COL_BLOCKS: tl.constexpr):
            row_block = tl.program_id(0) // COL_BLOCKS
            col_block = tl.program_id(0) % COL_BLOCKS
            rows = row_block.to(tl.int64) * 4 + tl.arange(0, 4)[:, None]
            cols = col_block * BLOCK + tl.arange(0, BLOCK)[None, :]
            token = rows // heads
            q_rows = q_ptr + (token * q_stride0 + rows % heads * q_stride1)
            a = tl.load(q_rows + cols)
            b = tl.load(q_rows + (half + cols))
            tl.store(out_ptr + (cols + col_block * out_stride0), a + b)
        """
    text, n = _rows(before)
    assert n == 1 and _same(text, after), text
