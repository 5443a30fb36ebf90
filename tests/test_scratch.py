"""Before/after tests for forms.scratch: a looped kernel recomputes a value it
kept in an fp32 buffer of its own for several later loops (min-p's
probabilities), and the buffer leaves the launch; a form that never reads a
buffer of its own kernel does not store to it."""

import ast
import textwrap
from pathlib import Path
from types import SimpleNamespace

from porter.port.model import KernelPort
from porter.records import KernelRecord
from porter.port.forms.scratch import (
    _users,
    drop_dead_scratch_stores,
    recompute_scratch,
    recompute_scratch_buffers,
)

ROOT = Path(__file__).resolve().parents[1]

# Inductor's looped min-p: exp(x - max) kept in scratch_ptr by the second loop,
# reloaded by the third (its max) and the fourth (the mask).
MIN_P = """\
rows = tl.program_id(0) + tl.arange(0, 1)[:, None]
col_base = tl.arange(0, BLOCK_COLS)[None, :]
m_acc = tl.full([1, BLOCK_COLS], float('-inf'), tl.float32)
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < vocab
    x = tl.load(x_ptr + (cols + rows * x_stride0), col_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    t = maximum_nan(m_acc, x)
    m_acc = tl.where(col_mask, t, m_acc)
row_max = max_nan(m_acc, 1)[:, None]
s_acc = tl.full([1, BLOCK_COLS], 0, tl.float32)
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < vocab
    x_2 = tl.load(x_ptr + (cols + rows * x_stride0), col_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    e = tl.exp(x_2 - row_max)
    u = s_acc + e
    s_acc = tl.where(col_mask, u, s_acc)
    tl.store(scratch_ptr + (cols + rows * scratch_stride0), e.to(scratch_ptr.dtype.element_ty), col_mask)
row_sum = tl.sum(s_acc, 1)[:, None]
p_acc = tl.full([1, BLOCK_COLS], float('-inf'), tl.float32)
tl.debug_barrier()
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < vocab
    p = tl.load(scratch_ptr + (cols + rows * scratch_stride0), col_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    q = maximum_nan(p_acc, p / row_sum)
    p_acc = tl.where(col_mask, q, p_acc)
row_top = max_nan(p_acc, 1)[:, None]
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < vocab
    p_2 = tl.load(scratch_ptr + (cols + rows * scratch_stride0), col_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
    x_3 = tl.load(x_ptr + (cols + rows * x_stride0), col_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
    keep = p_2 / row_sum >= 0.1 * row_top
    tl.store(out_ptr + (cols + rows * x_stride0), tl.where(keep, x_3, float('-inf')), col_mask)
"""

HELD = """\
x = tl.load(x_ptr + (cols + rows * x_stride0), col_mask, other=0.0).to(tl.float32)
e = tl.exp(x - row_max)
tl.store(scratch_ptr + (cols + rows * scratch_stride0), e.to(scratch_ptr.dtype.element_ty), col_mask)
p = e.to(scratch_ptr.dtype.element_ty).to(tl.float32)
tl.store(out_ptr + (cols + rows * x_stride0), p, col_mask)
"""

SIGNATURE = (
    "def k(x_ptr, scratch_ptr, out_ptr, x_stride0, scratch_stride0, "
    "vocab: tl.constexpr, BLOCK_COLS: tl.constexpr):\n"
)


def _fn(body: str) -> ast.FunctionDef:
    return ast.parse(SIGNATURE + textwrap.indent(textwrap.dedent(body), "    ")).body[0]


def _kernel(looped: str, persistent: str | None = HELD, view: str = "") -> KernelPort:
    params = [
        SimpleNamespace(name=n, kind=k, value=v, view="")
        for n, k, v in (
            ("x_ptr", "pointer", "x"),
            ("scratch_ptr", "pointer", "scratch_buf1"),
            ("out_ptr", "pointer", "out"),
            ("x_stride0", "stride", "x.stride(0)"),
            ("scratch_stride0", "stride", "scratch_buf1.stride(0)"),
        )
    ]
    # out_ptr as a view of the scratch buffer (a kernel reading back through it)
    params[2].view = view
    record = KernelRecord("k", looped, "reduction", [], {}, None, None, 0)
    kp = KernelPort(record, None, tree=_fn(looped), params=params)
    kp.persistent = _fn(persistent) if persistent else None
    return kp


def test_every_reload_of_an_own_scratch_buffer_is_recomputed():
    kp = _kernel(MIN_P)
    assert recompute_scratch(kp, "scratch_ptr") == 1
    for form in kp.forms():
        text = ast.unparse(form)
        assert "scratch_ptr" not in text and "scratch_stride0" not in text
    loops = [s for s in kp.tree.body if isinstance(s, ast.For)]
    # the third and fourth loops compute exp(x - row_max) from x themselves;
    # the fourth reads x once (the mask's own load of x is the same one)
    third, fourth = (ast.unparse(loop) for loop in loops[2:])
    assert "tl.exp(" in third and "tl.exp(" in fourth
    assert fourth.count("tl.load(") == 1 and "evict_first" in fourth
    assert "evict_last" in third and "debug_barrier" not in ast.unparse(kp.tree)
    assert [p.name for p in kp.params] == ["x_ptr", "out_ptr", "x_stride0"]
    # the persistent form forwarded the value: its store goes, its value stays
    held = ast.unparse(kp.persistent)
    assert "p = e.to(tl.float32)" in held and held.count("tl.store(") == 1


def test_a_scratch_buffer_read_outside_the_later_loops_is_kept():
    # a load of the buffer after the loops (a row value read back): no change
    body = MIN_P + (
        "last = tl.load(scratch_ptr + rows * scratch_stride0, rows < 4)"
        ".to(tl.float32)\n"
    )
    kp = _kernel(body)
    before = ast.unparse(kp.tree)
    assert recompute_scratch(kp, "scratch_ptr") == 0
    assert ast.unparse(kp.tree) == before and len(kp.params) == 5


def test_a_value_from_a_loop_accumulator_is_not_recomputed():
    # the stored value reads the running sum: another value in a later loop
    kp = _kernel(MIN_P.replace("e.to(scratch_ptr", "u.to(scratch_ptr"))
    before = ast.unparse(kp.tree)
    assert recompute_scratch(kp, "scratch_ptr") == 0
    assert ast.unparse(kp.tree) == before


def _engine_case(name: str, tmp_path):
    """examples/engine/<name>.py captured on the CPU: (the case, its kernel.py)."""
    from porter.pipeline import capture
    from porter.testing import load_case

    result = capture(
        ROOT / "examples" / "engine" / f"{name}.py",
        out=tmp_path,
        device="cpu",
        progress=lambda *_: None,
    )
    case = load_case(result.case)
    return case, (case.folder / "kernel.py").read_text()


def test_min_p_ports_without_its_scratch_buffer_and_stays_right(
    tmp_path, porter_device
):
    from porter.testing import check_parity
    from porter.testing.parity import Scenario

    case, text = _engine_case("min_p_filter", tmp_path)
    # no scratch pointer, no scratch allocation: the output's alone
    assert "scratch_buf1_ptr" not in text and text.count("torch.empty(") == 1
    for vocab in (300, 8194):  # the persistent and the looped kernel
        for values in ("random", "difficult"):
            sizes = {"num_tokens": 5, "vocab": vocab}
            scenario = Scenario("float32", sizes, values=values)
            check_parity(case, scenario, porter_device, 7)


def _state(kp, steps) -> SimpleNamespace:
    buf = SimpleNamespace(name="buf1", dtype="torch.bfloat16")
    module = SimpleNamespace(
        buffers=[buf],
        steps=steps,
        buffer_var=lambda name: f"scratch_{name}",
        output_of=lambda name: None,
    )
    return SimpleNamespace(kernels=[kp], module=module, notes=[])


def _launch(*args) -> SimpleNamespace:
    return SimpleNamespace(
        kind="launch",
        args=[SimpleNamespace(value=v, target=t) for v, t in args],
    )


def test_a_form_that_never_reads_its_own_buffer_stops_storing_to_it():
    # fused_add_rms_norm's bf16 residual + x: the persistent form forwards it
    # and stored it anyway, a row written per row for nothing
    kp = _kernel(MIN_P)
    port = _state(kp, [_launch(("arg0_1", "x"), ("buf1", "buf1"))])
    looped = ast.unparse(kp.tree)
    drop_dead_scratch_stores(port)
    held = ast.unparse(kp.persistent)
    assert held.count("tl.store(") == 1 and "tl.store(out_ptr" in held
    # the forwarded value keeps its rounding to the buffer's dtype
    assert "p = e.to(scratch_ptr.dtype.element_ty).to(tl.float32)" in held
    assert ast.unparse(kp.tree) == looped  # the looped form reloads it
    assert len(kp.params) == 5 and port.notes


def test_a_buffer_another_kernel_reads_through_a_view_keeps_its_stores():
    # rotary's halves: kernel 1 writes buf2 as the view buf0, kernel 2 reads
    # buf2; dropping kernel 1's stores left garbage in the output
    steps = [
        _launch(("arg0_1", "x"), ("buf0", "buf1")),
        _launch(("buf1", "buf1"), ("arg1_1", "out")),
    ]
    assert _users(SimpleNamespace(steps=steps), "buf1") == 2
    kp = _kernel(MIN_P)
    port = _state(kp, steps)
    held = ast.unparse(kp.persistent)
    drop_dead_scratch_stores(port)
    assert ast.unparse(kp.persistent) == held and not port.notes


# silu(x) * y kept in a bf16 buffer of the kernel's own by the first loop (the
# amax), reloaded by the second (the quantization): two row loads.
SILU_MUL = """\
rows = tl.program_id(0) + tl.arange(0, 1)[:, None]
col_base = tl.arange(0, BLOCK_COLS)[None, :]
m_acc = tl.full([1, BLOCK_COLS], float('-inf'), tl.float32)
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < vocab
    x = tl.load(x_ptr + (cols + rows * x_stride0), col_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    y = tl.load(x_ptr + (vocab + cols + rows * x_stride0), col_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    h = x / (1.0 + tl.exp(-x)) * y
    t = maximum_nan(m_acc, tl.abs(h))
    m_acc = tl.where(col_mask, t, m_acc)
    tl.store(scratch_ptr + (cols + rows * scratch_stride0), h.to(scratch_ptr.dtype.element_ty), col_mask)
row_max = max_nan(m_acc, 1)[:, None]
tl.debug_barrier()
for col_start in tl.range(0, vocab, BLOCK_COLS):
    cols = col_start + col_base
    col_mask = cols < vocab
    p = tl.load(scratch_ptr + (cols + rows * scratch_stride0), col_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
    tl.store(out_ptr + (cols + rows * x_stride0), p / row_max, col_mask)
"""


def test_a_buffer_in_the_inputs_dtype_is_recomputed_with_its_rounding():
    kp = _kernel(SILU_MUL, persistent=None)
    assert recompute_scratch(kp, "scratch_ptr", rounded=True) == 1
    second = ast.unparse([s for s in kp.tree.body if isinstance(s, ast.For)][1])
    # read again from both halves of x, rounded to the buffer's dtype as the
    # reload was; no store to the buffer is left
    assert second.count("tl.load(x_ptr") == 2 and "scratch_ptr + " not in second
    assert ".to(scratch_ptr.dtype.element_ty).to(tl.float32)" in second
    assert "tl.store(scratch_ptr" not in ast.unparse(kp.tree)
    # the pointer stays for its dtype, its stride goes
    assert [p.name for p in kp.params] == [
        "x_ptr",
        "scratch_ptr",
        "out_ptr",
        "x_stride0",
    ]


def test_an_input_written_before_the_later_loop_is_not_read_again():
    # the storing loop also writes x in place: a later loop would read the new x
    body = MIN_P.replace(
        "    tl.store(scratch_ptr",
        "    tl.store(x_ptr + (cols + rows * x_stride0), e, col_mask)\n"
        "    tl.store(scratch_ptr",
    )
    kp = _kernel(body, persistent=None)
    before = ast.unparse(kp.tree)
    assert recompute_scratch(kp, "scratch_ptr") == 0
    assert ast.unparse(kp.tree) == before


def test_fused_add_rms_norm_in_place_ports_without_a_scratch_buffer(
    tmp_path, porter_device
):
    from porter.testing import check_parity
    from porter.testing.parity import Scenario

    case, text = _engine_case("fused_add_rms_norm_inplace", tmp_path)
    # residual + x is not stored for nothing by either form, nor allocated
    assert "torch.empty(" not in text and "scratch_buf1_ptr" not in text
    for hidden in (96, 8200):  # the persistent and the looped kernel
        scenario = Scenario("bfloat16", {"num_tokens": 3, "hidden": hidden})
        check_parity(case, scenario, porter_device, 7)


def test_a_buffer_the_kernel_also_takes_as_a_view_keeps_its_stores():
    # the kernel reaches the buffer through a view as well: a load there
    # reads what the stores wrote
    kp = _kernel(MIN_P, view="scratch_buf1.as_strided((4, 8), (8, 1), 2)")
    port = _state(kp, [_launch(("arg0_1", "x"), ("buf1", "buf1"))])
    held, looped = ast.unparse(kp.persistent), ast.unparse(kp.tree)
    recompute_scratch_buffers(port)
    drop_dead_scratch_stores(port)
    assert ast.unparse(kp.persistent) == held and ast.unparse(kp.tree) == looped
