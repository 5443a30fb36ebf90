"""Registers and spills of a scaffold's compiled kernels, without a GPU.

Runs the case's launcher on uninitialized CPU inputs at each token count
without calling its kernels, keeps every distinct launch (kernel, constexprs,
Triton's specializations, warps), compiles each for an NVIDIA target with the
ptxas that ships in the triton wheel, and prints what cuobjdump reports per
thread: registers (REG), stack, local memory (LOCAL > 0 means spills) and
shared memory, and how many programs an sm_90 SM holds at once by those
(more registers a thread, fewer programs to hide memory latency with).

    python3 tools/regcount.py fused_add_rmsnorm --dims hidden=1024 --dtype float32 \
        --tokens 16 4096 --variant my_kernel.py

Counts depend on the triton version: compare variants under the one the GPU
runs (with triton 3.6 this gave the H200's own counts for fused_add_rmsnorm).
One JSON line per distinct launch: {"case", "file", "kernel", "sizes",
"warps", "constexprs", "REG", "STACK", "LOCAL", "SHARED", "programs_per_sm"},
and with --sass the kernel's SASS instructions counted by opcode ("sass"),
the positions of its global loads ("loads_at", the first as "first_load") and
its global loads and stores by bytes an access ("access_bytes"). With --pdl
the launches are those of a Hopper GPU (the scaffold's pdl_enabled taken as
True), and --sass adds where the kernel waits for the one before it
("wait_at", ACQBULK) and lets the next one launch ("trigger_at", PREEXIT).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
from unittest import mock

# Triton 3.9 warns unless this is set; 3.6 (the GPU's) fuses by default.
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import torch
import triton
from triton.backends.compiler import GPUTarget

from porter.bench.points import sweep
from porter.testing.launches import LaunchRecorder, scaffold_kernels
from porter.sizes import add_point_options, parse_dims
from porter.testing.compiles import source_of
from porter.testing.parity import (
    Scenario,
    import_kernel,
    load_case,
    make_inputs,
    scaffold_entry,
)


def _cuobjdump(cubin: bytes, flag: str) -> str:
    tool = os.path.join(
        os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"
    )
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run(
            [tool, flag, f.name], capture_output=True, text=True, check=True
        ).stdout


def _instructions(sass: str) -> list[str]:
    """The SASS instructions' mnemonics with their modifiers ("LDG.E.EF.128"),
    in listing order, predicates dropped, from cuobjdump --dump-sass."""
    ops = []
    for line in sass.splitlines():
        # "        /*0070*/   @P0 LDG.E.EF.128 R4, desc[UR4][R2.64] ;"
        head, sep, rest = line.partition("*/")
        if not sep or not head.strip().startswith("/*"):
            continue
        words = rest.replace(";", " ").split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if words:
            ops.append(words[0])
    return ops


def opcodes(sass: str) -> list[str]:
    """The SASS instructions' opcodes in listing order (the name before the
    first dot, predicates dropped)."""
    return [op.split(".")[0] for op in _instructions(sass)]


def opcode_counts(sass: str) -> dict[str, int]:
    """How many SASS instructions of each opcode: where two forms of a kernel
    differ in memory accesses (LDG, STG), barriers (BAR), shuffles (SHFL) or
    integer work (IMAD, UIMAD: 64-bit offsets), beside the total."""
    counts: dict[str, int] = {}
    for op in opcodes(sass):
        counts[op] = counts.get(op, 0) + 1
    counts["total"] = sum(counts.values())
    return dict(sorted(counts.items()))


# SASS size modifiers of a global load or store; none means 32 bits.
_ACCESS_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def access_bytes(sass: str) -> dict[str, dict[str, int]]:
    """Global loads and stores by the bytes each moves ("LDG.E.128": 16),
    {"LDG": {"16": 2}, "STG": {"16": 1}}: a kernel whose row data comes in
    2- or 4-byte accesses where 16 would do was not vectorized (Triton could
    not prove a thread's elements contiguous, aligned and in bounds together).
    "LDGSTS": loads straight into shared memory (cp.async), which Triton's
    pipelined loops use for a tl.dot's tiles."""
    counts: dict[str, dict[str, int]] = {}
    for op, *mods in (i.split(".") for i in _instructions(sass)):
        if op not in ("LDG", "LDGSTS", "STG"):
            continue
        size = next((_ACCESS_BYTES[m] for m in mods if m in _ACCESS_BYTES), 4)
        by_size = counts.setdefault(op, {})
        by_size[str(size)] = by_size.get(str(size), 0) + 1
    return counts


def load_positions(sass: str) -> list[int]:
    """The listing positions (from 1) of the global loads: at decode sizes the
    instructions before the first delay every program's first memory round
    trip, and a load far behind the others (after a store or a reduction)
    adds one of its own."""
    return positions(sass, "LDG")


def positions(sass: str, opcode: str) -> list[int]:
    """The listing positions (from 1) of one opcode's instructions."""
    return [i for i, op in enumerate(opcodes(sass), 1) if op == opcode]


def first_load(sass: str) -> int | None:
    """The position of the first global load (None without one)."""
    return next(iter(load_positions(sass)), None)


def resource_usage(cubin: bytes) -> dict:
    out = _cuobjdump(cubin, "--dump-resource-usage")
    line = next(line for line in out.splitlines() if "REG:" in line)
    usage = dict(part.split(":", 1) for part in line.split() if ":" in part)
    return {k: int(usage[k]) for k in ("REG", "STACK", "LOCAL", "SHARED")}


# An sm_90 SM (H100, H200): 64K registers, allocated to warps 256 at a time;
# 64 warps; 32 programs; 228 KB of shared memory, 1 KB of it kept per program.
SM90 = {"regs": 65536, "reg_unit": 256, "warps": 64, "programs": 32}
SM90_SHARED = 228 * 1024


def programs_per_sm(regs: int, warps: int, shared: int) -> int:
    """How many programs of this kernel an sm_90 SM holds at once, by its
    registers, warps and shared memory (the CUDA occupancy rules)."""
    unit = SM90["reg_unit"]
    regs_per_warp = -(-regs * 32 // unit) * unit
    by_regs = SM90["regs"] // regs_per_warp // warps
    by_warps = SM90["warps"] // warps
    by_shared = SM90_SHARED // (shared + 1024)
    return min(SM90["programs"], by_regs, by_warps, by_shared)


def launches(
    case, module, dtype: str, point, pdl: bool = False, around=None, on_launch=None
) -> list[tuple]:
    """(kernel name, kernel, bound arguments, options, the launch's other
    keywords) of each launch at a point, recorded without calling the kernels;
    pdl: as on a Hopper GPU, with programmatic dependent launch (the CPU inputs
    would turn it off). around: a context the launcher runs in (its inputs made
    already); on_launch(*call), if given, sees each launch as it comes."""
    seen = []

    def record_call(*call):
        seen.append(call)
        if on_launch is not None:
            on_launch(*call)

    record = LaunchRecorder(
        scaffold_kernels(module), execute=False, on_launch=record_call
    )
    inputs = make_inputs(case, Scenario(dtype, point.sizes), "cpu", 0, filled=False)
    entry = scaffold_entry(case, dtype, "cpu", kernel=module)
    on = pdl and hasattr(module, "pdl_enabled")
    hopper = mock.patch.object(module, "pdl_enabled", lambda device: True)
    with hopper if on else contextlib.nullcontext(), record, torch.no_grad():
        with around if around is not None else contextlib.nullcontext():
            entry(*inputs)
    return seen


def compile_rows(case, files: dict, dtype: str, points, arch=90, sass=False, pdl=False):
    """One row per distinct launch of each file's kernels at each point of the
    loaded case, compiled for the target (the JSON lines main prints)."""
    target = GPUTarget("cuda", arch, 32)
    for point in points:
        for label, module in files.items():
            done = set()
            calls = launches(case, module, dtype, point, pdl)
            for name, kernel, bound, options, _ in calls:
                src, constexprs = source_of(kernel, bound)
                key = (
                    name,
                    repr(src.signature),
                    repr(constexprs),
                    repr(src.attrs),
                    repr(options),
                )
                if key in done:
                    continue
                done.add(key)
                compiled = triton.compile(src, target=target, options=options)
                row = {
                    "case": case.folder.name,
                    "file": label,
                    "kernel": name,
                    "sizes": point.sizes,
                    "warps": options.get("num_warps", 4),
                    "constexprs": {k: v for k, v in constexprs.items()},
                }
                row.update(resource_usage(compiled.asm["cubin"]))
                row["programs_per_sm"] = programs_per_sm(
                    row["REG"], row["warps"], row["SHARED"]
                )
                if sass:
                    listing = _cuobjdump(compiled.asm["cubin"], "--dump-sass")
                    row["sass"] = opcode_counts(listing)
                    row["first_load"] = first_load(listing)
                    row["loads_at"] = load_positions(listing)
                    row["access_bytes"] = access_bytes(listing)
                    if pdl:
                        row["wait_at"] = positions(listing, "ACQBULK")
                        row["trigger_at"] = positions(listing, "PREEXIT")
                yield row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_point_options(ap)
    ap.add_argument(
        "--arch", type=int, default=90, help="compute capability (H200: 90)"
    )
    ap.add_argument(
        "--sass",
        action="store_true",
        help="also count the SASS instructions by opcode (key 'sass')",
    )
    ap.add_argument(
        "--pdl",
        action="store_true",
        help="the launches a Hopper GPU makes, with programmatic dependent launch "
        "(with --sass: where the kernel waits and triggers, 'wait_at', "
        "'trigger_at')",
    )
    args = ap.parse_args()
    case = load_case(args.case if os.sep in args.case else f"captured/{args.case}")
    files = {"kernel.py": case.kernel}
    common = case.folder.parent / "common.py"  # where a variant's folder has none
    files.update(
        {v: import_kernel(v, f"variant{i}", common) for i, v in enumerate(args.variant)}
    )
    points = sweep(
        case.manifest,
        tuple(args.tokens),
        (args.dtype,),
        model_sizes=parse_dims(args.dims),
    )
    rows = compile_rows(case, files, args.dtype, points, args.arch, args.sass, args.pdl)
    for row in rows:
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
