"""Integer outputs (a quantizer's codes): one step of tolerance, and unwritten
elements told apart from written ones that hold the poison value."""

import pytest
import torch

from porter.testing.parity import (
    INT_SENTINEL,
    ParityError,
    _compare,
    _unwritten,
)


def _codes(*values):
    return torch.tensor(values, dtype=torch.int8)


def test_a_written_poison_value_one_step_from_eager_passes():
    # Seen on the H200 (fp16, 32768 x 4096): the kernel wrote -123, eager -122.
    # Only the second run, poisoned differently, can say it was written.
    got, again = _codes(5, INT_SENTINEL), _codes(5, INT_SENTINEL)
    eager = _codes(5, INT_SENTINEL + 1)
    (mask,) = _unwritten((got,), (again,))
    assert not mask.any()
    assert _compare(0, eager.double(), eager, got, "float16", "w", mask) == 1.0


def test_an_unwritten_element_fails_even_where_eager_holds_the_poison():
    got, again = _codes(5, INT_SENTINEL), _codes(5, 77)
    eager = _codes(5, INT_SENTINEL)
    (mask,) = _unwritten((got,), (again,))
    assert mask.tolist() == [False, True]
    with pytest.raises(ParityError, match=r"output 0\[1\] was never written"):
        _compare(0, eager.double(), eager, got, "float16", "w", mask)


def test_integers_more_than_one_step_apart_fail():
    got, eager = _codes(5, 9), _codes(5, 7)
    with pytest.raises(ParityError, match=r"= 9, eager 7"):
        _compare(0, eager.double(), eager, got, "float16", "w")


def test_outputs_without_the_poison_value_need_no_second_run():
    floats, codes = torch.zeros(3), _codes(1, 2, 3)
    assert _unwritten((floats, codes), (floats, codes)) == [None, None]


def test_edge_rows_slice_the_outputs_and_their_unwritten_masks_alike():
    # The >2^31-element scenarios score the first and last four rows: an
    # output and its unwritten mask must be cut the same way, a None kept.
    from pathlib import Path

    from porter.testing.parity import _edge_inputs, _edge_outputs, load_case

    case = load_case(Path(__file__).resolve().parents[1] / "captured" / "quant_int8")
    x = torch.arange(20 * 3, dtype=torch.float32).reshape(20, 3)
    codes = torch.arange(20 * 3, dtype=torch.int8).reshape(20, 3)
    mask = torch.zeros(20, 3, dtype=torch.bool)
    mask[-1, 2] = True
    scale = torch.ones(20, 1)
    inputs, rows = _edge_inputs(case, [x])
    got, unwritten = _edge_outputs(rows, (codes, scale), (mask, None))
    assert rows == 20 and torch.equal(inputs[0], torch.cat([x[:4], x[-4:]]))
    assert torch.equal(got[0], torch.cat([codes[:4], codes[-4:]]))
    assert torch.equal(got[1], torch.ones(8, 1))
    assert unwritten[1] is None
    assert unwritten[0].shape == (8, 3) and unwritten[0][-1, 2]
    assert int(unwritten[0].sum()) == 1
    # copies: a scaffold changing x in place later leaves them as they were
    x.zero_()
    assert inputs[0].abs().sum() > 0


def _with_dims(case, dims, names):
    case.manifest = {**case.manifest, "dims": dims, "input_names": names}
    return case


def test_edge_rows_follow_the_grown_dim_wherever_its_axis_is():
    from pathlib import Path

    import pytest

    from porter.testing.parity import (
        ReferenceRejects,
        _edge_inputs,
        _edge_outputs,
        load_case,
    )

    case = load_case(Path(__file__).resolve().parents[1] / "captured" / "quant_int8")
    # merge_attn_states' log-sum-exps are [heads, tokens]: cut along axis 1;
    # a second per-call dim (seq, axis 1 of h) is not the one grown.
    _with_dims(
        case,
        [
            {
                "name": "num_tokens",
                "role": "runtime",
                "size": 5,
                "axes": [["lse", 1], ["h", 0]],
            },
            {"name": "seq", "role": "runtime", "size": 5, "axes": [["h", 1]]},
        ],
        ["lse", "h"],
    )
    lse = torch.arange(3 * 20, dtype=torch.float32).reshape(3, 20)
    h = torch.arange(20 * 6, dtype=torch.float32).reshape(20, 6)
    inputs, rows = _edge_inputs(case, [lse, h])
    assert rows == 20
    assert torch.equal(inputs[0], torch.cat([lse[:, :4], lse[:, -4:]], dim=1))
    assert torch.equal(inputs[1], torch.cat([h[:4], h[-4:]]))
    (got,) = _edge_outputs(rows, (lse * 2,))
    assert torch.equal(got[0], torch.cat([lse[:, :4], lse[:, -4:]], dim=1) * 2)
    # an output with no axis of those rows (a scale over the whole batch)
    with pytest.raises(ReferenceRejects, match="mixes them all"):
        _edge_outputs(rows, (lse.amax().reshape(1),))


def test_exact_integers_take_no_step():
    got, eager = torch.tensor([5, 8], dtype=torch.int32), torch.tensor([5, 7])
    eager = eager.to(torch.int32)
    assert _compare(0, eager.double(), eager, got, "float32", "w") == 1.0
    with pytest.raises(ParityError, match="must match eager exactly"):
        _compare(0, eager.double(), eager, got, "float32", "w", exact=True)


def test_a_call_of_ints_alone_is_scored_exactly(tmp_path, porter_device):
    # ids // shard, ids % shard, ids + offset on int32 ids: nothing rounds, so
    # one element one off (an off-by-one in index math) is a bug, not a tie.
    import shutil
    from pathlib import Path

    from porter.pipeline import port
    from porter.testing import check_parity, load_case
    from porter.testing.parity import Scenario

    case = tmp_path / "token_id_shard_math"
    shutil.copytree(Path(__file__).parent / "cases" / "token_id_shard_math", case)
    port(case, progress=lambda _: None)
    kernel = case / "kernel.py"
    text = kernel.read_text()
    assert "out2 = ids + offset\n" in text
    kernel.write_text(
        text.replace("out2 = ids + offset\n", "out2 = ids + offset + (offsets == 2)\n")
    )
    with pytest.raises(ParityError, match=r"output 2\[2\].*exactly"):
        check_parity(
            load_case(case), Scenario("float32", {"num_tokens": 5}), porter_device, 0
        )


def test_edge_rows_of_a_per_row_op_are_scored_alone(porter_device):
    # the control of the check that refuses references mixing rows (a
    # BatchNorm in training, test_open_world): a per-row op is scored
    from pathlib import Path

    from porter.testing.parity import Scenario, check_parity, load_case

    case = load_case(Path(__file__).resolve().parents[1] / "captured" / "rmsnorm")
    sc = Scenario("float32", {"num_tokens": 12, "hidden": 64}, values="edge_rows")
    assert check_parity(case, sc, porter_device, 0) is not None


def test_a_nan_converted_to_int32_may_give_a_gpus_value():
    # vLLM's azp = round(-128 - lo / scale).to(int32) of a row holding NaN:
    # eager on the CPU gives int32's minimum, a GPU (eager on CUDA too) 0; C++
    # leaves the conversion undefined. Any other value is still wrong.
    low = torch.iinfo(torch.int32).min
    eager = torch.tensor([3, low, low], dtype=torch.int32)
    got = torch.tensor([3, 0, torch.iinfo(torch.int32).max], dtype=torch.int32)
    assert _compare(0, eager.double(), eager, got, "float32", "w", exact=True) > 0
    with pytest.raises(ParityError, match=r"= 7, eager -2147483648"):
        wrong = torch.tensor([3, 7, 0], dtype=torch.int32)
        _compare(0, eager.double(), eager, wrong, "float32", "w", exact=True)


def test_a_float_past_int32_narrowed_may_give_a_gpus_low_bits():
    # (x * 20000).to(int16) of a huge x: eager narrows through int32, which a
    # CPU sets to INT_MIN (low bits 0) and a GPU saturates (all ones).
    eager = torch.tensor([3, 0, 0], dtype=torch.int16)
    got = torch.tensor([3, -1, 0], dtype=torch.int16)
    assert _compare(0, eager.double(), eager, got, "float32", "w") == 1.0
    pixels = torch.tensor([0, 7], dtype=torch.uint8)
    assert (
        _compare(
            0,
            pixels.double(),
            pixels,
            torch.tensor([255, 7], dtype=torch.uint8),
            "float32",
            "w",
        )
        == 255
    )
    with pytest.raises(ParityError, match=r"= -1, eager 5"):
        wrong = torch.tensor([3, -1, -1], dtype=torch.int16)
        _compare(
            0,
            eager.double(),
            torch.tensor([3, 0, 5], dtype=torch.int16),
            wrong,
            "float32",
            "w",
        )
