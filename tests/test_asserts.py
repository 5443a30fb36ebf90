"""porter.port.finish.asserts: an index check says which tensor holds the
index, in the kernel's names."""

import ast
import textwrap

import pytest

from porter.port.finish.asserts import checks, message


def _messages(src: str) -> list[str | None]:
    fn = ast.parse(textwrap.dedent(src)).body[0]
    return [message(fn, call.args[0]) for call in checks(fn)]


def test_an_index_loaded_from_a_tensor_names_that_tensor():
    before = """
        def k(positions_ptr, cache_ptr, max_position: tl.constexpr):
            positions = tl.load(positions_ptr + rows, mask)
            wrapped = positions + max_position
            index = tl.where(positions < 0, wrapped, positions)
            tl.device_assert((0 <= index) & (index < max_position) | ~mask, "index out of bounds: 0 <= tmp11 < ks2")
        """
    assert _messages(before) == [
        "positions holds an index out of bounds (0 <= index < max_position)"
    ]


def test_a_row_pointer_leads_back_to_its_argument():
    before = """
        def k(target_ptr, vocab):
            target_rows = target_ptr + rows
            target = tl.load(target_rows, mask)
            tl.device_assert((0 <= target) & (target < vocab), "index out of bounds: 0 <= tmp3 < ks0")
        """
    assert _messages(before) == [
        "target holds an index out of bounds (0 <= index < vocab)"
    ]


def test_an_index_of_two_tensors_is_said_in_the_kernels_names():
    before = """
        def k(a_ptr, b_ptr, n):
            index = tl.load(a_ptr + rows) + tl.load(b_ptr + rows)
            tl.device_assert((0 <= index) & (index < n), "index out of bounds: 0 <= tmp3 < ks0")
        """
    assert _messages(before) == ["index out of bounds: 0 <= index < n"]


def test_a_check_that_is_no_index_bound_keeps_its_message():
    before = """
        def k(x_ptr):
            x = tl.load(x_ptr + rows)
            tl.device_assert(x == x, "no NaN")
        """
    assert _messages(before) == [None]


def test_a_kernel_with_an_index_check_wraps_int32_math_as_eager_does(tmp_path):
    # table[ids] * 1000003 + 12345 on int32: eager wraps. debug=True (for the
    # index check) also compiles Triton's int32 overflow checks, which Inductor
    # turns off; on a GPU the scaffold's device assert ended the CUDA context.
    import shutil
    from pathlib import Path

    from porter.pipeline import port
    from porter.testing import check_parity, load_case
    from porter.testing.parity import ParityError, Scenario

    case = tmp_path / "hash_ids"
    shutil.copytree(Path(__file__).parent / "cases" / "hash_ids", case)
    port(case, progress=lambda _: None)
    kernel = case / "kernel.py"
    text = kernel.read_text()
    assert "@triton.jit(debug=True" in text
    assert text.count("sanitize_overflow=False,") == 1
    sizes = {"num_tokens": 5, "vocab": 64}
    check_parity(load_case(case), Scenario("float32", sizes), "cpu", 0)
    kernel.write_text(text.replace("sanitize_overflow=False,", ""))
    with pytest.raises(ParityError, match="int32 overflow detected"):
        check_parity(load_case(case), Scenario("float32", sizes), "cpu", 0)
