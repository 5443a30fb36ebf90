"""Before/after tests for keeping negative indices unwrapped where eager raises
(porter.port.clean.negative_index), and the aten ops capture records for it."""

import ast
import textwrap

from porter.parse import _aten_ops
from porter.port.clean.negative_index import (
    eager_rejects_negative,
    keep_negative_indices,
    keep_negative_indices_of_raising_inputs,
    unwrapped_indices,
)
from porter.port.model import KernelPort
from porter.records import KernelRecord

GATHER = """\
def k(in_ptr0, in_ptr1, out_ptr0, ks0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + xindex, xmask)
    tmp1 = ks0.to(tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert((0 <= tmp4) & (tmp4 < ks0) | ~xmask, 'index out of bounds: 0 <= tmp4 < ks0')
    tmp5 = tl.load(in_ptr1 + tmp4, xmask)
    tl.store(out_ptr0 + xindex, tmp5, xmask)
"""


def _kp(aten):
    record = KernelRecord("k", GATHER, "pointwise", [], {}, None, None, 0, aten=aten)
    kp = KernelPort(record, None)
    kp.tree = ast.parse(GATHER).body[0]
    return kp


def test_which_ops_raise_on_a_negative_index():
    assert eager_rejects_negative(["aten.index_select", "aten.mul"])
    assert eager_rejects_negative(["aten.embedding"])
    assert eager_rejects_negative(["aten.index_copy"])  # cache.index_copy_(0, slots, x)
    # x[i] wraps in eager: a kernel with it keeps the wrap, whatever else it has
    assert not eager_rejects_negative(["aten.index", "aten.index_select"])
    assert not eager_rejects_negative(["aten.index_put"])
    # no indexing op, or an older capture that recorded none
    assert not eager_rejects_negative(["aten.mul"])
    assert not eager_rejects_negative([])


def test_the_wrap_goes_where_eager_raises():
    kp = _kp(["aten.index_select"])
    keep_negative_indices(kp)
    text = ast.unparse(kp.tree)
    assert "tmp4 = tmp0" in text and "tl.where" not in text
    # the bound check stays, on the raw index
    assert "tl.device_assert((0 <= tmp4) & (tmp4 < ks0)" in text
    assert kp.notes and "aten.index_select" in kp.notes[0]


def test_the_wrap_stays_where_eager_wraps():
    kp = _kp(["aten.index"])
    before = ast.unparse(kp.tree)
    keep_negative_indices(kp)
    assert ast.unparse(kp.tree) == before and not kp.notes


def test_only_a_wrap_of_the_same_index_is_dropped():
    fn = ast.parse(GATHER.replace("tmp3 = tmp0 < 0", "tmp3 = tmp0 < 1")).body[0]
    assert unwrapped_indices(fn) == 0
    fn = ast.parse(GATHER.replace("tmp2 = tmp0 + tmp1", "tmp2 = tmp5 + tmp1")).body[0]
    assert unwrapped_indices(fn) == 0


def test_capture_reads_the_aten_ops_above_a_kernel():
    source = textwrap.dedent("""\
        # kernel path: /somewhere/k.py
        # Topologically Sorted Source Nodes: [x], Original ATen: [aten.index_select, aten.mul]
        # Source node to ATen node mapping:
        #   x => index_select
        k = async_compile.triton('k', '''...''')
        """)
    lines = source.splitlines()
    assert _aten_ops(lines, 5) == ["aten.index_select", "aten.mul"]
    # no comment block right above: nothing
    assert _aten_ops(["x = 1", "k = async_compile.triton('k', '')"], 2) == []


def test_an_index_no_bound_check_reads_keeps_its_wrap():
    # unwrapped and unchecked, -1 would read before the tensor
    no_check = "\n".join(
        line for line in GATHER.splitlines() if "device_assert" not in line
    )
    assert unwrapped_indices(ast.parse(no_check).body[0]) == 0


def test_a_cache_write_at_slot_minus_one_raises_instead_of_writing_the_last_slot(
    tmp_path,
):
    # cache.index_copy_(0, slots, x): vLLM pads with slot -1; eager raises, the
    # scaffold had written the token into the cache's last slot.
    import shutil
    from pathlib import Path

    import pytest
    import torch

    from porter.pipeline import port
    from porter.testing import load_case

    case = tmp_path / "index_copy_rows"
    shutil.copytree(Path(__file__).parent / "cases" / "index_copy_rows", case)
    port(case, progress=lambda _: None)
    kernel = load_case(case).kernel
    x, cache = torch.randn(2, 16), torch.zeros(8, 16)
    with pytest.raises(Exception):
        kernel.index_copy_rows(x, cache, torch.tensor([0, -1]))
    assert not cache[7].any()


# MoE's combine: out.index_add_(0, idx, src * w[idx][:, None]) in one kernel,
# w[idx] (which wraps in eager) and the add at idx (which raises).
COMBINE = """\
def k(in_ptr0, in_ptr1, in_ptr2, out_ptr0, ks0, ks1, ks2, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x1 = xindex // ks0
    x0 = xindex % ks0
    tmp0 = tl.load(in_ptr0 + x1, xmask)
    tmp6 = tl.load(in_ptr1 + xindex, xmask)
    tmp2 = tmp0 + ks1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert((0 <= tmp4) & (tmp4 < ks1) | ~xmask, 'index out of bounds: 0 <= tmp4 < ks1')
    tmp8 = tmp0 + ks2
    tmp9 = tl.where(tmp3, tmp8, tmp0)
    tl.device_assert((0 <= tmp9) & (tmp9 < ks2) | ~xmask, 'index out of bounds: 0 <= tmp9 < ks2')
    tmp11 = tl.load(in_ptr2 + tmp9, xmask)
    tl.atomic_add(out_ptr0 + (x0 + ks0 * tmp4), tmp6 * tmp11, xmask, sem='relaxed')
"""
COMBINE_OPS = ["aten.index", "aten.mul", "aten.index_add"]


def _combine(source=COMBINE, aten=COMBINE_OPS):
    record = KernelRecord("k", source, "pointwise", [], {}, None, None, 0, aten=aten)
    kp = KernelPort(record, None)
    kp.tree = ast.parse(source).body[0]
    return kp


def test_an_add_at_the_index_a_gather_wraps_drops_both_wraps():
    # a -1 in idx: eager's index_add_ raises; the scaffold added the row into
    # the last one
    kp = _combine()
    keep_negative_indices(kp)
    text = ast.unparse(kp.tree)
    assert "tl.where" not in text and "tmp4 = tmp0" in text and "tmp9 = tmp0" in text


def test_a_wrap_of_another_index_tensor_stays_beside_the_written_ones():
    # w[j] over another index tensor j: its -1 wraps in eager; the add at idx
    # raises at a -1 in idx all the same. Before: both wraps stayed, and the
    # scaffold added a row at idx = -1 into the last one (pooled.index_add_(0,
    # seg, table[ids])). After: idx's wrap goes, j's stays.
    source = COMBINE.replace(
        "    tmp8 = tmp0 + ks2\n    tmp9 = tl.where(tmp3, tmp8, tmp0)",
        "    tmp7 = tl.load(in_ptr0 + xindex, xmask)\n"
        "    tmp8 = tmp7 + ks2\n    tmp10 = tmp7 < 0\n"
        "    tmp9 = tl.where(tmp10, tmp8, tmp7)",
    )
    kp = _combine(source)
    keep_negative_indices(kp)
    text = ast.unparse(kp.tree)
    assert "tmp4 = tmp0" in text and "tmp9 = tl.where(tmp10, tmp8, tmp7)" in text
    # and where the add is x[idx] = ... (index_put, which wraps), nothing goes
    kp = _combine(aten=["aten.index", "aten.mul", "aten.index_put"])
    keep_negative_indices(kp)
    assert ast.unparse(kp.tree).count("tl.where") == 2


# cache.index_select(0, table[pos]): table read at pos (wraps), cache at the
# entry (raises), in one kernel whose aten ops mix the two.
LOOKUP = """\
def k(in_ptr0, in_ptr1, in_ptr2, out_ptr0, ks0, ks1, ks2, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x1 = xindex // ks0
    x0 = xindex % ks0
    tmp0 = tl.load(in_ptr0 + x1, xmask)
    tmp2 = tmp0 + ks1
    tmp4 = tl.where(tmp0 < 0, tmp2, tmp0)
    tl.device_assert((0 <= tmp4) & (tmp4 < ks1) | ~xmask, 'index out of bounds: 0 <= tmp4 < ks1')
    tmp6 = tl.load(in_ptr1 + tmp4, xmask)
    tmp8 = tmp6 + ks2
    tmp10 = tl.where(tmp6 < 0, tmp8, tmp6)
    tl.device_assert((0 <= tmp10) & (tmp10 < ks2) | ~xmask, 'index out of bounds: 0 <= tmp10 < ks2')
    tmp11 = x0 + ks0 * tmp10
    tmp12 = tl.load(in_ptr2 + tmp11, xmask)
    tl.store(out_ptr0 + xindex, tmp12, xmask)
"""


def _lookup_port(raising):
    from types import SimpleNamespace

    from porter.records import Binding, GraphInput, Step

    record = KernelRecord(
        "k",
        LOOKUP,
        "pointwise",
        [],
        {},
        None,
        None,
        0,
        aten=["aten.index", "aten.index_select"],
    )
    names = {"arg0_1": "pos", "arg1_1": "table", "arg2_1": "cache"}
    args = [
        Binding(f"in_ptr{i}", arg, "input", target)
        for i, (arg, target) in enumerate(names.items())
    ]
    kp = KernelPort(record, Step("launch", "k", args))
    kp.tree = ast.parse(LOOKUP).body[0]
    inputs = [GraphInput(a, f"L['{t}']", "tensor", t) for a, t in names.items()]
    port = SimpleNamespace(
        cap=SimpleNamespace(raise_on_negative=raising),
        module=SimpleNamespace(inputs=inputs),
        kernels=[kp],
    )
    return port, kp


def test_an_entry_read_at_an_input_only_raising_ops_index_is_not_wrapped():
    port, kp = _lookup_port(["L['cache']"])
    keep_negative_indices(kp)  # mixed ops: every wrap stays
    keep_negative_indices_of_raising_inputs(port)
    text = ast.unparse(kp.tree)
    assert "tmp10 = tmp6" in text  # cache's index: eager raises
    assert "tmp4 = tl.where(tmp0 < 0, tmp2, tmp0)" in text  # table[pos] wraps
    assert kp.notes and "aten.index_select" in kp.notes[0]
    # an older capture, or cache indexed by x[i] too: both wraps stay
    port, kp = _lookup_port([])
    keep_negative_indices_of_raising_inputs(port)
    assert ast.unparse(kp.tree).count("tl.where") == 2
