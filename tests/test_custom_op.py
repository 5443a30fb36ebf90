"""The scaffold's custom op (porter.port.custom_op, porter.testing.custom_op):
its schema from the reference, in-place references, and a check that fails
on a wrong fake."""

import inspect
import textwrap
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from porter.pipeline import capture
from porter.port.custom_op import fake_return_at, plan_custom_op
from porter.port.launch.launcher import Alloc
from porter.testing import CustomOpUnavailable, check_custom_op, load_case

ROOT = Path(__file__).resolve().parents[1]


def _launcher(returns, written=(), dims=(), allocs=()):
    return SimpleNamespace(
        name="f",
        returns=returns,
        written=set(written),
        dims=list(dims),
        allocs=list(allocs),
        prelude=[],
        steps=[],
        epilogue=[],
        device="x.device",
    )


def _cap(tensors, output_map=()):
    return SimpleNamespace(
        input_dtypes={t: "torch.float32" for t in tensors},
        input_names=list(tensors),
        output_map=list(output_map),
        reference_kind="porter",
    )


def test_schema_types_defaults_and_mutated_arguments():
    def f(x, scale: float, y, eps=1e-5, mode="mean", flag=True, n=2):
        pass

    op = plan_custom_op(
        _cap(["x", "y"]), _launcher("out", written=["y"]), inspect.signature(f)
    )
    assert not op.refusal
    assert op.schema == (
        '(Tensor x, float scale, Tensor(a2!) y, float eps=1e-05, str mode="mean", '
        "bool flag=True, int n=2) -> Tensor"
    )
    # `scale` with neither annotation nor default has no schema type: a sentence.
    untyped = plan_custom_op(
        _cap(["x"]), _launcher("out"), inspect.signature(lambda x, scale: None)
    )
    assert "'scale' has no custom-op schema type" in untyped.refusal
    # ...unless the capture saw it: a float Dynamo passed as a scalar, an int
    # it traced as a size
    seen = SimpleNamespace(
        inputs=[
            SimpleNamespace(source="L['scale']", kind="scalar", value=0.75),
            SimpleNamespace(source="L['power']", kind="symint", value=None),
        ]
    )
    typed = plan_custom_op(
        _cap(["x"]),
        _launcher("out"),
        inspect.signature(lambda x, scale, power: None),
        seen,
    )
    assert typed.schema == "(Tensor x, float scale, int power) -> Tensor"
    g = lambda x, y, eps=1e-5: None  # noqa: E731
    op = plan_custom_op(
        _cap(["x", "y"]), _launcher("out0, out1", written=["y"]), inspect.signature(g)
    )
    assert not op.refusal
    assert op.schema == "(Tensor x, Tensor(a1!) y, float eps=1e-05) -> (Tensor, Tensor)"


def test_outputs_a_custom_op_cannot_have_are_refused_in_a_sentence():
    sig = inspect.signature(lambda x, y: None)
    mixed = plan_custom_op(
        _cap(["x", "y"], [{"kind": "input", "name": "x"}, {"kind": "graph"}]),
        _launcher("x, out"),
        sig,
    )
    assert "itself beside new tensors" in mixed.refusal
    twice = plan_custom_op(
        _cap(["x", "y"], [{"kind": "graph"}, {"kind": "same", "index": 0}]),
        _launcher("out, out"),
        sig,
    )
    assert "one tensor twice" in twice.refusal


def test_an_in_place_reference_registers_an_op_that_returns_nothing(tmp_path):
    # vLLM's fused_add_rms_norm: x and residual changed in place and returned.
    result = capture(
        ROOT / "examples/engine/fused_add_rms_norm_inplace.py",
        out=tmp_path,
        device="cpu",
        progress=lambda _: None,
    )
    text = (result.case / "kernel.py").read_text()
    assert (
        "(Tensor(a0!) x, Tensor(a1!) residual, Tensor weight, float eps=1e-06) -> ()"
        in text
    )
    case = load_case(result.case)
    check_custom_op(case, "cpu", seed=0)
    # A schema that hides a write fails the check.
    path = result.case / "kernel.py"
    path.write_text(text.replace("Tensor(a0!) x", "Tensor x"))
    with pytest.raises(Exception, match="test_schema failed|reads only"):
        check_custom_op(load_case(result.case), "cpu", seed=0)


def test_a_wrong_fake_fails_the_check(tmp_path):
    folder = tmp_path / "silu_and_mul"
    shutil.copytree(ROOT / "captured/silu_and_mul", folder)
    shutil.copy(ROOT / "captured/common.py", tmp_path)  # what the case imports from
    path = folder / "kernel.py"
    # The launcher is the op's fake: its early return for fake tensors gives
    # the compiler another dtype than the kernels write.
    text = path.read_text()
    fake = "if is_fake(x):  # torch.compile tracing: outputs only\n        return "
    assert fake in text
    path.write_text(text.replace(fake, fake + "torch.ones(1, dtype=torch.float64) + "))
    with pytest.raises(Exception, match="test_faketensor failed") as info:
        check_custom_op(load_case(folder), "cpu", seed=0)
    assert type(info.value).__name__ == "OpCheckError"  # torch.library.opcheck's


def test_a_kernelbench_module_is_one_op_an_instance():
    import torch

    case = load_case(ROOT / "captured/kb_scaled_rmsnorm")
    check_custom_op(case, "cpu", seed=0)
    # Each module gets an op of its own, its settings (eps) fixed in it; its
    # tensors are the op's arguments, read at each call.
    torch.manual_seed(0)
    x = torch.randn(3, 512)
    models = [case.kernel.ModelNew(512) for _ in range(2)]
    wrapped = [m.as_op("porter_test_instances") for m in models]
    assert wrapped[0].op is not wrapped[1].op
    assert models[0].as_op("porter_test_instances").op is wrapped[0].op
    with torch.no_grad():
        for m, w in zip(models, wrapped):
            m.weight.mul_(2.0)  # read at call time
            assert torch.equal(w(x), m(x))


def test_a_hidden_write_fails_where_opcheck_cannot_compare_fp8():
    import torch

    from porter.testing.custom_op import _require_declared_mutations, _tests

    lib = torch.library.Library("porter_test_hidden_write", "FRAGMENT")
    lib.define("scale_(Tensor(a0!) out, Tensor x) -> ()")
    lib.define("hides(Tensor out, Tensor x) -> ()")

    def write(out, x):
        out.copy_(x.float().mul(2).to(out.dtype))

    lib.impl("scale_", write, "CompositeExplicitAutograd")
    lib.impl("hides", write, "CompositeExplicitAutograd")
    ops = torch.ops.porter_test_hidden_write
    out = torch.zeros(4, dtype=torch.float8_e4m3fn)
    x = torch.ones(4)
    # opcheck's schema test compares every argument with allclose, which fp8
    # lacks: porter compares their bits instead
    assert "test_schema" not in _tests(ops.scale_, [out, x])
    assert "test_schema" not in _tests(ops.hides, [out, x])
    assert "test_schema" in _tests(ops.hides, [torch.zeros(4), x])
    _require_declared_mutations(ops.scale_, [out, x], "scale_")
    for hidden in (torch.zeros(4), torch.zeros(4, dtype=torch.float8_e4m3fn)):
        with pytest.raises(AssertionError, match="changed out"):
            _require_declared_mutations(ops.hides, [hidden, x], "hides")


@pytest.mark.parametrize("reference", ["static_fp8_quant", "kv_cache_fp8_write"])
def test_fp8_outputs_and_fp8_arguments_changed_in_place_are_checked(
    tmp_path, reference
):
    # fp8 has no nan_to_num or allclose on the CPU: compared by their bits
    result = capture(
        ROOT / f"examples/engine/{reference}.py",
        out=tmp_path,
        device="cpu",
        progress=lambda _: None,
    )
    check_custom_op(load_case(result.case), "cpu", seed=0)


def test_outputs_that_view_one_tensor_or_an_argument_are_refused():
    sig = inspect.signature(lambda x: None)
    buf = Alloc("buf", ["4", "8"], ["8", "1"], "x.dtype", "x.device")
    two = plan_custom_op(
        _cap(["x"]), _launcher("buf.t(), buf[:, 1::2]", allocs=[buf]), sig
    )
    assert "two views of one tensor" in two.refusal
    arg = plan_custom_op(_cap(["x"]), _launcher("x.view(4, -1)"), sig)
    assert "a view of its argument 'x'" in arg.refusal
    # a size read off an argument is no view of it
    sized = plan_custom_op(
        _cap(["x"]), _launcher("buf.view(x.shape[0], -1)", allocs=[buf]), sig
    )
    assert not sized.refusal


def _reference(tmp_path, name, hidden, body):
    """A reference f(x) over (num_tokens, hidden) float32 rows, captured."""
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import torch\n\n"
        f'DIMS = {{"num_tokens": 6, "hidden": {hidden}}}\n'
        'DTYPES = ["float32"]\n\n'
        'def make_inputs(num_tokens, hidden, dtype=torch.float32, device="cpu"):\n'
        "    return (torch.randn(num_tokens, hidden, dtype=dtype, device=device),)\n\n"
        + textwrap.dedent(body)
        + "\nREFERENCE = f\n"
    )
    result = capture(
        path, out=tmp_path / "cases", device="cpu", progress=lambda _: None
    )
    return load_case(result.case)


def test_nan_the_function_means_and_sizes_the_reference_rejects(tmp_path):
    # Fully masked rows give NaN (opcheck's AOT test would call them different);
    # a hidden size that is no multiple of 16 is one the reference rejects, so
    # the check takes the smallest scenario both serve.
    body = """
        def f(x):
            groups = x.view(x.shape[0], -1, 16)
            masked = torch.arange(x.shape[0], device=x.device)[:, None, None] % 2 == 0
            return groups.masked_fill(masked, float("-inf")).softmax(-1)
        """
    check_custom_op(
        _reference(tmp_path, "masked_group_softmax", 64, body), "cpu", seed=0
    )


def test_the_check_skips_sizes_the_reference_rejects(tmp_path):
    # Rows of 97 are no groups of 128: the reference raises there and the
    # parity suite skips them, where the scaffold reads past the row (a
    # per-group fp8 quantizer failed so); the smallest size both serve is used.
    body = """
        def f(x):
            return x.view(x.shape[0], -1, 128).abs().amax(-1)
        """
    case = _reference(tmp_path, "group_amax", 512, body)
    from porter.testing.custom_op import _served_scenario

    sc, _, _ = _served_scenario(case, "cpu", 0)
    assert sc.sizes == {"num_tokens": 1, "hidden": 512}  # (3, 97) is smaller
    check_custom_op(case, "cpu", seed=0)


def test_the_launcher_is_its_own_fake_where_only_launches_follow_its_outputs():
    def launch(**kw):
        return SimpleNamespace(kind="launch", call="", otherwise=[], **kw)

    def torch_call(text):
        return SimpleNamespace(kind="extern", call=text, otherwise=[])

    alloc = SimpleNamespace(var="out")
    params = {"x", "w"}
    # launches only: the fake returns before the first
    plain = _launcher("out", allocs=[alloc])
    plain.steps = [launch(), launch()]
    assert fake_return_at(plain, params) == 0
    # a torch call making an output first: after it
    mm = _launcher("buf0, out", allocs=[alloc])
    mm.steps = [torch_call("buf0 = torch.mm(x, w)"), launch()]
    assert fake_return_at(mm, params) == 1
    # a torch call writing into an output after a launch binds nothing new
    into = _launcher("out", allocs=[alloc])
    into.steps = [launch(), torch_call("torch.mm(x, w, out=out)"), launch()]
    assert fake_return_at(into, params) == 0
    # ...but one making a returned tensor after a launch needs its own fake
    made = _launcher("buf1", allocs=[alloc])
    made.steps = [launch(), torch_call("buf1 = torch.mm(out, w)")]
    assert fake_return_at(made, params) is None
    # copies back after the launches, or no tensor to ask: a separate fake
    back = _launcher("x", allocs=[alloc])
    back.steps, back.epilogue = [launch()], ["x.copy_(x_packed)"]
    assert fake_return_at(back, params) is None
    nothing = _launcher("out", allocs=[alloc])
    nothing.steps, nothing.device = [launch()], "'cuda'"
    assert fake_return_at(nothing, params) is None
    # an in-place function returns its own arguments
    in_place = _launcher("x")
    in_place.steps = [launch()]
    assert fake_return_at(in_place, params) == 0


def test_an_allocation_reads_torch_empty_where_its_strides_are_contiguous():
    def alloc(sizes, strides):
        return Alloc("out", sizes, strides, "x.dtype", "x.device").call

    assert alloc(["num_tokens", "hidden"], ["hidden", "1"]) == (
        "torch.empty((num_tokens, hidden), dtype=x.dtype, device=x.device)"
    )
    # torch's own strides over a size that may be 0: max(1, size)
    assert alloc(["n", "x.shape[1] // 2"], ["max(1, x.shape[1] // 2)", "1"]).startswith(
        "torch.empty((n, x.shape[1] // 2), "
    )
    assert alloc(["a", "b", "c"], ["c * b", "c", "1"]).startswith("torch.empty(")
    # an axis of size 1 reaches no element through its stride: contiguous, as
    # torch says (a keepdim scale Inductor allocates at (1, n); eager's is (1, 1))
    assert alloc(["n", "1"], ["1", "n"]).startswith("torch.empty((n, 1), ")
    # strides the eager output has and torch.empty would not give: kept
    for sizes, strides in (
        (["n", "2"], ["1", "n"]),
        (["a", "b", "c"], ["c * a", "c", "1"]),
        (["n", "h"], ["1", "n"]),
        (["n"], ["2"]),
    ):
        assert alloc(sizes, strides).startswith("torch.empty_strided("), (
            sizes,
            strides,
        )


def test_bits_of_a_one_element_column_slice():
    # scales[:, 0] at one row: a size-1 axis with stride 3, which .contiguous()
    # keeps and .view(torch.uint8) rejected; the custom-op test crashed.
    import torch

    from porter.testing.custom_op import _bits

    t = torch.rand(1, 3)[:, 0]
    assert t.stride() == (3,)
    assert torch.equal(_bits(t), torch.tensor([t.item()]).view(torch.uint8))


def test_the_separate_fake_keeps_the_lines_its_lines_read():
    # Before: `h0 = strided_as(h0_given, ...)` was kept for the matmul reading
    # h0, and `h0_given = h0` dropped (NameError in opcheck's fake tensors).
    from porter.port.custom_op import _fake_body

    launcher = _launcher(
        "out", allocs=[SimpleNamespace(var="out", call="torch.empty(4)")]
    )
    launcher.prelude = [
        "unread = x.contiguous()",
        "h0_given = h0",
        "h0 = strided_as(h0_given, (4, 1))",
    ]
    launcher.steps = [
        SimpleNamespace(kind="extern", call="torch.mm(x, h0, out=out)", when="")
    ]
    body = _fake_body(launcher)
    assert body[:2] == ["h0_given = h0", "h0 = strided_as(h0_given, (4, 1))"]
    assert "unread = x.contiguous()" not in body
