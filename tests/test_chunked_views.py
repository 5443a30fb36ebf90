"""Views that split an axis by an int argument (x.view(b, t // chunk_size,
chunk_size, h), chunk(2) of a batch): the kernel's index steps a size's
number of rows, which crosses the outer axes, so the launcher gives such a
tensor the captured strides (generalize._rewrite_strides); and the suite's
layout scenarios run at a size the reference accepts."""

import textwrap

import pytest

from porter.pipeline import capture
from porter.testing import check_parity, load_case
from porter.testing.parity import Scenario

CHUNK_SUM = """
    import torch

    DIMS = {"batch": 2, "seq_len": 16, "nheads": 4}
    DYNAMIC = ["seq_len"]
    DTYPES = ["float32"]

    def make_inputs(batch, seq_len, nheads, dtype=torch.float32, device="cpu"):
        return (torch.randn(batch, seq_len, nheads, dtype=dtype, device=device),)

    def f(g, chunk_size: int = 4):
        B, T, H = g.shape
        return g.view(B, T // chunk_size, chunk_size, H).sum(2)

    REFERENCE = f
"""

CFG_STD = """
    import torch

    DIMS = {"batch": 2, "channels": 4, "height": 5, "width": 3}
    DYNAMIC = ["batch", "height"]
    DTYPES = ["float32"]

    def make_inputs(batch, channels, height, width, dtype=torch.float32, device="cpu"):
        return (torch.randn(2 * batch, channels, height, width, dtype=dtype, device=device),)

    def cfg_std(noise_pred, s: float = 5.0):
        uncond, text = noise_pred.chunk(2)
        cfg = uncond + s * (text - uncond)
        return cfg * (text.std(dim=[1, 2, 3], keepdim=True) / cfg.std(dim=[1, 2, 3], keepdim=True))

    REFERENCE = cfg_std
"""


def _case(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    result = capture(
        path, out=tmp_path / "cases", device="cpu", progress=lambda _: None
    )
    return load_case(result.case)


@pytest.mark.parametrize("layout", ["padded", "row_sliced", "row_step"])
def test_a_chunked_view_of_a_strided_input_reads_eagers_values(
    tmp_path, porter_device, layout
):
    # the kernel read g at (h, chunk_size * h * x4 + h * r) with x4 over
    # batches and chunks, beside g's own row stride: a padded g gave 28 for 44
    case = _case(tmp_path, "chunk_sum", CHUNK_SUM)
    sizes = {"batch": 2, "seq_len": 8, "nheads": 4}
    check_parity(case, Scenario("float32", sizes, layout=layout), porter_device, 0)
    # seq_len 5 is no multiple of 4: the layout scenarios take twice the
    # captured size, where every one of them was skipped before
    small = {s.sizes["seq_len"] for s in case.scenarios() if s.layout == "padded"}
    assert small == {32}


def test_the_second_half_of_a_chunked_batch_reads_eagers_values(
    tmp_path, porter_device
):
    # text = noise_pred.chunk(2)[1] started at ((1 + b) // 2) * c * h * w, the
    # captured batch stride, beside rows at the tensor's own: wrong by 2.7
    case = _case(tmp_path, "cfg_std", CFG_STD)
    sizes = {"batch": 2, "channels": 4, "height": 5, "width": 3}
    check_parity(case, Scenario("float32", sizes, layout="row_step"), porter_device, 0)
