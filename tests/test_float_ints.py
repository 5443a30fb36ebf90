"""Before/after tests for bind.float_ints: an int argument a kernel reads only
as a float (Adam's step) is a runtime argument; one that divides or indexes
stays constexpr."""

import ast
import textwrap
from types import SimpleNamespace

from porter.port.bind.float_ints import runtime_float_ints

KERNEL = """\
def k(m_ptr, ids_ptr, out_ptr, n, step: tl.constexpr, shard: tl.constexpr, XBLOCK: tl.constexpr):
    offsets = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    mask = offsets < n
    m = tl.load(m_ptr + offsets, mask).to(tl.float32)
    ids = tl.load(ids_ptr + offsets, mask)
    corr = 1.0 - libdevice.pow(0.9, tl.cast(step, tl.float64))
    scale = 1.0 / (step).to(tl.float64)
    tl.store(out_ptr + offsets, m / corr * scale + (ids // shard), mask)
"""


def _port(kernel: str = KERNEL):
    params = [
        SimpleNamespace(name=n, kind=k, annotation=a, original=o)
        for n, k, a, o in (
            ("n", "runtime", "", "xnumel"),
            ("step", "model", "tl.constexpr", "ks0"),
            ("shard", "model", "tl.constexpr", "ks1"),
            ("XBLOCK", "block", "tl.constexpr", "XBLOCK"),
        )
    ]
    bindings = {
        "xnumel": SimpleNamespace(expr="n"),
        "ks0": SimpleNamespace(expr="step"),
        "ks1": SimpleNamespace(expr="shard"),
    }
    kp = SimpleNamespace(
        tree=ast.parse(textwrap.dedent(kernel)).body[0],
        params=params,
        bindings=bindings,
    )
    inputs = [
        SimpleNamespace(target="m", kind="tensor"),
        SimpleNamespace(target="step", kind="symint"),
        SimpleNamespace(target="shard", kind="symint"),
    ]
    return SimpleNamespace(
        kernels=[kp], module=SimpleNamespace(inputs=inputs), notes=[]
    )


def _kinds(port) -> dict:
    return {p.name: (p.kind, p.annotation) for p in port.kernels[0].params}


def test_an_int_argument_read_only_as_a_float_becomes_runtime():
    port = _port()
    runtime_float_ints(port)
    kinds = _kinds(port)
    assert kinds["step"] == ("runtime", "")
    # a divisor keeps its constant: its division folds
    assert kinds["shard"] == ("model", "tl.constexpr")
    assert kinds["n"] == ("runtime", "") and port.notes


def test_an_int_argument_read_as_an_int_anywhere_stays_constexpr():
    kernel = KERNEL.replace("mask = offsets < n", "mask = offsets < n * step")
    port = _port(kernel)
    runtime_float_ints(port)
    assert _kinds(port)["step"] == ("model", "tl.constexpr") and not port.notes


def test_a_size_read_as_a_float_is_not_an_int_argument():
    # a per-model size (a mean's divisor) keeps its constant: only the
    # reference's int arguments change
    kernel = KERNEL.replace("(ids // shard)", "tl.cast(shard, tl.float32)")
    port = _port(kernel)
    port.module.inputs[2] = SimpleNamespace(target="shard", kind="size")
    runtime_float_ints(port)
    assert _kinds(port)["shard"] == ("model", "tl.constexpr")
    port = _port(kernel)  # the same read of an int argument changes
    runtime_float_ints(port)
    assert _kinds(port)["shard"] == ("runtime", "")


def test_the_kernels_signature_drops_the_constexpr_it_no_longer_has():
    # Before: the parameter became runtime (in do_not_specialize) but the
    # signature kept `step: tl.constexpr` where no later pass rewrote it (two
    # kernels clamping by an int argument): Triton refuses the pair on a GPU,
    # the interpreter ran it. After: the signature reads `step`.
    port = _port()
    runtime_float_ints(port)
    args = {a.arg: a.annotation for a in port.kernels[0].tree.args.args}
    assert args["step"] is None
    assert ast.unparse(args["shard"]) == "tl.constexpr"
