"""porter.yardstick's Triton copy, run by Triton's interpreter on the CPU: the
kernel porter bench times on a GPU as a copy of a point's bytes."""

import pytest
import torch

from porter import yardstick


@pytest.mark.parametrize("nbytes", [8, 8 * 2048 * 3 + 8 * 5])
@pytest.mark.parametrize("words, warps", [(2048, 4), (8192, 8)])
def test_triton_copy_moves_every_word(nbytes, words, warps):
    copy = yardstick.triton_copy(nbytes, words, warps, device="cpu")
    copy.src.copy_(torch.randint(-(2**31), 2**31 - 1, copy.src.shape))
    dst = copy()
    dst.fill_(-1)  # poison: a word the kernel skips stays -1
    assert torch.equal(copy(), copy.src)
    assert copy.src.numel() == max(nbytes // 8, 1)  # half read, half written


def test_every_copy_launch_is_a_whole_number_of_warps_of_words():
    for words, warps, pdl in yardstick.COPY_LAUNCHES:
        assert words % (32 * warps) == 0 and isinstance(pdl, bool)
