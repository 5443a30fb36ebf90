"""porter.testing.fidelity: each patched interpreter op against torch on the CPU."""

import contextlib
import itertools
import math
import os

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice
from triton.language.extra.libdevice import tanh as imported_tanh
from triton.runtime import interpreter

from porter.errors import PorterError
from porter.testing import fidelity
from porter.testing.fidelity import (
    InterpreterUnsupported,
    disable_interpreter_fidelity,
    enable_interpreter_fidelity,
    fidelity_enabled,
)

FLOATS = [torch.float32, torch.float16, torch.bfloat16]
LOW = [torch.float16, torch.bfloat16]
N = 1024


@contextlib.contextmanager
def interpreter_env():
    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = previous


def interpreted_jit(fn):
    """@triton.jit as under TRITON_INTERPRET=1 (Triton reads it at decoration time).

    Setting the variable for the whole module instead would leak into other test modules,
    which pytest imports during the same collection.
    """
    with interpreter_env():
        return triton.jit(fn)


@pytest.fixture(scope="module", autouse=True)
def _fidelity_on():
    # porter's pytest plugin may have enabled it for the whole session: leave it as found.
    was_enabled = fidelity_enabled()
    with interpreter_env():
        assert enable_interpreter_fidelity() is True
        yield
        if not was_enabled:
            disable_interpreter_fidelity()


@contextlib.contextmanager
def fidelity_off():
    disable_interpreter_fidelity()
    try:
        yield
    finally:
        enable_interpreter_fidelity()


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def randn(dtype, n=N, scale=4.0, seed=0):
    return (torch.randn(n, generator=gen(seed)) * scale).to(dtype)


def uniform(lo, hi, dtype, n=N, seed=0):
    return (
        torch.rand(n, generator=gen(seed), dtype=torch.float64) * (hi - lo) + lo
    ).to(dtype)


def grid_values(num, den, dtype, n=N, seed=0):
    """Multiples of 1/den: at these sizes their sums and products are exact in fp32."""
    return (torch.randint(-num, num + 1, (n,), generator=gen(seed)) / den).to(dtype)


def assert_same(out, ref):
    """Element-by-element equality, NaN equal to NaN and the sign of zero included."""
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if not out.dtype.is_floating_point:
        assert torch.equal(out, ref)
        return
    o, r = out.double(), ref.double()
    assert torch.equal(o.isnan(), r.isnan())
    keep = ~r.isnan()
    bad = (o[keep] != r[keep]) | (o[keep].signbit() != r[keep].signbit())
    assert (
        not bad.any()
    ), f"{int(bad.sum())} mismatches, e.g. {o[keep][bad][:4]} vs {r[keep][bad][:4]}"


def assert_close_ulp(out, ref, ulps):
    """Within `ulps` units in the last place of the output dtype, relative to the value."""
    finfo = torch.finfo(out.dtype)
    torch.testing.assert_close(
        out.double(),
        ref.double(),
        rtol=ulps * finfo.eps,
        atol=ulps * finfo.tiny,
        equal_nan=True,
    )


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@interpreted_jit
def binary_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "max":
        r = tl.maximum(x, y)
    elif OP == "min":
        r = tl.minimum(x, y)
    elif OP == "neg":
        r = -x
    elif OP == "clamp":
        r = tl.clamp(x, -tl.abs(y), tl.abs(y))
    else:
        r = tl.where(x > y, x, y)
    tl.store(out_ptr + i, r)


@interpreted_jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    r = tl.fma(tl.load(x_ptr + i), tl.load(y_ptr + i), tl.load(z_ptr + i))
    tl.store(out_ptr + i, r)


@interpreted_jit
def compare_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    if OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "gt":
        r = x > y
    elif OP == "ge":
        r = x >= y
    elif OP == "eq":
        r = x == y
    else:
        r = x != y
    tl.store(out_ptr + i, r)


@interpreted_jit
def mask_to_float_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, (tl.load(x_ptr + i) < 0).to(tl.float32))


@interpreted_jit
def cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, RTZ: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n)
    if RTZ:
        r = x.to(out_ptr.dtype.element_ty, fp_downcast_rounding="rtz")
    else:
        r = x.to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + i, r, mask=i < n)


@interpreted_jit
def reduce_kernel(x_ptr, out_ptr, M: tl.constexpr, K: tl.constexpr, OP: tl.constexpr):
    rows = tl.arange(0, M)
    x = tl.load(x_ptr + rows[:, None] * K + tl.arange(0, K)[None, :])
    if OP == "sum":
        r = tl.sum(x, axis=1)
    elif OP == "max":
        r = tl.max(x, axis=1)
    elif OP == "min":
        r = tl.min(x, axis=1)
    elif OP == "argmax":
        r = tl.argmax(x, axis=1)
    else:
        r = tl.argmin(x, axis=1)
    tl.store(out_ptr + rows, r)


@interpreted_jit
def cumsum_kernel(x_ptr, out_ptr, M: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=1))


@interpreted_jit
def multiply(a, b):
    return a * b


@interpreted_jit
def product_kernel(x_ptr, out_ptr, M: tl.constexpr, K: tl.constexpr):
    rows = tl.arange(0, M)
    x = tl.load(x_ptr + rows[:, None] * K + tl.arange(0, K)[None, :])
    tl.store(out_ptr + rows, tl.reduce(x, 1, multiply))


@interpreted_jit
def dot_kernel(a_ptr, b_ptr, c_ptr, S: tl.constexpr):
    r = tl.arange(0, S)
    offs = r[:, None] * S + r[None, :]
    c = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs))
    tl.store(c_ptr + offs, c)


@interpreted_jit
def libdevice_kernel(
    x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, FN: tl.constexpr, ARGS: tl.constexpr
):
    # Inductor upcasts to fp32 before calling libdevice; the store rounds back.
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n).to(tl.float32)
    if ARGS == 1:
        r = FN(x)
    else:
        r = FN(x, tl.load(y_ptr + i, mask=i < n).to(tl.float32))
    tl.store(out_ptr + i, r, mask=i < n)


@interpreted_jit
def core_math_kernel(x_ptr, out_ptr, N: tl.constexpr, FN: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "log":
        r = tl.log(x)
    elif FN == "log2":
        r = tl.log2(x)
    elif FN == "sqrt":
        r = tl.sqrt(x)
    elif FN == "rsqrt":
        r = tl.rsqrt(x)
    elif FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = tl.cos(x)
    elif FN == "erf":
        r = tl.erf(x)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "ceil":
        r = tl.ceil(x)
    else:
        r = tl.sigmoid(x)
    tl.store(out_ptr + i, r)


@interpreted_jit
def raw_libdevice_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, libdevice.tanh(tl.load(x_ptr + i)))


@interpreted_jit
def bound_names_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, imported_tanh(x) + cuda_libdevice.tanh(x))


@interpreted_jit
def unsupported_libdevice_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, libdevice.brev(tl.load(x_ptr + i)))


@interpreted_jit
def fp8e4b15_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.load(x_ptr + i).to(tl.float8e4b15).to(tl.float32))


@interpreted_jit
def inline_asm_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    r = tl.inline_asm_elementwise(
        "mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1
    )
    tl.store(out_ptr + i, r)


@interpreted_jit
def atomic_add_kernel(out_ptr, v_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.atomic_add(out_ptr + i * 0, tl.load(v_ptr + i))


@interpreted_jit
def atomic_cas_kernel(out_ptr, v_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.atomic_cas(
        out_ptr + i, tl.zeros([N], out_ptr.dtype.element_ty), tl.load(v_ptr + i)
    )


def _halve(x):
    return x * 0.5


# What tl.sum and the rest of triton.language.standard are when triton was imported before
# TRITON_INTERPRET=1 was set: a JITFunction, which refuses calls from interpreted code.
halve = triton.runtime.jit.JITFunction(_halve)


@interpreted_jit
def helper_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, halve(tl.load(x_ptr + i)))


def run_binary(op, x, y, out_dtype=None):
    out = torch.empty_like(x, dtype=out_dtype or x.dtype)
    binary_kernel[(1,)](x, y, out, x.numel(), op)
    return out


def run_cast(x, dtype, rtz=False):
    out = torch.empty(x.shape, dtype=dtype)
    cast_kernel[(1,)](x, out, x.numel(), triton.next_power_of_2(x.numel()), rtz)
    return out


# ---------------------------------------------------------------------------
# Regressions: wrong upstream, right with the patch
# ---------------------------------------------------------------------------

NEAR_ONE = torch.tensor([1.0, 1.0078125, 0.99609375, 1.015625], dtype=torch.bfloat16)


def test_bf16_multiply_near_one_is_by_value():
    assert_same(run_binary("mul", NEAR_ONE, NEAR_ONE), NEAR_ONE * NEAR_ONE)


def test_fp32_to_bf16_rounds_to_nearest_even():
    x = torch.tensor([0.1413])
    out = run_cast(x, torch.bfloat16)
    assert out.item() == 0.1416015625  # truncation would give 0.140625
    assert_same(out, x.to(torch.bfloat16))


def test_without_the_patch_the_interpreter_is_wrong():
    with fidelity_off():
        assert not fidelity_enabled()
        product = run_binary("mul", NEAR_ONE, NEAR_ONE)
        converted = run_cast(torch.tensor([0.1413]), torch.bfloat16)
    assert not torch.equal(product, NEAR_ONE * NEAR_ONE)
    assert converted.item() == 0.140625
    assert fidelity_enabled()


# ---------------------------------------------------------------------------
# Arithmetic, comparisons, where
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(
    "op", ["add", "sub", "mul", "max", "min", "neg", "clamp", "where"]
)
def test_elementwise_matches_torch(op, dtype):
    x, y = randn(dtype, seed=1), randn(dtype, seed=2)
    reference = {
        "add": lambda: x + y,
        "sub": lambda: x - y,
        "mul": lambda: x * y,
        "max": lambda: torch.maximum(x, y),
        "min": lambda: torch.minimum(x, y),
        "neg": lambda: -x,
        "clamp": lambda: torch.clamp(x, -y.abs(), y.abs()),
        "where": lambda: torch.where(x > y, x, y),
    }[op]()
    assert_same(run_binary(op, x, y), reference)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_division_promotes_to_fp32_and_rounds_once(dtype):
    x, y = randn(dtype, seed=3), randn(dtype, seed=4)
    out = run_binary("div", x, y, out_dtype=torch.float32)
    assert_same(out, x.float() / y.float())


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_negation_flips_the_sign_of_nan_zero_and_inf(dtype):
    # No +0.0: before 3.9 Triton lowers -x to 0 - x, which gives +0.0 on the GPU as well.
    x = torch.tensor(
        [-0.0, math.inf, -math.inf, math.nan, 1.5, -2.25, 3.0, -7.0], dtype=dtype
    )
    assert_same(run_binary("neg", x, x), -x)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_fma_rounds_once(dtype):
    # Operands on a 1/8 grid make x*y+z exact in fp32, so torch's reference rounds once too,
    # and many results fall exactly on a tie of the low-precision type.
    x, y, z = (grid_values(64, 8, dtype, seed=s) for s in (5, 6, 7))
    out = torch.empty_like(x)
    fma_kernel[(1,)](x, y, z, out, N)
    assert_same(out, (x.float() * y.float() + z.float()).to(dtype))


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_fp8_arithmetic_is_by_value_and_saturates(dtype):
    x, y = randn(torch.float32, scale=100, seed=19), randn(
        torch.float32, scale=100, seed=20
    )
    x, y = x.to(dtype), y.to(dtype)
    limit = torch.finfo(dtype).max
    exact = x.float() + y.float()
    assert_same(run_binary("add", x, y), exact.clamp(-limit, limit).to(dtype))


COMPARE_VALUES = [-2.5, -0.0, 0.0, 1.0, 1.0078125, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons_are_by_value(op, dtype):
    pairs = list(itertools.product(COMPARE_VALUES, repeat=2))
    x = torch.tensor([a for a, _ in pairs], dtype=dtype)
    y = torch.tensor([b for _, b in pairs], dtype=dtype)
    out = torch.empty(x.shape, dtype=torch.bool)
    compare_kernel[(1,)](x, y, out, x.numel(), op)
    reference = {
        "lt": x < y,
        "le": x <= y,
        "gt": x > y,
        "ge": x >= y,
        "eq": x == y,
        "ne": x != y,
    }
    assert_same(out, reference[op])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_comparison_result_converts_to_float(dtype):
    # Upstream 3.9 tags a bf16 comparison's result with bf16 and then fails to convert it.
    x = randn(dtype, n=64, seed=23)
    out = torch.empty(64)
    mask_to_float_kernel[(1,)](x, out, 64)
    assert_same(out, (x < 0).float())


# ---------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------

SPECIALS = [
    0.0,
    -0.0,
    math.inf,
    -math.inf,
    math.nan,
    65504.0,
    65520.0,
    1e5,
    3e38,
    1e-8,
    6e-5,
    1e-40,
]


def fp32_probe():
    """Random values plus exact ties (1 + k/2^8 sits halfway between bf16 neighbours)."""
    ties = [1.0 + k / 256 for k in range(1, 16, 2)] + [
        -(1.0 + k / 2048) for k in range(1, 16, 2)
    ]
    specials = torch.tensor(SPECIALS + ties)
    return torch.cat([specials, randn(torch.float32, n=N - specials.numel(), seed=8)])


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_fp32_downcast_rounds_to_nearest_even(dtype):
    x = fp32_probe()
    assert_same(run_cast(x, dtype), x.to(dtype))


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_fp32_downcast_rtz_truncates(dtype):
    x = fp32_probe()
    x = x[x.isfinite()][:512]
    reference = x.to(dtype)
    overshoot = reference.double().abs() > x.double().abs()
    step = torch.where(overshoot, 1, 0).to(torch.int16)
    reference = (reference.view(torch.int16) - step).view(dtype)
    assert_same(run_cast(x, dtype, rtz=True), reference)


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_low_precision_upcast_is_exact(dtype):
    x = fp32_probe().to(dtype)
    assert_same(run_cast(x, torch.float32), x.float())


@pytest.mark.parametrize(
    "src,dst", [(torch.bfloat16, torch.float16), (torch.float16, torch.bfloat16)]
)
def test_bf16_fp16_conversion(src, dst):
    x = fp32_probe().to(src)
    assert_same(run_cast(x, dst), x.to(dst))


def test_fp64_to_bf16_rounds_once():
    # 1 + 2^-8 + 2^-30 lies just above a bf16 tie; through fp32 the 2^-30 is lost and the
    # tie rounds down to 1.0, a single rounding goes up.
    x = torch.tensor(
        [1.0 + 2**-8 + 2**-30, -(1.0 + 2**-8 + 2**-30), 1.0 + 2**-8],
        dtype=torch.float64,
    )
    out = run_cast(x, torch.bfloat16)
    assert out.tolist() == [1.0078125, -1.0078125, 1.0]


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_fp8_conversions_round_and_saturate(dtype):
    x = fp32_probe()
    limit = torch.finfo(dtype).max
    saturated = torch.where(x.isnan(), x, x.clamp(-limit, limit))
    stored = run_cast(x, dtype)
    assert_same(stored, saturated.to(dtype))
    assert_same(run_cast(stored, torch.float32), stored.float())


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_int32_to_float(dtype):
    x = torch.randint(-(2**20), 2**20, (N,), generator=gen(9), dtype=torch.int32)
    assert_same(run_cast(x, dtype), x.to(dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("int_dtype", [torch.int32, torch.int8, torch.uint8], ids=str)
def test_float_to_int_truncates_in_range(dtype, int_dtype):
    info = torch.iinfo(int_dtype)
    x = uniform(info.min, info.max, dtype, seed=10)
    x = x[(x > info.min - 1) & (x < info.max + 1)]
    assert_same(run_cast(x, int_dtype), x.to(int_dtype))


def test_float_to_int_out_of_range_saturates_and_nan_is_zero():
    x = torch.tensor([math.nan, math.inf, -math.inf, 3e9, -3e9, -0.9, 2.9, -2.9])
    imax, imin = 2**31 - 1, -(2**31)
    assert run_cast(x, torch.int32).tolist() == [0, imax, imin, imax, imin, 0, 2, -2]


# ---------------------------------------------------------------------------
# Reductions, scans, dot, atomics
# ---------------------------------------------------------------------------

M, K = 16, 64


def tree_reduce(x, op):
    """Adjacent pairs combined level by level, rounding in x's dtype: the order
    porter's interpreter patch uses, like the tree a GPU reduction combines in."""
    while x.shape[1] > 1:
        n, half = x.shape[1], x.shape[1] // 2
        merged = op(x[:, 0 : 2 * half : 2], x[:, 1 : 2 * half : 2])
        if n % 2:
            merged = torch.cat([merged, x[:, n - 1 :]], 1)
        x = merged
    return x[:, 0]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin"])
def test_reductions_match_torch(op, dtype):
    x = grid_values(512, 16, dtype, n=M * K, seed=11).reshape(M, K)
    out_dtype = torch.int32 if op.startswith("arg") else dtype
    out = torch.empty(M, dtype=out_dtype)
    reduce_kernel[(1,)](x, out, M, K, op)
    reference = {
        "sum": lambda: (
            x.sum(1) if dtype == torch.float32 else tree_reduce(x, torch.add)
        ),
        "max": lambda: x.amax(1),
        "min": lambda: x.amin(1),
        "argmax": lambda: x.argmax(1).int(),
        "argmin": lambda: x.argmin(1).int(),
    }[op]()
    assert_same(out, reference)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cumsum_matches_torch(dtype):
    x = grid_values(512, 16, dtype, n=M * K, seed=12).reshape(M, K)
    out = torch.empty_like(x)
    cumsum_kernel[(1,)](x, out, M, K)
    assert_same(out, x.float().cumsum(1).to(dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_custom_combine_fn_reduce_rounds_each_step(dtype):
    rows, cols = 8, 8
    x = (1.0 + torch.rand(rows, cols, generator=gen(13)) / 8).to(dtype)
    out = torch.empty(rows, dtype=dtype)
    product_kernel[(1,)](x, out, rows, cols)
    assert_same(out, tree_reduce(x, torch.mul))
    sequential = x[:, 0]
    for k in range(1, cols):
        sequential = sequential * x[:, k]
    if dtype != torch.float32:  # the order matters at this precision
        assert not torch.equal(out, sequential)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_dot_matches_torch(dtype):
    size = 16
    a = grid_values(8, 4, dtype, n=size * size, seed=14).reshape(size, size)
    b = grid_values(8, 4, dtype, n=size * size, seed=15).reshape(size, size)
    c = torch.empty(size, size)
    dot_kernel[(1,)](a, b, c, size)
    assert_same(c, (a.double() @ b.double()).float())


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_atomic_add_rounds_each_addition(dtype):
    # 256 + 1 is a tie in bf16 and rounds back to 256, so repeated adds never move it.
    out = torch.tensor([256.0], dtype=dtype)
    values = torch.ones(8, dtype=dtype)
    atomic_add_kernel[(1,)](out, values, 8)
    expected = torch.tensor([256.0], dtype=dtype)
    for v in values:
        expected = expected + v
    assert_same(out, expected)


# ---------------------------------------------------------------------------
# libdevice
# ---------------------------------------------------------------------------


def round_half_away(x):
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def halves(lo, hi, dtype):
    """A grid that includes exact .5 values, where rounding functions disagree."""
    return (
        (torch.arange(N, dtype=torch.float64) / N * (hi - lo) * 2)
        .round()
        .div(2)
        .add(lo)
        .to(dtype)
    )


# name, torch reference, input maker(dtype), ulps for fp32
UNARY = [
    ("tanh", torch.tanh, lambda d: uniform(-5, 5, d), 2),
    ("erf", torch.special.erf, lambda d: uniform(-3, 3, d), 2),
    ("erfc", torch.special.erfc, lambda d: uniform(-3, 3, d), 4),
    ("exp", torch.exp, lambda d: uniform(-10, 10, d), 2),
    ("exp2", torch.exp2, lambda d: uniform(-10, 10, d), 2),
    ("exp10", lambda x: torch.pow(10.0, x), lambda d: uniform(-3, 3, d), 4),
    ("expm1", torch.expm1, lambda d: uniform(-5, 5, d), 2),
    ("log", torch.log, lambda d: uniform(0.01, 100, d), 2),
    ("log2", torch.log2, lambda d: uniform(0.01, 100, d), 2),
    ("log10", torch.log10, lambda d: uniform(0.01, 100, d), 2),
    ("log1p", torch.log1p, lambda d: uniform(-0.9, 10, d), 2),
    ("sqrt", torch.sqrt, lambda d: uniform(0, 100, d), 1),
    ("rsqrt", torch.rsqrt, lambda d: uniform(0.01, 100, d), 2),
    ("sin", torch.sin, lambda d: uniform(-3, 3, d), 2),
    ("cos", torch.cos, lambda d: uniform(-3, 3, d), 2),
    ("tan", torch.tan, lambda d: uniform(-1.4, 1.4, d), 4),
    ("asin", torch.asin, lambda d: uniform(-1, 1, d), 2),
    ("acos", torch.acos, lambda d: uniform(-1, 1, d), 2),
    ("atan", torch.atan, lambda d: uniform(-10, 10, d), 2),
    ("sinh", torch.sinh, lambda d: uniform(-5, 5, d), 2),
    ("cosh", torch.cosh, lambda d: uniform(-5, 5, d), 2),
    ("asinh", torch.asinh, lambda d: uniform(-10, 10, d), 2),
    ("acosh", torch.acosh, lambda d: uniform(1, 10, d), 2),
    ("atanh", torch.atanh, lambda d: uniform(-0.99, 0.99, d), 2),
    ("erfinv", torch.special.erfinv, lambda d: uniform(-0.99, 0.99, d), 4),
    ("lgamma", torch.lgamma, lambda d: uniform(0.1, 10, d), 4),
    ("floor", torch.floor, lambda d: halves(-10, 10, d), 0),
    ("ceil", torch.ceil, lambda d: halves(-10, 10, d), 0),
    ("trunc", torch.trunc, lambda d: halves(-10, 10, d), 0),
    ("round", round_half_away, lambda d: halves(-10, 10, d), 0),
    ("nearbyint", torch.round, lambda d: halves(-10, 10, d), 0),
    ("rint", torch.round, lambda d: halves(-10, 10, d), 0),
    ("abs", torch.abs, lambda d: randn(d), 0),
]

BINARY = [
    ("pow", torch.pow, (0.1, 4), (-3, 3), 4),
    ("fmod", torch.fmod, (-10, 10), (0.5, 3), 0),
    ("div_rn", torch.div, (-10, 10), (0.5, 3), 0),
    ("atan2", torch.atan2, (-10, 10), (-10, 10), 2),
    ("hypot", torch.hypot, (-10, 10), (-10, 10), 2),
    ("copysign", torch.copysign, (-10, 10), (-10, 10), 0),
]


def run_libdevice(name, x, y=None, out_dtype=None):
    out = torch.empty(x.shape, dtype=out_dtype or x.dtype)
    fn = getattr(libdevice, name)
    n, args = x.numel(), 1 if y is None else 2
    libdevice_kernel[(1,)](
        x, x if y is None else y, out, n, triton.next_power_of_2(n), fn, args
    )
    return out


def check_libdevice(out, reference, dtype, ulps):
    if ulps == 0:
        assert_same(out, reference)
    elif dtype == torch.float32:
        assert_close_ulp(out, reference, ulps)
    else:
        # Both sides round an fp32 result to the low type: at most one step apart.
        assert_close_ulp(out, reference, 1)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name,reference,inputs,ulps", UNARY, ids=[u[0] for u in UNARY])
def test_libdevice_unary(name, reference, inputs, ulps, dtype):
    x = inputs(dtype)
    check_libdevice(run_libdevice(name, x), reference(x), dtype, ulps)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(
    "name,reference,xs,ys,ulps", BINARY, ids=[b[0] for b in BINARY]
)
def test_libdevice_binary(name, reference, xs, ys, ulps, dtype):
    x, y = uniform(*xs, dtype, seed=16), uniform(*ys, dtype, seed=17)
    if name in ("fmod", "div_rn"):
        y = torch.where(torch.rand(N, generator=gen(18)) < 0.5, -y, y)
    check_libdevice(run_libdevice(name, x, y), reference(x, y), dtype, ulps)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", ["isnan", "isinf", "signbit"])
def test_libdevice_predicates(name, dtype):
    x = torch.tensor(SPECIALS + [-1.0, -1e-3, 2.0], dtype=dtype)
    x = torch.cat([x, -x])
    if name == "signbit":
        out = run_libdevice(name, x, out_dtype=torch.int32) != 0
    else:
        out = run_libdevice(name, x, out_dtype=torch.bool)
    assert_same(out, getattr(torch, name)(x))


CORE_MATH = [
    ("exp", torch.exp, (-10, 10)),
    ("exp2", torch.exp2, (-10, 10)),
    ("log", torch.log, (0.01, 100)),
    ("log2", torch.log2, (0.01, 100)),
    ("sqrt", torch.sqrt, (0, 100)),
    ("rsqrt", torch.rsqrt, (0.01, 100)),
    ("sin", torch.sin, (-3, 3)),
    ("cos", torch.cos, (-3, 3)),
    ("erf", torch.special.erf, (-3, 3)),
    ("floor", torch.floor, (-10, 10)),
    ("ceil", torch.ceil, (-10, 10)),
    ("sigmoid", torch.sigmoid, (-10, 10)),
]


@pytest.mark.parametrize(
    "name,reference,domain", CORE_MATH, ids=[c[0] for c in CORE_MATH]
)
def test_core_math_on_fp32_matches_torch(name, reference, domain):
    x = uniform(*domain, torch.float32, seed=22)
    out = torch.empty_like(x)
    core_math_kernel[(1,)](x, out, N, name)
    assert_close_ulp(out, reference(x), 4)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "erf", "sigmoid"])
def test_core_math_on_low_precision_is_rejected_like_on_the_gpu(name, dtype):
    # Triton's frontend accepts only fp32/fp64 here, on the GPU as in the interpreter.
    x = torch.ones(8, dtype=dtype)
    with pytest.raises(Exception, match="Expected dtype"):
        core_math_kernel[(1,)](x, torch.empty_like(x), 8, name)


def test_names_bound_directly_to_libdevice_functions_compute():
    x = uniform(-3, 3, torch.float32)
    out = torch.empty_like(x)
    bound_names_kernel[(1,)](x, out, N)
    assert_close_ulp(out, 2 * torch.tanh(x), 4)


def test_helpers_decorated_outside_the_interpreter_run_inside_it():
    x = randn(torch.bfloat16, n=64, seed=21)
    out = torch.empty_like(x)
    helper_kernel[(1,)](x, out, 64)
    assert_same(out, x * 0.5)
    with fidelity_off():
        with pytest.raises(Exception, match="outside of the scope of a kernel"):
            helper_kernel[(1,)](x, out, 64)


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_libdevice_on_low_precision_is_rejected_like_on_the_gpu(dtype):
    x = torch.ones(8, dtype=dtype)
    with pytest.raises(Exception, match="cast the arguments to fp32"):
        raw_libdevice_kernel[(1,)](x, torch.empty_like(x), 8)


# ---------------------------------------------------------------------------
# What cannot be emulated is refused, not computed
# ---------------------------------------------------------------------------


def test_unimplemented_libdevice_function_is_refused():
    x = torch.arange(8, dtype=torch.int32)
    with pytest.raises(InterpreterUnsupported, match=r"libdevice\.brev"):
        unsupported_libdevice_kernel[(1,)](x, torch.empty_like(x), 8)


def test_fp8e4b15_is_refused():
    x = torch.ones(8)
    with pytest.raises(InterpreterUnsupported, match="fp8e4b15"):
        fp8e4b15_kernel[(1,)](x, torch.empty_like(x), 8)


def test_inline_asm_is_refused():
    x = torch.arange(8, dtype=torch.int32)
    with pytest.raises(InterpreterUnsupported, match="inline_asm"):
        inline_asm_kernel[(1,)](x, torch.empty_like(x), 8)


def test_bf16_atomic_cas_is_refused():
    x = torch.ones(8, dtype=torch.bfloat16)
    with pytest.raises(InterpreterUnsupported, match="atomic_cas on bf16"):
        atomic_cas_kernel[(1,)](torch.zeros_like(x), x, 8)


def test_fp16_atomic_cas_is_left_to_the_interpreter():
    out, values = torch.zeros(8, dtype=torch.float16), randn(
        torch.float16, n=8, seed=24
    )
    atomic_cas_kernel[(1,)](out, values, 8)
    assert_same(out, values)


def _scalar_test_mask_kernel(in_ptr, out_ptr, n, K: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    # Inductor's `ks0.to(tl.int64) < ks0.to(tl.int64)` with ks0 a constexpr:
    # a scalar comparison splat beside the block's mask
    first = tl.cast(K, tl.int64) < tl.cast(K, tl.int64)
    keep = tl.cast(K, tl.int64) <= K
    mask = offs < n
    gone = tl.load(in_ptr + offs, first & mask, other=-1)
    kept = tl.load(in_ptr + offs, keep & mask, other=-1)
    tl.store(out_ptr + offs, gone * 1000 + kept, mask)


def test_a_scalar_comparison_beside_a_block_mask_is_a_mask():
    # The interpreter splat the scalar's bool into its operands' int64, and a
    # load refused `first & mask` ("mask has unsupported dtype").
    kernel = interpreted_jit(_scalar_test_mask_kernel)
    x = torch.arange(8, dtype=torch.int64)
    out = torch.empty(8, dtype=torch.int64)
    kernel[(1,)](x, out, 6, 4, 8)
    assert_same(out[:6], -1000 + x[:6])


def test_unsupported_is_a_porter_error():
    assert issubclass(InterpreterUnsupported, PorterError)


# ---------------------------------------------------------------------------
# Enabling, disabling, version gate
# ---------------------------------------------------------------------------


def test_enable_is_idempotent_and_disable_restores_originals():
    builder = interpreter.InterpreterBuilder
    assert enable_interpreter_fidelity() is True
    patched_mul, patched_code = builder.__dict__["create_fmul"], libdevice.tanh.__code__
    assert enable_interpreter_fidelity() is True
    assert builder.__dict__["create_fmul"] is patched_mul
    with fidelity_off():
        assert builder.__dict__["create_fmul"] is not patched_mul
        assert libdevice.tanh.__code__ is not patched_code
        assert libdevice.tanh(None) is None  # back to the upstream stub
        assert not hasattr(libdevice, "_porter_libdevice_dispatch")
        assert disable_interpreter_fidelity() is False
    assert fidelity_enabled()


def test_without_the_interpreter_enable_is_a_no_op(monkeypatch):
    with fidelity_off():
        monkeypatch.setenv("TRITON_INTERPRET", "0")
        assert enable_interpreter_fidelity() is False
        assert not fidelity_enabled()
        monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_untested_triton_version_is_refused(monkeypatch):
    monkeypatch.delenv(fidelity.FORCE_ENV, raising=False)
    with fidelity_off():
        monkeypatch.setattr(triton, "__version__", "3.99.0")
        with pytest.raises(
            PorterError, match=r"3\.99\.0.*PORTER_FIDELITY_FORCE=1"
        ) as info:
            enable_interpreter_fidelity()
        assert "\n" not in str(info.value)
        assert not fidelity_enabled()
        monkeypatch.setenv(fidelity.FORCE_ENV, "1")
        assert enable_interpreter_fidelity() is True


def test_tested_versions_include_the_installed_one():
    assert triton.__version__.split("+")[0] in fidelity.TESTED_TRITON_VERSIONS
