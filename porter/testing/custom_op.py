"""The scaffold as a custom op: registered, checked by torch.library.opcheck,
compiled with fullgraph=True, and giving what the plain function gives."""

from __future__ import annotations

import copy
import inspect
import itertools
import math
import re

import torch

from porter.testing.parity import (
    Case,
    as_tuple,
    call_params,
    copies,
    is_expanded,
    make_inputs,
    new_seed,
    run_reference,
    scaffold_entry,
)

_fresh = itertools.count()


class CustomOpUnavailable(Exception):
    """The scaffold has no custom op (a KernelBench module) or refuses one; the
    message says why."""


def check_custom_op(case: Case, device: str = "cpu", seed: int | None = None) -> dict:
    """Register the case's op under a namespace of its own and, on one small
    scenario: run opcheck (schema, fake tensors, autograd registration, AOT
    dispatch), run it under torch.compile(fullgraph=True), and require both to
    return exactly what the plain function (a KernelBench ModelNew: its
    forward) returns, changed inputs included."""
    if not hasattr(case.kernel, "register_op"):
        raise CustomOpUnavailable(
            "this kernel.py registers no op (it predates porter's custom ops); "
            "run porter port on the case to add one"
        )
    seed = new_seed() if seed is None else seed
    namespace = "porter_check_%s_%d" % (re.sub(r"\W", "_", case.name), next(_fresh))
    sc, inputs, entry = _served_scenario(case, device, seed)
    expanded = [isinstance(v, torch.Tensor) and is_expanded(v) for v in inputs]
    if any(expanded) and _refuses_dense(entry, inputs, expanded):
        raise CustomOpUnavailable(
            "an input is expanded (stride 0 along an axis, as make_inputs gives "
            "it), and opcheck and torch.compile hand a custom op contiguous "
            "copies, which these kernels refuse; call the function instead, or "
            "capture with the input contiguous"
        )
    where = f"case {case.name}, custom op on {sc.id}, seed {seed} (replay: PORTER_SEED={seed})"
    try:
        if case.manifest["reference_kind"] == "kernelbench":
            whole = entry.as_op(namespace)  # a module calling the op
            op, state = whole.op, whole.state
            fn = copy.deepcopy(entry)
        else:
            op = case.kernel.register_op(namespace)
            fn, whole, state = entry, None, list
    except NotImplementedError as err:
        raise CustomOpUnavailable(str(err)) from err

    def op_args():
        # the module's own tensors cloned, so no call changes the next one's
        return (*copies(inputs), *[t.clone() for t in state()])

    # An op of an in-place function returns nothing: its arguments are compared.
    returns_nothing = not op.default._schema.returns
    with torch.no_grad():
        expected_inputs = copies(inputs)
        expected = as_tuple(fn(*expected_inputs))
        if returns_nothing:
            expected = (None,)
        args = op_args()
        tests = _tests(op, args)
        if any(_has_nan(e) for e in expected):
            # opcheck's AOT test compares outputs without equal_nan: a NaN the
            # function means (a fully masked row) fails it. The compiled call
            # below goes through AOT dispatch and compares NaN as NaN.
            tests = tuple(t for t in tests if t != "test_aot_dispatch_dynamic")
        torch.library.opcheck(op, args, test_utils=tests)
        _require_declared_mutations(op, list(op_args()), where)
        compiled = _compiled(whole if whole is not None else op)
        for how, call in (
            ("the op", lambda *a: op(*a, *[t.clone() for t in state()])),
            ("the op under torch.compile(fullgraph=True)", compiled),
        ):
            args = copies(inputs)
            got = as_tuple(call(*args))
            _require_equal(expected, got, f"{where}: {how} returned")
            _require_equal(
                [a for a in expected_inputs if isinstance(a, torch.Tensor)],
                [a for a in args if isinstance(a, torch.Tensor)],
                f"{where}: {how} left its inputs",
            )
    return {"seed": seed, "namespace": namespace}


def _refuses_dense(entry, inputs, expanded: list[bool]) -> bool:
    """Whether the scaffold refuses the call with its expanded inputs laid out
    contiguous, as opcheck's and torch.compile's copies are."""
    dense = [v.contiguous() if e else v for v, e in zip(copies(inputs), expanded)]
    try:
        with torch.no_grad():
            entry(*dense)
    except NotImplementedError:
        return True
    return False


# torch.library.opcheck's tests.
OPCHECK = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_dynamic",
)
FP8 = {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)}


def _tests(op, inputs) -> tuple[str, ...]:
    """opcheck's tests less test_schema where an argument is fp8: it compares
    every argument before and after the call with allclose, which fp8 lacks
    (_require_declared_mutations checks what the schema says instead)."""
    fp8 = any(isinstance(v, torch.Tensor) and v.dtype in FP8 for v in inputs)
    return tuple(t for t in OPCHECK if not (fp8 and t == "test_schema"))


def _require_declared_mutations(op, inputs, where: str) -> None:
    """Only the arguments the schema marks written may change."""
    names = [a.name for a in op.default._schema.arguments]
    before = [_bits(v).clone() if isinstance(v, torch.Tensor) else None for v in inputs]
    op(*inputs)
    for name, written, v, b in zip(names, _written(op), inputs, before):
        if b is not None and not written and not torch.equal(_bits(v), b):
            raise AssertionError(
                f"{where}: the op changed {name}, which its schema says it reads only"
            )


def _written(op) -> list[bool]:
    """Per argument of the op's schema, whether it is marked written (a!)."""
    return [
        a.alias_info is not None and a.alias_info.is_write
        for a in op.default._schema.arguments
    ]


def _compiled(op):
    """op (or a module calling it) under torch.compile(fullgraph=True)."""
    torch._dynamo.reset()  # each check counts its own graph, not the last case's

    def call(*args):
        return op(*args)

    # aot_eager: Dynamo and AOT dispatch as Inductor uses them, without a C++
    # compiler on the CPU; the op stays opaque either way.
    return torch.compile(call, fullgraph=True, backend="aot_eager")


def _served_scenario(case: Case, device: str, seed: int):
    """The smallest plain scenario with rows to compute (contiguous inputs,
    random values, the capture's module mode and arguments) that the scaffold
    serves, its inputs and the scaffold's entry (function or ModelNew) there."""
    plain = [
        sc
        for sc in case.scenarios()
        if sc.layout == "contiguous"
        and sc.values == "random"
        and not (sc.mode or sc.init or sc.args or sc.optional)
        and all(n > 0 for n in sc.sizes.values())
    ]
    plain.sort(key=lambda sc: (math.prod(sc.sizes.values()), sc.dtype != "float32"))
    for sc in plain[:8]:
        try:
            inputs = make_inputs(case, sc, device, seed)
            # the defaults past them too: an op whose schema cannot spell one
            # (inf) takes every argument
            params = call_params(case)[len(inputs) :]
            if all(p.default is not inspect.Parameter.empty for p in params):
                inputs += [p.default for p in params]
            run_reference(case, copies(inputs), sc.dtype, device, sc.sizes)
        except Exception:
            continue  # sizes the reference rejects: the parity suite skips them too
        fn = scaffold_entry(case, sc.dtype, device, sizes=sc.sizes)
        try:
            with torch.no_grad():
                fn(*copies(inputs))
        except NotImplementedError:
            continue  # sizes the capture fixed otherwise
        return sc, inputs, fn
    raise CustomOpUnavailable("the scaffold serves none of the smallest scenarios")


def _require_equal(expected, got, what: str) -> None:
    if len(expected) != len(got):
        raise AssertionError(f"{what} {len(got)} values, the function {len(expected)}")
    for i, (e, g) in enumerate(zip(expected, got)):
        if e is None or g is None:
            if not (e is None and g is None):
                raise AssertionError(f"{what} {g!r} at {i}, the function {e!r}")
            continue
        if not (e.shape == g.shape and e.dtype == g.dtype and _equal(e, g)):
            raise AssertionError(f"{what} another value at {i} than the function")


def _has_nan(t) -> bool:
    return (
        isinstance(t, torch.Tensor)
        and t.is_floating_point()
        and bool(t.float().isnan().any())
    )


def _equal(e: torch.Tensor, g: torch.Tensor) -> bool:
    """The same bits: the op runs the function's own kernels (NaN equal to NaN,
    and fp8, which has no comparison of its own)."""
    return torch.equal(_bits(e), _bits(g))


def _bits(t: torch.Tensor) -> torch.Tensor:
    # a fresh flat copy: .contiguous() keeps a size-1 axis's stride (a column
    # slice at one row), which .view(torch.uint8) rejects
    flat = torch.empty(t.numel(), dtype=t.dtype, device=t.device)
    return flat.copy_(t.reshape(-1)).view(torch.uint8)
