"""Parity checks: a ported kernel against eager PyTorch, both against a float64 reference.

Verdict (docs/testing.md): per element, the error is |out - ref64| / (|ref64| + scale),
scale the median magnitude of the finite nonzero reference values in the element's
row (along the first dimension), or of the whole output's finite values where that
is larger: relative for large elements, absolute at the row's scale near zero
(cancellation in x - mean, or in a matmul of a row of huge values, must not turn
rounding noise into a huge relative error).
The scaffold passes when its worst error is at most FACTOR times eager's worst
error (same inputs, same dtype) plus the dtype's floor. NaN in the scaffold
passes only where the float64 reference or eager is NaN, or where the element is
beyond the dtype: eager overflows there, or misses float64 by more than
|ref64| + scale. Such elements are not scored.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import json
import math
import os
import random
import re
import sys
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

import torch

from porter.testing.fidelity import InterpreterUnsupported
from porter.testing.launches import jit_kernel

FACTOR = 4.0
# Inputs of a scenario hold at most this many elements: the CPU interpreter
# runs about 40k elements in 0.1 s.
SCENARIO_BUDGET = 1 << 18
# An int argument this far from its captured value is past int32.
WIDE_INT = 2**32
# An int argument as a shift or a power of two's exponent: 2 ** 60 - 1 is past
# float64's exact integers, where a kernel computing 1 << n in float64 rounds.
SHIFT_INT = 60

FLOOR = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}
ATOL = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 1e-2}
# An output whose typical magnitude is at most this share of its operands' is
# float64's rounding of a cancellation, scored at the operands' magnitude.
CANCELLED = 1e-12
INT_SENTINEL = -123
# An integer output may legitimately hold INT_SENTINEL (a quantizer's -123):
# where it does, the scaffold runs again with this poison, and only elements
# that follow the poison (-123, then 77) were never written.
INT_SENTINEL_2 = 77
INT_TOLERANCE = 1  # vLLM's int8 quantization tests allow the same one step
# A quantizer's codes and zero points (int8 to int32) round, and a tie may flip
# on a few elements; indices, floor divisions and masks (int64, bool) are exact.
EXACT_INTS = (torch.int64, torch.bool)
UNSIGNED = (torch.uint8, torch.uint16)
NARROW_INTS = (torch.int8, torch.int16, *UNSIGNED)


@dataclass
class Scenario:
    dtype: str
    sizes: dict[str, int]
    # contiguous | offset | row_sliced | padded (every axis of a larger
    # tensor: no stride what a packed tensor's is) | row_step (every other row)
    # | far_rows (the first axis's stride past the rest, the others the input's)
    layout: str = "contiguous"
    values: str = "random"  # random | difficult | offset
    # A KernelBench module as constructed ("", training), "eval" or "train".
    mode: str = ""
    # Tensor arguments made in another dtype, by position (bf16 slopes beside
    # fp32 scores): eager promotes, the scaffold follows or refuses.
    cast: dict[int, str] = field(default_factory=dict)
    # Constructor arguments changed, by position (a float alpha or eps).
    init: dict[int, Any] = field(default_factory=dict)
    # Non-tensor call arguments changed, by position (a scale passed to forward).
    args: dict[int, Any] = field(default_factory=dict)
    # An int tensor argument, by position, with one element far past any size
    # (a token id, a slot, a position): where eager raises, the scaffold must too.
    far_index: int | None = None
    # An int tensor argument, by position, with its last element -1: eager
    # wraps it (x[i]) or raises (index_select, gather); the scaffold must agree.
    negative_index: int | None = None
    # A tensor argument's size-1 axis, as (position, axis), made as long as the
    # first tensor's axis it broadcasts against (a [1, H] bound given per row).
    widen: tuple[int, int] | None = None
    # A tensor argument, by position, made one longer along a dim it shares
    # with another (a scatter's destination of more rows than its index).
    untie: tuple[int, str] | None = None
    # The scaffold may refuse it in its own words (NotImplementedError): the
    # other module mode, other constructor arguments, an empty batch.
    optional: bool = False

    @property
    def id(self) -> str:
        dims = "-".join(f"{k}{v}" for k, v in self.sizes.items())
        mode = f"-{self.mode}" if self.mode else ""
        init = "".join(f"-init{i}={_short(v)}" for i, v in self.init.items()) + "".join(
            f"-arg{i}={_short(v)}" for i, v in self.args.items()
        )
        cast = "".join(f"-cast{i}={d}" for i, d in self.cast.items())
        far = "" if self.far_index is None else f"-far_index{self.far_index}"
        if self.negative_index is not None:
            far += f"-negative_index{self.negative_index}"
        if self.widen is not None:
            far += f"-widen{self.widen[0]}.{self.widen[1]}"
        if self.untie is not None:
            far += f"-untie{self.untie[0]}.{self.untie[1]}"
        return f"{self.dtype}-{dims}-{self.layout}-{self.values}{mode}{init}{cast}{far}"


def other_float(value: float) -> float:
    """Another value for a float argument (never the same: -0.5 is a fixed
    point of 1.5 v + 0.25)."""
    new = value * 1.5 + 0.25
    return new if new != value else value + 1.0


def _other_init(value: Any) -> Any:
    """Another value for a float constructor argument, or for a list or tuple
    of floats (a config's per-channel factors) each item changed; None for
    any other."""
    if isinstance(value, float):
        return other_float(value)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, float) for v in value)
    ):
        return type(value)(other_float(v) for v in value)
    return None


# Values where references branch on a float argument in Python (a greedy
# temperature of 0, top_p below 1): each is taken, or refused in the
# scaffold's words, never computed on the captured side's kernels.
BRANCH_FLOATS = (0.0, 1.0)
# Token counts past where references switch between decode and prefill code
# in Python (`if x.shape[0] <= 64`): the largest that fits SCENARIO_BUDGET.
BRANCH_TOKENS = (2048, 1024, 512, 300)


def _others(value, candidates) -> list:
    """The candidates other than `value`, each once, in order."""
    out = []
    for new in candidates:
        if new != value and new not in out:
            out.append(new)
    return out


def _casts(values: list[Any]) -> list[tuple[int, str]]:
    """(position, another dtype) of each tensor argument of the call's
    `values` but the first float: float32 and bfloat16 trade places, float16
    goes to float32, ints go to float32 (fp8 codes and bools stay)."""
    trade = {
        torch.float32: "bfloat16",
        torch.bfloat16: "float32",
        torch.float16: "float32",
        torch.int64: "float32",
        torch.int32: "float32",
    }
    tensors = [(i, v) for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    first = next((i for i, v in tensors if v.is_floating_point()), None)
    return [(i, trade[v.dtype]) for i, v in tensors if i != first and v.dtype in trade]


def other_floats(value: float) -> list[float]:
    """The values a float argument's scenarios take instead of `value`."""
    return _others(value, (other_float(value), *BRANCH_FLOATS))


def other_ints(value: int) -> list[int]:
    """The values an int argument's scenarios take instead of `value`: one
    more, double (one more moves no floor or ceiling of a log or a ratio the
    kernels may hold as a constant), its negative (x[:, start:] wraps) and 0
    (`ids // shard` raises in eager)."""
    return _others(value, (value + 1, 2 * value, -value, 0))


def _short(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value).replace(" ", "")


@dataclass
class Case:
    """One case folder: its manifest, reference and scaffold."""

    folder: Path
    manifest: dict[str, Any]
    reference: Any
    kernel: Any = None
    _ref: Any = field(default=None, repr=False)
    _counts: dict = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def dtypes(self) -> list[str]:
        """The reference's dtypes the scaffold serves (a capture whose graph
        reads its dtype's limits serves that dtype alone)."""
        served = self.manifest.get("dtypes_served") or list(FLOOR)
        return [d for d in self.manifest["dtypes"] if d in FLOOR and d in served]

    def runtime_dims(self) -> list[dict[str, Any]]:
        return [d for d in self.manifest["dims"] if d["role"] == "runtime"]

    def model_dims(self) -> list[dict[str, Any]]:
        return [
            d for d in self.manifest["dims"] if d["role"] == "model" and d["symbolic"]
        ]

    def scenarios(self) -> list[Scenario]:
        """Shapes x dtypes x layouts x values, chosen to stay fast on the CPU
        interpreter while covering decode, zero tokens, masks, other model
        sizes, views on every axis, the other module mode and other
        constructor arguments. Scenarios whose inputs would hold more than
        SCENARIO_BUDGET elements are left out."""
        base = {d["name"]: d["size"] for d in self.manifest["dims"]}
        out = []
        runtime = self.runtime_dims()
        # A per-call dim torch.compile fixed (a Python loop over it): the
        # scaffold serves the captured size alone and refuses the others.
        fixed = {d["name"]: d["size"] for d in runtime if not d.get("symbolic", True)}

        def at(n: int) -> dict[str, int]:
            return {d["name"]: fixed.get(d["name"], n) for d in runtime}

        free = [d for d in runtime if d["name"] not in fixed]
        small = self._small_sizes(base, at, free)
        free_branched = bool(self.branched_dims() & {d["name"] for d in free})
        sweep = sorted({0, 1, 2, 7, 31, *[d["size"] for d in runtime]})
        for dtype in self.dtypes:
            for n in sweep:
                sizes = {**base, **{d["name"]: n for d in runtime}}
                # An empty batch may be refused where eager special-cases it
                # (a BatchNorm leaves its running statistics alone).
                refusable = n == 0 or any(n != size for size in fixed.values())
                out.append(Scenario(dtype, sizes, optional=refusable))
            # Several per-call dims all at n meet few sizes their ties allow
            # (`x.view(n, 4, -1)`: hidden % 4 == 0; seq = 2 * heads): each at
            # twice and three times its captured size keeps every such tie.
            for k in (2, 3) if len(free) > 1 else ():
                sizes = {**base, **{d["name"]: k * d["size"] for d in free}}
                out.append(Scenario(dtype, sizes, optional=free_branched))
            # ...and each alone at 0, 1 and three times its size, the others
            # at theirs: a slice by one of another's length (T5's bias[-q:]:
            # eager's -0 is the whole axis, a longer q is clamped) is wrong
            # only there; refused in one line, or right.
            for d in free if len(free) > 1 and dtype == self.dtypes[0] else ():
                for n in (0, 1, 3 * d["size"]):
                    sizes = {**base, d["name"]: n}
                    if self.fits(sizes):
                        out.append(Scenario(dtype, sizes, optional=True))
            # Many tokens, past a branch on their count; refused in the
            # scaffold's words where the capture saw the other side.
            for n in BRANCH_TOKENS if runtime else ():
                sizes = {**base, **{d["name"]: n for d in runtime}}
                if self.fits(sizes):
                    out.append(Scenario(dtype, sizes, optional=True))
                    break
            # A scaffold with a persistent and a looped kernel switches at
            # MAX_FUSED_COLS: one row size past it keeps the looped kernel tested
            # (only for the dims reductions run over: others would just grow).
            fused = max_fused_cols(self.kernel)
            split = split_min_cols(self.kernel)
            rows = self.reduction_dims()
            branched = self.branched_dims()
            for d in self.model_dims():
                # a prime, either side of a power of two, and twice the captured
                # size (even: dims like head_dim that must split in halves)
                sizes_to_try = [5, 97, 1023, 1025, 2 * d["size"]]
                if dtype == self.dtypes[0]:
                    # and 2, where a size's Python math may divide by dim - 2
                    # (HF's dynamic NTK): eager raises, the scaffold refuses;
                    # and 0, which a kernel dividing by the size as a constant
                    # does not compile at on a GPU: refused in one line, or right
                    sizes_to_try[:0] = [0, 2]
                wide = fused and d["name"] in rows and max(sizes_to_try) <= fused
                if wide:
                    sizes_to_try.append(fused + 2)
                for size in sizes_to_try:
                    sizes = {
                        **base,
                        d["name"]: size,
                        **at(3),
                    }
                    # a size past a branch the reference takes on it in
                    # Python: refused in the scaffold's words
                    # (at 5, below a literal slice: refused in one line, or right)
                    optional = d["name"] in branched or size in (0, 2, 5)
                    out.append(Scenario(dtype, sizes, optional=optional))
                if wide:
                    # The looped kernel's own handling of inf and NaN (a
                    # running max, an online sum) is only reached this wide;
                    # difficult values need 5 rows (one of each kind).
                    sizes = {**sizes, **at(5)}
                    out.append(
                        Scenario(
                            dtype,
                            sizes,
                            values="difficult",
                            optional=d["name"] in branched,
                        )
                    )
                if split and d["name"] in rows:
                    # A row this wide takes the split launch: uneven slices,
                    # splits past the row's end (one row: the scenario budget).
                    sizes = {**base, d["name"]: split + 3, **at(1)}
                    out.append(Scenario(dtype, sizes, optional=d["name"] in branched))
            # Each per-model dim a reduction runs along, empty: eager's max of
            # nothing raises, a sum gives 0; the scaffold follows or refuses.
            for d in self.model_dims() if dtype == self.dtypes[0] else ():
                if d["name"] in rows:
                    sizes = {**base, d["name"]: 0, **at(3)}
                    out.append(Scenario(dtype, sizes, optional=True))
            # Each size at which Dynamo fixed a derived size of 0 or 1 that the
            # scaffold serves (x.view(n, 4, -1) at hidden = 4; cols // 2 == 1).
            for edge in self.manifest.get("edge_sizes", []):
                out.append(Scenario(dtype, {**base, **at(3), **edge}))
            for layout in LAYOUTS:
                out.append(Scenario(dtype, small, layout=layout))
            out.append(Scenario(dtype, small, values="difficult"))
            out.append(Scenario(dtype, small, values="offset"))
            # Each float or int argument of the call changed (a scale passed
            # to forward, a defaulted eps, a bucket count; a float to None):
            # taken at run time, or refused in the scaffold's words.
            values = self.call_values(small, dtype)
            for i, value in enumerate(values):
                if isinstance(value, float):
                    # None too: `cap: float | None = 30.0` takes another path
                    others = [*other_floats(value), None]
                elif isinstance(value, int) and not isinstance(value, bool):
                    # and past every axis (a slice x[:, start:start + n]
                    # reaching past the row: eager clamps it)
                    past = value + max(small.values(), default=0) + 1
                    others = other_ints(value) + [past]
                    # and just short of the longest fixed axis (a buffer of
                    # positions sliced at an offset: offset + n past its end)
                    near = self._longest_axis(small, dtype) - 2
                    if near > 0 and near not in others and near != value:
                        others.append(near)
                    # and past int32, where eager wraps it to an int32
                    # tensor's dtype (check_parity asks the scaffold first)
                    others.append(WIDE_INT + value)
                    if SHIFT_INT not in others and SHIFT_INT != value:
                        others.append(SHIFT_INT)
                else:
                    continue
                out += [
                    Scenario(dtype, small, args={i: new}, optional=True)
                    for new in others
                ]
            # Each tensor argument that may be None (`residual=None`) as None:
            # eager takes another path, the scaffold follows or refuses.
            params = call_params(self) if self.reference is not None else []
            for i, value in enumerate(values):
                if (
                    isinstance(value, torch.Tensor)
                    and i < len(params)
                    and params[i].default is None
                ):
                    out.append(Scenario(dtype, small, args={i: None}, optional=True))
            # Each int tensor argument holding an index far out of range.
            out += index_scenarios(values, dtype, small)
            # Each size-1 axis of a tensor argument made as long as the axis
            # it broadcasts against: eager broadcasts, the scaffold follows or refuses.
            for pos, axis in _widenable(values):
                out.append(Scenario(dtype, small, widen=(pos, axis), optional=True))
            # Each tensor argument one longer along a dim it shares with
            # another: eager serves it (a scatter into a destination of more
            # rows than its index) or raises; the scaffold follows or refuses.
            for pos, name in self._untied(small) if dtype == self.dtypes[0] else ():
                out.append(Scenario(dtype, small, untie=(pos, name), optional=True))
            # Each tensor argument but the first float in another dtype.
            for i, other in _casts(values):
                out.append(Scenario(dtype, small, cast={i: other}, optional=True))
            if self.manifest.get("reference_kind") == "kernelbench":
                # The other module mode, and each float constructor argument
                # changed, a defaulted one too: followed, or refused in the
                # scaffold's own words.
                other = "eval" if self.manifest.get("training", True) else "train"
                out.append(Scenario(dtype, small, mode=other, optional=True))
                for i, value in enumerate(self.reference.init_values(small)):
                    new = _other_init(value)
                    if new is not None:
                        out.append(Scenario(dtype, small, init={i: new}, optional=True))
        # Each dtype of the reference the capture does not serve, once:
        # refused in the scaffold's words, or right; never the served
        # dtype's numbers (a mask of torch.finfo(like.dtype).min).
        served = set(self.dtypes)
        for dtype in self.manifest["dtypes"]:
            if dtype in FLOOR and dtype not in served:
                out.append(Scenario(dtype, small, optional=True))
        # Each dtype the scaffold serves beyond the reference's own list: the
        # captured call and difficult values, right (a buffer Inductor reused
        # for fp32 values, in the inputs' dtype, rounds them in bf16).
        for dtype in self.manifest.get("dtypes_served", []):
            if dtype in FLOOR and dtype not in self.manifest["dtypes"]:
                out.append(Scenario(dtype, base))
                out.append(Scenario(dtype, small, values="difficult"))
        return [sc for sc in out if self.fits(sc.sizes)]

    def _untied(self, sizes: dict[str, int]) -> list[tuple[int, str]]:
        """(position, dim) of each tensor argument with an axis of a dim
        another tensor argument has too (the dim free to change)."""
        if self.reference is None:
            return []
        position = {p.name: i for i, p in enumerate(call_params(self))}
        out = []
        for d in self.manifest["dims"]:
            tensors = {t for t, _ in d["axes"] if t in position}
            if d.get("symbolic", True) and d["name"] in sizes and len(tensors) > 1:
                out += [(position[t], d["name"]) for t in sorted(tensors)]
        return out

    def _longest_axis(self, sizes: dict[str, int], dtype: str) -> int:
        """The longest axis of the call's tensors and a module's own."""
        if self.reference is None:
            return 0
        tensors = [v for v in self.call_values(sizes, dtype) if torch.is_tensor(v)]
        if self.manifest.get("reference_kind") == "kernelbench":
            try:
                with torch.random.fork_rng(devices=[]):  # build seeds torch
                    model = self.reference.build(sizes)
                tensors += [*model.parameters(), *model.buffers()]
            except Exception:  # noqa: BLE001 - a module that does not build here
                pass
        return max((n for t in tensors for n in t.shape), default=0)

    def call_values(self, sizes: dict[str, int], dtype: str) -> list[Any]:
        """The call's arguments as make_inputs gives them, then the defaults
        of the parameters past them (eps)."""
        if self.reference is None:
            return []
        values = list(self.reference.make_inputs(sizes, dtype, "meta"))
        params = call_params(self)
        values += [p.default for p in params[len(values) :]]
        return values

    def _small_sizes(self, base, at, free) -> dict[str, int]:
        """The sizes of the layout and value scenarios: every per-call dim at
        5, or where eager rejects that (a tie between several of them, as
        `x.view(n, 4, -1)` makes), the first at 5 and the others at twice
        their captured size, else all at twice theirs (a multiple of an
        argument: `x.view(b, t // chunk_size, chunk_size, h)` rejects 5, and
        every layout scenario was skipped there)."""
        first = {**base, **at(5)}
        if not free or self.reference is None:
            return first
        twice = {d["name"]: 2 * d["size"] for d in free}
        tries = [first, {**first, **twice, free[0]["name"]: 5}][: len(free)]
        for sizes in tries:
            if self.accepts(sizes):
                return sizes
        return {**first, **twice}

    def accepts(self, sizes: dict[str, int]) -> bool:
        """Whether eager runs the reference at `sizes` (on the CPU)."""
        dtype = self.dtypes[0]
        try:
            values = self.reference.make_inputs(sizes, dtype, "cpu")
            run_reference(self, list(values), dtype, "cpu", sizes)
        except Exception:  # noqa: BLE001 - any rejection
            return False
        return True

    def fits(self, sizes: dict[str, int]) -> bool:
        """Whether the inputs at `sizes` hold at most SCENARIO_BUDGET elements."""
        if self.reference is None:
            return True
        if self._grown_elements(sizes) > 64 * SCENARIO_BUDGET:
            return False
        elements = self._elements(sizes)
        # sizes the reference rejects: checked, then skipped
        return elements is None or elements <= SCENARIO_BUDGET

    def _elements(self, sizes: dict[str, int]) -> int | None:
        """Elements of the inputs at `sizes`, None where make_inputs rejects them."""
        key = tuple(sorted(sizes.items()))
        if key not in self._counts:
            try:
                values = self.reference.make_inputs(sizes, self.dtypes[0], "meta")
                count = sum(v.numel() for v in values if isinstance(v, torch.Tensor))
            except Exception:  # noqa: BLE001
                count = None
            self._counts[key] = count
        return self._counts[key]

    def _grown_elements(self, sizes: dict[str, int]) -> float:
        """The inputs' elements at `sizes` extrapolated from the captured ones:
        each dim far past its captured size grows them by its own power, read
        at twice that size. make_inputs is never asked for sizes whose inputs
        grow with a dim's fourth power (Swin's ws x ws windows at 1023:
        6.6e12 elements, which even a meta call may build on the CPU first,
        and a host that overcommits memory was killed filling)."""
        base = {d["name"]: d["size"] for d in self.manifest["dims"]}
        start = self._elements(base)
        grown = float(start or 0)
        for name, size in sizes.items():
            was = base.get(name) or 0
            if not start or not was or size <= 4 * was:
                continue
            twice = self._elements({**base, name: 2 * was})
            if twice and twice > start:
                grown *= (size / was) ** math.log2(twice / start)
        return grown

    def branched_dims(self) -> set[str]:
        """Dims the reference branches on in Python (the manifest's guards name
        one of their axes, `logits.shape[1] <= 100`)."""
        guards = " ".join(self.manifest.get("guards", []))
        return {
            d["name"]
            for d in self.manifest["dims"]
            if any(
                re.search(rf"\b{re.escape(name)}\.shape\[{axis}\]", guards)
                for name, axis in d.get("axes", [])
            )
        }

    def reduction_dims(self) -> set[str]:
        """Dims a reduction kernel runs along (its r0_numel is that dim)."""
        out = set()
        for module in self.manifest.get("modules", []):
            for step in module.get("steps", []):
                for arg in step.get("args", []) if step.get("kind") == "launch" else []:
                    if arg.get("param") == "r0_numel" and arg.get("expr"):
                        out.add(arg["expr"])
        return out

    def large_offset_scenario(self) -> Scenario:
        """Enough rows that the largest input holds more than 2^31 elements."""
        base = {d["name"]: d["size"] for d in self.manifest["dims"]}
        runtime = self.runtime_dims()
        dtype = next(
            (d for d in ("bfloat16", "float16") if d in self.dtypes), self.dtypes[0]
        )
        if not runtime:
            return Scenario(dtype, base)
        probe = self.reference.make_inputs(
            {**base, runtime[0]["name"]: 1}, dtype, "meta"
        )
        per_row = max(v.numel() for v in probe if isinstance(v, torch.Tensor))
        rows = 2**31 // max(per_row, 1) + 3
        return Scenario(dtype, {**base, runtime[0]["name"]: rows}, values="edge_rows")


def load_case(path: str | os.PathLike) -> Case:
    """Load the case folder holding `path` (a test file, or the folder itself)."""
    from porter.errors import PorterError
    from porter.reference import case_reference
    from porter.store import read_manifest

    folder = Path(path)
    folder = folder if folder.is_dir() else folder.parent
    manifest = read_manifest(folder)
    ref = case_reference(folder, manifest)
    if not (folder / "kernel.py").is_file():
        raise PorterError(
            f"{folder}: kernel.py is missing; run porter port {folder} to write it again"
        )
    kernel = import_kernel(folder / "kernel.py", f"porter_case_{folder.name}_kernel")
    return Case(folder, manifest, ref, kernel)


def import_kernel(
    path: str | os.PathLike, name: str, common: str | os.PathLike | None = None
):
    """Import the module file `path` (a case's kernel.py, a variant of one) as
    `name`, inside packages for its folder and that folder's parent, so that its
    `from ..common import ...` reads the common.py beside its case folder or,
    where there is none, the file `common` (a variant written elsewhere)."""
    from porter.bench.fingerprint import uses_common
    from porter.errors import PorterError
    from porter.store import COMMON

    path = Path(path).resolve()
    folder, root = path.parent, path.parent.parent
    if common is not None and not (root / COMMON).is_file():
        root = Path(common).resolve().parent
    if uses_common(path.read_bytes()) and not (root / COMMON).is_file():
        raise PorterError(
            f"{path} imports from common.py, which {root} lacks; run porter port on "
            "its case to write it again"
        )
    # One package per root folder (common's) and interpreter mode: the cases
    # under it share one common module, whose @triton.jit and EXP_FTZ read
    # the mode once, at import.
    import triton

    key = f"{root}|{bool(triton.knobs.runtime.interpret)}"
    package = "porter_root_" + hashlib.sha256(key.encode()).hexdigest()[:12]
    _package(package, root)
    package += "." + re.sub(r"\W", "_", folder.name)
    _package(package, folder)
    spec = importlib.util.spec_from_file_location(f"{package}.{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def max_fused_cols(kernel) -> int | None:
    """The row size past which the kernel's launcher takes its looped kernel:
    its own MAX_FUSED_COLS, or common.py's where row_launch picks the form;
    None for a scaffold without a looped kernel."""
    if hasattr(kernel, "MAX_FUSED_COLS"):
        return kernel.MAX_FUSED_COLS
    if hasattr(kernel, "row_launch"):
        return getattr(kernel.row_launch, "__globals__", {}).get("MAX_FUSED_COLS")
    return None


def split_min_cols(kernel) -> int | None:
    """The narrowest row (a multiple of 64) that one row in bf16 and in fp32
    takes the kernel's split-row form at, by common.py's own split_count from
    its SPLIT_MIN_COLS; None for a scaffold without one."""
    if all(jit_kernel(v) is v for v in vars(kernel).values()):
        return None
    scope = getattr(kernel.row_launch, "__globals__", {})
    start, count = scope.get("SPLIT_MIN_COLS"), scope.get("split_count")
    if start is None or count is None:
        return start
    try:
        return next(
            (
                n
                for n in range(start, 4 * start, 64)
                if min(count(1, n, 2), count(1, n, 4)) > 1
            ),
            start,
        )
    except TypeError:  # a common.py whose split_count takes the sizes alone
        return start


def common_module(kernel):
    """The common.py module a kernel module imported by import_kernel takes its
    launch rules from (its launch constants are patched there)."""
    root = kernel.__name__.split(".", 1)[0]
    return sys.modules[f"{root}.common"]


def _package(name: str, folder: Path) -> None:
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(folder)]
        package.__package__ = name
        sys.modules[name] = package


def new_seed() -> int:
    """A fresh seed per run; PORTER_SEED replays a failure."""
    env = os.environ.get("PORTER_SEED")
    return int(env) if env else random.SystemRandom().randrange(2**31)


# ---------------------------------------------------------------- inputs


def _outgrows_memory(case: Case, sc: Scenario, device: str) -> str | None:
    """Why the scenario's inputs cannot be made here, or None: a float64 copy
    of them would outgrow the machine. A size a dim takes in every scenario
    (1023) is 10^12 elements where inputs grow with its fourth power (Swin's
    ws x ws windows), and a machine that overcommits memory is killed filling
    them, taking every later test with it."""
    elements = case._elements(sc.sizes)  # fits() counted them at collection
    if elements is None:
        return None  # make_inputs rejects the sizes: the real call says why
    have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if device != "cpu" and torch.cuda.is_available():
        have = min(have, torch.cuda.get_device_properties(device).total_memory)
    if 8 * elements <= have:
        return None
    return (
        f"the inputs of {sc.id} hold {elements:.3g} elements, more than this "
        f"machine's {have / 2**30:.0f} GiB holds in float64: not run"
    )


def make_inputs(
    case: Case, sc: Scenario, device: str, seed: int, filled: bool = True
) -> list[Any]:
    """The scenario's inputs; filled=False gives uninitialized tensors of the
    same shapes, strides, dtypes and layout (jitcheck's keys-only launches)."""
    if not filled:
        shapes = case.reference.make_inputs(sc.sizes, sc.dtype, "meta")
        return [
            (
                _layout(_empty_like(v, device), sc.layout, copy=False)
                if isinstance(v, torch.Tensor)
                else v
            )
            for v in shapes
        ]
    too_large = _outgrows_memory(case, sc, device)
    if too_large:
        raise ReferenceRejects(too_large)
    torch.manual_seed(seed)
    try:
        values = case.reference.make_inputs(sc.sizes, sc.dtype, device)
    except Exception as err:
        # The reference file's own make_inputs (one that writes d[0, 1] at zero
        # tokens): sizes it does not serve, skipped like those the reference rejects.
        raise ReferenceRejects(
            f"the reference's make_inputs rejects {sc.id} ({type(err).__name__}: {err})"
        ) from err
    if sc.untie is not None:
        pos, name = sc.untie
        longer = {**sc.sizes, name: sc.sizes[name] + 1}
        values[pos] = case.reference.make_inputs(longer, sc.dtype, device)[pos]
    values = with_args(case, values, sc.args)
    values = [
        v.to(getattr(torch, sc.cast[i])) if i in sc.cast else v
        for i, v in enumerate(values)
    ]
    if sc.far_index is not None:
        values[sc.far_index] = _last_set(values[sc.far_index], FAR_INDEX)
    if sc.negative_index is not None:
        values[sc.negative_index] = _last_set(values[sc.negative_index], -1)
    if sc.widen is not None:
        values[sc.widen[0]] = _widened(values, *sc.widen)
    if sc.values in ("difficult", "offset"):
        # Only the first float input (the activation): weights, tables like cos/sin
        # and scales come from the model, well-scaled; extreme values arrive in
        # activations. Huge cos and sin made q*c - q2*s cancel to exactly 0 in
        # eager and to the product's rounding error under the GPU's FMA.
        change = _difficult if sc.values == "difficult" else _offset
        # fp8 codes have no arithmetic (a KV cache stored in fp8 e4m3); an
        # expanded tensor (a per-row scale broadcast along the row) is no
        # activation, and changed it would come back contiguous: a layout the
        # kernels refuse where they read its stride-0 axis once
        first = next(
            (
                i
                for i, v in enumerate(values)
                if _is_float(v) and v.element_size() > 1 and not is_expanded(v)
            ),
            None,
        )
        values = [change(v) if i == first else v for i, v in enumerate(values)]
    return [_layout(v, sc.layout) if isinstance(v, torch.Tensor) else v for v in values]


def is_expanded(t: torch.Tensor) -> bool:
    """Whether t repeats its elements along an axis (stride 0, size over 1)."""
    return any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape))


def call_params(case: Case) -> list[inspect.Parameter]:
    """The reference's call parameters (forward's without self)."""
    return case.reference.call_params()


def with_args(case: Case, values: list[Any], args: dict[int, Any]) -> list[Any]:
    """`values` with the call arguments `args` names by position changed; an
    argument past them (a defaulted eps) is passed, the ones between at their
    defaults."""
    values = list(values)
    if args:
        params = call_params(case)
        for i in sorted(args):
            while len(values) < i:
                values.append(params[len(values)].default)
            if i == len(values):
                values.append(args[i])
            else:
                values[i] = args[i]
    return values


# Past any size a test makes, and small enough that index * stride stays in int64.
FAR_INDEX = 1 << 20


def index_scenarios(values: list[Any], dtype: str, sizes: dict) -> list[Scenario]:
    """For each int tensor argument, a call with an index far out of range
    and, where signed, one with a negative index: eager raises or wraps, the
    scaffold follows or refuses."""
    out = []
    for i, value in enumerate(values):
        if is_index_like(value):
            out.append(Scenario(dtype, sizes, far_index=i, optional=True))
            if value.dtype.is_signed:
                out.append(Scenario(dtype, sizes, negative_index=i, optional=True))
    return out


def is_index_like(v: Any) -> bool:
    """An int tensor (not bool) with elements: it may hold indices."""
    return (
        isinstance(v, torch.Tensor)
        and not v.is_floating_point()
        and not v.is_complex()
        and v.dtype != torch.bool
    )


def _last_set(t: torch.Tensor, value: int) -> torch.Tensor:
    """t with its last element set to value (at most its dtype's largest),
    in a copy."""
    if t.numel() == 0:
        return t
    t = t.clone()
    t[(-1,) * t.dim()] = min(value, torch.iinfo(t.dtype).max)
    return t


def _against(values: list[Any], pos: int, axis: int) -> int:
    """The size of the first tensor's axis that values[pos]'s `axis` broadcasts
    against (aligned from the right), or 1 where there is none."""
    first = next((v for v in values if isinstance(v, torch.Tensor)), None)
    t = values[pos]
    lead = first.dim() - t.dim() + axis if first is not None else -1
    return int(first.shape[lead]) if first is not None and lead >= 0 else 1


def _widenable(values: list[Any]) -> list[tuple[int, int]]:
    """(position, axis) of each size-1 axis of a tensor argument but the first
    that broadcasts against a longer axis of the first tensor."""
    tensors = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    return [
        (i, axis)
        for i in tensors[1:]
        for axis, size in enumerate(values[i].shape)
        if size == 1 and _against(values, i, axis) > 1
    ]


def _widened(values: list[Any], pos: int, axis: int) -> torch.Tensor:
    """values[pos] repeated along `axis`, each copy scaled by its own factor
    (1, 1.125, 1.25...): a kernel reading only the first copy is told."""
    t = values[pos]
    n = _against(values, pos, axis)
    shape = [1] * t.dim()
    shape[axis] = n
    factors = 1 + torch.arange(n, device=t.device).reshape(shape) / 8
    wide = t.expand(*[n if a == axis else -1 for a in range(t.dim())])
    if t.is_floating_point():
        return (wide.double() * factors).to(t.dtype).contiguous()
    return wide.contiguous()


def _is_float(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and v.is_floating_point()


def _shapes(outputs) -> list:
    """Each output's shape (None for what is not a tensor)."""
    return [tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in outputs]


def _difficult(t: torch.Tensor) -> torch.Tensor:
    """Large magnitudes, tiny and subnormal values, mixed signs, inf and NaN.

    Each kind gets rows of its own (row 0 large, 1 inf, 2 NaN, 3 tiny and
    subnormal, the rest mixed signs), so one row cannot hide the others.
    """
    info = torch.finfo(t.dtype)
    # A 1-d activation is rows of one element each (x // y of two vectors:
    # floor(inf / y) is inf, eager's NaN).
    if t.dim() == 0 or t.shape[0] < 5 or (t.dim() > 1 and t.numel() < 16):
        return t
    rows = t.detach().clone().reshape(t.shape[0], -1)
    # Near the dtype's limit, but a row's sum of squares in fp32 (what norms
    # compute in) must stay finite, or no implementation has a right answer.
    fp32_max = torch.finfo(torch.float32).max
    big = min(info.max / 4, math.sqrt(fp32_max / rows.shape[1]) / 4)
    # A power of two: its products with model values (cos, sin, weights) are
    # exact, so where they cancel (rotary's q*c - q2*s) eager and a kernel
    # whose compiler fuses one product into an FMA round alike. With big's
    # fp32 mantissa all ones, that row's check failed for about 6% of seeds
    # under an emulated FMA (once on the H200), and with magnitudes spread
    # over [big/2, big] for 15% (tests/test_parity_inputs.py).
    big = 2.0 ** math.floor(math.log2(big))
    rows[0] = big * torch.sign(rows[0] + 0.5)
    rows[1, 0] = float("inf")
    rows[2, -1] = float("nan")
    rows[3] = info.tiny * torch.randn_like(rows[3])  # tiny, many subnormal
    rows[3, ::2] = info.smallest_normal / 4  # subnormal
    rows[4:] = torch.where(
        torch.rand_like(rows[4:]) < 0.5, -rows[4:].abs(), rows[4:].abs()
    )
    return rows.view(t.shape)


def _offset(t: torch.Tensor) -> torch.Tensor:
    """A large common value under small variations: cancellation in x - mean,
    exp(x - max), and rounding of intermediates in a low-precision dtype show."""
    return t + 64.0


def _empty_like(t: torch.Tensor, device: str) -> torch.Tensor:
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=device)


# The layouts each input takes besides its own, in scenarios of their own.
LAYOUTS = ("offset", "row_sliced", "padded", "row_step", "far_rows", "column_major")


def _layout(t: torch.Tensor, layout: str, copy: bool = True) -> torch.Tensor:
    if is_expanded(t):
        return t  # an expanded bias: the caller's own layout, kept
    if layout == "offset":
        # one element in: breaks 16-byte alignment of the data pointer
        storage = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
        view = storage[1:].view(t.shape)
    elif layout == "row_sliced" and t.dim() >= 2:
        padded = torch.empty(
            *t.shape[:-1], t.shape[-1] + 3, dtype=t.dtype, device=t.device
        )
        view = padded[..., : t.shape[-1]]
    elif layout == "padded" and t.dim() >= 1:
        # A slice of a tensor one larger on every axis: q sliced from a fused
        # qkv, a head slice of a cache.
        padded = torch.empty([n + 1 for n in t.shape], dtype=t.dtype, device=t.device)
        view = padded[tuple(slice(0, n) for n in t.shape)]
    elif layout == "row_step" and t.dim() >= 1:
        stepped = torch.empty(
            2 * t.shape[0], *t.shape[1:], dtype=t.dtype, device=t.device
        )
        view = stepped[::2]
    elif layout == "column_major" and t.dim() >= 2:
        # Dense, the last two axes swapped in memory (x.t().contiguous().t()):
        # an extern call's outputs follow such an input's layout (a sort's).
        swapped = torch.empty(
            *t.shape[:-2], t.shape[-1], t.shape[-2], dtype=t.dtype, device=t.device
        )
        view = swapped.transpose(-1, -2)
    elif layout == "far_rows" and t.dim() >= 2:
        # The first axis's stride past the rest of the tensor, every other
        # axis's as the input has it (a transposed x keeps its order): a
        # kernel stepping a row index merged over two axes by it is told.
        inner = t.stride()[1:]
        if any(st <= 0 and n > 1 for st, n in zip(inner, t.shape[1:])):
            inner = torch.empty(t.shape[1:]).stride()
        span = 1 + sum((n - 1) * st for n, st in zip(t.shape[1:], inner))
        step = -(-(span + 1) // 8) * 8
        storage = torch.empty(step * t.shape[0], dtype=t.dtype, device=t.device)
        view = storage.as_strided(t.shape, (step, *inner))
    else:
        return t
    if copy:
        view.copy_(t)
    return view


# ---------------------------------------------------------------- running


@contextlib.contextmanager
def poisoned_allocations(
    int_poison: int = INT_SENTINEL, float_poison: float = float("nan")
) -> Iterator[None]:
    """Every tensor the scaffold allocates starts as NaN, or `float_poison`
    (`int_poison` for integers), so an element the kernel never writes cannot
    pass."""
    originals = {n: getattr(torch, n) for n in ("empty", "empty_strided", "empty_like")}

    def poison(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point():
            t.fill_(float_poison)
        elif t.dtype != torch.bool:
            t.fill_(int_poison)
        return t

    def wrap(fn):
        return lambda *a, **k: poison(fn(*a, **k))

    for n, fn in originals.items():
        setattr(torch, n, wrap(fn))
    try:
        yield
    finally:
        for n, fn in originals.items():
            setattr(torch, n, fn)


# x.type(...)'s fp32 spellings (CLIP's LayerNorm upcasts so)
_FP32_TYPES = ((torch.float32,), ("torch.FloatTensor",))
# Tensors made from numbers alone (a timestep embedding's arange(half,
# dtype=torch.float32)); random ones are left: float64 would draw others.
_FACTORIES = {
    torch.arange,
    torch.linspace,
    torch.logspace,
    torch.zeros,
    torch.ones,
    torch.full,
    torch.empty,
    torch.eye,
    torch.tensor,
    torch.as_tensor,
}


class _KeepFloat64(torch.overrides.TorchFunctionMode):
    """For the float64 reference: the reference's own upcasts to fp32
    (`x.float()`, `.to(torch.float32)`, `.type(torch.float32)`,
    `dtype=torch.float32`) keep float64, and make an int tensor float64.
    They are there to compute in more precision than the input; left alone they
    would make the "float64" reference an fp32 one, with fp32's cancellation."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        first = args[0] if args else None
        is64 = isinstance(first, torch.Tensor) and first.dtype == torch.float64
        # An int tensor made fp32 (RoPE's arange(0, d, 2).float() / d) is made
        # float64: its pow in fp32 was the reference's own 1-ulp error, which
        # 4096 positions carried past the floor.
        ints = (
            isinstance(first, torch.Tensor)
            and not first.is_floating_point()
            and not first.is_complex()
        )
        if (is64 or ints) and func is torch.Tensor.float:
            return first.double()
        if (is64 or ints) and func is torch.Tensor.type and args[1:] in _FP32_TYPES:
            return first.double()
        if (is64 or ints) and func is torch.Tensor.to:
            target = kwargs.get("dtype")
            rest = [a for a in args[1:] if not isinstance(a, torch.dtype)]
            if target is None and len(args) == 2 and isinstance(args[1], torch.dtype):
                target = args[1]
            if target == torch.float32 and not rest and set(kwargs) <= {"dtype"}:
                return first.double()
        if kwargs.get("dtype") == torch.float32 and (
            func in _FACTORIES
            or any(
                isinstance(a, torch.Tensor) and a.dtype == torch.float64 for a in args
            )
        ):
            kwargs["dtype"] = torch.float64
        return func(*args, **kwargs)


def run_reference(
    case: Case,
    inputs: list[Any],
    dtype: str | None,
    device: str,
    sizes: dict[str, int] | None = None,
    state: list | None = None,
    module_mode: str = "",
    init: dict[int, Any] | None = None,
):
    """The reference on `inputs`; `state`, where given, receives what the call
    may change besides its outputs: each input, then the module's buffers.
    module_mode "eval" or "train": a KernelBench module put in that mode;
    init: its constructor arguments changed, by position."""
    fn = case.reference.build(sizes, init)
    if isinstance(fn, torch.nn.Module):
        fn = fn.to(device)
        if dtype:
            fn = fn.to(getattr(torch, dtype))
        if module_mode:
            fn.train(module_mode == "train")
    mode = _KeepFloat64() if dtype == "float64" else contextlib.nullcontext()
    with torch.no_grad(), mode:
        out = as_tuple(fn(*inputs))
    if state is not None:
        state.extend(_state_after(fn, inputs))
    return out


def _state_after(fn: Any, inputs: list[Any]) -> list[tuple[str, Any]]:
    """(name, value) of each input and, for a module, each buffer (running
    statistics a training-mode BatchNorm updates)."""
    out = [(f"input {i}", v) for i, v in enumerate(inputs)]
    if isinstance(fn, torch.nn.Module):
        out += [(f"buffer {n}", b) for n, b in fn.named_buffers()]
    return out


def scaffold_entry(
    case: Case,
    dtype: str,
    device: str,
    kernel=None,
    sizes: dict[str, int] | None = None,
    module_mode: str = "",
    init: dict[int, Any] | None = None,
):
    """The scaffold's entry point as the reference's callers use it: the launcher
    function, or a ModelNew holding the reference Model's parameters and
    buffers, in the reference's mode, on `device` in `dtype`. `kernel`: another
    kernel.py module (default: the case's); `sizes`: the dims a KernelBench
    model is built at (its constructor may take them)."""
    kernel = kernel or case.kernel
    if case.manifest["reference_kind"] != "kernelbench":
        return getattr(kernel, case.manifest["reference_name"])
    ref = case.reference.build(sizes, init)
    # at the sizes: its constructor may read the scaffold's copy of a size global
    with case.reference.sizes_in(kernel, sizes):
        model = kernel.ModelNew(*case.reference.init_inputs_at(sizes, init))
    model.load_state_dict(ref.state_dict())
    if module_mode:
        model.train(module_mode == "train")
    else:
        # each submodule in the reference's mode: a Model may put one in eval()
        modes = {name: m.training for name, m in ref.named_modules()}
        for name, m in model.named_modules():
            m.training = modes.get(name, ref.training)
    return model.to(device=device, dtype=getattr(torch, dtype))


def run_scaffold(
    case: Case,
    inputs: list[Any],
    dtype: str,
    device: str,
    int_poison=INT_SENTINEL,
    sizes: dict[str, int] | None = None,
    state: list | None = None,
    module_mode: str = "",
    init: dict[int, Any] | None = None,
    float_poison: float = float("nan"),
):
    fn = scaffold_entry(
        case, dtype, device, sizes=sizes, module_mode=module_mode, init=init
    )
    with poisoned_allocations(int_poison, float_poison), torch.no_grad():
        out = as_tuple(fn(*inputs))
    if state is not None:
        state.extend(_state_after(fn, inputs))
    return out


def copies(values: list[Any]) -> list[Any]:
    """Each tensor copied into storage of its own with the same sizes, strides
    and storage offset (an offset or row-sliced view stays one): every run
    starts from the same inputs, whatever an in-place reference did to them."""
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            # The whole storage, not the view: an expanded bias (stride 0)
            # cannot be copied into a view of itself.
            n = v.untyped_storage().nbytes() // max(v.element_size(), 1)
            whole = torch.empty(0, dtype=v.dtype, device=v.device)
            whole.set_(v.untyped_storage(), 0, (n,), (1,))
            storage = whole.clone()
            v = storage.as_strided(v.size(), v.stride(), v.storage_offset())
        out.append(v)
    return out


def _holds_poison(g: torch.Tensor | None) -> bool:
    """An integer output with an element equal to the first poison value."""
    if (
        g is None
        or g.is_floating_point()
        or g.dtype in FP8_DTYPES
        or g.dtype == torch.bool
    ):
        return False
    return bool((g == torch.tensor(INT_SENTINEL).to(g.dtype)).any())


def _unwritten(got: tuple, again: tuple) -> list:
    """Per output: where a run poisoned with INT_SENTINEL and one poisoned with
    INT_SENTINEL_2 differ (a deterministic kernel writes the same value twice),
    or None for outputs that need no such mask."""
    return [(g != g2) if _holds_poison(g) else None for g, g2 in zip(got, again)]


def as_tuple(x):
    """A call's outputs as a tuple (one output: a tuple of one)."""
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _upcast(inputs: list[Any]) -> list[Any]:
    """fp32, fp16 and bf16 tensors in float64; fp8 ones stay as they are
    (a quantized KV cache is storage, not a value to compute in)."""
    wide = (torch.float32, torch.float16, torch.bfloat16)
    return [
        v.double() if isinstance(v, torch.Tensor) and v.dtype in wide else v
        for v in inputs
    ]


FP8_DTYPES = {
    getattr(torch, name)
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
    if hasattr(torch, name)
}


def _fp8_codes(t: torch.Tensor) -> torch.Tensor:
    """Signed grid index of each fp8 value: neighbours on the grid differ by 1."""
    bits = t.view(torch.uint8).long()
    magnitude = bits & 0x7F
    return torch.where(bits >= 0x80, -magnitude, magnitude)


def _no_tie(off: torch.Tensor) -> bool:
    """Codes one step off eager on this many elements (past 1 in 64) are no
    rounding tie: a bug."""
    return int(off.sum()) > max(1, off.numel() // 64)


def _compare_fp8(i, ref, eager, got, where) -> float:
    """fp8 outputs are quantized codes: like integer codes they may differ by one
    grid step on a few elements (a value next to a rounding boundary lands
    either side of it after one fp32 ulp of difference upstream), or where the
    float64 reference's code agrees; NaN only where eager has NaN."""
    g, e = got.cpu(), eager.cpu()
    gf, ef = g.float(), e.float()
    bad_nan = torch.isnan(gf) & ~torch.isnan(ef)
    codes = _fp8_codes(g)
    steps = (codes - _fp8_codes(e)).abs()
    off = ~torch.isnan(gf) & ~torch.isnan(ef) & (steps > 0)
    if ref is not None and ref.dtype == got.dtype and ref.shape == got.shape:
        off &= codes != _fp8_codes(ref.detach().cpu())
    bad = bad_nan | (off & (steps > INT_TOLERANCE))
    if not bad.any() and _no_tie(off):
        bad = off
    if bad.any():
        idx = tuple(bad.nonzero()[0].tolist())
        raise ParityError(
            f"{where}: {_label(i)}{list(idx)} = {gf[idx].item():.6g}, eager {ef[idx].item():.6g}"
            f" (fp8 codes must match eager within {INT_TOLERANCE} step on a few elements,"
            " or float64's; NaN means never written where eager has none)"
        )
    ok = ~torch.isnan(gf) & ~torch.isnan(ef)
    return float(steps[ok].max()) if ok.any() else 0.0


class ParityError(AssertionError):
    pass


class NaNOutput(ParityError):
    """An output element is NaN where float64 and eager are not: computed by
    the kernel, or never written (float outputs start as NaN). check_parity
    runs the scaffold again to tell which."""

    def __init__(self, head: str, tail: str, output: int, index: tuple):
        super().__init__(f"{head} is NaN; {tail}")
        self.head, self.tail, self.output, self.index = head, tail, output, index


class ReferenceRejects(Exception):
    """The scenario is outside the reference's domain (eager raises on it): skip."""


class ScaffoldRefuses(Exception):
    """The scaffold declined an optional scenario in its own words
    (NotImplementedError): the other module mode, another constructor
    argument, an empty batch. The caller skips it, saying why."""


# Errors of the scaffold's own Python (a check dividing by a size of 0), never
# a refusal: torch's own rejections are RuntimeError, ValueError, IndexError.
_CRASHES = (ArithmeticError, NameError, KeyError, AttributeError)


def excused_refusal(case: Case, sc: Scenario, inputs: list[Any]) -> str | None:
    """Why the scaffold may refuse these inputs though eager serves them, or
    None: a strided input eager changes in place only where it is contiguous
    (the manifest's contiguous_only), or a size the captured graph ties to
    another tensor's size that they break (w's columns bound to 4 *
    s.shape[1], make_inputs giving w 97 columns and s 25), which Dynamo
    would compile another graph for, or a size of 0 or 1 at which eager's
    outputs take another shape than the graph traced at 2 and more gives
    (the manifest's rejected_sizes of kind "shape")."""
    for entry in case.manifest.get("rejected_sizes", []):
        if entry.get("kind") == "shape" and sc.sizes.get(entry["dim"]) == entry["size"]:
            return f"the graph was traced at {entry['dim']} of 2 and more"
    values = dict(zip(case.manifest["input_names"], inputs))
    for name in case.manifest.get("contiguous_only", []):
        v = values.get(name)
        if isinstance(v, torch.Tensor) and not v.is_contiguous():
            return f"eager changes {name} in place only where it is contiguous"
    scope = {**sc.sizes, **values}
    for module in case.manifest.get("modules", []):
        for gi in module["inputs"]:
            tensor = values.get(gi["target"])
            if gi["kind"] != "tensor" or not isinstance(tensor, torch.Tensor):
                continue
            for axis, size in enumerate(gi["sizes"][: tensor.dim()]):
                if ".size(" not in str(size):
                    continue
                expr = re.sub(r"(\w+)\.size\((\d+)\)", r"\1.shape[\2]", str(size))
                try:
                    want = eval(expr, {"__builtins__": {}}, scope)  # noqa: S307
                except Exception:  # noqa: BLE001 - an expression of names not at hand
                    continue
                if tensor.shape[axis] != want:
                    return (
                        "the captured graph ties these sizes: "
                        f"{gi['target']}.shape[{axis}] != {expr} here"
                    )
    return None


def _refused_too(sc: Scenario, inputs, reference, scaffold, where: str, err) -> bool:
    """Where eager rejects a call's sizes or arguments in float64 too (a view
    into groups a size does not split into), the scaffold must not answer it:
    its kernels would index past the row. A layout, module mode or constructor
    argument eager alone rejects (a view of a strided input) is not judged.
    True where the scaffold was seen to refuse it."""
    if sc.layout != "contiguous" or sc.values != "random" or sc.mode or sc.init:
        return False
    try:
        reference(_upcast(copies(inputs)), "float64")
    except Exception:  # noqa: BLE001 - rejected in any dtype: the scaffold too
        pass
    else:
        return False  # only this dtype is rejected (an op eager lacks in bfloat16)
    try:
        outputs = scaffold(copies(inputs))
    except Exception as refusal:  # noqa: BLE001 - a refusal or any error: not an answer
        # eager's own error (a constructor the scaffold copies: head_dim ** -0.5 at 0)
        same = type(refusal) is type(err) and str(refusal) == str(err)
        if isinstance(refusal, _CRASHES) and not same:
            raise ParityError(
                f"{where}: the reference rejects this call ({type(err).__name__}: "
                f"{err}) and the scaffold crashed on it ({type(refusal).__name__}: "
                f"{refusal}) instead of refusing it in a sentence"
            ) from refusal
        if not _outside_memory(refusal):
            return True
        raise ParityError(
            f"{where}: the reference rejects this call ({type(err).__name__}: {err}) "
            f"and the scaffold read or wrote outside its tensors instead of refusing it "
            f"(on a GPU that returns numbers): {refusal}; an index loaded from a tensor "
            "needs its tl.device_assert and the kernel debug=True"
        ) from refusal
    if all(
        o is None or (isinstance(o, torch.Tensor) and o.numel() == 0) for o in outputs
    ):
        # Empty outputs where eager raises on its own limit (a view(0, -1) is
        # ambiguous): no value to get wrong. A max of nothing must refuse.
        return False
    raise ParityError(
        f"{where}: the reference rejects this call ({type(err).__name__}: {err}) "
        "but the scaffold returned outputs; it must refuse it"
    )


def _rejected_on_cpu(case: Case, sc: Scenario, inputs: list[Any]) -> None:
    """Raise ReferenceRejects where eager rejects the call on the CPU, in
    float64 and in its dtype: on a GPU its index check is a device assert,
    which ends the CUDA context of every later test. The CPU suite checks
    that the scaffold refuses such a call."""
    on_cpu = [v.cpu() if isinstance(v, torch.Tensor) else v for v in copies(inputs)]
    errors = []
    for values, dtype in ((_upcast(on_cpu), "float64"), (on_cpu, sc.dtype)):
        try:
            run_reference(
                case, copies(values), dtype, "cpu", sc.sizes, None, sc.mode, sc.init
            )
            return
        except Exception as err:  # noqa: BLE001 - any rejection: not run here
            errors.append(err)
    err = errors[-1]
    raise ReferenceRejects(
        f"eager rejects {sc.id} on the CPU ({type(err).__name__}: {err}); on a GPU "
        "an index it rejects is a device assert, which ends the CUDA context: "
        "checked on the CPU only"
    ) from err


def _outside_memory(err: BaseException) -> bool:
    """err is, or was raised from, porter.testing.bounds' OutOfBoundsAccess."""
    from porter.testing.bounds import OutOfBoundsAccess

    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, OutOfBoundsAccess):
            return True
        err, seen = err.__cause__ or err.__context__, seen + 1
    return False


def check_parity(
    case: Case, sc: Scenario, device: str = "cpu", seed: int | None = None
) -> dict:
    """Run one scenario; raise ParityError naming the worst element on failure.
    Outputs are compared, and so is every input or module buffer the
    reference changes in place (and none other may change)."""
    seed = new_seed() if seed is None else seed
    if (sc.far_index is not None or sc.negative_index is not None) and device != "cpu":
        # eager's device assert would end the CUDA context of every later test
        raise ReferenceRejects(
            f"{sc.id}: an index out of range is checked on the CPU only"
        )
    inputs = make_inputs(case, sc, device, seed)
    if device != "cpu" and any(is_index_like(v) for v in inputs):
        _rejected_on_cpu(case, sc, inputs)
    where = (
        f"case {case.name}, scenario {sc.id}, seed {seed} (replay: PORTER_SEED={seed})"
    )
    if sc.cast and case.manifest.get("input_follows") is None:
        # a capture older than the launcher's checks of every argument's dtype
        where += "; capture it again, and the scaffold checks its arguments' dtypes"
    edge = sc.values == "edge_rows"

    def reference(values, dtype, state=None):
        return run_reference(
            case, values, dtype, device, sc.sizes, state, sc.mode, sc.init
        )

    def scaffold(values, poison=INT_SENTINEL, state=None, float_poison=float("nan")):
        return run_scaffold(
            case,
            values,
            sc.dtype,
            device,
            poison,
            sc.sizes,
            state,
            sc.mode,
            sc.init,
            float_poison,
        )

    if any(isinstance(v, int) and not -(2**31) <= v < 2**31 for v in sc.args.values()):
        # an int past int32 may be a size eager would allocate: the
        # scaffold's refusal first
        try:
            scaffold(copies(inputs))
        except NotImplementedError as err:
            raise ScaffoldRefuses(str(err)) from err
        except InterpreterUnsupported:
            raise
        except Exception as err:  # noqa: BLE001 - right only where eager raises too
            if isinstance(err, torch.OutOfMemoryError) or "allocate" in str(err):
                # eager's outputs would be as large: not run, so as not to
                # take the machine's memory
                raise ScaffoldRefuses(
                    f"the scaffold could not allocate at {sc.id} "
                    f"({type(err).__name__}); eager is not tried there"
                ) from err
            if not isinstance(err, _CRASHES) and not _outside_memory(err):
                try:
                    reference(copies(inputs), sc.dtype)
                except Exception as rejected:  # noqa: BLE001 - any rejection
                    raise ReferenceRejects(
                        f"the reference itself rejects {sc.id} ({type(rejected).__name__}: "
                        f"{rejected}); so does the scaffold ({type(err).__name__})"
                    ) from rejected
            raise ParityError(
                f"{where}: the scaffold raised {type(err).__name__} ({err}) "
                "where eager serves the call, or crashed instead of refusing it"
            ) from err
    eager = None
    eager_state: list = []
    if not edge:
        try:
            eager_inputs = copies(inputs)
            eager = reference(eager_inputs, sc.dtype, eager_state)
        except Exception as err:
            also = _refused_too(sc, inputs, reference, scaffold, where, err)
            raise ReferenceRejects(
                f"the reference itself rejects {sc.id} ({type(err).__name__}: {err})"
                + ("; so does the scaffold" if also else "")
            ) from err
    got_state: list = []
    if edge:
        # >2^31 elements: the first and last rows are scored alone (float64
        # copies of the whole problem do not fit); rows are independent in a
        # per-token op. Cut before the scaffold changes an input in place.
        _refuse_mixed_rows(case, sc, seed)
        edge_inputs, rows = _edge_inputs(case, inputs)
    try:
        got_inputs = inputs if edge else copies(inputs)
        got = scaffold(got_inputs, state=got_state)
    except InterpreterUnsupported:
        raise  # the caller skips with its reason: never a pass, never a failure
    except NotImplementedError as err:
        if sc.optional:
            raise ScaffoldRefuses(str(err)) from err
        excuse = excused_refusal(case, sc, inputs)
        if excuse:
            raise ScaffoldRefuses(f"{err} ({excuse})") from err
        raise ParityError(
            f"{where}: the scaffold refused a call it must serve: {err}"
        ) from err
    except Exception as err:
        # A crash is a parity failure too (e.g. an out-of-bounds access caught by
        # porter.testing.bounds): say where, like any other failure.
        raise ParityError(
            f"{where}: the scaffold raised {type(err).__name__}: {err}"
        ) from err
    unwritten = [None] * len(got)
    if any(_holds_poison(g) for g in got):
        again = scaffold(copies(inputs), INT_SENTINEL_2)
        unwritten = _unwritten(got, again)
    if edge:
        inputs, (got, unwritten) = edge_inputs, _edge_outputs(rows, got, unwritten)
        got_state = []
    ref_state: list = []
    raised = None
    try:
        ref64 = reference(_upcast(copies(inputs)), "float64", ref_state)
    except Exception as err:  # noqa: BLE001 - any error: eager stands in
        if eager is None:
            raise ReferenceRejects(
                f"the reference cannot run in float64 on {sc.id} "
                f"({type(err).__name__}: {err})"
            ) from err
        raised = f"raised {type(err).__name__}"
    if eager is None:
        eager = reference(copies(inputs), sc.dtype)
    if raised is None and _shapes(ref64) != _shapes(eager):
        raised = "gave outputs of other shapes"
    if raised:
        # Math float64 changes (a float's bits read as int32, which doubles a
        # float64 axis): eager in the call's dtype is the reference, and the
        # scaffold must match it within the dtype's floor.
        ref64 = [e.double() if _is_float(e) else e for e in eager]
        ref_state = [(n, t.double() if _is_float(t) else t) for n, t in eager_state]
        where += f" (scored against eager: in float64 the reference {raised})"
    if len(got) != len(ref64):
        raise ParityError(
            f"{where}: scaffold returned {len(got)} outputs, reference {len(ref64)}"
        )
    if not edge:
        _same_objects(eager, eager_inputs, got, got_inputs, where)
    # A call of ints alone (token ids, shard math) rounds nothing: its int
    # outputs are exact at any width.
    exact = case.manifest.get("reference_kind") != "kernelbench" and not any(
        _is_float(v) for v in inputs
    )
    operands = _operand_scale(inputs)
    operand_rows = _operand_rows(inputs)
    scores = []
    for i, (r, e, g, u) in enumerate(zip(ref64, eager, got, unwritten)):
        if r is None or g is None:
            if not (r is None and g is None):
                raise ParityError(
                    f"{where}: output {i} is {'None' if g is None else 'a tensor'}, "
                    f"the reference's {'None' if r is None else 'a tensor'}"
                )
            continue
        # Eager's output follows a transposed or channels_last input's layout,
        # where a scaffold may keep the capture's: a caller's .view() of it
        # would raise where eager's works. Checked where eager's is dense, at
        # every layout where the capture recorded which input each follows.
        every = "output_layouts" in case.manifest or sc.layout == "contiguous"
        if every and not edge and _other_layout(e, g):
            raise ParityError(
                f"{where}: {_label(i)} has strides {g.stride()}, eager's "
                f"{e.stride()}{' are contiguous' if e.is_contiguous() else ''}"
            )
        try:
            score = _compare(
                i, r, e, g, sc.dtype, where, u, exact, operands, operand_rows
            )
        except NaNOutput as err:
            if edge:
                raise
            # NaN where neither float64 nor eager has one: a second run whose
            # outputs start at another value tells an unwritten element apart
            again = scaffold(copies(inputs), float_poison=float(INT_SENTINEL_2))
            raise ParityError(_nan_said(err, again)) from err
        scores.append(score)
    if got_state:
        scores += _compare_state(
            case, inputs, sc, device, ref_state, eager_state, got_state, where
        )
    return {"seed": seed, "scores": scores}


def _nan_said(err: NaNOutput, again: tuple) -> str:
    """err's message, saying whether the element followed the poison into a
    second run (never written) or was NaN again (the kernel computed it)."""
    value = again[err.output][err.index].item()
    if value == INT_SENTINEL_2:
        return (
            f"{err.head} was never written: it holds the poison (NaN, then "
            f"{float(INT_SENTINEL_2):g} in a second run); {err.tail}"
        )
    return (
        f"{err.head} is NaN, computed by the kernel (a second run, its outputs "
        f"starting at {float(INT_SENTINEL_2):g}, gives {value:.6g}); {err.tail}"
    )


def _other_layout(e: torch.Tensor, g: torch.Tensor) -> bool:
    """g is laid out otherwise than eager's dense, non-empty e (strides of
    axes past 1)."""
    if e.shape != g.shape or e.numel() == 0:
        return False
    if torch.empty_like(e).stride() != e.stride():
        return False
    return any(n > 1 and a != b for n, a, b in zip(e.shape, e.stride(), g.stride()))


def _same_objects(eager, eager_inputs, got, got_inputs, where) -> None:
    """An output eager returns as the very input tensor it was given (`return
    x, y`) must be the scaffold's input too, not a copy of it: a caller that
    changes one expects the other to change."""
    for i, e in enumerate(eager):
        j = next((j for j, v in enumerate(eager_inputs) if e is v), None)
        if j is not None and i < len(got) and got[i] is not got_inputs[j]:
            raise ParityError(
                f"{where}: {_label(i)} is eager's input {j} itself; the scaffold "
                "returned another tensor"
            )


def _compare_state(case, inputs, sc, device, ref_state, eager_state, got_state, where):
    """Inputs and buffers after the call: where eager changed one, the scaffold
    must have changed it alike (scored as an output); where eager left one
    alone, so must the scaffold."""
    before = _state_after(_built(case, sc, device), inputs)
    if not (len(before) == len(eager_state) == len(got_state) == len(ref_state)):
        raise ParityError(
            f"{where}: the scaffold's module has other buffers than the reference's"
        )
    scores = []
    for (name, b), (_, r), (_, e), (_, g) in zip(
        before, ref_state, eager_state, got_state
    ):
        if not isinstance(b, torch.Tensor):
            continue
        if _same(b, e):
            if not _same(b, g):
                raise ParityError(
                    f"{where}: the scaffold changed {name}, which the reference leaves alone"
                )
            continue
        scores.append(_compare(name, r, e, g, sc.dtype, where, None))
    return scores


def _built(case: Case, sc: Scenario, device: str):
    """The reference as built for the scenario, before any call (its buffers'
    starting values), in the scenario's dtype."""
    fn = case.reference.build(sc.sizes, sc.init)
    if isinstance(fn, torch.nn.Module):
        fn = fn.to(device=device, dtype=getattr(torch, sc.dtype))
        if sc.mode:
            fn.train(sc.mode == "train")
    return fn


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shapes, dtypes and values, NaN equal to NaN."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype in FP8_DTYPES:
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    if torch.equal(a, b):
        return True
    return a.is_floating_point() and bool(
        torch.equal(a.isnan(), b.isnan())
        and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))
    )


def _edge_inputs(case: Case, inputs: list[Any]) -> tuple[list[Any], int | None]:
    """(copies of the first and last four rows of each input along the axis
    of the dim the large-offset scenario grows, wherever that axis is:
    merge_attn_states' log-sum-exps are [heads, tokens]; that dim's size).
    Taken before the scaffold runs, which may change an input in place."""
    grown = case.runtime_dims()[0]["name"]
    axes = {
        n: a for d in case.manifest["dims"] if d["name"] == grown for n, a in d["axes"]
    }
    rows = None
    sliced = []
    for name, v in zip(case.manifest["input_names"], inputs):
        if isinstance(v, torch.Tensor) and name in axes and axes[name] < v.dim():
            rows = v.shape[axes[name]]
            v = _edges(v, axes[name]).clone()
        sliced.append(v)
    return sliced, rows


def _refuse_mixed_rows(case: Case, sc: Scenario, seed: int) -> None:
    """Raise ReferenceRejects where the reference's first and last rows hang
    on the rows between (BatchNorm in training: statistics over the batch),
    as a float64 run on the CPU at 12 rows shows: scored alone, they would
    fail a right scaffold."""
    grown = case.runtime_dims()[0]["name"]
    small = replace(sc, sizes={**sc.sizes, grown: 12}, values="random")
    inputs = make_inputs(case, small, "cpu", seed)
    edge_inputs, rows = _edge_inputs(case, inputs)
    how = (small.sizes, None, sc.mode, sc.init)
    with torch.random.fork_rng():  # dropout in training mode draws alike
        whole = run_reference(case, _upcast(inputs), "float64", "cpu", *how)
    with torch.random.fork_rng():
        alone = run_reference(case, _upcast(edge_inputs), "float64", "cpu", *how)
    (cut,) = _edge_outputs(rows, whole)
    for w, a in zip(cut, alone):
        if isinstance(w, torch.Tensor) and not torch.allclose(
            w, a, rtol=1e-9, atol=1e-12, equal_nan=True
        ):
            raise ReferenceRejects(
                "the reference's first and last rows hang on the rows between (a "
                "statistic over the batch), so they cannot be checked alone past "
                "2^31 elements"
            )


def _edge_outputs(rows: int | None, *outputs: tuple) -> list[tuple]:
    """Each tuple in `outputs` cut to its first and last four rows along its
    first axis of `rows` entries (None entries kept). An output without such
    an axis mixes every row (a scale over the whole batch): four rows cannot
    stand for it, and the scenario is refused with that reason."""
    if rows is None:
        return list(outputs)
    out = []
    for got in outputs:
        cut = []
        for g in got:
            if g is not None and g.dim():
                axis = next((i for i, n in enumerate(g.shape) if n == rows), None)
                if axis is None:
                    raise ReferenceRejects(
                        f"an output of shape {tuple(g.shape)} has no axis of the "
                        f"{rows} rows: it mixes them all, so their first and last "
                        "rows cannot be checked alone"
                    )
                g = _edges(g, axis)
            cut.append(g)
        out.append(tuple(cut))
    return out


def _edges(t: torch.Tensor, axis: int) -> torch.Tensor:
    """The first and last four entries of t along axis."""
    n = t.shape[axis]
    return torch.cat([t.narrow(axis, 0, 4), t.narrow(axis, n - 4, 4)], dim=axis)


def _row_scales(
    r: torch.Tensor,
    finite: torch.Tensor,
    least: float,
    rows_in: torch.Tensor | None = None,
    resolution: float = CANCELLED,
) -> torch.Tensor:
    """The scale an element's error is measured at: the median magnitude of its
    row's finite nonzero values (rows along the first dimension, as the difficult
    inputs are laid out), and never less than `least`, the output's own.

    An element that cancels to near zero inside a row of huge values (a matmul
    of a +-2^58 activation row) carries rounding error at the row's magnitude in
    any summation order; scored at the output's median alone, its relative error
    was a draw whose worst of 256 beat 4x eager's worst for 3-8% of seeds.
    `rows_in`: the inputs' row magnitudes (_operand_rows), for rows that cancel
    whole; `resolution`: the call dtype's epsilon, below which (times the
    row's operands) one value a row is scored at the operands' magnitude.
    """
    if r.dim() < 2 or r.shape[0] < 2 or r.numel() == 0:
        out = torch.full_like(r, least)
        if rows_in is not None and r.dim() == 1:
            # One value a row the dtype cannot resolve from its operands: the
            # log-softmax of a sampled top logit is -exp(-28) in float64, 0 in
            # eager (x - max cancels exactly), and a GPU's fused x * (1 / t) - max
            # gave half an ulp of the logits over t.
            rows_in = rows_in.to(r.device)
            cancelled = r.abs() <= max(resolution, CANCELLED) * rows_in
            out = torch.where(cancelled, out.maximum(rows_in), out)
        return out
    medians = _row_medians(r, finite)
    if rows_in is not None:
        # A row float64 cancels to its own rounding of the row's operands (an
        # entropy of +-2^58 logits): scored at the operands' magnitude.
        # (A row of zeros alone, a masked one, keeps the output's scale.)
        rows_in = rows_in.to(medians.device)
        cancelled = (medians > 0) & (medians <= CANCELLED * rows_in)
        medians = torch.where(cancelled, rows_in, medians)
    shape = (r.shape[0],) + (1,) * (r.dim() - 1)
    return medians.clamp(min=least).reshape(shape).expand_as(r)


def _row_medians(r: torch.Tensor, finite: torch.Tensor | None = None) -> torch.Tensor:
    """Each row's median magnitude (rows along the first dimension) over its
    finite nonzero values, 0 for a row of none; `finite` where r's are known."""
    rows = r.reshape(r.shape[0], -1)
    kept = None if finite is None else finite.reshape(r.shape[0], -1)
    if rows.numel() > 1 << 24:
        # Row medians of a sample of columns, as for the output's median (and no
        # second copy of a 2^31-element output).
        step = rows.numel() // (1 << 24) + 1
        rows = rows[:, ::step]
        kept = None if kept is None else kept[:, ::step]
    rows = rows.double()  # an input's bf16 or fp8 rows too, once sampled
    kept = torch.isfinite(rows) if kept is None else kept
    # Exact zeros say nothing of a row's magnitude (GELU sends half of a row of
    # huge values to -0), so a row's median is over its finite nonzero values.
    magnitudes = torch.where(kept & (rows != 0), rows.abs(), torch.nan)
    return torch.nan_to_num(magnitudes.nanmedian(dim=1).values, nan=0.0)


def _label(i: int | str) -> str:
    """output 0, or the changed input or buffer's own name."""
    return f"output {i}" if isinstance(i, int) else str(i)


def _operand_scale(inputs) -> float:
    """The median magnitude of the float inputs' finite nonzero values: the
    scale of an output float64 gives as exactly zero (sum(q * (lq - lq))),
    whose rounding in any order is at its operands' magnitude."""
    values = [
        v.detach().reshape(-1)[:: max(1, v.numel() // (1 << 20))].double().cpu()
        for v in inputs
        if _is_float(v) and v.numel()
    ]
    if not values:
        return 0.0
    flat = torch.cat(values)
    flat = flat[torch.isfinite(flat) & (flat != 0)].abs()
    return float(flat.median()) if flat.numel() else 0.0


def _operand_rows(inputs) -> dict[int, torch.Tensor]:
    """Per row count, the largest median magnitude of each row's finite
    nonzero values over the float inputs of that many rows (rows along the
    first dimension, as the difficult inputs lay theirs out)."""
    out: dict[int, torch.Tensor] = {}
    for v in inputs:
        if not _is_float(v) or v.dim() < 2 or v.numel() == 0:
            continue
        medians = _row_medians(v.detach())
        n = v.shape[0]
        out[n] = torch.maximum(out[n], medians) if n in out else medians
    return out


def _compare(
    i,
    ref,
    eager,
    got,
    dtype,
    where,
    unwritten=None,
    exact=False,
    operands=0.0,
    operand_rows=None,
) -> float:
    if tuple(got.shape) != tuple(ref.shape):
        raise ParityError(
            f"{where}: {_label(i)} has shape {tuple(got.shape)}, expected {tuple(ref.shape)}"
        )
    if got.dtype != eager.dtype:
        raise ParityError(
            f"{where}: {_label(i)} is {got.dtype}, eager gives {eager.dtype}"
        )
    if got.dtype in FP8_DTYPES:
        return _compare_fp8(i, ref, eager, got, where)
    if not got.is_floating_point():
        # Integers (a quantizer's codes) may differ by one step: a value at a
        # rounding tie flips with the GPU's fp32 division. Seen on the H200: -63
        # against eager's -64. An element never written fails even where eager
        # holds the poison value or a neighbour of it.
        g, e = got.cpu().long(), eager.cpu().long()
        missed = (
            unwritten.cpu()
            if unwritten is not None
            else torch.zeros_like(g, dtype=torch.bool)
        )
        if missed.any():
            idx = tuple(missed.nonzero()[0].tolist())
            raise ParityError(
                f"{where}: {_label(i)}{list(idx)} was never written (it holds the poison "
                f"value: {INT_SENTINEL}, then {INT_SENTINEL_2} in a second run); eager {eager[idx].item()}"
            )
        # An index from math eager rounds to the dtype (argmax of x + bias in
        # bf16, where eager's rounding makes ties) is right if float64 agrees.
        step = 0 if exact or got.dtype in EXACT_INTS else INT_TOLERANCE
        off = (g != e) & (g != ref.detach().cpu().long())
        if got.dtype in (torch.int32, torch.int64):
            # A NaN or out-of-range float converted to an int is undefined in
            # C++: a CPU gives the dtype's minimum, a GPU 0 or the saturated
            # value (eager on CUDA too); either is right there.
            info = torch.iinfo(got.dtype)
            off &= ~((e == info.min) & ((g == 0) | (g == info.max) | (g == info.min)))
        elif got.dtype in NARROW_INTS:
            # Narrowed through int32, as eager and the scaffold cast: there a
            # CPU gives INT_MIN's low bits (0), a GPU INT_MAX's (all ones).
            ones = torch.iinfo(got.dtype).max if got.dtype in UNSIGNED else -1
            off &= ~((e == 0) & (g == ones))
        bad = off & ((g - e).abs() > step)
        if not bad.any() and _no_tie(off):
            bad = off
        if bad.any():
            idx = tuple(bad.nonzero()[0].tolist())
            rule = f"within {step} on a few elements" if step else "exactly"
            raise ParityError(
                f"{where}: {_label(i)}{list(idx)} = {got[idx].item()}, eager {eager[idx].item()},"
                f" float64 {ref[idx].item()} ({got.dtype} values must match eager {rule}, or float64)"
            )
        return float((g - e).abs().max()) if g.numel() else 0.0
    r = ref.detach().double()
    e = eager.detach().double().to(r.device)
    g = got.detach().double().to(r.device)
    finite = torch.isfinite(r)
    # Errors are relative for large elements and absolute at the typical magnitude
    # near zero; the median keeps one huge row from setting the output's scale.
    magnitudes = r.abs()[finite]
    if magnitudes.numel() > 1 << 24:
        # torch cannot sort more than 2^31 elements; an even sample of 16M
        # gives the same typical magnitude.
        step = magnitudes.numel() // (1 << 24) + 1
        magnitudes = magnitudes[::step]
    scale = float(magnitudes.median()) if magnitudes.numel() else 0.0
    nonzero = magnitudes[magnitudes != 0]
    if operands > 0 and (
        not nonzero.numel() or float(nonzero.median()) <= CANCELLED * operands
    ):
        # float64 gives zero, or its own rounding of the operands (a divergence
        # of a distribution from itself): no output value sets a scale. (A
        # mostly zero output, a ReLU's, keeps its nonzero values' scale.)
        scale = operands
    rows_in = (operand_rows or {}).get(r.shape[0]) if r.dim() >= 1 else None
    least = max(scale, ATOL.get(dtype, 1e-6))
    eps = torch.finfo(getattr(torch, dtype)).eps if dtype in FLOOR else CANCELLED
    denom = r.abs() + _row_scales(r, finite, least, rows_in, eps)
    eager_err = (e - r).abs() / denom
    # Where eager in this dtype overflows, or misses float64 by more than
    # |ref64| + scale, the dtype cannot compute the element: not scored, and
    # NaN there is no worse than eager's answer.
    beyond = finite & (~torch.isfinite(e) | (eager_err > 1.0))
    # NaN is right where float64 says NaN, or where eager in this very dtype is
    # NaN too (inf * 0 inside the dtype's own arithmetic, e.g. tanh-GELU of inf).
    nan_ok = torch.isnan(r) | torch.isnan(e) | beyond
    bad_nan = torch.isnan(g) & ~nan_ok
    if bad_nan.any():
        idx = tuple(bad_nan.nonzero()[0].tolist())
        head = f"{where}: {_label(i)}{list(idx)}"
        tail = f"float64 reference {r[idx].item():.6g}, eager {e[idx].item():.6g}"
        if torch.isnan(e[idx]):
            raise ParityError(f"{head} is NaN; {tail}")
        raise NaNOutput(head, tail, i, idx)
    missing_nan = torch.isnan(r) & ~torch.isnan(g)
    if missing_nan.any():
        idx = tuple(missing_nan.nonzero()[0].tolist())
        raise ParityError(
            f"{where}: {_label(i)}{list(idx)} = {g[idx].item():.6g} but the float64 reference is NaN"
        )
    inf_mismatch = torch.isinf(r) & (g != r) & (g != e) & ~torch.isnan(g)
    if inf_mismatch.any():
        idx = tuple(inf_mismatch.nonzero()[0].tolist())
        raise ParityError(
            f"{where}: {_label(i)}{list(idx)} = {g[idx].item():.6g}, float64 reference {r[idx].item()}"
        )
    # Where float64 lies past the output dtype's range (a mask filled with
    # torch.finfo(dtype).min, computed in float64 as float64's own limit), the
    # scaffold must give eager's value: scored against float64 there, any
    # value of the dtype would pass, and set the whole output's bound.
    limit = torch.finfo(eager.dtype)
    outside = finite & (r.abs() > limit.max) & torch.isfinite(e)
    off = outside & ~((g - e).abs() <= 4 * limit.eps * e.abs())
    if off.any():
        idx = tuple(off.nonzero()[0].tolist())
        raise ParityError(
            f"{where}: {_label(i)}{list(idx)} = {g[idx].item():.8g}, eager {e[idx].item():.8g} "
            f"(float64 {r[idx].item():.6g} is past {eager.dtype}'s range: the dtype's own "
            "limit, which the scaffold must give as eager does)"
        )
    scored = finite & ~beyond & ~outside
    zero = torch.zeros_like(r)
    err_g = torch.nan_to_num(
        torch.where(scored, (g - r).abs() / denom, zero), nan=float("inf")
    )
    err_e = torch.where(scored, eager_err, zero)
    worst_e = float(err_e.max()) if err_e.numel() else 0.0
    worst_g = float(err_g.max()) if err_g.numel() else 0.0
    # An output the reference itself rounds to a narrower dtype (an explicit
    # .to(torch.bfloat16) in a float32 call) is judged at that dtype's floor:
    # one ulp of float32 before the cast flips its rounding.
    floor = max(FLOOR[dtype], FLOOR.get(str(got.dtype).removeprefix("torch."), 0.0))
    bound = FACTOR * worst_e + floor
    if worst_g > bound:
        idx = tuple(int(v) for v in torch.unravel_index(err_g.argmax(), err_g.shape))
        raise ParityError(
            f"{where}: {_label(i)} error {worst_g:.3g} exceeds {bound:.3g} "
            f"({FACTOR:g} x eager's {worst_e:.3g} + floor {floor:g}); worst element {list(idx)}: "
            f"scaffold {g[idx].item():.8g}, eager {e[idx].item():.8g}, float64 {r[idx].item():.8g}, "
            f"abs err {abs(g[idx].item() - r[idx].item()):.3g}"
        )
    return worst_g
