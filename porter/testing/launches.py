"""Launches of a scaffold's kernels, recorded: which kernels a module defines,
Triton's specialization key of each launch, how many variants Triton compiled.

Shared by porter jitcheck, porter bench, the compile check and tools/regcount.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

LAUNCH_OPTIONS = ("num_warps", "num_stages")


def scaffold_kernels(module) -> dict[str, Any]:
    """The @triton.jit kernels a scaffold module defines (launchable ones only)."""
    out = {}
    for name, obj in vars(module).items():
        fn = getattr(obj, "fn", None)
        if callable(fn) and hasattr(obj, "run") and hasattr(obj, "__getitem__"):
            params = inspect.signature(fn).parameters
            if any(p.endswith("_ptr") for p in params):
                out[name] = obj
    return out


def jit_kernel(obj):
    """The @triton.jit kernel a scaffold's module attribute launches: itself,
    or the looped kernel common.py's SplitRows holds (by its class name: each
    scaffold folder renders a common.py of its own)."""
    return obj.kernel if type(obj).__name__ == "SplitRows" else obj


def _option(kernel, name: str) -> list:
    value = getattr(kernel, name, None)
    if value is None:
        value = getattr(kernel, "kwargs", {}).get(name)
    return list(value or [])


def unspecialized(kernel) -> tuple[set[str], set[str]]:
    """The kernel's do_not_specialize and do_not_specialize_on_alignment, by name."""
    names = list(inspect.signature(kernel.fn).parameters)
    return tuple(
        {names[i] if isinstance(i, int) else i for i in _option(kernel, option)}
        for option in ("do_not_specialize", "do_not_specialize_on_alignment")
    )


def specialization_key(kernel, bound: inspect.BoundArguments) -> tuple:
    """Triton's specialization of one launch: (argument, what it was specialized as)."""
    params = inspect.signature(kernel.fn).parameters
    dns, dnsoa = unspecialized(kernel)
    key = []
    for name, value in bound.arguments.items():
        ann = str(params[name].annotation)
        if "constexpr" in ann:
            key.append((name, f"constexpr={value!r}"))
        elif isinstance(value, torch.Tensor):
            aligned = value.data_ptr() % 16 == 0 and name not in dnsoa
            key.append((name, "16-byte aligned" if aligned else ""))
        elif isinstance(value, bool) or isinstance(value, float):
            key.append((name, ""))
        elif isinstance(value, int):
            if name in dns:
                key.append((name, "runtime"))
            elif value == 1:
                key.append((name, "== 1"))
            elif value % 16 == 0:
                key.append((name, "divisible by 16"))
            else:
                key.append((name, ""))
    return tuple(key)


class LaunchRecorder:
    """Wraps each kernel's `run` to record the specialization key of every launch;
    with execute=False the kernels are not run (keys of sizes too large to run).
    on_launch(name, kernel, bound arguments, launch options, the launch's other
    keywords with its grid), if given, sees each launch as well
    (tools/regcount.py compiles them)."""

    def __init__(
        self,
        kernels: dict[str, Any],
        execute: bool = True,
        on_launch: (
            Callable[[str, Any, inspect.BoundArguments, dict, dict], None] | None
        ) = None,
    ) -> None:
        self.kernels = kernels
        self.execute = execute
        self.on_launch = on_launch
        self.seen: dict[tuple[str, tuple], tuple[int, str]] = {}
        self.launches = 0
        self.context = (0, "")

    def __enter__(self) -> "LaunchRecorder":
        for name, kernel in self.kernels.items():
            original = kernel.run

            def run(*args, _name=name, _kernel=kernel, _original=original, **kwargs):
                params = inspect.signature(_kernel.fn).parameters
                call = {k: v for k, v in kwargs.items() if k in params}
                bound = inspect.signature(_kernel.fn).bind_partial(*args, **call)
                # num_warps and num_stages are part of Triton's cache key too.
                options = {
                    opt: kwargs[opt]
                    for opt in LAUNCH_OPTIONS
                    if kwargs.get(opt) is not None
                }
                named = tuple((opt, str(v)) for opt, v in options.items())
                key = (_name, specialization_key(_kernel, bound) + named)
                self.seen.setdefault(key, self.context)
                self.launches += 1
                if self.on_launch is not None:
                    # What the launch passes besides the kernel's arguments
                    # (grid, launch_pdl, num_warps ...), as the caller gave it.
                    launch = {k: v for k, v in kwargs.items() if k not in params}
                    self.on_launch(_name, _kernel, bound, options, launch)
                return _original(*args, **kwargs) if self.execute else None

            kernel.run = run
        return self

    def __exit__(self, *exc) -> None:
        for name, kernel in self.kernels.items():
            del kernel.run  # the instance attribute; the class's run shows again


def compiled_variants(kernels: dict[str, Any]) -> int | None:
    """How many variants Triton holds in its kernel caches (GPU only)."""
    total, found = 0, False
    for kernel in kernels.values():
        caches = getattr(kernel, "device_caches", None)
        if caches is None:
            continue
        for entry in caches.values():
            found = True
            total += len(entry[0])
    return total if found else None
