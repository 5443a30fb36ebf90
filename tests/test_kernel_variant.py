"""tools/kernel_variant.py: each form computes what the scaffold does (the
stream-helper form on both sides of its STREAM_ROWS branch, hint-always below
it, int32-offsets below 2^31 elements), on the session's device; where a form
applies and where it does not."""

import ast
from pathlib import Path

import pytest
import torch

from porter.port.finish.pdl import GDC_LAUNCH, GDC_WAIT, is_pdl_block, is_pdl_release
from porter.testing.parity import (
    Scenario,
    common_module,
    import_kernel,
    as_tuple,
    load_case,
    make_inputs,
    scaffold_entry,
)

ROOT = Path(__file__).resolve().parents[1]
kernel_variant = import_kernel(
    ROOT / "tools" / "kernel_variant.py", "kernel_variant_tool"
)


def _variant_module(case, form, tmp_path):
    """The case's kernel.py in `form` (whichever of its kernels it fits),
    imported, with its text and the kernels it rewrote."""
    text, changed = kernel_variant.variant(
        (case.folder / "kernel.py").read_text(), form
    )
    assert changed
    path = tmp_path / "variant.py"
    path.write_text(text)
    name = f"{form}_{case.name}".replace("-", "_")
    return text, changed, import_kernel(path, name, case.folder.parent / "common.py")


def _variant_of(case, form, tmp_path):
    """The same, where the form must apply to the case's one kernel."""
    text, changed, module = _variant_module(case, form, tmp_path)
    assert changed == [f"{case.name}_kernel"]
    return text, module


def _assert_same_outputs(case, variant, inputs, device):
    want = as_tuple(scaffold_entry(case, "float32", device)(*inputs))
    got = as_tuple(scaffold_entry(case, "float32", device, kernel=variant)(*inputs))
    for w, g in zip(want, got, strict=True):
        assert torch.equal(w, g)


@pytest.mark.parametrize("name", ["fused_add_rmsnorm", "add_layernorm"])
def test_stream_helper_matches_the_scaffold_on_both_branches(
    name, tmp_path, monkeypatch, porter_device
):
    case = load_case(ROOT / "captured" / name)
    _, variant = _variant_of(case, "stream-helper", tmp_path)
    sizes = {"num_tokens": 3, "hidden": 64}
    inputs = make_inputs(case, Scenario("float32", sizes), porter_device, seed=0)
    for rows in (1 << 20, 2):  # 3 tokens below STREAM_ROWS, then not
        for module in (case.kernel, variant):
            # row_launch, in common.py, asks its own stream_rows
            common = common_module(module)
            monkeypatch.setattr(common, "stream_rows", lambda *_, rows=rows: rows)
        _assert_same_outputs(case, variant, inputs, porter_device)


@pytest.mark.parametrize(
    "name, sizes",
    [
        ("fused_add_rmsnorm", {"num_tokens": 3, "hidden": 64}),
        ("kb_scaled_rmsnorm", {"batch_size": 3}),
        ("silu_and_mul", {"num_tokens": 3, "intermediate": 1000}),
    ],
)
def test_int32_offsets_match_the_scaffold(name, sizes, tmp_path, porter_device):
    case = load_case(ROOT / "captured" / name)
    text, changed, variant = _variant_module(case, "int32-offsets", tmp_path)
    assert ".to(tl.int64)" not in text and ": tl.int64" not in text
    assert all(k.startswith(name) or k == "model_kernel" for k in changed)
    inputs = make_inputs(case, Scenario("float32", sizes), porter_device, seed=0)
    _assert_same_outputs(case, variant, inputs, porter_device)


def test_hint_always_matches_the_scaffold_below_stream_rows(tmp_path, porter_device):
    case = load_case(ROOT / "captured" / "fused_add_rmsnorm")
    text, changed, variant = _variant_module(case, "hint-always", tmp_path)
    assert changed == ["fused_add_rmsnorm_kernel"]
    fn = next(
        f
        for f in ast.parse(text).body
        if isinstance(f, ast.FunctionDef) and f.name == "fused_add_rmsnorm_kernel"
    )
    kernel = ast.unparse(fn)
    # No row-count branch left (the PDL wait still opens the kernel); the
    # hinted loads and the (unread) argument stay.
    assert not [n for n in ast.walk(fn) if isinstance(n, ast.If)]
    assert is_pdl_block(fn.body[0])
    assert "evict_first" in kernel and "STREAM_ROWS" in kernel
    sizes = {"num_tokens": 3, "hidden": 64}  # 3 rows: below STREAM_ROWS
    inputs = make_inputs(case, Scenario("float32", sizes), porter_device, seed=0)
    _assert_same_outputs(case, variant, inputs, porter_device)


def test_loads_first_matches_the_scaffold_and_loads_the_weight_first(
    tmp_path, porter_device
):
    # rmsnorm loads its weight just before the reduction; fused_add_rmsnorm
    # and add_layernorm already load it first (hoist_late_loads).
    name, sizes = "rmsnorm", {"num_tokens": 3, "hidden": 64}
    case = load_case(ROOT / "captured" / name)
    text, changed, variant = _variant_module(case, "loads-first", tmp_path)
    assert f"{name}_kernel" in changed
    kernel = next(
        f
        for f in ast.parse(text).body
        if isinstance(f, ast.FunctionDef) and f.name == f"{name}_kernel"
    )
    order = [ast.unparse(st).split(" =")[0] for st in kernel.body]
    # The weight's load comes before the row's (inside the STREAM_ROWS branch),
    # and after the PDL wait, which still opens the kernel.
    assert is_pdl_block(kernel.body[0])
    assert (
        0
        < order.index("weight")
        < next(
            i
            for i, st in enumerate(kernel.body)
            if isinstance(st, ast.If) and "STREAM_ROWS" in ast.unparse(st.test)
        )
    )
    inputs = make_inputs(case, Scenario("float32", sizes), porter_device, seed=0)
    _assert_same_outputs(case, variant, inputs, porter_device)


def test_loads_first_keeps_a_load_where_moving_it_would_change_a_value():
    fn = ast.parse(
        "def k(x_ptr, w_ptr, out_ptr, c):\n"
        "    w = tl.load(w_ptr + c)\n"
        "    y = w * 2\n"
        "    w = tl.load(w_ptr + c + 1)\n"
        "    tl.store(out_ptr + c, y + w)\n"
    ).body[0]
    # The second load of w may not jump over the read of the first.
    assert kernel_variant.loads_first(fn) is None


@pytest.mark.parametrize("name", ["fused_add_rmsnorm", "add_layernorm"])
def test_loads_first_leaves_scaffolds_that_load_first_alone(name):
    # Their weight and bias already come first, in that order.
    src = (ROOT / "captured" / name / "kernel.py").read_text()
    assert kernel_variant.variant(src, "loads-first") == (src, [])


def test_int32_offsets_and_hint_always_leave_other_functions_alone():
    src = (ROOT / "captured" / "kb_scaled_rmsnorm" / "kernel.py").read_text()
    # No STREAM_ROWS branch in this scaffold.
    assert kernel_variant.variant(src, "hint-always") == (src, [])
    launcher = next(  # ModelNew.forward
        f
        for f in ast.walk(ast.parse(src))
        if isinstance(f, ast.FunctionDef) and f.name == "forward"
    )
    assert kernel_variant.int32_offsets(launcher) is None


def test_stream_helper_branches_once_around_the_body():
    src = (ROOT / "captured" / "rmsnorm" / "kernel.py").read_text()
    text, _ = kernel_variant.variant(src, "stream-helper")
    tree = ast.parse(text)
    fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    body, kernel = fns["rmsnorm_kernel_body"], fns["rmsnorm_kernel"]
    assert "STREAM_ROWS" not in ast.unparse(body)
    assert "eviction_policy=ROW_EVICTION" in ast.unparse(body)
    # The PDL wait stays in the launched kernel, ahead of the branch.
    assert [type(s).__name__ for s in kernel.body] == ["Expr", "If"]
    assert is_pdl_block(kernel.body[0])
    # The helper waits for nothing; it keeps only the late trigger, after
    # its loads.
    assert not any(is_pdl_block(s) for s in body.body)
    assert len([s for s in body.body if is_pdl_release(s)]) == 1
    # Each side passes its hint where the helper takes ROW_EVICTION.
    at = [a.arg for a in body.args.args].index("ROW_EVICTION")
    calls = [
        ast.unparse(n.args[at])
        for n in ast.walk(kernel.body[1])
        if isinstance(n, ast.Call)
    ]
    assert calls == ["'evict_first'", "''"]
    # The launcher and the looped kernel are kept as they were.
    assert "def rmsnorm(" in text and "def rmsnorm_kernel_looped(" in text


def test_stream_helper_refuses_a_scaffold_it_does_not_fit(
    tmp_path, capsys, monkeypatch
):
    out = tmp_path / "v.py"
    silu = ROOT / "captured" / "silu_and_mul" / "kernel.py"
    argv = ["kernel_variant", "stream-helper", str(silu), "-o", str(out)]
    monkeypatch.setattr("sys.argv", argv)
    assert kernel_variant.main() == 1
    assert "no kernel that stream-helper applies to" in capsys.readouterr().err
    assert not out.exists()


def _inline_pdl(stmt: ast.stmt) -> bool:
    """An `if LAUNCH_PDL:` block, as the pdl forms write the handshake out."""
    return isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "LAUNCH_PDL"


@pytest.mark.parametrize("form", ["pdl-early", "pdl-loaded", "pdl-wait"])
@pytest.mark.parametrize(
    "name, sizes",
    [
        ("rmsnorm", {"num_tokens": 3, "hidden": 64}),
        ("silu_and_mul", {"num_tokens": 3, "intermediate": 64}),
    ],
)
def test_pdl_forms_move_the_trigger_and_keep_the_wait_first(
    form, name, sizes, tmp_path, porter_device
):
    # silu_and_mul's tile kernel triggers under EARLY_TRIGGER in two places;
    # each form leaves one trigger at most, whatever the block.
    case = load_case(ROOT / "captured" / name)
    text, changed, variant = _variant_module(case, form, tmp_path)
    assert changed == (
        ["rmsnorm_kernel", "rmsnorm_kernel_looped"]
        if name == "rmsnorm"
        else ["silu_and_mul_kernel"]
    )
    for fn in ast.parse(text).body:
        if not isinstance(fn, ast.FunctionDef) or fn.name not in changed:
            continue
        block = fn.body[0]
        assert _inline_pdl(block)
        waited = [ast.unparse(s) for s in block.body]
        assert waited == ([GDC_WAIT, GDC_LAUNCH] if form == "pdl-early" else [GDC_WAIT])
        assert "EARLY_TRIGGER" not in ast.unparse(fn.body)
        triggers = [i for i, s in enumerate(fn.body) if GDC_LAUNCH in ast.unparse(s)]
        loads = [i for i, s in enumerate(fn.body) if "tl.load(" in ast.unparse(s)]
        if form == "pdl-wait":
            assert triggers == []
        elif form == "pdl-early":
            assert triggers == [0]
        else:  # right after the last top-level statement that loads
            assert triggers == [loads[-1] + 1]
            assert _inline_pdl(fn.body[triggers[0]])
    inputs = make_inputs(case, Scenario("float32", sizes), porter_device, 0)
    _assert_same_outputs(case, variant, inputs, porter_device)


def test_pdl_forms_leave_a_kernel_without_pdl_alone():
    # linear_gelu's epilogue follows the matmul and launches without PDL;
    # only its matmul kernel (porter.port.launch.matmul) takes a form.
    src = (ROOT / "captured" / "linear_gelu" / "kernel.py").read_text()

    def epilogue(text):
        tree = ast.parse(text)
        fn = next(
            f for f in tree.body if getattr(f, "name", "") == "linear_gelu_kernel"
        )
        return ast.unparse(fn)

    for form in ("pdl-early", "pdl-loaded", "pdl-wait"):
        out, changed = kernel_variant.variant(src, form)
        assert set(changed) <= {"linear_gelu_matmul_kernel"}
        assert epilogue(out) == epilogue(src)


@pytest.mark.parametrize(
    "name, patches",
    [
        # Rows of 100 through the looped kernel, then through the online one
        # in blocks of 32 (three loop trips a row).
        ("logsumexp", {"MAX_FUSED_COLS": 16, "ONLINE_MIN_ROWS": 1 << 30}),
        (
            "logsumexp",
            {
                "ONLINE_MIN_COLS": 64,
                "ONLINE_MIN_ROWS": 1,
                "online_block_cols": lambda elem_bytes=4: 32,
            },
        ),
        ("softmax", {"MAX_FUSED_COLS": 16}),
    ],
)
@pytest.mark.parametrize(
    "form, keyword",
    [("loop-stages", "num_stages=3"), ("loop-unroll", "loop_unroll_factor=2")],
)
def test_loop_forms_set_every_loop_and_match_the_scaffold(
    form, keyword, name, patches, tmp_path, monkeypatch, porter_device
):
    case = load_case(ROOT / "captured" / name)
    text, changed, variant = _variant_module(case, form, tmp_path)
    assert changed and all("looped" in k or "online" in k for k in changed)
    for fn in ast.parse(text).body:
        if isinstance(fn, ast.FunctionDef) and fn.name in changed:
            loops = [n for n in ast.walk(fn) if isinstance(n, ast.For)]
            assert loops and all(keyword in ast.unparse(n.iter) for n in loops)
    # Both import their launch constants from one common.py.
    for key, value in patches.items():
        monkeypatch.setattr(common_module(case.kernel), key, value)
    inputs = make_inputs(
        case, Scenario("float32", {"num_tokens": 3, "vocab": 100}), porter_device, 0
    )
    _assert_same_outputs(case, variant, inputs, porter_device)


@pytest.mark.parametrize("form", ["loop-stages", "loop-unroll"])
def test_loop_forms_leave_a_kernel_without_a_loop_alone(form):
    src = (ROOT / "captured" / "silu_and_mul" / "kernel.py").read_text()
    assert kernel_variant.variant(src, form) == (src, [])
