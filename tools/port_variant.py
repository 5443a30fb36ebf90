"""Write a case's kernel.py as the generator would under another launch rule,
for tools/launch_probe.py --variant (and regcount, kernel_profile): a candidate
rule, timed against the generator's own before the generator changes. Unlike
tools/kernel_variant.py, which rewrites the kernels of a kernel.py, this ports
the case's stored capture again, so the launcher changes with them.

    python3 tools/port_variant.py captured/linear_gelu --pdl-after-extern \
        -o /tmp/linear_gelu_pdl.py

Rules:
  --pdl-after-extern  The kernel right after an extern call (linear_gelu's
                      epilogue, behind its cuBLAS addmm) launches with
                      programmatic dependent launch too. The generator leaves
                      it without: behind the addmm of 128 -> 256 it took
                      1.03-1.09 of its time (H200, call BE), but behind a
                      16 x 4096 x 4096 torch.mm PDL took 0.8-1.2 us off a
                      call of silu_and_mul or rmsnorm (calls BM-BN,
                      lab/NOTES.md).
  --matmul-fp32 P     fp32 outputs of a small matmul and its epilogue
                      (porter/port/launch/matmul.py) as P: "cublas" leaves them to
                      cuBLAS and the epilogue kernel, as the generator did
                      before; "ieee" or "tf32" run the one kernel with tl.dot
                      at that input precision instead of the generator's
                      "tf32x3". At full precision (ieee) the kernel took up to
                      1.5x Inductor's time (H200, calls BZ and CM); tf32
                      drops mantissa bits: check parity on the GPU before
                      timing it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

# Run as a script from the repository root, with or without porter installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from porter.records import Capture  # noqa: E402
from porter.errors import PorterError  # noqa: E402
from porter.pipeline import port_files  # noqa: E402
from porter.port import PortOptions  # noqa: E402
from porter.reference import load_reference  # noqa: E402
from porter.store import read_manifest  # noqa: E402


def kernel_py(
    case: Path, pdl_after_extern: bool, matmul_fp32: str | None = None
) -> str:
    """The case's kernel.py ported again from its manifest under the rules
    (matmul_fp32: None, the generator's precision; "cublas", none)."""
    cap = Capture.from_dict(read_manifest(case))
    ref = load_reference(case / "reference.py")
    options = PortOptions(pdl_after_extern=pdl_after_extern)
    if matmul_fp32 is not None:
        fp32 = None if matmul_fp32 == "cublas" else matmul_fp32
        options = dataclasses.replace(options, matmul_fp32=fp32)
    return port_files(cap, ref.module, case.name, options=options).files["kernel.py"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", help="a case folder, e.g. captured/linear_gelu")
    ap.add_argument("-o", "--out", required=True, help="where the variant goes")
    ap.add_argument(
        "--pdl-after-extern",
        action="store_true",
        help="the kernel right after an extern call launches with PDL too",
    )
    ap.add_argument(
        "--matmul-fp32",
        choices=["cublas", "ieee", "tf32x3", "tf32"],
        help="fp32 outputs of a small matmul: cuBLAS and the epilogue kernel "
        "(cublas), or the one kernel with tl.dot at this input precision "
        "(the generator's: tf32x3)",
    )
    args = ap.parse_args()
    case = Path(args.case)
    if not (case / "manifest.json").is_file():
        print(f"port_variant: {case}: no manifest.json there", file=sys.stderr)
        return 1
    if not args.pdl_after_extern and not args.matmul_fp32:
        print(
            "port_variant: name a rule (--pdl-after-extern, --matmul-fp32)",
            file=sys.stderr,
        )
        return 1
    try:
        text = kernel_py(case, args.pdl_after_extern, args.matmul_fp32)
    except PorterError as e:
        print(f"port_variant: {e}", file=sys.stderr)
        return 1
    if text == (case / "kernel.py").read_text():
        print(
            f"port_variant: {case}: the rule changes nothing there (no kernel "
            "right after an extern call, or no small matmul's kernel)",
            file=sys.stderr,
        )
        return 1
    Path(args.out).write_text(text)
    print(f"port_variant: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
