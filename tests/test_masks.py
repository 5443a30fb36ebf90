"""porter.port.finish.masks: a repeated `col_mask & row_mask` bound once as `mask`."""

import ast
import textwrap

from porter.port.finish.masks import bind_mask


def _bind(src: str) -> tuple[str, int]:
    fn = ast.parse(textwrap.dedent(src)).body[0]
    n = bind_mask(fn)
    return ast.unparse(fn), n


def _same(a: str, b: str) -> bool:
    return a == ast.unparse(ast.parse(textwrap.dedent(b)))


def test_a_held_row_binds_its_mask_once_where_both_are_known():
    before = """
        def k(x_ptr, out_ptr, n, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
            rows = tl.arange(0, BLOCK_ROWS)[:, None]
            row_mask = rows < n
            cols = tl.arange(0, BLOCK_COLS)[None, :]
            col_mask = cols < 64
            w = tl.load(x_ptr + cols, col_mask)
            x = tl.load(x_ptr + rows * 64 + cols, col_mask & row_mask, other=0.0)
            s = tl.sum(tl.where(row_mask & col_mask, x, 0.0), 1)
            tl.store(out_ptr + rows * 64 + cols, x * s[:, None] * w, col_mask & row_mask)
        """
    after = """
        def k(x_ptr, out_ptr, n, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
            rows = tl.arange(0, BLOCK_ROWS)[:, None]
            row_mask = rows < n
            cols = tl.arange(0, BLOCK_COLS)[None, :]
            col_mask = cols < 64
            mask = col_mask & row_mask
            w = tl.load(x_ptr + cols, col_mask)
            x = tl.load(x_ptr + rows * 64 + cols, mask, other=0.0)
            s = tl.sum(tl.where(mask, x, 0.0), 1)
            tl.store(out_ptr + rows * 64 + cols, x * s[:, None] * w, mask)
        """
    text, n = _bind(before)
    assert n == 1 and _same(text, after)


def test_each_loop_binds_its_own_mask_after_its_column_mask():
    before = """
        def k(x_ptr, n, BLOCK_COLS: tl.constexpr):
            row_mask = tl.program_id(0) < n
            acc = tl.zeros([1, BLOCK_COLS], tl.float32)
            for start in tl.range(0, 4096, BLOCK_COLS):
                col_mask = start + tl.arange(0, BLOCK_COLS)[None, :] < 4096
                x = tl.load(x_ptr + start, col_mask & row_mask)
                acc = tl.where(col_mask & row_mask, acc + x, acc)
            for start in tl.range(0, 4096, BLOCK_COLS):
                col_mask = start + tl.arange(0, BLOCK_COLS)[None, :] < 4096
                tl.store(x_ptr + start, acc, col_mask & row_mask)
        """
    text, n = _bind(before)
    # The first loop uses it twice; the second once, so it keeps the expression.
    assert n == 1
    first, second = [s for s in ast.parse(text).body[0].body if isinstance(s, ast.For)]
    assert ast.unparse(first.body[1]) == "mask = col_mask & row_mask"
    assert "tl.where(mask, acc + x, acc)" in ast.unparse(first)
    assert "\n    mask =" not in ast.unparse(second)
    assert "col_mask & row_mask" in ast.unparse(second)


def test_nothing_binds_where_a_mask_changes_after_or_the_name_is_taken():
    changes = """
        def k(x_ptr, n):
            row_mask = x_ptr < n
            col_mask = x_ptr < 4
            a = tl.load(x_ptr, col_mask & row_mask)
            col_mask = x_ptr < 8
            tl.store(x_ptr, a, col_mask & row_mask)
        """
    taken = """
        def k(x_ptr, n):
            row_mask = x_ptr < n
            col_mask = x_ptr < 4
            mask = x_ptr > 0
            a = tl.load(x_ptr, col_mask & row_mask)
            tl.store(x_ptr, a, col_mask & row_mask & mask)
        """
    not_masks = """
        def k(x_ptr, n, lo, hi):
            bits = lo & hi
            tl.store(x_ptr, lo & hi, bits)
            tl.store(x_ptr + 1, lo & hi, bits)
        """
    for src in (changes, taken, not_masks):
        text, n = _bind(src)
        assert n == 0 and _same(text, src)


def test_a_binding_at_the_top_is_not_repeated_inside_its_branches():
    before = """
        def k(x_ptr, n, FLAG: tl.constexpr):
            row_mask = x_ptr < n
            col_mask = x_ptr < 4
            if FLAG:
                a = tl.load(x_ptr, col_mask & row_mask)
                tl.store(x_ptr, a, col_mask & row_mask)
            else:
                tl.store(x_ptr, 0.0, col_mask & row_mask)
        """
    text, n = _bind(before)
    assert n == 1 and text.count("mask = col_mask & row_mask") == 1
    assert text.count("col_mask & row_mask") == 1


def _inline(src: str) -> tuple[str, int]:
    from porter.port.finish.masks import inline_single_mask

    fn = ast.parse(textwrap.dedent(src)).body[0]
    n = inline_single_mask(fn)
    return ast.unparse(fn), n


def test_a_column_mask_read_only_by_the_next_line_is_written_into_it():
    before = """
        def k(x_ptr, n, BLOCK_COLS: tl.constexpr):
            row_mask = tl.program_id(0) < n
            for start in tl.range(0, 4096, BLOCK_COLS):
                cols = start + tl.arange(0, BLOCK_COLS)[None, :]
                col_mask = cols < 4096
                mask = col_mask & row_mask
                tl.store(x_ptr + cols, 1.0, mask)
            for start in tl.range(0, 4096, BLOCK_COLS):
                cols = start + tl.arange(0, BLOCK_COLS)[None, :]
                col_mask = cols < 4096
                mask = row_mask & col_mask
                tl.store(x_ptr + cols, 2.0, mask)
        """
    after = """
        def k(x_ptr, n, BLOCK_COLS: tl.constexpr):
            row_mask = tl.program_id(0) < n
            for start in tl.range(0, 4096, BLOCK_COLS):
                cols = start + tl.arange(0, BLOCK_COLS)[None, :]
                mask = (cols < 4096) & row_mask
                tl.store(x_ptr + cols, 1.0, mask)
            for start in tl.range(0, 4096, BLOCK_COLS):
                cols = start + tl.arange(0, BLOCK_COLS)[None, :]
                mask = row_mask & (cols < 4096)
                tl.store(x_ptr + cols, 2.0, mask)
        """
    text, n = _inline(before)
    assert n == 2 and _same(text, after)


def test_a_column_mask_read_elsewhere_too_is_kept():
    # The weight's load reads col_mask alone; a loop's mask read by its
    # second binding only (not the next line) is kept as well.
    before = """
        def k(x_ptr, w_ptr, n, BLOCK_COLS: tl.constexpr):
            row_mask = tl.program_id(0) < n
            cols = tl.arange(0, BLOCK_COLS)[None, :]
            col_mask = cols < 64
            mask = col_mask & row_mask
            w = tl.load(w_ptr + cols, col_mask)
            tl.store(x_ptr + cols, w, mask)
            for start in tl.range(0, 4096, BLOCK_COLS):
                hi_mask = start + cols < 4096
                x = tl.load(x_ptr + start + cols)
                mask = hi_mask & row_mask
                tl.store(x_ptr + start + cols, x, mask)
        """
    text, n = _inline(before)
    assert n == 0 and _same(text, before)
