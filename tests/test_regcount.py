"""tools/regcount.py: Triton's specialization of a launch, and register counts
compiled for the H200's target with the wheel's ptxas (no GPU)."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

from porter.testing.parity import _import

ROOT = Path(__file__).resolve().parents[1]
regcount = _import(ROOT / "tools" / "regcount.py", "regcount_tool")


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


def test_registers_of_rmsnorms_persistent_kernel():
    # A process of its own: the test session runs Triton's interpreter, whose
    # kernels cannot be compiled.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run(
        [sys.executable, "tools/regcount.py", "rmsnorm", "--dtype", "float32"]
        + ["--tokens", "16", "4096", "--sass"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {r["sizes"]["num_tokens"]: r for r in map(json.loads, out.splitlines())}
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
