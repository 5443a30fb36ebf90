"""The launch heuristics every scaffold carries (templates/kernel.py.j2):
launch_settings for reductions, tile_settings for tiled pointwise kernels,
flat_settings for 1-D ones.
The choices were measured on an H200 (lab/NOTES.md); these tests
hold the properties the kernels rely on, taken from a rendered scaffold (or
from the template, for a helper no captured case renders)."""

import ast
import re
import textwrap
from pathlib import Path

import pytest
import triton

from porter.port.launch.launcher import _keeps_welford, _reads_only_rows, _stores_row
from porter.port.model import KernelPort, Param
from porter.testing.parity import common_module, import_kernel

CAPTURED = Path(__file__).resolve().parents[1] / "captured"


def _function(case: str, name: str):
    """`name` from captured/<case>/kernel.py."""
    kernel = import_kernel(CAPTURED / case / "kernel.py", f"heuristics_{case}")
    return getattr(kernel, name, None) or getattr(common_module(kernel), name)


def _sizing_call(case: str) -> tuple[list[str], dict[str, str]]:
    """The first row_launch or launch_settings call of captured/<case>'s
    launcher: (its positional arguments, its keywords), as source text."""
    tree = ast.parse((CAPTURED / case / "kernel.py").read_text())
    calls = sorted(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and ast.unparse(n.func) in ("row_launch", "launch_settings")
        ),
        key=lambda n: n.lineno,
    )
    call = calls[0]
    keywords = {k.arg: ast.unparse(k.value) for k in call.keywords}
    return [ast.unparse(a) for a in call.args], keywords


ROWS = (1, 2, 7, 64, 512, 513, 4096, 65536)
ROW_SIZES = (1, 5, 64, 500, 512, 768, 1024, 2048, 4096, 5000, 8192, 16384, 32768)


@pytest.mark.parametrize("row_size", ROW_SIZES)
@pytest.mark.parametrize("num_rows", ROWS)
def test_launch_settings_hold_whole_rows_within_registers(num_rows, row_size):
    launch_settings = _function("rmsnorm", "launch_settings")
    block_rows, block, warps = launch_settings(num_rows, row_size)
    assert block >= row_size and block == triton.next_power_of_2(block)
    assert warps in (1, 2, 4, 8, 16, 32)
    assert block_rows >= 1 and block_rows == triton.next_power_of_2(block_rows)
    # At most 32 fp32 values a thread: more spills on the GPU.
    assert block_rows * block <= 32 * 32 * warps


@pytest.mark.parametrize("row_size", (64, 500, 768, 1024))
def test_launch_settings_pack_narrow_rows(row_size):
    block_rows, block, _ = _function("rmsnorm", "launch_settings")(65536, row_size)
    assert block_rows > 1 and block_rows * block == 2048


@pytest.mark.parametrize("row_size", (64, 500, 512))
def test_launch_settings_pack_narrow_rows_by_bytes(row_size):
    # 4 KB a program whatever the dtype: kb_scaled_rmsnorm's fp32 rows of 512
    # took 0.97-0.99 of their time 2 a program instead of 4, from 1024 rows
    launch_settings = _function("rmsnorm", "launch_settings")
    fp32, bf16 = launch_settings(65536, row_size, 4), launch_settings(
        65536, row_size, 2
    )
    assert fp32[0] * fp32[1] * 4 == bf16[0] * bf16[1] * 2 == 4096
    # at least two rows: kb_layernorm's fp32 rows of 768 one a program took
    # 1.08 of the time of two a program at 4096 rows
    assert launch_settings(65536, 1024, 4)[:2] == (2, 1024)


@pytest.mark.parametrize("num_rows", (257, 1024, 4096, 65536))
def test_launch_settings_give_rows_moving_16_kb_one_warp_each(num_rows):
    # H200, 20 calls a graph: fused_add_rmsnorm fp32 1024 (x, residual and two
    # outputs, 16 KB a row) took 0.974-0.978 of two rows with two warps' time
    # at 4096-65536 rows one row with one warp, 1.047 at 1024 rows (taken
    # there too: one compiled variant past the decode sizes). Moving less a
    # row, 65536 one-warp programs take 80 us whatever they move: quant_int8
    # fp32 1024 (8 KB) 1.026 at 65536 rows, kb_layernorm fp32 768 (6 KB)
    # 1.03-1.18 at 4096-16384.
    launch_settings = _function("rmsnorm", "launch_settings")
    assert launch_settings(num_rows, 1024, 4, row_tensors=4) == (1, 1024, 1)
    assert launch_settings(num_rows, 1024, 4, 2)[:2] == (2, 1024)  # 8 KB
    assert launch_settings(num_rows, 768, 4, row_tensors=4)[:2] == (2, 1024)
    assert launch_settings(num_rows, 1024, 2, row_tensors=4)[:2] == (2, 1024)
    assert launch_settings(256, 1024, 4, row_tensors=4) == (1, 1024, 8)  # decode


@pytest.mark.parametrize(
    "case, tensors, row_only, reread, twice",
    [
        ("fused_add_rmsnorm", 4, False, False, False),  # x, residual, both outputs
        ("add_layernorm", 4, False, False, True),  # a layer norm: reduced twice
        # x and the int8 rows, not the scale a row; its row read twice, written
        ("quant_int8", 2, True, True, False),
        ("kb_layernorm", 2, False, False, False),  # not the weight or bias
        ("logsumexp", 1, True, False, False),  # read twice, one value a row out
        ("softmax", 2, True, False, False),  # read three times
        ("rmsnorm", 2, False, False, False),  # reads a weight beside its rows
    ],
)
def test_launchers_count_the_tensors_a_row_moves(
    case, tensors, row_only, reread, twice
):
    # The persistent kernel's sizing: row_launch's rule, or launch_settings.
    args, keywords = _sizing_call(case)
    assert args[2].endswith(".element_size()")
    rule = {"row_tensors": str(tensors)}
    rule |= {"row_only": "True"} if row_only else {}
    rule |= {"reread": "True"} if reread else {}
    rule |= {"reduced_twice": "True"} if twice else {}
    options = ("reads", "once", "online", "split", "stream")
    assert {k: v for k, v in keywords.items() if k not in options} == rule


@pytest.mark.parametrize("num_rows", (257, 1024, 4096, 65536))
def test_packed_rows_of_a_kernel_reading_only_rows_take_twice_the_warps(num_rows):
    # H200, quant_int8 fp32 1024 (it reads nothing beside its rows): two rows
    # with 4 warps took 0.84-0.995 of two warps' time at 1024-65536 rows;
    # kb_layernorm, add_layernorm (weights) lost up to 7-13% that way.
    launch_settings = _function("quant_int8", "launch_settings")
    assert launch_settings(num_rows, 1024, 4, 2, row_only=True) == (2, 1024, 4)
    assert launch_settings(num_rows, 1024, 4, 2) == (2, 1024, 2)
    assert launch_settings(num_rows, 512, 2, 2, row_only=True) == (4, 512, 8)
    # Decode sizes and rows wider than 1024 are launched as before.
    assert launch_settings(256, 1024, 4, 2, row_only=True) == (1, 1024, 8)
    assert launch_settings(num_rows, 4096, 2, 2, row_only=True) == (
        launch_settings(num_rows, 4096, 2, 2)
    )


@pytest.mark.parametrize(
    "num_rows, bf16_warps, fp32_warps",
    [(1, 8, 16), (512, 8, 16), (1024, 8, 16), (2048, 8, 16), (2049, 4, 4)],
)
def test_rows_of_4096_read_twice_alone_keep_their_warps_to_2048_rows(
    num_rows, bf16_warps, fp32_warps
):
    # H200, quant_int8 over 4096 held in registers: with 8 (bf16) and 16 (fp32)
    # warps 0.94-0.98 of the looped kernel's time at 1024-2048 rows, with 4
    # warps 1.14-1.15 at 1024.
    launch_settings = _function("quant_int8", "launch_settings")
    assert launch_settings(num_rows, 4096, 2, 2, True, reread=True) == (
        1,
        4096,
        bf16_warps,
    )
    assert launch_settings(num_rows, 4096, 4, 2, True, reread=True)[2] == fp32_warps
    # Other kernels (logsumexp's row read twice, one value a row out: 16 warps
    # took 1.10x at 4096 rows) keep 4 warps from 513 rows.
    before = 8 if num_rows <= 512 else 4
    assert launch_settings(num_rows, 4096, 2, 2, True)[2] == before


@pytest.mark.parametrize(
    "num_rows, elem_bytes",
    [(1, 2), (1024, 2), (2048, 4), (4095, 4), (4096, 2), (4096, 4), (65536, 4)],
)
def test_rows_read_twice_and_alone_stay_in_registers_at_every_row_count(
    num_rows, elem_bytes
):
    # H200, quant_int8 over 4096 held in registers: 0.94-0.98 of the looped
    # kernel's time from 4096 rows (bf16 8 KB, fp32 16 KB), 0.91-0.98 at 1-2048
    # with 8 and 16 warps; over 8192 in fp32 (32 KB) 1.07-1.10, so 32 KB rows
    # stay looped.
    limit = _function("quant_int8", "looped_min_row_bytes")
    row_bytes = 4096 * elem_bytes
    assert row_bytes < limit((2, 1), num_rows, elem_bytes, row_only=True)
    assert 8192 * 4 >= limit((2, 1), num_rows, 4, row_only=True)
    # Softmax's three reads are unchanged.
    assert limit((3, 1), num_rows, 4, row_only=True) == 16384


@pytest.mark.parametrize(
    "num_rows, held", [(1, True), (64, True), (256, True), (257, False), (4096, False)]
)
def test_rows_read_twice_beside_a_weight_stay_in_registers_at_decode_sizes(
    num_rows, held
):
    # H200, rmsnorm (it holds its weight's row too) over 4096 and 8192 held
    # in registers: 0.79-0.99 of the looped kernel's time at 1-256 rows,
    # 1.01-1.05 from 16384. Rows of 32 KB (fp32 over 8192) stay looped.
    limit = _function("rmsnorm", "looped_min_row_bytes")
    for row_bytes in (8192, 16384):
        assert (row_bytes < limit((2, 1), num_rows, 2)) == held
    assert 32768 >= limit((2, 1), num_rows, 4)
    # A row_only kernel holds them at every row count: no looped kernel
    # between two held regimes, compiled only mid-prefill.
    assert 16384 < limit((2, 1), num_rows, 2, row_only=True)


@pytest.mark.parametrize("num_rows", (1, 7, 64, 256))
def test_launch_settings_give_narrow_rows_a_program_each_at_decode(num_rows):
    # fused_add_rmsnorm fp32 at 1024: one row with 4-8 warps took 0.92-0.94 of
    # the time of two rows with 2 warps at 4-256 rows; 1.09-1.27 -> 1.02-1.07 p/s
    launch_settings = _function("rmsnorm", "launch_settings")
    assert launch_settings(num_rows, 1024, 4) == (1, 1024, 8)
    assert launch_settings(num_rows, 768, 2) == (1, 1024, 4)
    assert launch_settings(num_rows, 64, 2) == (1, 64, 1)
    assert launch_settings(257, 1024, 4)[0] == 2  # packed again past 256 rows


def test_looped_settings_go_by_the_rows_size():
    # H200: softmax over 32768 columns took 0.84-0.87 of the time of 4096 x 16
    # in fp32 in blocks of 2048 with 32 warps, 0.80-0.94 in bf16 in blocks of
    # 8192; rmsnorm bf16 4096 (8 KB) 0.87 with 8 warps instead of 16.
    looped_settings = _function("softmax", "looped_settings")
    assert looped_settings(1024, 32768, 4) == (2048, 32)
    assert looped_settings(1024, 65536, 4) == (2048, 32)
    assert looped_settings(1024, 32768, 2) == (8192, 32)
    assert looped_settings(1024, 16384, 4) == (4096, 16)
    assert looped_settings(1024, 8192, 2) == (4096, 16)
    assert looped_settings(1024, 4096, 2) == (4096, 8)


def test_a_looped_kernel_reading_its_row_once_takes_small_programs_from_512_rows():
    # H100, greedy argmax over 32000-151936 columns: blocks of 2048 with 16
    # warps took 0.81-0.97 of the rule's time from 512 rows, 1.01-1.07 at 256
    # in bf16 and 1.22-1.64 at 1-16 rows.
    looped_settings = _function("softmax", "looped_settings")
    for elem in (2, 4):
        for cols in (32000, 128256):
            assert looped_settings(512, cols, elem, once=True) == (2048, 16)
            wide = looped_settings(511, cols, elem, once=True)
            assert wide == looped_settings(511, cols, elem) and wide[1] >= 16


def _ported_once(tmp_path, body: str) -> bool:
    """Whether the looped kernel of `body`'s one-row reduction passes once=True."""
    from porter.pipeline import capture

    tmp_path.mkdir()
    ref = tmp_path / "r.py"
    ref.write_text(textwrap.dedent(body))
    case = capture(ref, out=tmp_path / "c", device="cpu", progress=lambda _: None).case
    return "once=True" in (Path(case) / "kernel.py").read_text()


def test_the_launcher_marks_single_pass_looped_kernels(tmp_path):
    argmax = """
        import torch
        DIMS = {"n": 4, "vocab": 9000}
        DTYPES = ["float32"]
        def make_inputs(n, vocab, dtype=torch.float32, device="cpu"):
            return (torch.randn(n, vocab, dtype=dtype, device=device),)
        def greedy(x):
            return x.argmax(-1)
        REFERENCE = greedy
    """
    assert _ported_once(tmp_path / "a", argmax)
    softmax = argmax.replace("x.argmax(-1)", "torch.softmax(x, -1)")
    assert not _ported_once(tmp_path / "s", softmax)


def test_looped_settings_take_wide_fp32_blocks_for_many_rows():
    # H200, softmax fp32 over 32768 columns: blocks of 16384 took 0.97-0.99 of
    # 2048's time from 1024 rows, 1.03-1.11 at 1-64 rows; logsumexp's looped
    # kernel 1.11 at 1024 rows; 2-byte rows keep 8192.
    looped_settings = _function("softmax", "looped_settings")
    assert looped_settings(4095, 32768, 4) == (2048, 32)
    assert looped_settings(4096, 32768, 4) == (16384, 32)
    assert looped_settings(65536, 65536, 4) == (16384, 32)
    assert looped_settings(65536, 32768, 2) == (8192, 32)
    assert looped_settings(65536, 16384, 4) == (4096, 16)


def test_launch_settings_give_few_rows_more_warps():
    launch_settings = _function("rmsnorm", "launch_settings")
    assert launch_settings(16, 4096)[2] > launch_settings(65536, 4096)[2]


@pytest.mark.parametrize("row_size", (64, 200, 500, 768, 1024))
def test_launch_settings_keep_each_narrow_row_in_one_warp(row_size):
    # A warp-local reduction needs no shared memory: kb_layernorm's rows of 768
    # took 0.93-0.96 of their time with 2 warps for its 2 rows instead of 4.
    block_rows, _, warps = _function("rmsnorm", "launch_settings")(65536, row_size)
    assert warps == min(block_rows, 8)


@pytest.mark.parametrize("row_size", (2048, 4096, 8192))
def test_launch_settings_size_threads_by_bytes(row_size):
    # An fp32 row gets the warps a bf16 row twice as long gets (fused_add_rmsnorm
    # fp32 at 1-64 tokens: 0.87-0.92 of the time with 16 warps instead of 8).
    launch_settings = _function("rmsnorm", "launch_settings")
    bf16 = launch_settings(16, row_size, 2)
    assert launch_settings(16, row_size) == bf16
    assert launch_settings(16, row_size, 4)[2] == min(32, 2 * bf16[2])
    assert launch_settings(16, row_size, 4)[:2] == bf16[:2]


def test_launchers_size_warps_by_the_reduced_input_and_loop_with_fixed_warps():
    # softmax's first pointer is its output; the element size comes from the
    # input it reduces. The looped kernel takes LOOPED_WARPS, not launch_settings.
    args, keywords = _sizing_call("softmax")
    assert args == ["num_tokens", "vocab", "logits.element_size()"]
    assert keywords["row_tensors"] == "2" and keywords["row_only"] == "True"
    row_launch = _function("softmax", "row_launch")
    looped_settings = _function("softmax", "looped_settings")
    for rows in (1, 4096):
        form, launch = row_launch(rows, 32768, 4, row_tensors=2, row_only=True)
        assert form == "looped"
        assert (launch["BLOCK_COLS"], launch["num_warps"]) == looped_settings(
            rows, 32768, 4
        )


@pytest.mark.parametrize(
    "case, row, key",
    [
        ("rmsnorm", "x", (2, 1)),
        ("softmax", "logits", (3, 1)),
        ("fused_add_rmsnorm", "x", (2, 2)),  # x and residual
    ],
)
def test_looped_kernels_are_taken_from_a_row_size_by_how_they_read(case, row, key):
    # H200: rmsnorm (2 reads of 1 row) in bf16 at 4096 (8 KB) took 0.91-0.96
    # of the persistent kernel's time; softmax (3 reads) in fp32 at 4096
    # (16 KB) 0.91-0.97, in bf16 at 4096 (8 KB) 1.06-1.34; fused_add_rmsnorm
    # (2 reads of 2 rows) in bf16 at 4096 lost 2-3% from 4096 rows.
    args, keywords = _sizing_call(case)
    assert args[2] == f"{row}.element_size()" and keywords["reads"] == str(key)
    # softmax reads nothing beside its rows (row_only), rmsnorm a weight.
    assert keywords.get("row_only") == ("True" if case == "softmax" else None)
    table = "\nLOOPED_MIN_ROW_BYTES = {(2, 1): 8192, (3, 1): 16384, (2, 2): 16384}\n"
    assert table in (CAPTURED / "common.py").read_text()


def test_a_reduction_writing_one_value_a_row_holds_rows_up_to_max_fused_cols():
    # H200: logsumexp (2 reads of 1 row, one value a row out) in fp32 at 4096
    # (16 KB) took 0.75-0.85 of the looped kernel's time held in registers from
    # 4096 rows; rmsnorm, which writes the row, gained from the looped kernel.
    assert "reads" not in _sizing_call("logsumexp")[1]
    assert _sizing_call("rmsnorm")[1]["reads"] == "(2, 1)"
    row_launch = _function("logsumexp", "row_launch")
    held = row_launch(4096, 4096, 4, row_tensors=1, row_only=True)
    assert held[0] == "persistent" and held[1]["BLOCK_COLS"] == 4096
    assert row_launch(4096, 8193, 4, row_tensors=1, row_only=True)[0] == "looped"


def test_two_byte_rows_read_three_times_stay_in_registers():
    # H200: softmax in bf16 at 8192 (16 KB) held in registers took 0.86-0.96
    # of the looped kernel's time from 16 rows; in fp32 at 4096 (16 KB) the
    # looped kernel took 0.91-0.97 of the persistent one's from 4096 rows.
    limit = _function("softmax", "looped_min_row_bytes")
    max_fused = _function("softmax", "MAX_FUSED_COLS")
    for rows in (1, 256, 4096):
        assert max_fused * 2 < limit((3, 1), rows, 2)
        assert limit((3, 1), rows, 4) == 16384
    assert limit((2, 1), 4096, 2) == 8192


@pytest.mark.parametrize(
    "num_rows, held",
    [
        (1, True),
        (64, True),
        (65, False),
        (256, False),
        (1023, False),
        (1024, True),
        (65536, True),
    ],
)
def test_sixteen_kb_rows_of_two_inputs_stay_in_registers_by_row_count(num_rows, held):
    # H200: add_layernorm and fused_add_rmsnorm in fp32 at 4096 (16 KB rows)
    # held in registers took 0.78-0.91 of the looped kernel's time at 1-64
    # rows and 0.96-0.97 from 1024, but 1.01-1.10 at 256.
    limit = _function("fused_add_rmsnorm", "looped_min_row_bytes")
    assert (limit((2, 2), num_rows, 4) > 16384) == held
    assert limit((2, 2), num_rows, 2) in (16384, 32768)
    # Rows of 32 KB (fp32 at 8192) take the looped kernel at every count.
    assert limit((2, 2), num_rows, 4) <= 32768


@pytest.mark.parametrize("heavy", (False, True))
@pytest.mark.parametrize("elem_bytes", (1, 2, 4, 8))
@pytest.mark.parametrize("row_size", (1, 3, 64, 768, 4096, 5000, 16384))
@pytest.mark.parametrize("num_rows", ROWS)
def test_tile_settings_cover_the_row_in_whole_blocks(
    num_rows, row_size, elem_bytes, heavy
):
    tile_settings = _function("silu_and_mul", "tile_settings")
    block_rows, block_cols, warps = tile_settings(
        num_rows, row_size, elem_bytes, heavy=heavy
    )
    assert block_cols == triton.next_power_of_2(block_cols) <= 4096
    assert block_rows == triton.next_power_of_2(block_rows)
    assert warps in (4, 8, 16, 32)  # Triton takes at most 32
    # 16 bytes a thread (one 16-byte access); fp64 32 (4 elements a thread at
    # decode sizes, and warps stop at 32).
    limit = 32 if elem_bytes == 8 else 16
    assert block_rows * block_cols * elem_bytes <= limit * 32 * warps


def test_tile_settings_give_fp32_sixteen_bytes_a_thread():
    # H200, rotary fp32 (32 x 128) from 16384 tokens: 4 elements a thread took
    # 0.79-0.91 of the time of 8; silu_and_mul fp32 0.98-0.99.
    tile_settings = _function("rotary_neox", "tile_settings")
    assert tile_settings(1 << 20, 64, 4) == (16, 64, 8)
    assert tile_settings(1 << 20, 64, 2) == (16, 64, 4)
    assert tile_settings(1 << 20, 64) == (16, 64, 4)
    silu = _function("silu_and_mul", "tile_settings")
    assert silu(4096, 4096, 4) == (1, 4096, 32)
    assert silu(4096, 4096, 2) == (1, 4096, 16)


@pytest.mark.parametrize(
    "row_size", (1408, 2880, 11008, 14336, 18944, 32000, 4096, 1100)
)
def test_tile_settings_pad_a_row_little_more_than_blocks_of_256(row_size):
    # H200, gelu_and_mul bf16 over 1408 columns from 4096 tokens: blocks of
    # 512 (9% padding) took 0.85-0.86 of the time of blocks of 2048 (45%);
    # swiglu_clamped over 2880, blocks of 1024 (7%) 0.90-0.98 of 4096 (42%);
    # gelu_and_mul over 11008 and 18944, blocks of 1024 (2-3%) 0.89-0.96 of
    # 4096 (8-12%). Blocks of 128 columns and 8 rows took swiglu_clamped's
    # interleaved halves 1.23-1.39x the static compile's time: none below 256.
    tile_settings = _function("silu_and_mul", "tile_settings")
    for heavy in (False, True):
        _, block_cols, _ = tile_settings(1 << 16, row_size, 2, heavy=heavy)
        padded = block_cols * triton.cdiv(row_size, block_cols)
        least = 256 * triton.cdiv(row_size, 256)
        assert padded * 32 <= least * 33 or block_cols == 256
        assert block_cols >= 256
    assert tile_settings(1 << 16, 1408, 2) == (2, 512, 4)
    assert tile_settings(1 << 16, 2880, 2) == (1, 1024, 4)
    assert tile_settings(1 << 16, 11008, 2) == (1, 1024, 4)
    # Widths of whole blocks, or padded within 1/32 as blocks of 256 are, keep theirs.
    assert tile_settings(4096, 4096, 2) == (1, 4096, 16)
    assert tile_settings(4096, 32000, 2)[1] == 4096
    assert tile_settings(4096, 128256, 2)[1] == 4096


def test_tile_settings_pack_rows_until_a_program_reads_4_kb():
    # H100, static int8 quantization over 5120 bf16 columns (one load of
    # 1024 columns, 2 KB a program) took 1.17-1.20x Inductor's time under PDL;
    # 2x1024x8 0.97-0.99. fatrelu_and_mul over 11008 (two halves, 4 KB a
    # program) and gelu_and_mul over 1408: no tile within 1% faster.
    tile_settings = _function("silu_and_mul", "tile_settings")
    assert tile_settings(4096, 5120, 2, loads=1) == (2, 1024, 8)
    assert tile_settings(4096, 5120, 2) == (1, 1024, 4)  # two loads
    assert tile_settings(4096, 1408, 2) == (2, 512, 4)
    assert tile_settings(4096, 5120, 4, loads=1) == (1, 1024, 8)  # fp32: 4 KB
    assert tile_settings(4096, 4096, 2, loads=1) == (1, 4096, 16)
    # heavy kernels wait on arithmetic, not on a program's fixed costs
    assert tile_settings(4096, 5120, 2, heavy=True, loads=1) == (1, 1024, 4)


@pytest.mark.parametrize(
    "body, loads",
    [
        ("x = tl.load(x_ptr + offsets, mask)\ns = tl.load(scale_ptr + 0)", 1),
        (
            "a = tl.load(x_rows + cols, mask)\nb = tl.load(x_rows + (half + cols), mask)",
            2,
        ),
        (
            "i = tl.load(ids_ptr + rows, mask)\nt = tl.load(t_ptr + i * h + cols, mask)",
            1,
        ),
    ],
)
def test_column_loads_count_the_blocks_of_columns_a_tile_kernel_loads(body, loads):
    from porter.port.launch.launcher import _column_loads

    src = (
        "def k(x_ptr):\n    cols = c * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]\n"
        "    offsets = rows * hidden + cols\n" + textwrap.indent(body, "    ")
    )
    assert _column_loads(ast.parse(src).body[0]) == loads


def test_tile_settings_give_heavy_two_byte_kernels_smaller_blocks():
    # gelu_tanh_and_mul (libdevice tanh) bf16 from 4096 tokens: 1024 columns
    # with 4 warps took 0.95-0.96 of 4096 with 16; in fp32 1.02-1.04, and
    # silu_and_mul (no libdevice) in bf16 1.02-1.04.
    tile_settings = _function("gelu_tanh_and_mul", "tile_settings")
    assert tile_settings(4096, 4096, 2, heavy=True) == (1, 1024, 4)
    assert tile_settings(4096, 4096, 2) == (1, 4096, 16)
    assert tile_settings(4096, 4096, 4, heavy=True) == (1, 4096, 32)
    assert tile_settings(256, 4096, 2, heavy=True) == (1, 1024, 4)  # 2^20


def test_tile_settings_give_heavy_kernels_two_elements_a_thread_up_to_2_19():
    # gelu_tanh_and_mul on an H200, kernel time inside a CUDA graph of 20
    # launches: blocks of 512 with 8 warps took 0.88-0.97 of the time of 512
    # with 4 (and of 1024 with 4 above 2^18) at 1-64 tokens of 4096 and 1-32
    # of 11008. One element a thread (128 with 4 warps) was faster up to 2^16
    # elements but up to 1.26x slower above: a third regime, which an engine's
    # warmup would not compile (test_jitcheck).
    tile_settings = _function("gelu_tanh_and_mul", "tile_settings")
    assert tile_settings(1, 4096, 2, heavy=True) == (1, 512, 8)
    assert tile_settings(64, 4096, 4, heavy=True) == (1, 512, 8)
    assert tile_settings(32, 11008, 2, heavy=True) == (1, 512, 8)  # 352256
    assert tile_settings(16, 64, 2, heavy=True) == (8, 64, 8)  # rows packed
    # silu_and_mul, which calls no libdevice, keeps 512 with 4 warps
    assert tile_settings(16, 4096, 2) == (1, 512, 4)


@pytest.mark.parametrize(
    "case, call",
    [
        ("gelu_tanh_and_mul", "x.element_size(), heavy=True\n"),
        ("silu_and_mul", "num_tokens, x.shape[1] // 2, x.element_size()\n"),
    ],
)
def test_launchers_pass_the_element_size_and_libdevice_to_tile_settings(case, call):
    source = (CAPTURED / case / "kernel.py").read_text()
    launcher = source[source.index(f"def {case}(") :]
    assert call in launcher


def test_tile_settings_give_decode_enough_programs():
    # 16 tokens x 4096: a 4096-column block would leave 16 programs for 132 SMs.
    block_rows, block_cols, _ = _function("silu_and_mul", "tile_settings")(16, 4096)
    programs = triton.cdiv(16, block_rows) * triton.cdiv(4096, block_cols)
    assert programs >= 128


def test_stream_rows_is_where_the_tensor_reaches_stream_min_bytes():
    # H200: without evict_first from 32 MB tensors fused_add_rmsnorm fp16 4096
    # and add_layernorm bf16 4096 took 0.95-0.98 of the hinted time; under it the
    # hint was worth 2-8% (fp32 1024 at 4096 rows, every case at 16 rows).
    stream_rows = _function("fused_add_rmsnorm", "stream_rows")
    assert stream_rows(4096, 2) == 4096  # 32 MB
    assert stream_rows(1024, 4) == 8192  # 16 MB at 4096 rows keeps the hint
    for row, elem in [(768, 4), (4096, 1), (3000, 2)]:
        rows = stream_rows(row, elem)
        assert (rows - 1) * row * elem < 32 << 20 <= rows * row * elem


def test_only_the_persistent_kernel_takes_the_eviction_hint_and_trigger_switch():
    source = (CAPTURED / "fused_add_rmsnorm" / "kernel.py").read_text()
    launcher = source[
        source.index("def fused_add_rmsnorm(") : source.index("\ndef register_op(")
    ]
    assert _sizing_call("fused_add_rmsnorm")[1]["stream"] == "True"
    row_launch = _function("fused_add_rmsnorm", "row_launch")
    stream_rows = _function("fused_add_rmsnorm", "stream_rows")
    held = row_launch(16, 4096, 2, row_tensors=4, reads=(2, 2), stream=True)[1]
    assert held["STREAM_ROWS"] == stream_rows(4096, 2)
    looped = row_launch(16, 16384, 2, row_tensors=4, reads=(2, 2), stream=True)
    assert looped[0] == "looped" and "STREAM_ROWS" not in looped[1]
    # the early trigger is the kernel's own (BLOCK_ROWS == 1): nothing passed
    assert "EARLY_TRIGGER" not in launcher
    assert launcher.rstrip().endswith(
        "**launch,\n    )\n"
        "    return laid_out_like(out0, x_given), laid_out_like(out1, x_given)"
    )
    kernels = source[: source.index("def fused_add_rmsnorm_kernel_looped(")]
    assert "STREAM_ROWS: tl.constexpr" in kernels
    assert "pdl_wait(LAUNCH_PDL, BLOCK_ROWS == 1)" in kernels
    assert "if num_tokens < STREAM_ROWS:" in kernels
    looped_kernel = source[
        source.index("def fused_add_rmsnorm_kernel_looped(") : source.index(
            "def fused_add_rmsnorm("
        )
    ]
    assert "STREAM_ROWS" not in looped_kernel
    assert "EARLY_TRIGGER" not in looped_kernel


def _template_function(name: str):
    """`name` from common.py, where no captured case calls it (flat_settings)."""
    common = import_kernel(CAPTURED / "common.py", "heuristics_common")
    return getattr(common, name)


def test_flat_settings_take_blocks_of_512_at_decode_sizes():
    # A 1-D pointwise launch with libdevice (tanh): the capture's 1024 with 4
    # warps above 2^19 elements; at or below, 512 with 8, so that 256
    # elements do not leave three quarters of a 1024 block computing masked
    # lanes.
    flat_settings = _template_function("flat_settings")
    assert flat_settings(256, 1024, 4, heavy=True) == (512, 8)
    assert flat_settings(1 << 19, 1024, 4, heavy=True) == (512, 8)
    assert flat_settings((1 << 19) + 1, 1024, 4, heavy=True) == (1024, 4)
    # No libdevice: 4 warps, up to tile_settings' bound of 2^18.
    assert flat_settings(1 << 18, 1024, 4) == (512, 4)
    assert flat_settings((1 << 18) + 1, 2048, 8) == (2048, 8)


def test_linear_gelu_epilogue_takes_rows_of_the_output():
    # The epilogue reads only the matmul's output at a flat offset: its rows
    # are out_features wide (a constexpr), sized by the output's element size.
    source = (CAPTURED / "linear_gelu" / "kernel.py").read_text()
    launcher = source[source.index("def linear_gelu(") :]
    assert (
        "tile_settings(\n        num_tokens, out_features, out.element_size(), heavy=True\n"
        in launcher
    )
    assert "flat_settings" not in source
    assert "num_warps=num_warps" in launcher


def test_two_byte_rows_take_the_online_kernel_from_four_times_the_rows():
    # H200, logsumexp over 32768 columns: the looped kernel took 0.75-0.78 of
    # the online kernel's time at 1024 bf16/fp16 rows and 0.94-0.95 at 2048,
    # but 1.03-1.05 at 4096; fp32 lost at 1024-2048 (1.07-1.14).
    online_min_rows = _function("logsumexp", "online_min_rows")
    base = _function("logsumexp", "ONLINE_MIN_ROWS")
    assert base == 1024
    assert online_min_rows(4) == 1024
    assert online_min_rows(2) == online_min_rows(1) == 4096


def test_reads_only_rows_tells_a_kernel_with_a_weight_from_one_without():
    def port(body: str, strides: list[str]) -> KernelPort:
        tree = ast.parse(textwrap.dedent(body)).body[0]
        params = [
            Param(a.arg, "pointer", a.arg[: -len("_ptr")]) for a in tree.args.args
        ]
        params += [Param(f"{s}_stride0", "stride", f"{s}.stride(0)") for s in strides]
        return KernelPort(record=None, launch=None, tree=tree, params=params)

    quant = port(
        """
        def k(x_ptr, out_ptr, scale_ptr):
            x = tl.load(x_ptr + cols + rows * x_stride0)
            tl.store(scale_ptr + rows, tl.max(x, 1))
            tl.store(out_ptr + cols + rows * out_stride0, x)
        """,
        ["x", "out"],
    )
    rmsnorm = port(
        """
        def k(x_ptr, weight_ptr, out_ptr):
            x = tl.load(x_ptr + cols + rows * x_stride0)
            w = tl.load(weight_ptr + cols)
            tl.store(out_ptr + cols + rows * out_stride0, x * w)
        """,
        ["x", "out"],
    )
    assert _reads_only_rows(quant) and not _reads_only_rows(rmsnorm)


def _kernel(body: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(body)).body[0]


def test_stores_row_tells_a_row_written_in_a_loop_from_one_value_a_row():
    row_out = _kernel("""
        def k(x_ptr, out_ptr):
            for col_start in tl.range(0, hidden, BLOCK_COLS):
                acc = acc + tl.load(x_ptr + col_start)
            for col_start in tl.range(0, hidden, BLOCK_COLS):
                tl.store(out_ptr + col_start, acc)
        """)
    value_out = _kernel("""
        def k(x_ptr, out_ptr):
            for col_start in tl.range(0, vocab, BLOCK_COLS):
                acc = acc + tl.load(x_ptr + col_start)
            tl.store(out_ptr + rows, acc)
        """)
    assert _stores_row(row_out) and not _stores_row(value_out)


def test_keeps_welford_tells_a_welford_loop_from_a_sum():
    layer_norm = _kernel("""
        def k(x_ptr, out_ptr):
            for col_start in tl.range(0, hidden, BLOCK_COLS):
                x = tl.load(x_ptr + col_start)
                m, m2, n = welford_accumulate(x, mean, m2, count, col_start == 0)
        """)
    inductor = _kernel("""
        def k(x_ptr):
            for r0_offset in range(0, r0_numel, R0_BLOCK):
                a, b, c = triton_helpers.welford_reduce(x, a, b, c, r0_offset == 0)
        """)
    rmsnorm = _kernel("""
        def k(x_ptr, out_ptr):
            for col_start in tl.range(0, hidden, BLOCK_COLS):
                acc = acc + tl.load(x_ptr + col_start)
        """)
    assert _keeps_welford(layer_norm) and _keeps_welford(inductor)
    assert not _keeps_welford(rmsnorm)


def test_a_row_reduced_twice_takes_the_warps_of_its_own_bytes():
    # H200 (docs/benchmarks/launch-rules.md#row-launch): a layer norm over 4099
    # bf16 columns held with 8 warps took 0.69-0.70 of the static compile's
    # time, with the padded block's 16 0.86-0.87.
    settings = _function("add_layernorm", "launch_settings")
    assert settings(4096, 4099, 2, 4) == (1, 8192, 16)
    assert settings(4096, 4099, 2, 4, reduced_twice=True) == (1, 8192, 8)
    assert settings(16, 4099, 4, 4, reduced_twice=True) == (1, 8192, 16)
    assert settings(4096, 5120, 4, 4, reduced_twice=True) == (1, 8192, 16)
    # a row that fills its block keeps its warps, the 4 of many rows of 4096 too
    for rows, cols, elem in (
        (16, 8192, 2),
        (4096, 8192, 4),
        (4096, 4096, 2),
        (16, 2048, 4),
    ):
        assert settings(rows, cols, elem, 4, reduced_twice=True) == settings(
            rows, cols, elem, 4
        )
    # the launcher asks it only for the held form of a Welford (layer norm) kernel
    keywords = _sizing_call("add_layernorm")[1]
    assert (keywords["row_tensors"], keywords["reduced_twice"]) == ("4", "True")
    assert "reduced_twice" not in (CAPTURED / "rmsnorm" / "kernel.py").read_text()


def test_a_rounding_quantizer_is_not_heavy(tmp_path):
    # libdevice.nearbyint is one instruction: static int8 quantization over
    # 4096 bf16 columns took 1.17x Inductor's time in the heavy blocks of
    # 1024 columns (lab/NOTES.md, 2026-12-06); tanh keeps them.
    from porter.pipeline import capture

    body = """
        import torch

        DIMS = {"num_tokens": 4, "hidden": 64}
        DTYPES = ["float32"]

        def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):
            return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)

        def quant(x, scale: float = 0.05):
            return (x / scale).round().clamp(-128, 127).to(torch.int8)

        def softcap(x, cap: float = 30.0):
            return torch.tanh(x / cap) * cap
        """
    heavy = {}
    for name in ("quant", "softcap"):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(body) + f"\nREFERENCE = {name}\n")
        out = capture(
            path, out=tmp_path / "cases", device="cpu", progress=lambda _: None
        )
        source = (out.case / "kernel.py").read_text()
        assert "libdevice." in source
        heavy[name] = "heavy=True" in source
    assert heavy == {"quant": False, "softcap": True}


def _branches(common, num_rows, row_size, elem, reads, once, online, stream, **rule):
    """The persistent / looped / online choice as the launchers spelled it
    inline before row_launch: the reference row_launch must match."""
    rows, block, warps = common.launch_settings(num_rows, row_size, elem, **rule)
    form, extra = "persistent", {}
    if stream:
        extra = {"STREAM_ROWS": common.stream_rows(row_size, elem)}
    wide = block > common.MAX_FUSED_COLS
    if reads:
        row_only = rule.get("row_only", False)
        min_bytes = common.looped_min_row_bytes(reads, num_rows, elem, row_only)
        wide = wide or block * elem >= min_bytes
    if (
        online
        and block >= common.ONLINE_MIN_COLS
        and num_rows >= common.online_min_rows(elem)
    ):
        cols = common.online_block_cols(elem)
        rows, block, warps = common.launch_settings(num_rows, cols, elem)
        form, extra = "online", {}
    elif wide:
        rows = 1
        block, warps = common.looped_settings(num_rows, row_size, elem, once)
        form, extra = "looped", {}
    return form, {"BLOCK_ROWS": rows, "BLOCK_COLS": block, "num_warps": warps, **extra}


@pytest.mark.parametrize(
    "options",
    [
        {"reads": (2, 1), "stream": True, "row_tensors": 2},
        {"reads": (2, 2), "stream": True, "row_tensors": 4},
        {"reads": (3, 1), "row_only": True, "row_tensors": 2, "stream": True},
        {"reads": (2, 1), "row_only": True, "reread": True, "stream": True},
        {"row_tensors": 4, "reduced_twice": True, "stream": True},
        {"once": True, "row_tensors": 1, "row_only": True},
        {"online": True, "row_tensors": 1, "row_only": True, "stream": True},
    ],
)
def test_row_launch_picks_the_form_the_launchers_picked_inline(options):
    # One call in every launcher in place of a dozen lines of branches
    # (issue 45): the same form and settings at every size.
    common = common_module(import_kernel(CAPTURED / "rmsnorm" / "kernel.py", "rl"))
    options = {
        "reads": None,
        "once": False,
        "online": False,
        "stream": False,
        **options,
    }
    for num_rows in (1, 16, 64, 65, 256, 1024, 4096, 16384, 65536):
        for row_size in (7, 768, 1000, 2048, 4096, 8192, 8193, 32000, 151936):
            for elem in (1, 2, 4):
                got = common.row_launch(num_rows, row_size, elem, **options)
                assert got == _branches(common, num_rows, row_size, elem, **options)
