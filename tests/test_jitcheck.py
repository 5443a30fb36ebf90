"""porter jitcheck: variants after warmup, by Triton's specialization rules."""

import inspect
import shutil
from pathlib import Path

import pytest
import torch

from porter.testing.launches import specialization_key

CAPTURED = Path(__file__).resolve().parents[1] / "captured"
CASES = sorted(p.parent.name for p in CAPTURED.glob("*/kernel.py"))
TOKENS = (1, 2, 7, 16, 17, 32)
VIEWS = ("contiguous", "offset", "row_sliced")


@pytest.mark.parametrize("case", CASES)
def test_scaffolds_compile_once_per_layout(case, porter_jitcheck):
    """Warmed on the layouts it will see, no token count compiles a new variant."""
    report = porter_jitcheck(CAPTURED / case, tokens=TOKENS, warm_layouts=VIEWS)
    assert report.clean, [v.describe() for v in report.new_variants]
    assert report.launches >= len(TOKENS) * len(VIEWS)


def test_the_one_kernel_matmul_of_2_byte_dtypes_compiles_once_per_layout(
    porter_jitcheck,
):
    """linear_gelu launches its matmul kernel only for bf16 and fp16 inputs,
    which the case's first dtype (fp32) never reaches."""
    case = CAPTURED / "linear_gelu"
    report = porter_jitcheck(case, tokens=TOKENS, warm_layouts=VIEWS, dtype="bfloat16")
    assert report.clean and report.dtype == "bfloat16"
    # Warmed on contiguous inputs only, the offset view's variants are all the
    # matmul kernel's: it is what ran at these token counts.
    report = porter_jitcheck(
        case, tokens=TOKENS, sweep_layouts=("contiguous", "offset"), dtype="bfloat16"
    )
    assert {v.kernel for v in report.new_variants} == {"linear_gelu_matmul_kernel"}


def test_jitcheck_refuses_a_dtype_the_case_was_not_captured_for(capsys):
    from porter.cli import main

    assert main(["jitcheck", str(CAPTURED / "linear_gelu"), "--dtype", "int8"]) == 1
    err = capsys.readouterr().err
    assert (
        "--dtype int8: linear_gelu was captured for float32, float16, bfloat16" in err
    )
    assert "Traceback" not in err


def test_offset_view_after_aligned_warmup_is_found(porter_jitcheck):
    report = porter_jitcheck(
        CAPTURED / "rmsnorm", tokens=TOKENS, sweep_layouts=("contiguous", "offset")
    )
    (variant,) = report.new_variants
    assert variant.layout == "offset"
    assert "x_ptr: 16-byte aligned -> not specialized" in variant.changes
    assert any("do_not_specialize_on_alignment" in a for a in report.advice)


def test_missing_do_not_specialize_is_found(tmp_path, porter_jitcheck):
    """An engine warmed at a prefill size meets decode: without do_not_specialize,
    num_tokens == 1 and odd token counts compile new variants."""
    options = dict(tokens=TOKENS, warm_tokens=(64,), sweep_layouts=("contiguous",))
    assert porter_jitcheck(CAPTURED / "rmsnorm", **options).clean
    folder = tmp_path / "no_dns_rmsnorm"
    shutil.copytree(
        CAPTURED / "rmsnorm", folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(CAPTURED / "common.py", tmp_path)  # what the case imports from
    kernel = folder / "kernel.py"
    source = kernel.read_text()
    assert '@triton.jit(do_not_specialize=["num_tokens"])' in source
    kernel.write_text(
        source.replace('@triton.jit(do_not_specialize=["num_tokens"])', "@triton.jit")
    )
    report = porter_jitcheck(folder, **options)
    changes = {v.tokens: v.changes for v in report.new_variants}
    assert changes == {
        1: ["num_tokens: divisible by 16 -> == 1"],
        2: ["num_tokens: divisible by 16 -> not specialized"],
    }
    assert any("do_not_specialize" in a for a in report.advice)


def test_a_launch_heuristic_regime_needs_its_own_warmup(porter_jitcheck):
    """silu_and_mul's tile heuristic takes 512-element blocks up to 2^18
    elements and larger ones beyond: 1024 tokens of 512 columns is the other
    regime, a second variant an engine's profile run compiles at startup."""
    sweep = dict(tokens=(1, 7, 1024), sweep_layouts=("contiguous",))
    decode_only = porter_jitcheck(
        CAPTURED / "silu_and_mul", warm_tokens=(1, 7, 64), **sweep
    )
    (variant,) = decode_only.new_variants
    assert variant.tokens == 1024
    assert variant.changes and all(
        c.startswith(("BLOCK_", "num_warps", "EARLY_TRIGGER")) for c in variant.changes
    )
    assert any("launcher's heuristic" in a for a in decode_only.advice)
    # By default the warmup adds the sweep's largest count.
    report = porter_jitcheck(CAPTURED / "silu_and_mul", **sweep)
    assert report.clean and report.warmup_tokens == [1, 7, 64, 512, 1024]


def test_specialization_key_follows_triton_rules():
    import triton
    import triton.language as tl

    def body(x_ptr, n, stride, flag, BLOCK: tl.constexpr):
        pass

    kernel = triton.jit(
        do_not_specialize=["n"], do_not_specialize_on_alignment=["flag"]
    )(body)
    x = torch.zeros(32)

    def key(**kw):
        bound = inspect.signature(body).bind(**kw)
        return dict(specialization_key(kernel, bound))

    k = key(x_ptr=x, n=1, stride=32, flag=x, BLOCK=8)
    assert k == {
        "x_ptr": "16-byte aligned",
        "n": "runtime",
        "stride": "divisible by 16",
        "flag": "",
        "BLOCK": "constexpr=8",
    }
    assert key(x_ptr=x[1:], n=5, stride=1, flag=x, BLOCK=8)["x_ptr"] == ""
    assert key(x_ptr=x, n=5, stride=1, flag=x, BLOCK=8)["stride"] == "== 1"
    assert key(x_ptr=x, n=5, stride=7, flag=x, BLOCK=8)["stride"] == ""


STREAMED = [
    c for c in CASES if "STREAM_ROWS" in (CAPTURED / c / "kernel.py").read_text()
]


@pytest.mark.parametrize("case", STREAMED)
def test_prefill_past_the_stream_size_reuses_the_largest_batchs_variant(case):
    """An engine warms decode sizes and its largest batch up; every prefill size
    in between must reuse the largest batch's variant. The persistent kernel's
    eviction hint, chosen by the tensor's size, once made a third variant
    (H200: at 1024 tokens). Keys only: these sizes are too large to interpret."""
    from porter.testing.launches import LaunchRecorder, scaffold_kernels
    from porter.testing.parity import (
        Scenario,
        common_module,
        load_case,
        make_inputs,
        run_scaffold,
    )

    loaded = load_case(CAPTURED / case)
    sizes = {d["name"]: 64 for d in loaded.manifest["dims"]}  # 256-byte fp32 rows
    stream_rows = common_module(loaded.kernel).stream_rows(64, 4)
    assert stream_rows == 131072  # 32 MB of fp32 rows of 64

    def launch(rec, tokens):
        for d in loaded.runtime_dims():
            sizes[d["name"]] = tokens
        rec.context = (tokens, "contiguous")
        inputs = make_inputs(loaded, Scenario("float32", sizes), "cpu", seed=0)
        run_scaffold(loaded, inputs, "float32", "cpu")

    with LaunchRecorder(scaffold_kernels(loaded.kernel), execute=False) as rec:
        for tokens in (1, 7, 64, 2 * stream_rows):
            launch(rec, tokens)
        warm = set(rec.seen)
        for tokens in (1024, 16384, stream_rows - 1, stream_rows):
            launch(rec, tokens)
    assert rec.launches == 8
    assert set(rec.seen) == warm, [rec.seen[k] for k in set(rec.seen) - warm]


PREFILL = (1024, 4096, 16384, 32768)


@pytest.mark.parametrize("case", CASES)
def test_prefill_counts_compile_nothing_after_the_largest_batch(case, porter_device):
    """Decode warmup and the largest batch cover every prefill count. On the
    CPU the prefill counts are keyed without running the kernels."""
    from porter.jitcheck import jitcheck
    from porter.testing.parity import load_case

    report = jitcheck(
        load_case(CAPTURED / case),
        device=porter_device,
        tokens=(1, 7, *PREFILL),
        sweep_layouts=("contiguous",),
    )
    assert report.clean, [v.describe() for v in report.new_variants]
    if porter_device == "cpu":
        assert set(PREFILL) <= set(report.keys_only_tokens)


def test_a_regime_between_warmup_counts_is_found_on_the_cpu(
    tmp_path, monkeypatch, request
):
    """A launch setting that switches between the decode warmup and the largest
    batch (here warps at 2048-8191 rows) compiles a variant while an engine
    serves; the CPU finds it by keying the prefill counts."""
    from porter.testing.fidelity import (
        disable_interpreter_fidelity,
        enable_interpreter_fidelity,
        fidelity_enabled,
    )

    # The decode counts run their kernels on CPU tensors: under the interpreter,
    # also where the session's device is a GPU (Triton reads the variable when
    # load_case runs the copy's @triton.jit; the fidelity patches let it call
    # triton.language's helpers, decorated before).
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    was_enabled = fidelity_enabled()
    enable_interpreter_fidelity()
    if not was_enabled:
        request.addfinalizer(disable_interpreter_fidelity)
    from porter.jitcheck import format_report, jitcheck
    from porter.testing.parity import load_case

    folder = tmp_path / "regime_rmsnorm"
    shutil.copytree(
        CAPTURED / "rmsnorm", folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(CAPTURED / "common.py", tmp_path)  # what the case imports from
    kernel = folder / "kernel.py"
    # Later definitions win: the launcher looks row_launch up when called.
    kernel.write_text(
        kernel.read_text() + "\n\n_original = row_launch\n\n\n"
        "def row_launch(num_rows, row_size, elem_bytes=2, **rule):\n"
        "    form, launch = _original(num_rows, row_size, elem_bytes, **rule)\n"
        "    if 2048 <= num_rows < 8192:\n"
        "        launch['num_warps'] *= 2\n"
        "    return form, launch\n"
    )
    report = jitcheck(
        load_case(folder),
        device="cpu",
        tokens=(1, 7, *PREFILL),
        sweep_layouts=("contiguous",),
    )
    assert [v.tokens for v in report.new_variants] == [4096]
    # fp32 rows of 1024: 2 warps a program from 257 rows, doubled here.
    assert report.new_variants[0].changes == ["num_warps: 2 -> 4"]
    assert (
        "keyed without running the kernels (CPU) at 512, 1024, 4096, 16384, 32768"
        in (format_report(report))
    )


def test_wide_rows_are_keyed_from_fewer_tokens_on_the_cpu():
    """softmax's rows of 32768: 8 rows run (2^18 elements), 9 are keyed, as a
    run there adds interpreter seconds and no key."""
    from porter.jitcheck import jitcheck
    from porter.testing.parity import load_case

    report = jitcheck(
        load_case(CAPTURED / "softmax"),
        device="cpu",
        tokens=(1, 8, 9),
        warm_tokens=(1,),
        sweep_layouts=("contiguous",),
    )
    assert report.clean
    assert report.keys_only_tokens == [9]
