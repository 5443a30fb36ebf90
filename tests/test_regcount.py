"""tools/regcount.py: Triton's specialization of a launch, and register counts
compiled for the H200's target with the wheel's ptxas (no GPU); with it, that
every captured scaffold loads its rows in vectors at prefill sizes."""

import ast
import inspect
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from porter.testing.apart import json_lines_apart
from porter.testing.parity import import_kernel

ROOT = Path(__file__).resolve().parents[1]
regcount = import_kernel(ROOT / "tools" / "regcount.py", "regcount_tool")


@triton.jit(do_not_specialize=["n"])
def _toy(x_ptr, y_ptr, n, stride: tl.int64, one, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs * stride, offs < n), offs < n)


def test_source_follows_tritons_specialization():
    x = torch.zeros(64)
    bound = inspect.signature(_toy.fn).bind(x, x[1:], 32, 32, 1, 16)
    src, constexprs = regcount.source_of(_toy, bound)
    assert src.signature == {
        "x_ptr": "*fp32",
        "y_ptr": "*fp32",
        "n": "i32",
        "stride": "i64",
        "one": "constexpr",
        "BLOCK": "constexpr",
    }
    assert constexprs == {"one": 1, "BLOCK": 16}
    # x aligned, y one element in; n runtime (do_not_specialize), stride 32.
    assert sorted(src.attrs) == [(0,), (3,)]


def _rows_by_tokens(argv: str) -> dict[int, dict]:
    """tools/regcount.py's rows for one launch a token count, by token count."""
    out = json_lines_apart("tools/regcount.py", *argv.split(), cwd=ROOT)
    return {r["sizes"]["num_tokens"]: r for r in out}


def test_registers_of_rmsnorms_persistent_kernel():
    rows = _rows_by_tokens("rmsnorm --dtype float32 --tokens 16 4096 --sass")
    assert sorted(rows) == [16, 4096]
    assert {r["kernel"] for r in rows.values()} == {"rmsnorm_kernel"}
    # fp32 rows of 1024: one row and 8 warps at decode, two rows and 2 warps
    # at prefill, each thread then holding 32 elements of x.
    assert (rows[16]["warps"], rows[4096]["warps"]) == (8, 2)
    assert 0 < rows[16]["REG"] < rows[4096]["REG"] <= 255
    assert rows[4096]["LOCAL"] == 0
    assert rows[4096]["programs_per_sm"] == regcount.programs_per_sm(
        rows[4096]["REG"], 2, rows[4096]["SHARED"]
    )
    # --sass: the persistent kernel loads and stores global memory and syncs
    # its warps for the row's sum.
    for r in rows.values():
        sass = dict(r["sass"])
        total = sass.pop("total")
        assert sass["LDG"] >= 1 and sass["STG"] >= 1 and total == sum(sass.values())
    assert rows[16]["sass"].get("BAR", 0) >= 1  # 8 warps share a row


def test_the_pdl_trigger_comes_where_the_block_asks():
    # --pdl compiles the launches a Hopper GPU makes. silu_and_mul bf16 over
    # 4096 columns: at 64 tokens a decode-sized block of 512 columns lets the
    # next kernel launch before its loads; at 256 a block over the whole row
    # (4096 columns) only after them. Both wait before any load.
    rows = _rows_by_tokens(
        "silu_and_mul --dims intermediate=4096 --dtype bfloat16 --tokens 64 256 "
        "--sass --pdl"
    )
    assert sorted(rows) == [64, 256]
    early, late = rows[64], rows[256]
    assert early["constexprs"]["LAUNCH_PDL"] and late["constexprs"]["LAUNCH_PDL"]
    assert (early["constexprs"]["BLOCK_COLS"], late["constexprs"]["BLOCK_COLS"]) == (
        512,
        4096,
    )
    for r in (early, late):
        assert len(r["wait_at"]) == 1 and len(r["trigger_at"]) == 1
        assert r["wait_at"][0] < r["loads_at"][0]
    assert early["trigger_at"][0] < early["loads_at"][0]
    assert late["trigger_at"][0] > late["loads_at"][-1]


def test_opcode_counts_drop_predicates_and_modifiers():
    sass = """
        Function : k
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @P0  LDG.E.EF.128 R4, desc[UR4][R2.64] ;
        /*0020*/             @!P1  LDG.E R6, desc[UR4][R2.64] ;
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
                                                                /* 0x000fe20000010000 */
        /*0040*/                   EXIT ;
"""
    assert regcount.opcode_counts(sass) == {
        "BAR": 1,
        "EXIT": 1,
        "LDC": 1,
        "LDG": 2,
        "total": 5,
    }
    assert regcount.first_load(sass) == 2
    assert regcount.load_positions(sass) == [2, 3]
    assert regcount.first_load("/*0000*/ EXIT ;") is None


def test_programs_per_sm_follow_the_occupancy_rules():
    # fused_add_rmsnorm fp32 1024 x 4096 (2 warps, 1 KB shared): 64 registers
    # a thread hold 16 programs an SM, f0a8a8a's 72 hold 14.
    assert regcount.programs_per_sm(64, 2, 1024) == 16
    assert regcount.programs_per_sm(72, 2, 1024) == 14
    assert regcount.programs_per_sm(60, 2, 1024) == 16  # 60 rounds up to 64
    assert regcount.programs_per_sm(16, 1, 0) == 32  # the 32-program limit
    assert regcount.programs_per_sm(32, 32, 0) == 2  # 64 warps an SM
    assert regcount.programs_per_sm(32, 4, 100 * 1024) == 2  # shared memory


# Every captured scaffold reads its rows in vectorized accesses at prefill
# sizes. A kernel Triton cannot prove contiguous, aligned and in bounds a
# thread's elements at a time loads them one by one: linear_gelu's epilogue
# did, with a runtime element count in its mask, and took 1.5x Inductor's time
# on the H200 (lab/NOTES.md, call AR). Per-row scalars (a row's
# scale or its logsumexp) are stores, so loads alone are checked.
CASES = sorted(
    p.name for p in (ROOT / "captured").iterdir() if (p / "manifest.json").is_file()
)
VECTOR_SCRIPT = """
import json, sys
from pathlib import Path
from porter.bench.points import sweep
from porter.testing.parity import import_kernel, load_case
regcount = import_kernel(Path("tools/regcount.py"), "regcount_tool")
for name in sys.argv[1:]:
    case = load_case(f"captured/{name}")
    for dtype in ("bfloat16", "float32"):
        points = sweep(case.manifest, (4096,), (dtype,))
        for row in regcount.compile_rows(case, {"kernel.py": case.kernel}, dtype, points, sass=True):
            print(json.dumps(dict(row, dtype=dtype)), flush=True)
"""


@pytest.fixture(scope="module")
def compiled():
    rows: dict[str, list[dict]] = {}
    for row in json_lines_apart("-c", VECTOR_SCRIPT, *CASES, cwd=ROOT):
        rows.setdefault(row["case"], []).append(row)
    return rows


def test_access_bytes_read_the_size_modifiers():
    sass = "\n".join(
        [
            "        /*0070*/   @P0 LDG.E.EF.128 R4, desc[UR4][R2.64] ;",
            "        /*0080*/       LDG.E.U16 R6, desc[UR4][R8.64] ;",
            "        /*0090*/       LDG.E R7, desc[UR4][R8.64] ;",
            "        /*00a0*/       STG.E.64 desc[UR4][R2.64], R4 ;",
            "        /*00b0*/       LDS.128 R4, [R2] ;",
            "        /*00c0*/       LDGSTS.E.BYPASS.128 [R37+0x4000], desc[UR24][R24.64] ;",
        ]
    )
    assert regcount.access_bytes(sass) == {
        "LDG": {"16": 1, "2": 1, "4": 1},
        "LDGSTS": {"16": 1},
        "STG": {"8": 1},
    }


def _column_loads(case: str, row: dict) -> int:
    """How many accesses a thread may make for the loads of the kernel that
    read one vector per column (`ptr + cols`: linear_gelu's bias), not rows:
    one a load, and in a kernel computing with tl.dot one for each run of two
    columns its accumulator's layout gives a thread, one in every 8 columns
    its warp covers, BLOCK_COLS / 8 at most (linear_gelu_matmul_kernel's bias
    took two 4-byte accesses in blocks of 32 columns with 4 warps, eight in
    blocks of 128 columns with 8 warps, a warp group a half)."""
    tree = ast.parse((ROOT / "captured" / case / "kernel.py").read_text())
    fn = next(f for f in tree.body if getattr(f, "name", "") == row["kernel"])
    dot = any(
        isinstance(n, ast.Call) and ast.unparse(n.func) == "tl.dot"
        for n in ast.walk(fn)
    )
    runs = max(1, row["constexprs"]["BLOCK_COLS"] // 8) if dot else 1
    return runs * sum(
        1
        for n in ast.walk(fn)
        if isinstance(n, ast.Call)
        and ast.unparse(n.func) == "tl.load"
        and isinstance(n.args[0], ast.BinOp)
        and ast.unparse(n.args[0].right) == "cols"
    )


@pytest.mark.parametrize("case", CASES)
def test_rows_are_loaded_in_vectors_at_prefill(compiled, case):
    rows = compiled[case]
    assert {r["dtype"] for r in rows} == {"bfloat16", "float32"}
    for r in rows:
        # Loads into registers and, for a tl.dot's tiles in a pipelined loop,
        # straight into shared memory.
        loads = dict(r["access_bytes"].get("LDG", {}))
        for size, n in r["access_bytes"].get("LDGSTS", {}).items():
            loads[size] = loads.get(size, 0) + n
        assert loads, f"{r['kernel']} ({r['dtype']}) has no global load"
        narrow = {size: n for size, n in loads.items() if int(size) < 8}
        # A [1, BLOCK_COLS] load takes the compiler's layout for its own
        # shape: at 4 rows of 256 a block, 2 bf16 elements a thread, one
        # 4-byte access. Those of a column vector are allowed; rows must
        # still be read in vectors.
        columns = _column_loads(case, r)
        if sum(narrow.values()) <= columns:
            narrow = {}
        assert not narrow, (
            f"{r['kernel']} ({r['dtype']}, {r['constexprs']}, {r['warps']} warps) "
            f"loads in {loads} bytes an access: not vectorized"
        )
        assert loads.get("16", 0) >= (sum(loads.values()) - columns) / 2
