"""Before/after tests for the single-read looped form (porter.port.forms.online), and
its numerics on rows whose max grows block by block or is infinite or NaN."""

import ast
import math
from pathlib import Path

import pytest
import torch

from porter.pipeline import load_reference, read_manifest
from porter.port import port_capture
from porter.render import render_kernel
from porter.port.forms.online import online_max_sum_exp
from porter.records import Capture
from porter.testing.parity import common_module, import_kernel

CAPTURED = Path(__file__).resolve().parents[1] / "captured"


def _ported(case: str) -> ast.Module:
    cap = Capture.from_dict(read_manifest(CAPTURED / case))
    ref = load_reference(CAPTURED / case / "reference.py").module
    return ast.parse(render_kernel(port_capture(cap, ref)))


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name
    )


def _loops(fn: ast.FunctionDef) -> list[ast.For]:
    """Its loops, in order: a rendered looped kernel runs each under `if PHASE`."""
    return [s for s in ast.walk(fn) if isinstance(s, ast.For)]


def test_logsumexp_online_kernel_reads_the_row_once():
    tree = _ported("logsumexp")
    # The two-pass looped kernel stays (few very wide rows), two loops.
    assert len(_loops(_function(tree, "logsumexp_kernel_looped"))) == 2
    looped = _function(tree, "logsumexp_kernel_online")
    (loop,) = _loops(looped)
    text = ast.unparse(loop)
    assert text.count("tl.load(") == 1 and "evict_first" in text
    # One running max and sum per row: a block's max, then its sum of exp
    # against the new max's shift, the sum so far rescaled to it.
    assert "maximum_nan_acc = maximum_nan(acc, max_nan(tl.where(" in text
    # exp_ftz: tl.exp without its subnormal results (porter/port/finish/fastexp.py).
    assert "exp = exp_ftz(logits - safe_maximum_nan_acc_new)" in text
    assert (
        "acc_2 = rescale_sum(acc_2, safe_acc_run, safe_maximum_nan_acc_new) + block_sum"
        in text
    )
    inits = [
        ast.unparse(s)
        for s in looped.body
        if "tl.full([BLOCK_ROWS, 1]" in ast.unparse(s)
    ]
    assert len(inits) == 2
    after = "\n".join(ast.unparse(s) for s in looped.body[looped.body.index(loop) :])
    assert "row_max = acc" in after and "row_sum = acc_2" in after
    # The persistent kernel (derived before) is untouched; the helper comes along.
    assert "rescale_sum" not in ast.unparse(_function(tree, "logsumexp_kernel"))
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert "rescale_sum" in ast.unparse(imports)  # imported from common.py
    # The launcher takes it for many very wide rows, before the two-pass one.
    launcher = ast.unparse(_function(tree, "logsumexp"))
    assert "online=True" in launcher and "'online': logsumexp_kernel_online" in launcher
    from pathlib import Path

    from porter.testing.parity import common_module, import_kernel

    captured = Path(__file__).resolve().parents[1] / "captured" / "logsumexp"
    common = common_module(import_kernel(captured / "kernel.py", "online_rule"))
    rule = {"row_tensors": 1, "row_only": True, "online": True}
    assert common.row_launch(16384, 65536, 2, **rule)[0] == "online"
    assert common.row_launch(16, 65536, 2, **rule)[0] == "looped"


@pytest.mark.parametrize("case", ["softmax", "rmsnorm", "add_layernorm"])
def test_other_looped_kernels_are_left_alone(case):
    tree = _ported(case)
    looped = next(
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name.endswith("_looped")
    )
    before = ast.unparse(looped)
    assert online_max_sum_exp(looped) == 0
    assert ast.unparse(looped) == before
    assert len(_loops(looped)) >= 2


def test_a_store_in_the_sum_loop_or_another_reader_of_the_max_is_left_alone():
    from porter.port.model import PortOptions, PortState
    from porter.port.pipeline import run_pipeline

    # The capture's looped kernel, ported up to its other forms: two loops.
    cap = Capture.from_dict(read_manifest(CAPTURED / "logsumexp"))
    port = PortState(cap, None, None, PortOptions())
    (kp,) = run_pipeline(port, until="column_masked_loads").kernels
    assert len(_loops(kp.tree)) == 2
    second = _loops(kp.tree)[1]
    store = "tl.store(out_ptr + rows, row_max, row_mask)"
    second.body.insert(0, ast.parse(store).body[0])
    before = ast.unparse(kp.tree)
    assert online_max_sum_exp(kp.tree) == 0
    assert ast.unparse(kp.tree) == before
    # Nor one whose first loop reads the lane max for something else: it would
    # read a row max after the rewrite.
    del second.body[0]
    first = _loops(kp.tree)[0]
    first.body.insert(-1, ast.parse("peek = _tmp2 * 2.0").body[0])
    before = ast.unparse(kp.tree)
    assert online_max_sum_exp(kp.tree) == 0
    assert ast.unparse(kp.tree) == before
    # Without either, the same kernel is rewritten.
    del first.body[-2]
    assert online_max_sum_exp(kp.tree) == 1 and len(_loops(kp.tree)) == 1


def _scaffold():
    return import_kernel(CAPTURED / "logsumexp" / "kernel.py", "online_logsumexp")


def _check(expected: torch.Tensor, got: torch.Tensor) -> None:
    for i in range(expected.numel()):
        e, g = expected[i].item(), got[i].item()
        if math.isnan(e) or math.isinf(e):
            assert (math.isnan(e) and math.isnan(g)) or e == g, (i, e, g)
        else:
            assert abs(g - e) <= 1e-5 * max(1.0, abs(e)), (i, e, g)


@pytest.mark.parametrize("block_rows", [1, 2])
def test_online_sum_matches_logsumexp_on_growing_infinite_and_nan_rows(
    porter_device, block_rows
):
    cols = 40  # five blocks of 8
    rows = torch.randn(8, cols, dtype=torch.float64)
    rows[0] = torch.linspace(-50, 90, cols)  # the max grows every block
    rows[1] = float("-inf")  # empty: logsumexp is -inf
    rows[2, :20] = float("-inf")  # -inf blocks, then finite ones
    rows[3, 17] = float("inf")
    rows[4, 0] = float("nan")
    rows[5] = torch.linspace(80, 100, cols)  # exp(x) alone overflows fp32
    rows[6, :30] = -1e30  # huge negative blocks before normal ones
    rows[7, 33] = float("-inf")
    x = rows.to(torch.float32).to(porter_device)
    out = torch.full((8,), float("nan"), dtype=torch.float32, device=porter_device)
    _scaffold().logsumexp_kernel_online[(8 // block_rows,)](
        out_ptr=out,
        logits_ptr=x,
        num_tokens=8,
        logits_stride0=x.stride(0),
        vocab=cols,
        BLOCK_ROWS=block_rows,
        BLOCK_COLS=8,
        LAUNCH_PDL=False,
    )
    _check(torch.logsumexp(x.double().cpu(), dim=-1), out.double().cpu())


def test_launcher_takes_the_online_kernel_for_many_wide_rows(porter_device):
    module = _scaffold()
    # 1024 rows of 32768 are too slow to interpret
    common_module(module).ONLINE_MIN_ROWS = 1
    taken = []
    kernel = module.logsumexp_kernel_online
    module.logsumexp_kernel_online = _Spy(kernel, taken)
    rows = torch.randn(6, 32770, dtype=torch.float64)
    rows[1, 5] = float("inf")
    rows[2, -1] = float("nan")
    rows[3, :20000] = float("-inf")
    rows[4] = torch.linspace(-100, 100, 32770)
    x = rows.to(torch.float32).to(porter_device)
    out = module.logsumexp(x)
    assert taken == [True]
    _check(torch.logsumexp(x.double().cpu(), dim=-1), out.double().cpu())


class _Spy:
    def __init__(self, kernel, taken: list):
        self.kernel, self.taken = kernel, taken

    def __getitem__(self, grid):
        self.taken.append(True)
        return self.kernel[grid]
