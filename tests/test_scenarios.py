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
    wide = [s.sizes for s in case.scenarios() if 32770 in s.sizes.values()]
    assert wide == [{"num_tokens": 3, "num_heads": 8, "head_dim": 32770}]


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
    assert sweep == [1, 2, 4, 7, 31]
