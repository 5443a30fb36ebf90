"""porter.parse: the launcher's record of Inductor's wrapper code."""

import ast

from porter.parse import parse_module
from porter.records import GraphInput

# Inductor's wrapper reuses a buffer under a new name (`buf1 = buf0; del buf0
# # reuse`) and views another (`reinterpret_tensor`), then calls a matmul on
# both names. An MLP's second matmul does (tests/test_matmul.py captures one).
WRAPPER = """
def call(args):
    arg0_1, arg1_1 = args
    buf0 = empty_strided_cuda((4, 8), (8, 1), torch.float32)
    extern_kernels.mm(arg0_1, arg1_1, out=buf0)
    buf1 = buf0; del buf0  # reuse
    buf2 = reinterpret_tensor(buf1, (8, 4), (1, 8), 0)
    buf3 = empty_strided_cuda((4, 4), (4, 1), torch.float32)
    extern_kernels.mm(buf1, buf2, out=buf3)
    return (buf3, )
"""


def test_an_extern_call_names_buffers_by_their_allocation():
    inputs = [
        GraphInput(f"arg{i}_1", f"L['{name}']", "tensor", name, ["4", "8"], ["8", "1"])
        for i, name in enumerate(("x", "w"))
    ]
    module, _ = parse_module(WRAPPER, 0, inputs)
    first, second = [s.text for s in module.steps if s.kind == "extern"]
    assert first == "extern_kernels.mm(arg0_1, arg1_1, out=buf0)"
    assert ast.unparse(ast.parse(second)) == (
        "extern_kernels.mm(buf0, reinterpret_tensor(buf0, (8, 4), (1, 8), 0), "
        "out=buf3)"
    )


def test_size_arithmetic_reads_as_a_person_writes_it():
    # Before: sympy's a + (-1)*b in Inductor's wrapper. After: a - b, with
    # the product kept whole where the -1 leads it.
    from porter.parse import _plain_arithmetic

    def plain(text):
        return ast.unparse(_plain_arithmetic(ast.parse(text, mode="eval").body))

    assert plain("s48 + (-1)*(s48 // 2)") == "s48 - s48 // 2"
    assert plain("s48*s83 + (-1)*(s48 // 2)*s83") == "s48 * s83 - s48 // 2 * s83"
    assert plain("(-1)*s0 + s1") == "s1 - s0"
    assert plain("s1 + (-1)*(s2 + s3)") == "s1 - (s2 + s3)"
    assert plain("s1 + 2*s2") == "s1 + 2 * s2"
    for text in ("s48 + (-1)*(s48 // 2)", "s48*s83 + (-1)*(s48 // 2)*s83"):
        values = {"s48": 7, "s83": 21, "s0": 3}
        assert eval(plain(text), {}, values) == eval(text, {}, values)


# BLOOM's ALiBi slopes: the second kernel's xnumel is a min() over math of a
# size; the launcher had used the wrapper's local by name, undefined there.
MATH_XNUMEL = """
def call(args):
    arg0_1, = args
    s47 = arg0_1
    buf0 = empty_strided_cuda((8, ), (1, ), torch.float32)
    k_1_xnumel = min(2 ** math.floor(math.log2(torch.sym_float(s47))), s47 + ((-1)*2 ** math.floor(math.log2(torch.sym_float(s47)))))
    k_1.run(buf0, s47, k_1_xnumel, stream=raw_stream)
    return (buf0, )
"""


def test_a_launch_size_of_math_on_sizes_is_inlined():
    from porter.parse import _Wrapper

    wrapper = _Wrapper([GraphInput("arg0_1", "L['n']", "symint", "n")], {}, None)
    call = next(
        n for n in ast.parse(MATH_XNUMEL).body if isinstance(n, ast.FunctionDef)
    )
    wrapper.walk(call.body)
    text = wrapper.expr(ast.parse("k_1_xnumel", mode="eval").body)
    assert "xnumel" not in text
    log2 = "2 ** math.floor(math.log2(float(n)))"
    assert eval(text, {"math": __import__("math")}, {"n": 6}) == 2
    assert text == f"(min({log2}, n - {log2}))"


def test_a_buffer_returned_as_a_view_is_named_as_the_output():
    # Before: quant_int8's scale buffer, returned as a view of its storage,
    # was `scratch_buf0` in kernel and launcher. After: `out1`, like a
    # buffer returned whole; a buffer no output holds stays scratch.
    wrapper = """
def call(args):
    arg0_1, = args
    buf0 = empty_strided_cuda((4, 1), (1, 4), torch.float32)
    buf1 = reinterpret_tensor(buf0, (4, 1), (1, 1), 0); del buf0  # reuse
    buf2 = empty_strided_cuda((4, 8), (8, 1), torch.int8)
    buf3 = empty_strided_cuda((4, 8), (8, 1), torch.float32)
    return (buf2, buf1, )
"""
    inputs = [GraphInput("arg0_1", "L['x']", "tensor", "x", ["4", "8"], ["8", "1"])]
    module, _ = parse_module(wrapper, 0, inputs)
    assert [module.output_of(b) for b in ("buf0", "buf2", "buf3")] == [1, 0, None]
    assert [module.buffer_var(b) for b in ("buf0", "buf2", "buf3")] == [
        "out1",
        "out0",
        "scratch_buf3",
    ]


def test_an_extern_result_an_output_reuses_stays_scratch():
    # KernelBench 86: a convolution's result is read by a second one, then
    # its storage is reused for the output a kernel writes. Named `out`, the
    # launcher once bound it under its own name and the kernel under `out`
    # (NameError); it stays scratch_buf1 in both.
    wrapper = """
def call(args):
    arg0_1, arg1_1 = args
    buf1 = extern_kernels.convolution(arg0_1, arg1_1, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
    buf2 = extern_kernels.convolution(buf1, arg1_1, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
    buf3 = reinterpret_tensor(buf1, (2, 4, 4), (16, 4, 1), 0); del buf1  # reuse
    return (buf3, )
"""
    inputs = [
        GraphInput(
            "arg0_1", "L['x']", "tensor", "x", ["2", "4", "4"], ["16", "4", "1"]
        ),
        GraphInput("arg1_1", "L['w']", "tensor", "w", ["4", "4"], ["4", "1"]),
    ]
    module, _ = parse_module(wrapper, 0, inputs)
    assert "buf1" in module.produced
    assert module.output_of("buf1") is None
    assert module.buffer_var("buf1") == "scratch_buf1"


def test_a_tensor_read_for_its_shape_alone_takes_get_args_layout():
    # one_hot(ids, num_classes=like.shape[0]): `like` gets no
    # assert_size_stride, and a rank of 0 refused every call.
    wrapper = """
def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    assert_size_stride(arg1_1, (4, 2), (2, 1))
    buf0 = empty_strided_cuda((8, ), (1, ), torch.int64)
    return (buf0, )


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((8, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg1_1 = rand_strided((4, 2), (2, 1), device='cuda:0', dtype=torch.int64)
    return [arg0_1, arg1_1]
"""
    inputs = [
        GraphInput("arg0_1", "L['like']", "tensor", "like"),
        GraphInput("arg1_1", "L['ids']", "tensor", "ids"),
    ]
    module, _ = parse_module(wrapper, 0, inputs)
    like, ids = module.inputs
    assert (like.sizes, like.strides) == (["8"], ["1"])
    assert (ids.sizes, ids.strides) == (["4", "2"], ["2", "1"])
