"""Before/after tests for folding a cast copy into its writers (porter.port.start.cast_copies)."""

import ast
import copy
import shutil
import textwrap
from pathlib import Path

from porter.pipeline import port
from porter.port.model import PortOptions, PortState
from porter.port.pipeline import run_pipeline
from porter.port.start.cast_copies import copy_indices
from porter.records import Capture
from porter.store import read_manifest
from porter.testing import check_parity, load_case
from porter.testing.parity import Scenario

CASES = Path(__file__).parent / "cases"

COPY = """\
def copy_kernel(in_ptr0, out_ptr0, ks0, ks1, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x2 = xindex
    x0 = xindex % ks0
    x1 = xindex // ks0
    tmp0 = tl.load(in_ptr0 + (x2), xmask, eviction_policy='evict_last')
    tmp1 = tmp0.to(tl.float32)
    tl.store(out_ptr0 + (x0 + 2*x1*((1) * ((1) >= (ks1)) + (ks1) * ((ks1) > (1)))), tmp1, xmask)
"""


def _fn(text):
    return ast.parse(textwrap.dedent(text)).body[0]


def test_a_load_cast_store_kernel_gives_its_two_indices():
    found = copy_indices(_fn(COPY))
    assert found is not None
    index, load, store = found
    assert [s.targets[0].id for s in index] == ["xmask", "x2", "x0", "x1"]
    assert load == "x2" and store.startswith("x0 + 2 * x1")


def test_a_kernel_that_computes_or_rounds_is_no_copy():
    assert copy_indices(_fn(COPY.replace("tmp0.to(tl.float32)", "tmp0 * 2.0"))) is None
    # a cast through bf16 rounds: folding it would drop that rounding
    assert copy_indices(_fn(COPY.replace("tl.float32", "tl.bfloat16"))) is None
    two_loads = COPY.replace(
        "    tmp1 = tmp0.to(tl.float32)\n",
        "    tmp1 = tl.load(in_ptr0 + (x2 + 1), xmask)\n",
    )
    assert copy_indices(_fn(two_loads)) is None


def _port_until(name, until="fold_cast_copies"):
    cap = Capture.from_dict(read_manifest(CASES / name))
    stored = copy.deepcopy(cap)
    return (
        run_pipeline(PortState(cap, None, None, PortOptions()), until=until),
        cap,
        stored,
    )


def test_the_writers_of_a_cast_copy_write_the_output():
    state, cap, stored = _port_until("neox_cat_cast")
    module = state.module
    # the copy and its fp32 scratch are gone; both halves write the output
    assert len(module.steps) == 2 and len(state.cap.kernels) == 2
    assert [b.name for b in module.buffers] == module.outputs
    pointers = [b for s in module.steps for b in s.args if b.param == "out_ptr0"]
    assert [b.kind for b in pointers] == ["output", "output"]
    # the halves' own views of the scratch, now of the output
    assert [b.view["offset"] for b in pointers] == ["0", "head_dim // 2"]
    assert [b.target for b in pointers] == ["0", "0"]
    assert any("folded into the kernels" in n for n in state.notes)
    # the stored capture is not touched
    assert cap.to_dict() == stored.to_dict()
    assert len(cap.kernels) == 3


def test_a_copy_that_transposes_stays():
    state, _, _ = _port_until("cat_transpose_cast")
    assert len(state.cap.kernels) == 3
    assert not any("folded into the kernels" in n for n in state.notes)


def test_the_folded_scaffold_is_one_kernel_and_matches(tmp_path):
    case = tmp_path / "neox_cat_cast"
    shutil.copytree(CASES / "neox_cat_cast", case)
    port(case, progress=lambda _: None)
    text = (case / "kernel.py").read_text()
    assert text.count("@triton.jit") == 1 and "scratch" not in text
    loaded = load_case(case)
    for dtype in ("float32", "bfloat16"):
        scenario = Scenario(dtype, {"num_tokens": 7, "num_heads": 2, "head_dim": 8})
        check_parity(loaded, scenario, "cpu", 0)


def test_a_copy_of_a_narrower_scratch_stays():
    # a bf16 scratch copied to an fp32 output rounds on the way; the writers
    # storing fp32 directly would not
    manifest = read_manifest(CASES / "neox_cat_cast")
    cap = Capture.from_dict(manifest)
    for b in cap.modules[0].buffers:
        if b.name not in cap.modules[0].outputs:
            b.dtype = "torch.bfloat16"
    state = run_pipeline(
        PortState(cap, None, None, PortOptions()), until="fold_cast_copies"
    )
    assert len(state.cap.kernels) == 3


def test_a_copy_of_what_an_extern_call_made_is_looked_at_and_left():
    # top-p: a kernel reads the values torch.sort returned, which no
    # allocation of the wrapper names (this raised StopIteration)
    state, _, _ = _port_until("top_p_sort")
    assert len(state.cap.kernels) == len(state.module.kernels) > 0
    assert not any("folded into the kernels" in n for n in state.notes)
