"""start.identity_views: a view of a buffer at the buffer's own layout is the buffer."""

from porter.parse import parse_module
from porter.port.start.identity_views import _identity_views, same_layout
from porter.records import Buffer, GraphInput

# quant_int8's wrapper: the keepdim scale allocated (n, 1) at strides (1, n),
# written by a call and returned as a view at strides (1, 1).
WRAPPER = """
def call(args):
    arg0_1, = args
    s0 = arg0_1.size(0)
    buf0 = empty_strided_cuda((s0, 1), (1, s0), torch.float32)
    buf1 = reinterpret_tensor(buf0, (s0, 1), (1, 1), 0); del buf0  # reuse
    buf2 = empty_strided_cuda((s0, 8), (8, 1), torch.int8)
    extern_kernels.amax(arg0_1, [1], True, out=buf1)
    return (buf2, reinterpret_tensor(buf0, (s0, 1), (1, 1), 0), )
"""


def _module():
    inputs = [GraphInput("arg0_1", "L['x']", "tensor", "x", ["n", "8"], ["8", "1"])]
    module, _ = parse_module(WRAPPER, 0, inputs)
    module.symbols["s0"] = "n"
    return module


def test_a_view_differing_only_on_an_axis_of_size_one_is_the_buffer():
    # Before: the launcher made out1_view0 for the kernel and returned
    # out1.as_strided(...) of the same memory. After: out1 itself, both.
    module = _module()
    assert module.outputs[1].startswith("reinterpret_tensor(")
    assert any(b.view for s in module.steps for b in s.args)
    assert "reinterpret_tensor" in module.steps[0].text
    assert _identity_views(module)
    assert module.outputs == ["buf2", "buf0"]
    assert not any(b.view for s in module.steps for b in s.args)
    assert module.steps[0].text == "extern_kernels.amax(arg0_1, [1], True, out=buf0)"
    assert not _identity_views(module)  # nothing left to drop


def test_a_view_at_other_strides_or_offset_stays():
    buffer = Buffer("buf0", ["n", "4"], ["4", "1"], "torch.float32")
    same = {"sizes": ["n", "4"], "strides": ["4", "1"], "offset": "0"}
    assert same_layout(same, buffer)
    assert not same_layout({**same, "offset": "4"}, buffer)
    assert not same_layout({**same, "strides": ["1", "n"]}, buffer)  # a transpose
    assert not same_layout({**same, "sizes": ["4", "n"]}, buffer)
    keepdim = Buffer("buf0", ["n", "1"], ["1", "n"], "torch.float32")
    assert same_layout(
        {"sizes": ["n", "1"], "strides": ["1", "1"], "offset": "0"}, keepdim
    )


def test_the_scaffold_allocates_and_returns_the_buffer_whole():
    from porter.port.launch.launcher import Alloc

    alloc = Alloc("out1", ["n", "1"], ["1", "n"], "torch.float32", "x.device")
    assert alloc.call == "torch.empty((n, 1), dtype=torch.float32, device=x.device)"
    wide = Alloc("out1", ["n", "4"], ["1", "n"], "torch.float32", "x.device")
    assert wide.call.startswith("torch.empty_strided(")
