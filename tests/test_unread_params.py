"""drop_unread_parameters (porter/port/finish/params.py): no kernel of a
scaffold takes a size or stride it never reads."""

import ast
import textwrap
from pathlib import Path

import pytest

from porter.pipeline import capture
from porter.testing import check_parity, load_case
from porter.testing.parity import Scenario

ROOT = Path(__file__).resolve().parent.parent


def _unread(text: str) -> dict[str, list[str]]:
    out = {}
    for fn in ast.parse(text).body:
        if not isinstance(fn, ast.FunctionDef) or not any(
            "triton.jit" in ast.unparse(d) for d in fn.decorator_list
        ):
            continue
        read = {
            n.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        unread = [a.arg for a in fn.args.args if a.arg not in read]
        if unread:
            out[fn.name] = unread
    return out


@pytest.mark.parametrize(
    "case", sorted(p.parent.name for p in ROOT.glob("captured/*/kernel.py"))
)
def test_every_captured_kernel_reads_its_parameters(case):
    text = (ROOT / "captured" / case / "kernel.py").read_text()
    assert _unread(text) == {}


QK_NORM = """
    import torch

    DIMS = {"num_tokens": 5, "num_heads": 4, "num_kv_heads": 2, "head_dim": 32}
    DYNAMIC = ["num_tokens"]

    def make_inputs(num_tokens, num_heads, num_kv_heads, head_dim, dtype=torch.float32, device="cpu"):
        qkv = torch.randn(num_tokens, (num_heads + 2 * num_kv_heads) * head_dim, dtype=dtype, device=device)
        q = qkv[:, : num_heads * head_dim].view(num_tokens, num_heads, head_dim)
        k = qkv[:, num_heads * head_dim : (num_heads + num_kv_heads) * head_dim]
        k = k.view(num_tokens, num_kv_heads, head_dim)
        return q, k, torch.randn(head_dim, dtype=dtype, device=device)

    def _rms(t, w, eps):
        tf = t.float()
        return (tf * torch.rsqrt(tf.pow(2).mean(-1, keepdim=True) + eps) * w).to(t.dtype)

    def qk_norm(q, k, w, eps: float = 1e-6):
        return _rms(q, w, eps), _rms(k, w, eps)

    REFERENCE = qk_norm
"""


def test_a_views_row_stride_inductor_passed_is_not_left_unread(tmp_path, porter_device):
    # q and k read as views of qkv: Inductor passes the row stride as ks2, the
    # port reads it as x_stride0, and ks2's own parameter (q_stride_0, a
    # constexpr: a compile per qkv width) stayed in the signature unread.
    path = tmp_path / "qk_norm.py"
    path.write_text(textwrap.dedent(QK_NORM))
    result = capture(
        path, out=tmp_path / "cases", device="cpu", progress=lambda _: None
    )
    case = load_case(result.case)
    text = (case.folder / "kernel.py").read_text()
    assert _unread(text) == {}
    assert "stride_0" not in text
    # one launch of the shared kernel, in a loop over q and k (loops.py)
    assert (
        "for x, out, heads in ((q, out0, num_heads), (k, out1, num_kv_heads)):" in text
    )
    assert text.count("kernel[(triton.cdiv(") == 1
    sizes = {"num_tokens": 3, "num_heads": 4, "num_kv_heads": 2, "head_dim": 32}
    check_parity(case, Scenario("float32", sizes), porter_device, 0)
