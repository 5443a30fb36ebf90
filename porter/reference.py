"""Stage 1: load a reference file and describe it.

Two formats are accepted (docs/reference-format.md):

* porter's own: module-level `REFERENCE` (the function), `make_inputs(**DIMS,
  dtype=..., device=...)`, `DIMS` (example sizes by name), optionally `DYNAMIC`
  (the dims that vary per call, default: the first in DIMS) and `DTYPES`.
* KernelBench / KernelBook, unchanged: `class Model(nn.Module)`, `get_inputs()`,
  `get_init_inputs()`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from porter.errors import PorterError
from porter.records import Dim

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
_module_counter = itertools.count()


@dataclass
class Reference:
    path: Path
    kind: str  # "porter" | "kernelbench"
    name: str  # function name, or "Model"
    module: types.ModuleType
    input_names: list[str]
    dims: list[Dim]
    dtypes: list[str]
    sha256: str
    init_inputs: list[Any] = field(default_factory=list)

    def build(self) -> Callable[..., Any]:
        """The callable under test: the function, or a fresh Model in eval mode."""
        if self.kind == "porter":
            return self.module.REFERENCE
        torch.manual_seed(0)  # parameters must be the same on every build
        model = self.module.Model(*self.init_inputs)
        return model.eval()

    def make_inputs(
        self,
        sizes: dict[str, int] | None = None,
        dtype: str | None = None,
        device: str = "cpu",
    ) -> list[Any]:
        """Example inputs at the given dim sizes (default: the example sizes)."""
        dims = {d.name: d.size for d in self.dims}
        dims.update(sizes or {})
        dtype = dtype or self.dtypes[0]
        if self.kind == "porter":
            out = self.module.make_inputs(
                **dims, dtype=getattr(torch, dtype), device=device
            )
            return list(out) if isinstance(out, (tuple, list)) else [out]
        return _kernelbench_inputs(self, dims, dtype, device)


def load_reference(path: str | Path) -> Reference:
    path = Path(path)
    if not path.is_file():
        raise PorterError(f"{path}: no such file; give the path of a reference .py")
    source = path.read_text()
    try:
        compile(source, str(path), "exec")
    except SyntaxError as err:
        raise PorterError(
            f"{path}:{err.lineno}: syntax error ({err.msg}); fix the file and retry"
        ) from err
    module = _import(path)
    sha = hashlib.sha256(source.encode()).hexdigest()
    if hasattr(module, "REFERENCE") and hasattr(module, "make_inputs"):
        return _porter_reference(path, module, sha)
    if hasattr(module, "Model") and hasattr(module, "get_inputs"):
        return _kernelbench_reference(path, module, sha)
    raise PorterError(
        f"{path}: no reference found: define REFERENCE, make_inputs and DIMS "
        "(porter format) or class Model, get_inputs and get_init_inputs "
        "(KernelBench format); see docs/reference-format.md"
    )


def _import(path: Path) -> types.ModuleType:
    name = f"porter_reference_{path.stem}_{next(_module_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[name]
        raise PorterError(
            f"{path}: importing the reference raised {type(err).__name__}: {err}"
        ) from err
    return module


def _porter_reference(path: Path, module: types.ModuleType, sha: str) -> Reference:
    fn = module.REFERENCE
    if not callable(fn):
        raise PorterError(f"{path}: REFERENCE must be the reference function")
    sizes = getattr(module, "DIMS", None)
    if not isinstance(sizes, dict) or not sizes:
        raise PorterError(
            f"{path}: DIMS must be a dict of example sizes, e.g. "
            '{"num_tokens": 64, "hidden": 1024}'
        )
    dynamic = list(getattr(module, "DYNAMIC", list(sizes)[:1]))
    unknown = [d for d in dynamic if d not in sizes]
    if unknown:
        raise PorterError(f"{path}: DYNAMIC names {unknown} that are not in DIMS")
    dtypes = _dtypes(path, getattr(module, "DTYPES", FLOAT_DTYPES))
    names = list(inspect.signature(fn).parameters)
    ref = Reference(
        path=path,
        kind="porter",
        name=fn.__name__,
        module=module,
        input_names=names,
        dims=[
            Dim(n, int(s), "runtime" if n in dynamic else "model")
            for n, s in sizes.items()
        ],
        dtypes=dtypes,
        sha256=sha,
    )
    _locate_dims(ref)
    return ref


def _kernelbench_reference(path: Path, module: types.ModuleType, sha: str) -> Reference:
    init = list(module.get_init_inputs()) if hasattr(module, "get_init_inputs") else []
    inputs = _call_user(path, "get_inputs()", module.get_inputs)
    names = list(inspect.signature(module.Model.forward).parameters)[1:]
    if len(names) < len(inputs):  # forward(*args): name them by position
        names = [f"input{i}" for i in range(len(inputs))]
    names = names[: len(inputs)]
    dims: list[Dim] = []
    for name, value in zip(names, inputs):
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            # KernelBench's batch is the leading dim of each input; inputs whose
            # leading sizes agree share one dim, as they do in the model.
            same = [d for d in dims if d.role == "runtime" and d.size == value.shape[0]]
            if same:
                same[0].axes.append((name, 0))
            else:
                dname = "batch" if not dims else f"batch{len(dims)}"
                dims.append(Dim(dname, int(value.shape[0]), "runtime", [(name, 0)]))
    float_in = [
        str(t.dtype).removeprefix("torch.")
        for t in inputs
        if isinstance(t, torch.Tensor) and t.is_floating_point()
    ]
    dtypes = [float_in[0]] if float_in else ["float32"]
    return Reference(
        path=path,
        kind="kernelbench",
        name="Model",
        module=module,
        input_names=names,
        dims=dims,
        dtypes=dtypes,
        sha256=sha,
        init_inputs=init,
    )


def _kernelbench_inputs(
    ref: Reference, dims: dict[str, int], dtype: str, device: str
) -> list[Any]:
    """KernelBench fixes its inputs; other sizes reuse their shape with new leading dims."""
    base = ref.module.get_inputs()
    leading = {a[0]: d.name for d in ref.dims for a in d.axes}
    out = []
    for name, value in zip(ref.input_names, base):
        if not isinstance(value, torch.Tensor):
            out.append(value)
            continue
        shape = list(value.shape)
        if name in leading:
            shape[0] = dims[leading[name]]
        if value.is_floating_point():
            out.append(torch.randn(shape, dtype=getattr(torch, dtype), device=device))
        else:
            high = int(value.max()) + 1 if value.numel() else 1
            out.append(
                torch.randint(0, max(high, 1), shape, dtype=value.dtype, device=device)
            )
    return out


def _locate_dims(ref: Reference) -> None:
    """Find which input axes each named dim sizes, by growing it by one."""
    base = _shapes(ref, {})
    for dim in ref.dims:
        grown = _shapes(ref, {dim.name: dim.size + 1})
        for name in base:
            if name not in grown:
                continue
            for axis, (a, b) in enumerate(zip(base[name], grown[name])):
                if a != b:
                    where = dim.axes if a == dim.size else dim.derived
                    where.append((name, axis))


def _shapes(ref: Reference, sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    values = _call_user(
        ref.path, "make_inputs()", lambda: ref.make_inputs(sizes, ref.dtypes[0], "meta")
    )
    params = list(inspect.signature(ref.module.REFERENCE).parameters.values())
    required = [p for p in params if p.default is inspect.Parameter.empty]
    if not len(required) <= len(values) <= len(params):
        raise PorterError(
            f"{ref.path}: make_inputs returned {len(values)} values but "
            f"{ref.name} takes {len(required)} to {len(params)} arguments"
        )
    # Arguments left to their defaults (eps) are not inputs.
    ref.input_names = [p.name for p in params[: len(values)]]
    return {
        n: tuple(v.shape)
        for n, v in zip(ref.input_names, values)
        if isinstance(v, torch.Tensor)
    }


def _call_user(path: Path, what: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except PorterError:
        raise
    except Exception as err:
        raise PorterError(f"{path}: {what} raised {type(err).__name__}: {err}") from err


def _dtypes(path: Path, names: Any) -> list[str]:
    out = []
    for n in names:
        n = str(n).removeprefix("torch.")
        if not isinstance(getattr(torch, n, None), torch.dtype):
            raise PorterError(f"{path}: DTYPES lists {n!r}, which is not a torch dtype")
        out.append(n)
    if not out:
        raise PorterError(f"{path}: DTYPES is empty; list at least one dtype")
    return out
