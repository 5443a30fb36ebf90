"""Stage 1: load a reference file and describe it.

Two formats are accepted (docs/reference-format.md):

* porter's own: module-level `REFERENCE` (the function), `make_inputs(**DIMS,
  dtype=..., device=...)`, `DIMS` (example sizes by name), optionally `DYNAMIC`
  (the dims that vary per call, default: the first in DIMS) and `DTYPES`.
* KernelBench / KernelBook, unchanged: `class Model(nn.Module)`, `get_inputs()`,
  `get_init_inputs()`.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import inspect
import itertools
import sys
import tokenize
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from porter.errors import PorterError
from porter.records import Dim

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
_module_counter = itertools.count()


@dataclass
class Reference:
    path: Path
    kind: str  # "porter" | "kernelbench"
    name: str  # function name, or the model class's ("Model")
    module: types.ModuleType
    input_names: list[str]
    dims: list[Dim]
    dtypes: list[str]
    sha256: str
    init_inputs: list[Any] = field(default_factory=list)
    # Sizes set from the command line or chosen to keep a capture small, by
    # global (KernelBench) or DIMS entry (porter format).
    overrides: dict[str, Any] = field(default_factory=dict)
    # KernelBench: each dim's global, and the index where the global is a tuple.
    slots: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    # KernelBook: the model is the file's last nn.Module (not `Model`), and
    # get_init_inputs() gives [args, kwargs].
    book: bool = False
    # Dim names a stored capture gave sizes (porter before 0.2 named a
    # KernelBench batch "batch"), by the size global they are.
    aliases: dict[str, str] = field(default_factory=dict)

    def alias_dims(self, stored: list[dict[str, Any]]) -> None:
        """Name each stored dim that is not a size global after the global
        whose dim sizes the same input axis."""
        for d in stored:
            if d["name"] in self.slots or not d.get("axes"):
                continue
            first = tuple(d["axes"][0])
            same = next((x for x in self.dims if first in map(tuple, x.axes)), None)
            if same is not None:
                self.aliases[d["name"]] = same.name

    def build(
        self, sizes: dict[str, int] | None = None, init: dict[int, Any] | None = None
    ) -> Callable[..., Any]:
        """The callable under test: the function, or a fresh Model as its
        constructor leaves it (training mode, as KernelBench runs it), built
        from get_init_inputs() at `sizes`, with `init`'s arguments changed,
        and its constant parameters and buffers varied (vary_constants)."""
        if self.kind == "porter":
            return traced_function(self.module.REFERENCE)
        torch.manual_seed(0)  # parameters must be the same on every build
        # at the sizes: a constructor may read a size global (an RNN's hidden
        # state of batch_size rows)
        with _sizes_set(self, {**self.overrides, **(sizes or {})}):
            model = self.module.Model(*self.init_inputs_at(sizes, init))
        if isinstance(model, torch.nn.Module):
            vary_constants(model)
            forward = traced_function(type(model).forward)
            if forward is not type(model).forward:  # Dynamo would trace *args
                model.forward = types.MethodType(forward, model)
        return model

    def sizes_in(
        self, module: types.ModuleType, sizes: dict[str, int] | None = None
    ) -> contextlib.AbstractContextManager:
        """`module`'s copies of the size globals (a scaffold's) at `sizes`."""
        return _sizes_set(self, {**self.overrides, **(sizes or {})}, module)

    def init_inputs_at(
        self, sizes: dict[str, int] | None = None, init: dict[int, Any] | None = None
    ) -> list[Any]:
        """get_init_inputs() with the size globals at `sizes` (a features count
        that sizes both the input and the model's parameters), and the
        arguments `init` names by position changed."""
        if self.kind == "porter":
            return []
        getter = getattr(self.module, "get_init_inputs", None)
        if getter is None:
            return []
        with _sizes_set(self, {**self.overrides, **(sizes or {})}):
            values = list(getter())
        if self.book:
            values = _positional(self.module.Model, values)
        for i in sorted(int(i) for i in init or {}):
            # an argument past get_init_inputs() (a defaulted eps) is passed,
            # those between at their defaults
            values += self._init_defaults()[len(values) : i]
            if i == len(values):
                values.append(init[i])
            else:
                values[i] = init[i]
        return values

    def call_params(self) -> list[inspect.Parameter]:
        """The parameters the reference is called with (forward's without self)."""
        porter = self.kind == "porter"
        fn = self.module.REFERENCE if porter else self.module.Model.forward
        params = list(inspect.signature(fn).parameters.values())
        return params if porter else params[1:]

    def init_values(self, sizes: dict[str, int] | None = None) -> list[Any]:
        """get_init_inputs() at `sizes`, then the defaults of the constructor's
        parameters past them (an eps=1e-5 no caller passes): each a value a
        scaffold follows or refuses, as the reference would take another."""
        if self.kind == "porter":
            return []
        values = self.init_inputs_at(sizes)
        for default in self._init_defaults()[len(values) :]:
            if default is inspect.Parameter.empty:
                break
            values.append(default)
        return values

    def _init_defaults(self) -> list[Any]:
        """The default of each of Model's positional constructor parameters
        (inspect.Parameter.empty where it has none)."""
        try:
            params = list(inspect.signature(self.module.Model).parameters.values())
        except (TypeError, ValueError):  # a constructor written in C
            return []
        out = []
        for p in params:
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                break
            out.append(p.default)
        return out

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


def vary_constants(model: torch.nn.Module) -> None:
    """Each floating-point parameter or buffer whose elements are all one value
    (a norm's weight of ones and bias of zeros, BatchNorm's running statistics)
    given values of its sign that differ by element, and a 0-d integer buffer
    (a step counter) the value 3: a kernel that reads the wrong element of
    one, or none, cannot match eager by luck."""
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in itertools.chain(model.parameters(), model.buffers()):
            if t.dim() == 0 and not t.is_floating_point() and t.dtype != torch.bool:
                t.fill_(3)  # a step counter as after three calls, not at 0
                continue
            if not t.is_floating_point() or t.numel() == 0:
                continue
            flat = t.detach().reshape(-1)
            if not bool((flat == flat[0]).all()):
                continue
            c = float(flat[0])
            noise = torch.rand(t.shape, generator=g)
            t.copy_(c * (1 + 0.5 * noise) if c else 0.2 * noise - 0.1)


@contextlib.contextmanager
def _sizes_set(
    ref: Reference, sizes: dict[str, int], module: types.ModuleType | None = None
) -> Iterator[None]:
    """A KernelBench module's size globals set to `sizes` (by dim name), then
    restored; with `module`, the same globals of another module (a scaffold's
    copies, which ModelNew's constructor reads), those it has."""
    other, module = module is not None, module or ref.module
    saved = {}
    for name, value in sizes.items():
        name = ref.aliases.get(name, name)
        if name not in ref.slots:
            # Never a silent no-op: inputs at the wrong size compare nothing.
            raise PorterError(
                f"{ref.path.name} has no size global {name!r} (its size globals: "
                f"{', '.join(ref.slots) or 'none'})"
            )
        glob, index = ref.slots[name]
        if other and not hasattr(module, glob):
            continue
        saved.setdefault(glob, getattr(module, glob))
        if index is None:
            setattr(module, glob, int(value))
        else:
            items = list(getattr(module, glob))
            items[index] = int(value)
            setattr(module, glob, type(saved[glob])(items))
    try:
        yield
    finally:
        for glob, value in saved.items():
            setattr(module, glob, value)


def load_reference(
    path: str | Path,
    overrides: dict[str, Any] | None = None,
    budget: int | None = None,
) -> Reference:
    """Load a reference file. overrides: sizes to set (a KernelBench file's size
    globals, a porter reference's DIMS entries). budget: where a KernelBench
    file's own sizes give more input elements than this, its size globals are
    made smaller until they fit (Reference.overrides says which)."""
    path = Path(path)
    if not path.is_file():
        raise PorterError(f"{path}: no such file; give the path of a reference .py")
    try:
        source = read_source(path)
    except (UnicodeDecodeError, SyntaxError) as err:
        # tokenize says SyntaxError for bytes its coding cannot decode
        raise PorterError(
            f"{path}: not readable as Python source ({err}); save it as UTF-8 or "
            "give it a coding declaration (# -*- coding: latin-1 -*-)"
        ) from None
    try:
        compile(source, str(path), "exec")
    except SyntaxError as err:
        raise PorterError(
            f"{path}:{err.lineno}: syntax error ({err.msg}); fix the file and retry"
        ) from err
    module = _import(path)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    overrides = dict(overrides or {})
    if hasattr(module, "REFERENCE") and hasattr(module, "make_inputs"):
        return _porter_reference(path, module, sha, overrides)
    if hasattr(module, "Model") and hasattr(module, "get_inputs"):
        return _kernelbench_reference(path, module, sha, source, overrides, budget)
    entry = _book_entry(module) if hasattr(module, "get_inputs") else None
    if entry is not None:
        module.Model = entry  # the name every later step reads
        return _kernelbench_reference(
            path, module, sha, source, overrides, budget, book=True
        )
    raise PorterError(
        f"{path}: no reference found: define REFERENCE, make_inputs and DIMS "
        "(porter format) or class Model, get_inputs and get_init_inputs "
        "(KernelBench format; KernelBook's last nn.Module beside get_inputs "
        "works too); see docs/reference-format.md"
    )


def case_reference(case: Path, manifest: dict[str, Any]) -> Reference:
    """A case's stored reference at the sizes it was captured at."""
    overrides = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in manifest.get("overrides", {}).items()
    }
    ref = load_reference(Path(case) / "reference.py", overrides=overrides)
    ref.alias_dims(manifest.get("dims", []))
    return ref


def read_source(path: Path) -> str:
    """The file's text as Python reads it (a coding declaration is honoured)."""
    with tokenize.open(path) as f:
        return f.read()


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


def _porter_reference(
    path: Path, module: types.ModuleType, sha: str, overrides: dict[str, Any]
) -> Reference:
    fn = module.REFERENCE
    _check_function(path, fn)
    sizes = getattr(module, "DIMS", None)
    if not isinstance(sizes, dict) or not sizes:
        raise PorterError(
            f"{path}: DIMS must be a dict of example sizes, e.g. "
            '{"num_tokens": 64, "hidden": 1024}'
        )
    unknown = sorted(set(overrides) - set(sizes))
    if unknown:
        raise PorterError(
            f"--set names {unknown}, which are not in {path.name}'s DIMS "
            f"({', '.join(sizes)})"
        )
    sizes = {**sizes, **{k: _positive(k, v) for k, v in overrides.items()}}
    for n, s in sizes.items():
        if isinstance(s, bool) or not isinstance(s, int) or s < 2:
            # Dynamo fixes a size of 0 or 1 (and a view's -1 that comes to 1)
            # at that value: the kernels would refuse every other one.
            said = f"--set {n}={s!r}" if n in overrides else f"{path}: DIMS {n}={s!r}"
            raise PorterError(
                f"{said}: give an example size of 2 or more (torch.compile "
                "fixes sizes of 0 and 1, so the kernels would serve no other)"
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
        # a lambda's launcher needs a name Python accepts
        name="reference" if fn.__name__ == "<lambda>" else fn.__name__,
        module=module,
        input_names=names,
        dims=[
            Dim(n, int(s), "runtime" if n in dynamic else "model")
            for n, s in sizes.items()
        ],
        dtypes=dtypes,
        sha256=sha,
        overrides=overrides,
    )
    _locate_dims(ref)
    return ref


# Decorators that change no value the function computes (grad mode, compiling):
# Dynamo would trace their wrapper, whose parameters are *args and **kwargs.
_TRANSPARENT = ("torch/utils/_contextlib.py", "torch/_dynamo/eval_frame.py")


def traced_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """REFERENCE as Dynamo should trace it: seen through `@torch.no_grad()`,
    `@torch.inference_mode()` and `@torch.compile`."""
    while hasattr(fn, "__wrapped__") and _wrapper_file(fn).endswith(_TRANSPARENT):
        fn = fn.__wrapped__
    return fn


def _wrapper_file(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    return code.co_filename.replace("\\", "/") if code else ""


def _check_function(path: Path, fn: Any) -> None:
    """A one-line refusal for a REFERENCE porter cannot trace by name: a module
    instance, a partial, or a function behind a decorator that may change it."""
    if isinstance(fn, torch.nn.Module):
        raise PorterError(
            f"{path}: REFERENCE is an nn.Module ({type(fn).__name__}); porter "
            "takes a function here: write one that calls the module, or use the "
            "KernelBench format (class Model, get_inputs, get_init_inputs) for a "
            "module with parameters"
        )
    inner = traced_function(fn)
    if not inspect.isfunction(inner):
        raise PorterError(
            f"{path}: REFERENCE must be a function (def or lambda), not a "
            f"{type(inner).__name__}"
        )
    if hasattr(inner, "__wrapped__"):
        raise PorterError(
            f"{path}: REFERENCE is wrapped by a decorator porter cannot see "
            f"through ({_wrapper_file(inner).rsplit('/', 1)[-1] or 'unknown'}); "
            "capture the undecorated function (torch.no_grad, inference_mode "
            "and torch.compile are seen through)"
        )


def _book_entry(module: types.ModuleType) -> type | None:
    """A KernelBook file's model: the last nn.Module subclass it defines (the
    classes before it are the ones it builds on)."""
    found = [
        v
        for v in vars(module).values()
        if isinstance(v, type)
        and issubclass(v, torch.nn.Module)
        and v.__module__ == module.__name__
    ]
    return found[-1] if found else None


def _positional(model: type, values: list[Any]) -> list[Any]:
    """KernelBook's get_init_inputs() [args, kwargs] as the constructor's
    positional arguments (where it is that pair)."""
    if not (
        len(values) == 2
        and isinstance(values[0], (list, tuple))
        and isinstance(values[1], dict)
    ):
        return values
    try:
        bound = inspect.signature(model).bind(*values[0], **values[1])
    except TypeError:
        return values  # not [args, kwargs]: the constructor's own two arguments
    if bound.kwargs:
        raise PorterError(
            f"{model.__name__} takes {', '.join(bound.kwargs)} by keyword only, "
            "which porter cannot vary; make them positional-or-keyword"
        )
    return list(bound.args)


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PorterError(f"--set {name}={value!r}: give a positive whole number")
    return value


def _kernelbench_reference(
    path: Path,
    module: types.ModuleType,
    sha: str,
    source: str,
    overrides: dict[str, Any],
    budget: int | None,
    book: bool = False,
) -> Reference:
    from porter.port.model_class import model_base

    model_base(module.Model, path)  # refused before any compile where it cannot be held
    names = list(inspect.signature(module.Model.forward).parameters)[1:]
    ref = Reference(
        path=path,
        kind="kernelbench",
        name=module.Model.__name__,
        module=module,
        input_names=[],
        dims=[],
        dtypes=["float32"],
        sha256=sha,
        slots=_size_slots(module, source),
        book=book,
    )
    ref.overrides = _apply_overrides(ref, overrides)
    base = _kernelbench_shapes(ref, {})
    if budget is not None and _elements(base) > budget:
        ref.overrides.update(_shrink(ref, budget, set(ref.overrides)))
        base = _kernelbench_shapes(ref, {})
    ref.init_inputs = _call_user(path, "get_init_inputs()", ref.init_inputs_at)
    inputs = base
    if len(names) < len(inputs) or any(n.startswith("*") for n in names):
        names = [f"input{i}" for i in range(len(inputs))]  # forward(*args)
    ref.input_names = names[: len(inputs)]
    ref.dims = _kernelbench_dims(ref, base)
    float_in = [
        str(t.dtype).removeprefix("torch.")
        for t in inputs
        if isinstance(t, torch.Tensor) and t.is_floating_point()
    ]
    ref.dtypes = [float_in[0]] if float_in else ["float32"]
    return ref


def _size_slots(
    module: types.ModuleType, source: str
) -> dict[str, tuple[str, int | None]]:
    """The file's top-level int globals, and the int entries of its tuple or
    list globals (`input_shape = (4096,)` gives input_shape_0; an MLP's
    `layer_sizes = [400, 800]`): the sizes a KernelBench file may read."""
    assigned = []
    for node in ast.parse(source).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [getattr(node, "target", None)]
        )
        # `depth, height, width = 16, 32, 32` assigns three globals
        names = [
            n
            for t in targets
            for n in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])
        ]
        for t in names:
            if isinstance(t, ast.Name) and t.id not in assigned:
                assigned.append(t.id)
    slots: dict[str, tuple[str, int | None]] = {}
    for name in assigned:
        value = getattr(module, name, None)
        if _is_int(value):
            slots[name] = (name, None)
        elif (
            isinstance(value, (tuple, list))
            and value
            and all(_is_int(v) for v in value)
        ):
            for i in range(len(value)):
                slots.setdefault(f"{name}_{i}", (name, i))
    return slots


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _apply_overrides(ref: Reference, overrides: dict[str, Any]) -> dict[str, int]:
    """--set NAME=VALUE on a KernelBench file: an int global, an entry of a
    tuple global (input_shape_0), or a whole tuple global given as a tuple."""
    out: dict[str, int] = {}
    globals_ = {g for g, _ in ref.slots.values()}
    for name, value in overrides.items():
        if name in ref.slots:
            out[name] = _positive(name, value)
        elif name in globals_ and isinstance(value, tuple):
            entries = [s for s, (g, i) in ref.slots.items() if g == name]
            if len(entries) != len(value):
                raise PorterError(
                    f"--set {name}: {ref.path.name} has {len(entries)} entries in {name}, "
                    f"not {len(value)}"
                )
            out.update({s: _positive(s, v) for s, v in zip(entries, value)})
        else:
            raise PorterError(
                f"--set names {name!r}, which is not an int global of {ref.path.name} "
                f"(its size globals: {', '.join(ref.slots) or 'none'})"
            )
    return out


def _kernelbench_shapes(ref: Reference, sizes: dict[str, int]) -> list[Any]:
    """get_inputs() at the overrides plus `sizes`, as meta tensors where the
    file allows (no memory for a 4096 x 393216 input), else as real ones."""
    with _sizes_set(ref, {**ref.overrides, **sizes}):
        try:
            with torch.device("meta"):
                return list(ref.module.get_inputs())
        except Exception:  # noqa: BLE001 - e.g. .item() of a random tensor
            return list(_call_user(ref.path, "get_inputs()", ref.module.get_inputs))


def _input_shapes(values: list[Any]) -> list[tuple[int, ...]]:
    return [tuple(v.shape) for v in values if isinstance(v, torch.Tensor)]


def _elements(values: list[Any]) -> int:
    return sum(v.numel() for v in values if isinstance(v, torch.Tensor))


def _shapes_of(values: list[Any]) -> list[tuple[int, ...] | None]:
    return [tuple(v.shape) if isinstance(v, torch.Tensor) else None for v in values]


def _kernelbench_dims(ref: Reference, base: list[Any]) -> list[Dim]:
    """A dim for each size global that sizes an input: grown by one (or two),
    the axes that grow with it are its axes (or derived ones, when they grow
    by another amount). Role runtime for the one sizing the first input's
    leading axis without sizing the model too (the batch), model otherwise."""
    base_shapes = _shapes_of(base)
    sizes = _current_sizes(ref)
    base_init = _init_key(ref, {})
    first_tensor = next(
        (i for i, v in enumerate(base) if isinstance(v, torch.Tensor) and v.dim()), None
    )
    dims: list[Dim] = []
    for slot, value in sizes.items():
        for step in (1, 2, value):
            try:
                grown = _shapes_of(_kernelbench_shapes(ref, {slot: value + step}))
            except PorterError:
                continue
            break
        else:
            continue
        axes, derived = [], []
        for name, a, b in zip(ref.input_names, base_shapes, grown):
            if a is None or b is None or len(a) != len(b):
                continue
            for axis, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    (axes if (x, y) == (value, value + step) else derived).append(
                        (name, axis)
                    )
        if not axes and not derived:
            continue
        sizes_model = _init_key(ref, {slot: value + step}) != base_init
        leading = (
            first_tensor is not None and (ref.input_names[first_tensor], 0) in axes
        )
        runtime = (
            leading and not sizes_model and not any(d.role == "runtime" for d in dims)
        )
        dims.append(
            Dim(slot, value, "runtime" if runtime else "model", axes, True, derived)
        )
    order = {
        (n, a): i
        for i, (n, s) in enumerate(zip(ref.input_names, base_shapes))
        for a in range(len(s or ()))
    }
    dims.sort(key=lambda d: min(order.get(x, 1 << 30) for x in d.axes + d.derived))
    return dims


def _current_sizes(ref: Reference) -> dict[str, int]:
    out = {}
    for slot, (glob, index) in ref.slots.items():
        value = getattr(ref.module, glob)
        out[slot] = int(value if index is None else value[index])
    out.update(ref.overrides)
    return out


def _init_key(ref: Reference, sizes: dict[str, int]) -> str:
    try:
        return repr(ref.init_inputs_at(sizes))
    except Exception:  # noqa: BLE001 - a constructor argument the size breaks
        return "unbuildable"


# Sizes a KernelBench global is cut to, smallest first (powers of two, so
# sizes that must split in halves or groups still do).
SHRINK_CAPS = (8, 16, 32, 64, 128, 256, 512, 1024)


# A cap whose outputs keep every axis the file's have may take this many
# budgets where the caps within it cut an output axis to 1.
DEGENERATE_ROOM = 8


def _shrink(ref: Reference, budget: int, fixed: set[str]) -> dict[str, int]:
    """Smaller values for the size globals (those not in `fixed`) so that the
    inputs hold at most `budget` elements and the reference still runs on
    them: the largest cap of SHRINK_CAPS that fits and runs. Where that cap
    cuts an output axis to 1 (a 3-d input of 8 pooled twice), a larger one
    within DEGENERATE_ROOM budgets that does not: Inductor's code at a size
    of 1 may index as if it stayed 1 (a pooled output's store)."""
    sizes = _current_sizes(ref)
    best: dict[str, int] | None = None
    degenerate, whole = False, None
    own = _input_shapes(_kernelbench_shapes(ref, {}))
    for cap in SHRINK_CAPS:
        found = _runnable(
            ref,
            {s: _cut(v, cap) for s, v in sizes.items() if s not in fixed and v > cap},
            sizes,
        )
        if found is None:
            continue
        trial, shapes, outputs = found
        over = _elements(shapes) > budget
        # a cap that cuts no input (or only a global no input reads, such as
        # num_classes) is the file's own sizes, which no cap could shrink (a
        # LayerNorm over the last axis tied to 2 * W), not a shrink
        unchanged = _input_shapes(shapes) == own
        if over and (unchanged or (best is not None and not degenerate)):
            break
        if over and best is not None and _elements(shapes) > DEGENERATE_ROOM * budget:
            break
        if whole is None:
            whole = _output_shapes(ref, {}, meta=True) or []
        cut = any(
            a == 1 and b > 1
            for o, w in zip(outputs, whole)
            if len(o) == len(w)
            for a, b in zip(o, w)
        )
        if over and best is not None and cut:
            continue
        best, degenerate = trial, cut
        if over:
            break
    if best is None:
        raise PorterError(
            f"{ref.path}: its inputs hold more than {budget} elements and porter "
            "found no smaller sizes it runs at; give them with --set NAME=VALUE"
        )
    return best


def _runnable(
    ref: Reference, trial: dict[str, int], sizes: dict[str, int]
) -> tuple[dict[str, int], list[Any], list[tuple[int, ...]]] | None:
    """(sizes, inputs, output shapes) of the first of `trial`, then `trial`
    with one global left at its own size, then less those whose cut alone
    breaks it, then with the 2, 3, ... smallest left whole, at which the
    reference runs: channels a groups=3 convolution or GroupNorm must divide
    stay whole while the other sizes are cut. None where none runs."""
    kept = sorted(trial, key=lambda s: sizes[s])

    def candidates() -> Iterator[dict[str, int]]:  # lazily: most often the first runs
        yield trial
        for s in kept:
            yield {k: v for k, v in trial.items() if k != s}
        yield _without_breaking(ref, trial)
        for n in range(2, len(kept)):
            yield {k: v for k, v in trial.items() if k not in kept[:n]}

    for candidate in candidates():
        try:
            shapes = _kernelbench_shapes(ref, candidate)
        except PorterError:
            continue
        outputs = _output_shapes(ref, candidate)
        if outputs is not None:
            return candidate, shapes, outputs
    return None


def _without_breaking(ref: Reference, trial: dict[str, int]) -> dict[str, int]:
    """`trial` less each global whose cut alone breaks the reference on the
    meta device: ShuffleNet's two channel counts, which groups=3 divides,
    neither of them among the smallest globals."""
    return {
        k: v
        for k, v in trial.items()
        if _output_shapes(ref, {k: v}, meta=True) is not None
    }


def _cut(value: int, cap: int) -> int:
    """cap for an even size, cap - 1 for an odd one (a mask stays exercised)."""
    return cap - 1 if value % 2 else cap


def _output_shapes(
    ref: Reference, sizes: dict[str, int], meta: bool = False
) -> list[tuple[int, ...]] | None:
    """The shapes of the model's tensor outputs at `sizes` (on the meta device
    with `meta`: no memory for the file's own sizes); None where it raises."""
    try:
        with _sizes_set(ref, {**ref.overrides, **sizes}):
            torch.manual_seed(0)
            with torch.device("meta") if meta else contextlib.nullcontext():
                model = ref.module.Model(*ref.init_inputs_at(sizes))
                inputs = ref.module.get_inputs()
                with torch.no_grad():
                    out = model(*inputs)
        out = out if isinstance(out, (tuple, list)) else (out,)
        return [tuple(t.shape) for t in out if isinstance(t, torch.Tensor)]
    except Exception:  # noqa: BLE001 - the sizes break the reference: try others
        return None


def _kernelbench_inputs(
    ref: Reference, dims: dict[str, int], dtype: str, device: str
) -> list[Any]:
    """get_inputs() with the size globals at `dims`; floating-point tensors
    in `dtype`, every tensor on `device`."""
    if device == "meta":
        base = _kernelbench_shapes(ref, dims)
    else:
        with _sizes_set(ref, {**ref.overrides, **dims}):
            base = list(_call_user(ref.path, "get_inputs()", ref.module.get_inputs))
    out = []
    for value in base:
        if isinstance(value, torch.Tensor):
            float_dtype = getattr(torch, dtype) if value.is_floating_point() else None
            value = value.to(device=device, dtype=float_dtype or value.dtype)
        out.append(value)
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
    if not any(n in FLOAT_DTYPES for n in out):
        # float64 alone: the kernels compute in fp32 and serve these
        raise PorterError(
            f"{path}: DTYPES lists {', '.join(out)}; porter's kernels compute in "
            f"fp32 and serve {', '.join(FLOAT_DTYPES)}: list one of those"
        )
    # The first is the capture dtype: a float64 listed first would be captured
    # in, and the scaffold refuses float64 (the kernels compute in fp32).
    return sorted(out, key=lambda n: n not in FLOAT_DTYPES)
