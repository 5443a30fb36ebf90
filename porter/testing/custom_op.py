"""The scaffold as a custom op: registered, checked by torch.library.opcheck,
compiled with fullgraph=True, and giving what the plain function gives."""

from __future__ import annotations

import itertools
import re

import torch

from porter.testing.parity import Case, copies, make_inputs, new_seed

_fresh = itertools.count()


class CustomOpUnavailable(Exception):
    """The scaffold has no custom op (a KernelBench module) or refuses one; the
    message says why."""


def check_custom_op(case: Case, device: str = "cpu", seed: int | None = None) -> dict:
    """Register the case's op under a namespace of its own and, on one small
    scenario: run opcheck (schema, fake tensors, autograd registration, AOT
    dispatch), run it under torch.compile(fullgraph=True), and require both to
    return exactly what the plain function returns, changed inputs included."""
    register = getattr(case.kernel, "register_op", None)
    if register is None:
        raise CustomOpUnavailable(
            "a KernelBench module's forward reads its own state and is not registered as an op"
        )
    seed = new_seed() if seed is None else seed
    namespace = "porter_check_%s_%d" % (re.sub(r"\W", "_", case.name), next(_fresh))
    try:
        op = register(namespace)
    except NotImplementedError as err:
        raise CustomOpUnavailable(str(err)) from err
    sc = _small_scenario(case)
    inputs = make_inputs(case, sc, device, seed)
    where = f"case {case.name}, custom op on {sc.id}, seed {seed} (replay: PORTER_SEED={seed})"
    fn = getattr(case.kernel, case.manifest["reference_name"])
    # An op of an in-place function returns nothing: its arguments are compared.
    returns_nothing = not op.default._schema.returns
    with torch.no_grad():
        expected_inputs = copies(inputs)
        expected = _tuple(fn(*expected_inputs))
        if returns_nothing:
            expected = (None,)
        torch.library.opcheck(op, tuple(copies(inputs)))
        for how, call in (
            ("the op", op),
            ("the op under torch.compile(fullgraph=True)", _compiled(op)),
        ):
            args = copies(inputs)
            got = _tuple(call(*args))
            _require_equal(expected, got, f"{where}: {how} returned")
            _require_equal(
                [a for a in expected_inputs if isinstance(a, torch.Tensor)],
                [a for a in args if isinstance(a, torch.Tensor)],
                f"{where}: {how} left its inputs",
            )
    return {"seed": seed, "namespace": namespace}


def _compiled(op):
    torch._dynamo.reset()  # each check counts its own graph, not the last case's

    def call(*args):
        return op(*args)

    # aot_eager: Dynamo and AOT dispatch as Inductor uses them, without a C++
    # compiler on the CPU; the op stays opaque either way.
    return torch.compile(call, fullgraph=True, backend="aot_eager")


def _small_scenario(case: Case):
    """The smallest plain scenario with rows to compute: contiguous inputs,
    random values, the capture's module mode and arguments."""
    plain = [
        sc
        for sc in case.scenarios()
        if sc.layout == "contiguous"
        and sc.values == "random"
        and not (sc.mode or sc.init or sc.args or sc.optional)
        and all(n > 0 for n in sc.sizes.values())
    ]
    return min(plain, key=lambda sc: (_elements(sc), sc.dtype != "float32"))


def _elements(sc) -> int:
    n = 1
    for v in sc.sizes.values():
        n *= v
    return n


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


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


def _equal(e: torch.Tensor, g: torch.Tensor) -> bool:
    """Equal values, NaN equal to NaN."""
    if not e.is_floating_point():
        return torch.equal(e, g)
    return torch.equal(e.isnan(), g.isnan()) and torch.equal(
        e.nan_to_num(0.0, 0.0, 0.0), g.nan_to_num(0.0, 0.0, 0.0)
    )
