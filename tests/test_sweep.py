"""porter sweep: discovery, the independent check's sizes and verdicts, the
worker pool, the table and JSON."""

import json
import textwrap

import pytest

from porter import sweep
from porter.errors import PorterError
from porter.pipeline import capture

POINTWISE = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, slope: float = 0.1):
            super().__init__()
            self.slope = slope

        def forward(self, x):
            return torch.where(x > 0, x, x * self.slope) + 1.0

    batch_size = 6
    dim = 40

    def get_inputs():
        return [torch.randn(batch_size, dim)]

    def get_init_inputs():
        return [0.2]
"""

MATMUL_ONLY = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, a, b):
            return a @ b

    M = 8
    K = 16
    N = 12

    def get_inputs():
        return [torch.randn(M, K), torch.randn(K, N)]

    def get_init_inputs():
        return []
"""


def _refs(tmp_path, **texts):
    folder = tmp_path / "refs"
    folder.mkdir()
    for name, text in texts.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    return folder


def test_references_are_the_py_files_of_folders_and_files(tmp_path):
    folder = _refs(tmp_path, b=POINTWISE, a=MATMUL_ONLY)
    (folder / "_helper.py").write_text("")
    assert [p.name for p in sweep.references([str(folder)])] == ["a.py", "b.py"]
    assert [p.name for p in sweep.references([str(folder / "b.py")] * 2)] == ["b.py"]
    with pytest.raises(PorterError, match="no such file or folder"):
        sweep.references([str(tmp_path / "nope")])


def test_the_check_sizes_come_from_the_file_and_are_never_the_captured_ones(tmp_path):
    from porter.testing import load_case

    folder = _refs(tmp_path, leaky=POINTWISE)
    result = capture(
        folder / "leaky.py", out=tmp_path / "out", device="cpu", progress=lambda _: None
    )
    case = load_case(result.case)
    variants = sweep.size_variants(case)
    base = {"batch_size": 6, "dim": 40}
    assert base not in variants
    # each size alone, then both, then the leading one at 1 and at 0
    assert {"batch_size": 9, "dim": 40} in variants and {
        "batch_size": 6,
        "dim": 43,
    } in variants
    assert {"batch_size": 9, "dim": 43} in variants
    assert {"batch_size": 1, "dim": 40} in variants and {
        "batch_size": 0,
        "dim": 40,
    } in variants


def test_a_wrong_scaffold_fails_the_check_and_a_right_one_passes(tmp_path):
    folder = _refs(tmp_path, leaky=POINTWISE)
    result = capture(
        folder / "leaky.py", out=tmp_path / "out", device="cpu", progress=lambda _: None
    )
    verdict = sweep.check_case(result.case, ("float32",))
    assert verdict.status == "pass" and verdict.passed and not verdict.refused
    # the slope, a constructor argument, is honoured at another value too
    kernel = result.case / "kernel.py"
    text = kernel.read_text()
    assert "slope=self.slope" in text
    kernel.write_text(text.replace("slope=self.slope", "slope=0.2"))
    verdict = sweep.check_case(result.case, ("float32",))
    assert verdict.status == "failed" and "error" in verdict.why


def test_sweep_runs_each_reference_in_a_worker_and_writes_table_and_json(tmp_path):
    folder = _refs(tmp_path, leaky=POINTWISE, mm=MATMUL_ONLY)
    out = tmp_path / "out"
    results = sweep.sweep([str(folder)], out, jobs=1, dtypes=("float32",))
    verdicts = {r["reference"].split("/")[-1]: r for r in results}
    assert verdicts["leaky.py"]["status"] == "pass"
    assert verdicts["mm.py"]["status"] == "refused"
    assert "no Triton kernel" in verdicts["mm.py"]["why"]
    table, data = sweep.write_results(results, out)
    assert "1 passed, 1 refused, 0 failed, of 2" in table.read_text()
    stored = json.loads(data.read_text())
    assert stored["device"] == "cpu" and stored["torch"]
    assert [r["reference"] for r in stored["results"]] == ["leaky.py", "mm.py"]


def test_a_call_argument_is_tried_at_other_values_none_and_double_too():
    from porter.sweep import _other_call_arguments

    # An int under math.log moves with its double where one more may not move
    # a floor; a float may be None (`cap: float | None = 30.0`).
    assert _other_call_arguments(8) == [9, 16]
    assert _other_call_arguments(0) == [1]
    assert _other_call_arguments(True) == [False]
    assert _other_call_arguments(30.0) == [14.625, None]
    assert _other_call_arguments((2, 3)) == [(3, 4)]
    assert _other_call_arguments("mean") == [] and _other_call_arguments(None) == []


KEEP_LAST = """
    import torch

    DIMS = {"batch": 2, "seq": 5, "channels": 16}
    DYNAMIC = ["seq"]
    DTYPES = ["float32"]

    def make_inputs(batch, seq, channels, dtype=torch.float32, device="cpu"):
        x = torch.randn(batch, seq, channels, dtype=dtype, device=device)
        state = torch.randn(batch, channels, dtype=dtype, device=device)
        return x, state

    def keep_last(x, state):
        state.copy_(x[:, -1, :])
        return x * 2.0

    REFERENCE = keep_last
"""


def test_the_check_tries_each_size_at_zero_where_eager_may_raise(tmp_path):
    # The sweep said pass for a scaffold that read before x at seq = 0, where
    # eager raises: only sizes eager runs at were tried.
    import re

    folder = _refs(tmp_path, keep_last=KEEP_LAST)
    result = capture(
        folder / "keep_last.py",
        out=tmp_path / "out",
        device="cpu",
        progress=lambda _: None,
    )
    assert sweep.check_case(result.case, ("float32",)).status == "pass"
    kernel = result.case / "kernel.py"
    text = kernel.read_text()
    cut = re.sub(
        r"\n    if seq == 0:\n        refuse\(\n.*?\n        \)", "", text, flags=re.S
    )
    assert cut != text
    kernel.write_text(cut)
    verdict = sweep.check_case(result.case, ("float32",))
    assert verdict.status == "failed" and "seq0" in verdict.why


def test_the_check_tries_huge_infinite_and_nan_values_too(tmp_path):
    # A scaffold wrong at inf alone (torch.floor_divide's inf // 2.0: NaN in
    # eager) passed the sweep while its own suite failed.
    folder = _refs(tmp_path, leaky=POINTWISE)
    result = capture(
        folder / "leaky.py", out=tmp_path / "out", device="cpu", progress=lambda _: None
    )
    kernel = result.case / "kernel.py"
    text = kernel.read_text()
    store = next(line for line in text.splitlines() if "tl.store(" in line)
    value = store.split("tl.store(")[1].split(",")[1].strip()
    # the same numbers everywhere but where the input is not finite
    kernel.write_text(
        text.replace(
            store,
            store.replace(value, f"tl.where({value} == {value}, {value}, 0.0)", 1),
        )
    )
    verdict = sweep.check_case(result.case, ("float32",))
    assert verdict.status == "failed" and "difficult" in verdict.why


POSTERIOR = """
    import torch

    DIMS = {"rows": 4, "cols": 8}
    DTYPES = ["float32"]

    def make_inputs(rows, cols, dtype=torch.float32, device="cpu"):
        return (torch.randn(rows, cols, dtype=dtype, device=device),)

    def posterior_scale(x, a_t: float = 0.5, a_prev: float = 0.7):
        return x * ((1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev))

    REFERENCE = posterior_scale
"""


def test_the_check_tries_the_generated_suites_argument_values_too(tmp_path):
    # DDPM's (1 - a_prev) / (1 - a_t): eager raises at a_t = 1.0, one of the
    # suite's values, where the scaffold returns inf; the sweep tried only
    # its own values and said pass where `porter test` failed
    folder = _refs(tmp_path, posterior=POSTERIOR)
    result = capture(
        folder / "posterior.py",
        out=tmp_path / "out",
        device="cpu",
        progress=lambda _: None,
    )
    verdict = sweep.check_case(result.case, ("float32",))
    assert verdict.status == "failed" and "arg1=1" in verdict.why


SCALE = """
import torch

DIMS = {"n": 4, "h": 8}
DYNAMIC = ["n"]
DTYPES = ["float32", "bfloat16"]


def make_inputs(n, h, dtype=torch.float32, device="cpu"):
    return (torch.randn(n, h, dtype=dtype, device=device),)


def scale(x):
    return x * 2.0


REFERENCE = scale
"""


def test_a_refusal_of_the_captured_call_in_a_served_dtype_fails_the_check(tmp_path):
    # A scaffold that refused every bf16 call (a wrong dtype tie) was a pass
    # with "refused some calls" while `porter test` failed: "the scaffold
    # refused a call it must serve".
    folder = _refs(tmp_path, scale=SCALE)
    result = capture(
        folder / "scale.py", out=tmp_path / "out", device="cpu", progress=lambda _: None
    )
    assert sweep.check_case(result.case, ("float32",)).status == "pass"
    kernel = result.case / "kernel.py"
    text = kernel.read_text()
    head = '    """Same arguments and outputs as the reference scale."""\n'
    assert head in text
    plant = '    if x.dtype == torch.bfloat16:\n        refuse("x must be float32, as at capture")\n'
    kernel.write_text(text.replace(head, head + plant))
    verdict = sweep.check_case(result.case, ("float32",))
    assert verdict.status == "failed"
    assert "captured on in bfloat16, a dtype it serves" in verdict.why


SIZED_BY_ARG = """
import torch

DIMS = {"batch": 5}
DYNAMIC = ["batch"]
DTYPES = ["float32"]


def make_inputs(batch, dtype=torch.float32, device="cpu"):
    return (torch.rand(batch, dtype=dtype, device=device),)


def embed(t, dim: int = 8):
    return t[:, None] * torch.arange(dim, dtype=torch.float32, device=t.device)[None]


REFERENCE = embed
"""


def test_a_scaffold_that_cannot_allocate_past_int32_is_a_refusal_there(tmp_path):
    # an int argument sizing the output, tried past int32: the scaffold cannot
    # allocate and eager is not tried; porter test counts it a refusal, the
    # sweep failed the case. A kernel takes this one as a constant, so the
    # launcher's int32 check now refuses the call before it allocates.
    folder = _refs(tmp_path, embed=SIZED_BY_ARG)
    result = capture(
        folder / "embed.py", out=tmp_path / "out", device="cpu", progress=lambda _: None
    )
    verdict = sweep.check_case(result.case, ("float32",))
    assert verdict.status == "pass" and verdict.refused >= 1
    assert any(
        "arg1=42949" in r and ("could not allocate" in r or "int32's range" in r)
        for r in verdict.refusals
    )
