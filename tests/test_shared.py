"""porter.port.finish.shared: a kernel Inductor wrote again under other names
(per-head RMSNorm of q, then of k) is written once and launched for each."""

import json
from pathlib import Path

import torch

from porter.port import port_capture
from porter.port.finish.shared import _canonical, _neutral
from porter.records import Capture
from porter.reference import load_reference
from porter.render import render_common, render_kernel
from porter.store import COMMON
from porter.testing.parity import import_kernel

CASE = Path(__file__).resolve().parent / "cases" / "qk_norm_from_qkv"


def test_kernels_equal_but_for_names_read_alike_and_others_do_not():
    import ast

    a = ast.parse("def k(q_ptr, n):\n    q = tl.load(q_ptr + n)\n    tl.store(q_ptr, q)")
    b = ast.parse("def j(k_ptr, m):\n    v = tl.load(k_ptr + m)\n    tl.store(k_ptr, v)")
    c = ast.parse("def j(k_ptr, m):\n    v = tl.load(k_ptr - m)\n    tl.store(k_ptr, v)")
    fa, fb, fc = (t.body[0] for t in (a, b, c))
    assert _canonical(fa)[0] == _canonical(fb)[0] != _canonical(fc)[0]
    subjects = [("q", "k", "x"), ("out0", "out1", "out")]
    assert _neutral("q_stride1", subjects) == "x_stride1"
    assert _neutral("out0_ptr", subjects) == "out_ptr"
    assert _neutral("num_heads", subjects) == "num_heads"


def test_q_and_k_norms_share_one_kernel_and_give_the_reference(tmp_path, porter_device):
    # Before: qk_norm_kernel_0 and qk_norm_kernel_1 (and their looped forms),
    # the same code twice, 325 code lines. After: one kernel, launched for q
    # and for k with the names both share.
    cap = Capture.from_dict(json.loads((CASE / "manifest.json").read_text()))
    ref = load_reference(CASE / "reference.py").module
    text = render_kernel(port_capture(cap, ref))
    assert text.count("@triton.jit") == 2, text
    # launched for q and for k from one loop (loop_repeated_launches)
    assert text.count('kernel = qk_norm_kernel if form == "persistent" else') == 1
    assert "(q, q_weight, out0, num_heads)" in text and "x_ptr=x," in text
    assert "(k, k_weight, out1, num_kv_heads)" in text and "q_ptr" not in text
    (tmp_path / "qk").mkdir()
    (tmp_path / "qk" / "kernel.py").write_text(text)
    (tmp_path / COMMON).write_text(render_common())
    mod = import_kernel(tmp_path / "qk" / "kernel.py", "shared_qk_norm_case")
    q, k, qw, kw = ref.make_inputs(3, 4, 2, 16, device=porter_device)
    got = mod.qk_norm(q, k, qw, kw)
    want = ref.qk_norm(*(t.double() for t in (q, k, qw, kw)))
    for g, w in zip(got, want):
        torch.testing.assert_close(g.double().cpu(), w.cpu(), rtol=1e-5, atol=1e-5)
