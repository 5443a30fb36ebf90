"""The difficult inputs must not fail a correct kernel: rotary's q*c - q2*s
with the GPU's fused multiply-add, emulated on the CPU, and a matmul of the
large row summed in another order."""

import math

import pytest
import torch

from porter.testing import parity


def _rotary(q, cos, sin):
    half = q.shape[-1] // 2
    q1, q2 = q[..., :half].float(), q[..., half:].float()
    c, s = cos[:, None, :].float(), sin[:, None, :].float()
    return torch.cat([q1 * c - q2 * s, q2 * c + q1 * s], dim=-1).to(q.dtype)


def _rotary_fma(q, cos, sin, exact_first: bool):
    """The same in fp32 with one product of each sum left unrounded, as an FMA
    computes it (products of two fp32 values are exact in float64)."""
    half = q.shape[-1] // 2
    q1, q2 = q[..., :half].double(), q[..., half:].double()
    c, s = cos[:, None, :].double(), sin[:, None, :].double()

    def f32(t):
        return t.float().double()

    if exact_first:
        a, b = f32(q1 * c - f32(q2 * s)), f32(q2 * c + f32(q1 * s))
    else:
        a, b = f32(f32(q1 * c) - q2 * s), f32(f32(q2 * c) + q1 * s)
    return torch.cat([a, b], dim=-1).float()


@pytest.mark.parametrize("exact_first", [True, False])
def test_difficult_rows_pass_a_kernel_that_fuses_a_multiply_add(exact_first):
    # With big's fp32 mantissa all ones, 17 of 300 seeds failed here; with the
    # large magnitudes spread over [big/2, big], 44. Both round differently
    # from eager only through cancellation, not through any fault.
    for seed in range(40):
        torch.manual_seed(seed)
        q = parity._difficult(torch.randn(5, 4, 64))
        angle = torch.rand(5, 32) * 6.28
        cos, sin = angle.cos(), angle.sin()
        ref = _rotary(q.double(), cos.double(), sin.double())
        eager = _rotary(q, cos, sin)
        got = _rotary_fma(q, cos, sin, exact_first)
        parity._compare(0, ref, eager, got, "float32", f"seed {seed}")


def _linear_gelu(x, w, sequential=False):
    """x @ w.t() then tanh-GELU; sequential sums the inner dimension one term at a
    time in x's dtype (a kernel's k-loop), else torch's own order."""
    if sequential:
        acc = torch.zeros(x.shape[0], w.shape[0], dtype=x.dtype)
        for k in range(x.shape[1]):
            acc = acc + x[:, k : k + 1] * w[:, k]
    else:
        acc = x @ w.t()
    return torch.nn.functional.gelu(acc, approximate="tanh")


def _matmul_case(seed):
    torch.manual_seed(seed)
    x = parity._difficult(torch.randn(5, 128))
    w = torch.randn(256, 128) / 128**0.5
    ref = _linear_gelu(x.double(), w.double())
    return x, w, ref, _linear_gelu(x, w)


def test_a_matmul_of_the_large_row_passes_in_any_summation_order():
    # Scored at the output's median alone, the worst of row 0's near-cancelled
    # sums beat 4x eager's worst for 8 of 100 seeds of linear_gelu fp32 (CI
    # failed on one): a draw of the summation order, not a fault.
    for seed in range(40):
        x, w, ref, eager = _matmul_case(seed)
        got = _linear_gelu(x, w, sequential=True)
        parity._compare(0, ref, eager, got, "float32", f"seed {seed}")


@pytest.mark.parametrize("row", [0, 4])
def test_a_wrong_element_fails_in_the_large_row_and_beside_it(row):
    x, w, ref, eager = _matmul_case(0)
    got = _linear_gelu(x, w, sequential=True)
    col = int(got[row].abs().argmax())
    got[row, col] *= 1.001  # about 10^4 fp32 ulps: a wrong term, not rounding
    with pytest.raises(parity.ParityError, match=rf"worst element \[{row}, {col}\]"):
        parity._compare(0, ref, eager, got, "float32", "planted")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_the_large_row_is_a_power_of_two_within_the_dtype(dtype):
    rows = parity._difficult(torch.randn(5, 4096).to(dtype))
    big = rows[0].abs().float()
    big = big[big != 0]  # sign(x + 0.5) is 0 where a bf16 x is exactly -0.5
    assert big.numel() > 4000 and torch.all(big == big[0])
    assert math.log2(big[0].item()).is_integer()
    # a row's sum of squares still fits in fp32
    assert torch.isfinite((big.double() ** 2).sum().float())


@pytest.mark.parametrize("layout", ["contiguous", "offset", "row_sliced"])
def test_unfilled_inputs_keep_what_the_specialization_key_reads(layout):
    """jitcheck's keys-only launches: the same shapes, strides, dtypes and
    pointer alignment as the filled inputs, without filling them."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "captured" / "fused_add_rmsnorm"
    case = parity.load_case(folder)
    sizes = {"num_tokens": 5, "hidden": 64}
    sc = parity.Scenario("bfloat16", sizes, layout=layout)
    filled = parity.make_inputs(case, sc, "cpu", seed=0)
    unfilled = parity.make_inputs(case, sc, "cpu", seed=0, filled=False)
    assert len(filled) == len(unfilled)
    for a, b in zip(filled, unfilled):
        assert (a.shape, a.stride(), a.dtype) == (b.shape, b.stride(), b.dtype)
        assert (a.data_ptr() % 16 == 0) == (b.data_ptr() % 16 == 0)
    aligned = [t.data_ptr() % 16 == 0 for t in unfilled]
    assert all(aligned) == (layout != "offset")


def test_a_reference_whose_make_inputs_fails_at_a_size_rejects_that_size():
    # A reference file's make_inputs that writes d[0, 1] fails at zero tokens:
    # that scenario is skipped as one the reference rejects, not an error.
    from pathlib import Path
    from types import SimpleNamespace

    def make_inputs(sizes, dtype, device):
        d = torch.zeros(sizes["num_tokens"], 4)
        d[0, 1] = -0.0
        return (d,)

    manifest = {"dims": [{"name": "num_tokens", "size": 2}], "dtypes": ["float32"]}
    case = parity.Case(Path("c"), manifest, SimpleNamespace(make_inputs=make_inputs))
    sc = parity.Scenario("float32", {"num_tokens": 0})
    with pytest.raises(parity.ReferenceRejects, match="make_inputs rejects"):
        parity.make_inputs(case, sc, "cpu", 0)
    assert parity.make_inputs(
        case, parity.Scenario("float32", {"num_tokens": 2}), "cpu", 0
    )


def test_inputs_past_the_machines_memory_are_not_made():
    # Swin's windows grow with ws**4: at the model-dim size 1023 a machine
    # that overcommits memory was killed filling them (rel_pos_bias, H100).
    from pathlib import Path
    from types import SimpleNamespace

    made = []

    def make_inputs(sizes, dtype, device):
        made.append(device)
        n = sizes["ws"] ** 2
        return (torch.empty(3, n, n, device=device),)

    manifest = {"dims": [{"name": "ws", "size": 3}], "dtypes": ["float32"]}
    case = parity.Case(Path("c"), manifest, SimpleNamespace(make_inputs=make_inputs))
    sc = parity.Scenario("float32", {"ws": 1023})
    with pytest.raises(parity.ReferenceRejects, match="GiB holds in float64"):
        parity.make_inputs(case, sc, "cpu", 0)
    assert made == ["meta"]
    assert parity.make_inputs(case, parity.Scenario("float32", {"ws": 3}), "cpu", 0)


def test_sizes_whose_inputs_outgrow_the_budget_by_far_are_never_asked_for():
    # Even a meta make_inputs may build its index on the CPU first: at ws =
    # 1023 the scenarios' budget check itself killed a host that overcommits.
    from pathlib import Path
    from types import SimpleNamespace

    asked = []

    def make_inputs(sizes, dtype, device):
        asked.append(sizes["ws"])
        n = sizes["ws"] ** 2
        return (torch.empty(3, n, n, device=device),)

    manifest = {"dims": [{"name": "ws", "size": 3}], "dtypes": ["float32"]}
    ref = SimpleNamespace(make_inputs=make_inputs)
    case = parity.Case(Path("c"), manifest, ref)
    assert not case.fits({"ws": 1023})
    assert max(asked) == 6  # the captured size and twice it
    assert case.fits({"ws": 5}) and not case.fits({"ws": 30})


def test_an_expanded_input_is_copied_and_laid_out_as_expanded():
    # make_inputs returning bias.expand(num_tokens, hidden): copying it into a
    # view of its own strides raised (one memory location, many elements),
    # which the suite reported as the reference rejecting every call; and the
    # layout scenarios made it dense, which the scaffold refuses.
    from porter.testing.parity import LAYOUTS, _layout, copies

    b = torch.randn(8).expand(5, 8)
    (copied,) = copies([b])
    assert copied.stride() == (0, 1) and torch.equal(copied, b)
    assert copied.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    for layout in LAYOUTS:
        assert _layout(b, layout) is b
    # a view with an offset keeps it, as before
    x = torch.randn(4, 6)[1:, 2:]
    (y,) = copies([x])
    assert (y.stride(), y.storage_offset()) == (x.stride(), x.storage_offset())
    assert torch.equal(y, x)


def _self_divergence(x, sequential=False):
    """sum(q * (lq - log(exp(lq)))): float64 gives 0 or its own rounding."""
    lq = torch.log_softmax(x, -1)
    terms = lq.exp() * (lq - torch.log(lq.exp()))
    if sequential:  # another summation order, as a kernel's
        out = torch.zeros((), dtype=x.dtype)
        for t in terms.reshape(-1):
            out = out + t
        return out
    return terms.sum()


def test_an_output_float64_cancels_to_zero_is_scored_at_its_operands():
    # jsd at beta 0: eager's fp32 log(exp(x)) round-tripped to exactly 0 and
    # the scaffold's rounding (4e-9) failed against the floor's 1e-11.
    torch.manual_seed(0)
    x = torch.randn(64, 50)
    ref, eager = _self_divergence(x.double()), _self_divergence(x)
    got = _self_divergence(x, sequential=True) + 4e-9
    operands = parity._operand_scale([x])
    parity._compare(0, ref, torch.zeros(()), got, "float32", "noise", operands=operands)
    with pytest.raises(parity.ParityError):  # without the operands' scale
        parity._compare(0, ref, torch.zeros(()), got, "float32", "noise")
    with pytest.raises(parity.ParityError, match="error"):  # a wrong term still fails
        parity._compare(
            0, ref, eager, got + 1e-3, "float32", "planted", operands=operands
        )


def test_a_small_output_keeps_its_own_scale():
    # x * 1e-7 is no cancellation: twice it must fail, operands or not.
    torch.manual_seed(0)
    x = torch.randn(8, 32)
    ref, eager = x.double() * 1e-7, x * 1e-7
    operands = parity._operand_scale([x])
    with pytest.raises(parity.ParityError):
        parity._compare(
            0, ref, eager, 2 * eager, "float32", "planted", operands=operands
        )


def _entropy(z):
    return torch.logsumexp(z, -1) - (torch.softmax(z, -1) * z).sum(-1)


def test_a_row_that_cancels_at_its_operands_magnitude_is_scored_there():
    # verl's entropy of the difficult row of +-2^k logits: float64 keeps no
    # digit of the ~4 it should be, eager's fp32 happened to give 0, and a
    # kernel's 3 ulps of 2^k (5e10) failed for most seeds.
    torch.manual_seed(0)
    x = parity._difficult(torch.randn(5, 100))
    ref, eager = _entropy(x.double()), _entropy(x)
    rows = parity._operand_rows([x])
    assert float(x[0].abs().max()) > 1e15 and abs(float(ref[0])) < 1e6
    eager[0] = ref[0]  # as eager landed for most seeds
    got = eager.clone()
    got[0] = eager[0] + 5e10
    parity._compare(0, ref, eager, got, "float32", "rounding", operand_rows=rows)
    with pytest.raises(parity.ParityError):  # without the rows' operands
        parity._compare(0, ref, eager, got, "float32", "rounding")
    got[3] += 0.5  # a wrong entropy in an ordinary row still fails
    with pytest.raises(parity.ParityError, match=r"worst element \[3\]"):
        parity._compare(0, ref, eager, got, "float32", "planted", operand_rows=rows)


def test_a_mostly_zero_output_keeps_its_nonzero_values_scale():
    # A ReLU of shifted logits: 90% exact zeros, the rest near 1e-5. Scored at
    # the inputs' magnitude (the median of all values is 0), 3% off on every
    # nonzero value would pass; at the nonzero values' scale it fails.
    torch.manual_seed(0)
    x = torch.randn(8, 64)
    keep = torch.rand(8, 64) < 0.1
    ref = torch.where(
        keep, 1e-5 * x.double().abs() + 1e-5, torch.zeros((), dtype=torch.float64)
    )
    eager = ref.float()
    operands = parity._operand_scale([x])
    rows = parity._operand_rows([x])
    with pytest.raises(parity.ParityError):
        parity._compare(
            0,
            ref,
            eager,
            eager * 1.03,
            "float32",
            "planted",
            operands=operands,
            operand_rows=rows,
        )


def test_an_output_rounded_to_bf16_is_judged_at_bf16s_floor():
    # x / amax cast to bf16 in a float32 call: a kernel's x * (1 / amax) is
    # one float32 ulp off and flips a bf16 rounding, one bf16 ulp, where
    # float64 (rounded by the same cast) and eager agree; 2% still fails.
    torch.manual_seed(0)
    x = torch.randn(64, 256)
    amax = x.abs().amax(-1, keepdim=True)
    ref = (x.double() / amax.double()).to(torch.bfloat16)
    eager = (x / amax).to(torch.bfloat16)
    got = eager.clone()
    got[0, 0] = (got[0, 0].float() * (1 + 2**-7)).to(got.dtype)  # a bf16 ulp
    assert not torch.equal(got, eager)
    parity._compare(0, ref, eager, got, "float32", "here")
    with pytest.raises(parity.ParityError, match="floor 0.016"):
        parity._compare(
            0, ref, eager, (got.float() * 1.02).to(got.dtype), "float32", "here"
        )


def test_one_value_a_row_below_the_dtypes_resolution_is_scored_at_its_operands():
    # Gumbel sampling's log-probability of the top logit at a temperature of
    # -0.025: float64 -exp(-28), eager exactly 0, an H100's fused
    # x * (1 / t) - max half an ulp of x / t (-1.9e-6) against inputs of 0.55.
    ref = torch.tensor([-5.77e-13, -3.1e-13, -0.5, -1.2, -6.0e-13], dtype=torch.float64)
    eager = torch.tensor([0.0, 0.0, -0.5, -1.2, 0.0])
    got = torch.tensor([-1.9e-6, 0.0, -0.5, -1.2, 0.0])
    rows = {5: torch.full((5,), 0.55)}
    parity._compare(1, ref, eager, got, "float32", "here", operand_rows=rows)
    wrong = torch.tensor([-1e-3, 0.0, -0.5, -1.2, 0.0])  # 1e-3 is no rounding
    with pytest.raises(parity.ParityError, match="error"):
        parity._compare(1, ref, eager, wrong, "float32", "here", operand_rows=rows)
