"""Pointer names of an output Inductor writes through several views of it
(generalize.bind_kernel_parameters): each its own name."""

import ast
import textwrap

from porter.pipeline import capture
from porter.testing import check_parity, load_case
from porter.testing.parity import Scenario

SCAN = """
    import torch

    DIMS = {"batch": 2, "dim": 8, "seq_len": 4, "dstate": 4}
    DYNAMIC = ["seq_len"]
    DTYPES = ["float32"]

    def make_inputs(batch, dim, seq_len, dstate, dtype=torch.float32, device="cpu"):
        dA = torch.rand(batch, dim, seq_len, dstate, dtype=dtype, device=device)
        C = torch.randn(batch, dstate, seq_len, dtype=dtype, device=device)
        return dA, C

    def scan(dA, C):
        h = torch.zeros_like(dA[:, :, 0])
        ys = []
        for i in range(dA.shape[2]):
            h = dA[:, :, i] * h + 1.0
            ys.append(torch.einsum("bdn,bn->bd", h, C[:, :, i]))
        return torch.stack(ys, dim=2)

    REFERENCE = scan
"""


def test_an_output_written_through_views_and_itself_takes_distinct_names(
    tmp_path, porter_device
):
    # Mamba-1's selective_scan_ref: the loop's outputs stacked, written at
    # offsets 2, 3, 1 and 0; the first view and the tensor itself were both
    # out_ptr, and kernel.py did not import (duplicate argument)
    path = tmp_path / "scan.py"
    path.write_text(textwrap.dedent(SCAN))
    result = capture(
        path, out=tmp_path / "cases", device="cpu", progress=lambda _: None
    )
    case = load_case(result.case)
    tree = ast.parse((case.folder / "kernel.py").read_text())
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            names = [a.arg for a in fn.args.args]
            assert len(names) == len(set(names)), names
    sizes = {"batch": 3, "dim": 8, "seq_len": 4, "dstate": 4}
    check_parity(case, Scenario("float32", sizes), porter_device, 0)
