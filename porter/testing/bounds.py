"""Bounds checks for Triton's CPU interpreter.

The interpreter turns every masked-on lane of a tl.load/tl.store into a raw
memory access. A kernel with a missing mask then reads garbage or, on a store,
corrupts the test process's heap (seen: a silu kernel without its store mask
hung pytest). With `enable_bounds_checks()`, every launch records the storages
of its tensor arguments, and an access outside all of them raises
`OutOfBoundsAccess` naming the kernel argument nearest the address, before any
memory is touched. A kernel jitted with `debug=True` also runs its
tl.device_assert checks, as it does on the GPU (the interpreter drops them all).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

_ranges: list[tuple[int, int]] | None = (
    None  # (start, end) byte ranges of the running launch
)
_saved: dict | None = None


class OutOfBoundsAccess(AssertionError):
    """A masked-on lane of a load or store points outside every tensor argument."""


def _storage_ranges(args) -> list[tuple[int, int]]:
    out = []

    def visit(arg):
        if isinstance(arg, (tuple, list)):
            for a in arg:
                visit(a)
        elif hasattr(arg, "untyped_storage"):
            storage = arg.untyped_storage()
            out.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))

    visit(args)
    return sorted(out)


def _check(kind: str, ptrs, mask) -> None:
    if _ranges is None:
        return
    addrs = np.asarray(ptrs.data, dtype=np.uint64)
    active = np.broadcast_to(np.asarray(mask.data, dtype=bool), addrs.shape)
    addrs = addrs[active]
    if addrs.size == 0:
        return
    size = max(ptrs.get_element_ty().primitive_bitwidth // 8, 1)
    starts = np.array([r[0] for r in _ranges], dtype=np.uint64)
    ends = np.array([r[1] for r in _ranges], dtype=np.uint64)
    slot = np.searchsorted(starts, addrs, side="right") - 1
    ok = (slot >= 0) & (addrs + np.uint64(size) <= ends[np.clip(slot, 0, None)])
    if not ok.all():
        bad = int(addrs[~ok][0])
        raise OutOfBoundsAccess(
            f"out-of-bounds {kind}: {int((~ok).sum())} masked-on lane(s) address memory outside "
            f"every tensor argument (first at {bad:#x}); a mask is missing or too wide"
        )


def enable_bounds_checks() -> bool:
    """Patch the interpreter (TRITON_INTERPRET=1) to check every load and store."""
    global _saved
    if _saved is not None:
        return True
    from triton.runtime import interpreter as ip

    builder, executor = ip.InterpreterBuilder, ip.GridExecutor
    _saved = {
        "load": builder.create_masked_load,
        "store": builder.create_masked_store,
        "init": executor._init_args_hst,
        "call": executor.__call__,
        "run": ip.InterpretedFunction.run,
    }
    load, store, init, call = (
        _saved["load"],
        _saved["store"],
        _saved["init"],
        _saved["call"],
    )

    @functools.wraps(load)
    def checked_load(self, ptrs, mask, other, cache_policy, is_volatile):
        _check("load", ptrs, mask)
        return load(self, ptrs, mask, other, cache_policy, is_volatile)

    @functools.wraps(store)
    def checked_store(self, ptrs, value, mask, cache_policy):
        _check("store", ptrs, mask)
        return store(self, ptrs, value, mask, cache_policy)

    @functools.wraps(init)
    def recording_init(self, args_dev, kwargs):
        global _ranges
        args_hst, kwargs_hst = init(self, args_dev, kwargs)
        _ranges = _storage_ranges([args_hst, list(kwargs_hst.values())])
        return args_hst, kwargs_hst

    @functools.wraps(call)
    def clearing_call(self, *args, **kwargs):
        global _ranges
        try:
            return call(self, *args, **kwargs)
        finally:
            _ranges = None

    run = _saved["run"]

    @functools.wraps(run)
    def debug_run(self, *args, **kwargs):
        # the interpreter's one builder holds debug=False for every kernel
        shared = getattr(ip, "interpreter_builder", None)
        if shared is None:
            return run(self, *args, **kwargs)
        options = shared.options
        debug = bool(getattr(self, "kwargs", {}).get("debug"))
        # as the GPU compiles it: a launch may turn the int32 overflow checks off
        sanitize = kwargs.get("sanitize_overflow", options.sanitize_overflow)
        shared.options = dataclasses.replace(
            options, debug=debug, sanitize_overflow=sanitize
        )
        try:
            return run(self, *args, **kwargs)
        finally:
            shared.options = options

    builder.create_masked_load = checked_load
    builder.create_masked_store = checked_store
    executor._init_args_hst = recording_init
    executor.__call__ = clearing_call
    ip.InterpretedFunction.run = debug_run
    return True


def disable_bounds_checks() -> bool:
    global _saved, _ranges
    if _saved is None:
        return False
    from triton.runtime import interpreter as ip

    ip.InterpreterBuilder.create_masked_load = _saved["load"]
    ip.InterpreterBuilder.create_masked_store = _saved["store"]
    ip.GridExecutor._init_args_hst = _saved["init"]
    ip.GridExecutor.__call__ = _saved["call"]
    ip.InterpretedFunction.run = _saved["run"]
    _saved, _ranges = None, None
    return True
