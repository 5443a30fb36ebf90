"""Which scenarios a case gets (porter.testing.parity.Case.scenarios)."""

from types import SimpleNamespace

from porter.testing.parity import Case


def _case(kernel) -> Case:
    manifest = {
        "dtypes": ["float32"],
        "dims": [
            {"name": "num_tokens", "size": 4, "role": "runtime", "symbolic": True},
            {"name": "num_heads", "size": 8, "role": "model", "symbolic": True},
            {"name": "head_dim", "size": 128, "role": "model", "symbolic": True},
        ],
        "modules": [
            {
                "steps": [
                    {
                        "kind": "launch",
                        "args": [
                            {"param": "xnumel", "expr": "(num_heads * num_tokens)"},
                            {"param": "r0_numel", "expr": "head_dim"},
                        ],
                    }
                ]
            }
        ],
    }
    return Case(folder=None, manifest=manifest, reference=None, kernel=kernel)


def test_the_looped_kernel_is_tested_past_the_fused_limit_along_the_row_only():
    case = _case(SimpleNamespace(MAX_FUSED_COLS=32768))
    assert case.reduction_dims() == {"head_dim"}
    wide = [(s.sizes, s.values) for s in case.scenarios() if 32770 in s.sizes.values()]
    # random values, and difficult ones (5 rows: one of each kind)
    assert wide == [
        ({"num_tokens": 3, "num_heads": 8, "head_dim": 32770}, "random"),
        ({"num_tokens": 5, "num_heads": 8, "head_dim": 32770}, "difficult"),
    ]


def test_a_launcher_asking_row_launch_is_tested_past_common_pys_limit():
    # The limit lives in common.py, beside row_launch: the kernel module holds
    # neither MAX_FUSED_COLS nor the branch on it (issue 45).
    common = {"MAX_FUSED_COLS": 32768}
    row_launch = eval("lambda *args, **kw: MAX_FUSED_COLS", common)
    case = _case(SimpleNamespace(row_launch=row_launch))
    wide = [s.values for s in case.scenarios() if 32770 in s.sizes.values()]
    assert wide == ["random", "difficult"]


def test_a_looped_kernel_that_splits_rows_is_tested_past_the_split_limit():
    # A row this wide takes the split launch (common.py's SplitRows): uneven
    # slices, splits past the row's end (tests/test_split.py: inf and NaN).
    common = {"MAX_FUSED_COLS": 32768, "SPLIT_MIN_COLS": 16384}
    row_launch = eval("lambda *args, **kw: MAX_FUSED_COLS", common)
    SplitRows = type("SplitRows", (), {"kernel": None})
    case = _case(SimpleNamespace(row_launch=row_launch, kernel_looped=SplitRows()))
    split = [(s.sizes, s.values) for s in case.scenarios() if 16387 in s.sizes.values()]
    assert split == [({"num_tokens": 1, "num_heads": 8, "head_dim": 16387}, "random")]
    plain = _case(SimpleNamespace(row_launch=row_launch))
    assert not [s for s in plain.scenarios() if 16387 in s.sizes.values()]


def test_each_dtype_served_beyond_the_references_own_is_tested():
    # An fp32 reference whose scaffold serves bf16 too: the suite had tested
    # fp32 alone, and a bf16 call that rounded an fp32 intermediate passed.
    case = _case(SimpleNamespace())
    case.manifest["dtypes_served"] = ["float32", "bfloat16"]
    extra = [(s.sizes, s.values) for s in case.scenarios() if s.dtype == "bfloat16"]
    assert ({"num_tokens": 4, "num_heads": 8, "head_dim": 128}, "random") in extra
    assert any(values == "difficult" for _, values in extra)
    assert not [s for s in _case(SimpleNamespace()).scenarios() if s.dtype != "float32"]


def test_no_wide_rows_without_a_looped_kernel():
    case = _case(SimpleNamespace())
    assert not [s for s in case.scenarios() if 32770 in s.sizes.values()]
    sweep = [
        s.sizes["num_tokens"]
        for s in case.scenarios()
        if s.sizes["head_dim"] == 128
        and s.sizes["num_heads"] == 8
        and s.layout == "contiguous"
        and s.values == "random"
    ]
    # zero tokens too, where eager serves them, and the most that fit past a
    # decode/prefill branch (this case has no reference to size: 2048 fits)
    assert sweep == [0, 1, 2, 4, 7, 31, 2048]


def test_float64_reference_keeps_float64_through_the_references_upcasts():
    import torch

    from porter.testing.parity import _KeepFloat64

    x = torch.tensor([2.0**30, 1.0, -(2.0**30)], dtype=torch.float64)
    with _KeepFloat64():
        assert x.float().dtype == torch.float64
        assert x.to(torch.float32).dtype == torch.float64
        assert x.type(torch.float32).dtype == torch.float64
        assert x.type("torch.FloatTensor").dtype == torch.float64
        assert x.type(torch.float16).dtype == torch.float16
        assert torch.softmax(x, 0, dtype=torch.float32).dtype == torch.float64
        assert x.float().sum().item() == 1.0  # fp32 would lose the 1.0
        assert x.to(torch.bfloat16).dtype == torch.bfloat16  # real downcasts stay
        assert x.to(torch.int8).dtype == torch.int8
        # tensors made from numbers: a timestep embedding's frequencies
        assert torch.arange(0, 4, dtype=torch.float32).dtype == torch.float64
        assert torch.full((2,), 0.1, dtype=torch.float32).dtype == torch.float64
        assert torch.randn(2, dtype=torch.float32).dtype == torch.float32
        # an int tensor made fp32: RoPE's positions and arange(0, d, 2).float()
        ids = torch.tensor([2**24 + 1, 3])
        assert ids.float().dtype == torch.float64 and ids.float()[0] == 2**24 + 1
        assert ids.to(torch.float32).dtype == torch.float64
        assert ids.to(torch.bfloat16).dtype == torch.bfloat16
        assert ids.long().dtype == torch.int64
    assert x.float().dtype == torch.float32  # outside the reference run


def test_fp8_outputs_may_differ_by_one_grid_step_never_by_nan():
    import pytest
    import torch

    from porter.testing.parity import ParityError, _compare_fp8

    fp8 = torch.float8_e4m3fn
    eager = torch.tensor([320.0, -320.0, 0.5, 448.0]).to(fp8)
    one_off = torch.tensor([352.0, -320.0, 0.5, 448.0]).to(fp8)
    assert _compare_fp8(0, eager, eager, one_off, "") == 1
    with pytest.raises(ParityError, match="within 1 step"):
        bad = torch.tensor([384.0, -320.0, 0.5, 448.0]).to(fp8)
        _compare_fp8(0, eager, eager, bad, "")
    with pytest.raises(ParityError):  # an unwritten (NaN-poisoned) element next to 448
        unwritten = torch.tensor([320.0, -320.0, 0.5, float("nan")]).to(fp8)
        _compare_fp8(0, eager, eager, unwritten, "")


def test_fp8_codes_one_step_off_on_many_elements_fail_unless_float64_agrees():
    # a kernel scaling by 0.95 before its e4m3 cast had 43% of its codes one
    # step off eager, and the suite passed it
    import pytest
    import torch

    from porter.testing.parity import ParityError, _compare_fp8

    fp8 = torch.float8_e4m3fn
    x = torch.linspace(-400, 400, 256)  # all within one step: only the count fails
    eager, got = x.to(fp8), (x * 0.95).to(fp8)
    with pytest.raises(ParityError, match="on a few elements"):
        _compare_fp8(0, eager, eager, got, "")
    # where float64's code is the scaffold's (eager rounded in bf16 on the way)
    assert _compare_fp8(0, got, eager, got, "") <= 1
