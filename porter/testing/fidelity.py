"""Make Triton's CPU interpreter compute low-precision floats by value, as a GPU does.

Under ``TRITON_INTERPRET=1`` Triton keeps bf16 and fp8 tensors as raw unsigned integers and
runs numpy on those bit patterns, truncates fp32 -> bf16, and has no libdevice at all.
``enable_interpreter_fidelity()`` patches the interpreter so that such values are upcast to
fp32, computed, and rounded to nearest even back into their storage type, and so that the
libdevice functions compute. See docs/interpreter-fidelity.md.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import os
import sys
import warnings

import numpy as np
import torch
import triton
import triton.language as tl

from porter.errors import PorterError

TESTED_TRITON_VERSIONS = ("3.6.0", "3.9.0")
FORCE_ENV = "PORTER_FIDELITY_FORCE"


class InterpreterUnsupported(PorterError):
    """A construct the patched interpreter cannot compute faithfully; tests should skip."""


__all__ = [
    "InterpreterUnsupported",
    "TESTED_TRITON_VERSIONS",
    "disable_interpreter_fidelity",
    "enable_interpreter_fidelity",
    "fidelity_enabled",
]

# ---------------------------------------------------------------------------
# Value codecs: storage bits <-> float32 values
# ---------------------------------------------------------------------------

_TORCH_DTYPES = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp8e4nv": torch.float8_e4m3fn,
    "fp8e5": torch.float8_e5m2,
    "fp8e4b8": torch.float8_e4m3fnuz,
    "fp8e5b16": torch.float8_e5m2fnuz,
}
# fp8e4b15 has no torch (or numpy) counterpart; it is recognised only to refuse it.
_LOW_FLOATS = frozenset(_TORCH_DTYPES) | {"fp8e4b15"}
_STORAGE = {"bf16": np.uint16, "fp16": np.float16}
# Formats whose sign bit can be flipped on its own; in the "fnuz" ones -0 is the NaN code.
_SIGN_FLIP = {"bf16": 0x8000, "fp16": 0x8000, "fp8e4nv": 0x80, "fp8e5": 0x80}


def _name(dtype) -> str | None:
    return getattr(getattr(dtype, "scalar", dtype), "name", None)


def _is_low(dtype) -> bool:
    return _name(dtype) in _LOW_FLOATS


def _storage_dtype(name: str):
    return np.dtype(_STORAGE.get(name, np.uint8))


def _is_low_handle(handle) -> bool:
    # A handle's dtype is only trusted when its data really is that type's storage.
    name = _name(handle.dtype)
    return name in _LOW_FLOATS and np.asarray(handle.data).dtype == _storage_dtype(name)


def _torch_dtype(name: str) -> torch.dtype:
    if name not in _TORCH_DTYPES:
        raise InterpreterUnsupported(
            f"{name} values: the interpreter has no by-value model of this format"
        )
    return _TORCH_DTYPES[name]


def decode(data, dtype) -> np.ndarray:
    """Storage array of a low-precision float type -> its values as float32."""
    name = _name(dtype)
    data = np.asarray(data)
    if name == "fp16":
        return data.astype(np.float32)
    if name == "bf16":
        return (data.astype(np.uint32) << np.uint32(16)).view(np.float32)
    tdtype = _torch_dtype(name)
    bits = torch.from_numpy(np.array(data, dtype=np.uint8))
    return bits.view(tdtype).to(torch.float32).numpy()


def _f64_to_f32_round_odd(values: np.ndarray) -> np.ndarray:
    # Rounding to odd first makes the later round-to-nearest-even give the correctly
    # rounded result, where rounding twice to nearest could land on the wrong side of a tie.
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = values.astype(np.float32)
    back = nearest.astype(np.float64)
    inexact = (back != values) & np.isfinite(values) & np.isfinite(back)
    bits = nearest.view(np.uint32)
    overshoot = inexact & (np.abs(back) > np.abs(values))
    bits = np.where(overshoot, bits - np.uint32(1), bits)
    bits = np.where(inexact, bits | np.uint32(1), bits)
    return bits.astype(np.uint32).view(np.float32)


def _as_float32(values) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype == np.float32:
        return np.array(values)
    if values.dtype.kind in "iub":
        values = values.astype(np.float64)
    return _f64_to_f32_round_odd(values.astype(np.float64))


def _torch_bits_to_storage(tensor: torch.Tensor, name: str) -> np.ndarray:
    if name == "fp16":
        return tensor.numpy()
    if name == "bf16":
        return tensor.view(torch.int16).numpy().view(np.uint16)
    return tensor.view(torch.uint8).numpy()


def _saturate_fp8(values: np.ndarray, tdtype: torch.dtype) -> np.ndarray:
    # NVIDIA lowers fp32 -> fp8 to cvt.rn.satfinite: out-of-range values and infinities
    # clamp to the largest finite value, NaN stays NaN.
    limit = np.float32(torch.finfo(tdtype).max)
    return np.where(np.isnan(values), values, np.clip(values, -limit, limit))


def _step_toward_zero(stored: np.ndarray, name: str) -> np.ndarray:
    # Every supported format is sign-magnitude, so one less in the magnitude bits is one
    # ulp toward zero (and the largest finite value when stepping down from infinity).
    if name == "fp16":
        return (stored.view(np.uint16) - np.uint16(1)).view(np.float16)
    return stored - stored.dtype.type(1)


def encode(values, dtype, rtz: bool = False) -> np.ndarray:
    """Float (or integer) values -> storage of a low-precision float type, rounded like a GPU."""
    name = _name(dtype)
    tdtype = _torch_dtype(name)
    v32 = _as_float32(values)
    if name.startswith("fp8"):
        v32 = _saturate_fp8(v32, tdtype)
    stored = _torch_bits_to_storage(torch.from_numpy(v32).to(tdtype), name)
    if rtz:
        with np.errstate(invalid="ignore"):
            overshoot = np.abs(decode(stored, dtype)) > np.abs(v32)
        stored = np.where(overshoot, _step_toward_zero(stored, name), stored)
    return np.asarray(stored).astype(_storage_dtype(name))


def _np_dtype(dtype) -> np.dtype:
    name = _name(dtype)
    if name in _LOW_FLOATS:
        return _storage_dtype(name)
    return np.dtype(
        {
            "int1": np.bool_,
            "int8": np.int8,
            "uint8": np.uint8,
            "int16": np.int16,
            "uint16": np.uint16,
            "int32": np.int32,
            "uint32": np.uint32,
            "int64": np.int64,
            "uint64": np.uint64,
            "fp32": np.float32,
            "fp64": np.float64,
        }[name]
    )


def _values(handle) -> np.ndarray:
    """The numbers a handle holds: low-precision floats decoded, everything else as is."""
    if _is_low_handle(handle):
        return decode(handle.data, handle.dtype)
    return np.asarray(handle.data)


def _float_to_int(values: np.ndarray, np_dtype: np.dtype) -> np.ndarray:
    # In range this truncates toward zero like fptosi/fptoui. Out of range LLVM leaves the
    # result undefined; NVIDIA's cvt.rzi saturates and maps NaN to 0, so do the same.
    info = np.iinfo(np_dtype)
    with np.errstate(invalid="ignore"):
        truncated = np.trunc(values.astype(np.float64))
        high = truncated >= float(info.max)
        low = truncated <= float(info.min)
        safe = np.where(np.isnan(truncated) | high | low, 0, truncated)
        out = safe.astype(np_dtype)
    out = np.where(high, np_dtype.type(info.max), out)
    return np.where(low, np_dtype.type(info.min), out).astype(np_dtype)


def _to_dtype(values, dtype, rtz: bool = False) -> np.ndarray:
    """Values -> storage for any scalar Triton type, rounding or saturating like a GPU."""
    name = _name(dtype)
    values = np.asarray(values)
    if name in _LOW_FLOATS:
        return encode(values, dtype, rtz)
    np_dtype = _np_dtype(dtype)
    if name == "int1":
        return values.astype(np.bool_)
    if np_dtype.kind in "iu" and values.dtype.kind == "f":
        return _float_to_int(values, np_dtype)
    return values.astype(np_dtype)


# ---------------------------------------------------------------------------
# Patched InterpreterBuilder methods
# ---------------------------------------------------------------------------

_ip = None  # triton.runtime.interpreter, imported once the version check has passed


def _handle(data, dtype):
    return _ip.TensorHandle(np.asarray(data), getattr(dtype, "scalar", dtype))


def _by_value(*handles) -> bool:
    return any(_is_low_handle(h) for h in handles)


def _float_binary(original, op):
    def patched(self, lhs, rhs):
        if not _by_value(lhs, rhs):
            return original(self, lhs, rhs)
        with np.errstate(all="ignore"):
            out = op(_values(lhs), _values(rhs))
        return _handle(encode(out, lhs.dtype), lhs.dtype)

    return patched


def _float_compare(original, op, ordered: bool):
    # Also fixes fp32: upstream treats ordered and unordered predicates alike for NaN.
    def patched(self, lhs, rhs):
        a, b = _values(lhs), _values(rhs)
        if a.dtype.kind != "f" or b.dtype.kind != "f":
            return original(self, lhs, rhs)
        with np.errstate(invalid="ignore"):
            nan = np.isnan(a) | np.isnan(b)
            out = op(a, b) & ~nan if ordered else op(a, b) | nan
        return _handle(out, tl.int1)

    return patched


def _float_unary(original, op):
    def patched(self, arg):
        if not _by_value(arg):
            return original(self, arg)
        with np.errstate(all="ignore"):
            out = op(_values(arg).astype(np.float64))
        return _handle(encode(out, arg.dtype), arg.dtype)

    return patched


def _patched_fneg(original):
    def patched(self, arg):
        if not _by_value(arg):
            return original(self, arg)
        name = _name(arg.dtype)
        if name not in _SIGN_FLIP:
            return _handle(encode(-_values(arg), arg.dtype), arg.dtype)
        # The GPU negates by flipping the sign bit, which also keeps NaN payloads.
        bits = np.asarray(arg.data).view(np.uint16 if name in _STORAGE else np.uint8)
        flipped = bits ^ bits.dtype.type(_SIGN_FLIP[name])
        return _handle(flipped.view(_storage_dtype(name)), arg.dtype)

    return patched


def _patched_fma(original):
    def patched(self, x, y, z):
        if not _by_value(x, y, z):
            return original(self, x, y, z)
        # Products of low-precision values are exact in fp64, so this rounds once.
        out = _values(x).astype(np.float64) * _values(y) + _values(z)
        return _handle(encode(out, z.dtype), z.dtype)

    return patched


def _patched_clampf(original):
    def patched(self, arg, lo, hi, propagate_nans):
        if not _by_value(arg, lo, hi):
            return original(self, arg, lo, hi, propagate_nans)
        x, a, b = _values(arg), _values(lo), _values(hi)
        with np.errstate(invalid="ignore"):
            if propagate_nans == _ip._ir.PROPAGATE_NAN.NONE:
                out = np.fmin(np.fmax(x, a), b)
            else:
                out = np.clip(x, a, b)
        return _handle(encode(out, arg.dtype), arg.dtype)

    return patched


def _patched_conversion(original):
    def patched(self, src, dst_type, *rounding):
        dst = dst_type.scalar
        if not (
            _by_value(src) or _is_low(dst) or (dst.is_int() and src.dtype.is_floating())
        ):
            return original(self, src, dst_type, *rounding)
        rtz = bool(rounding) and rounding[0] == _ip._ir.ROUNDING_MODE.RTZ
        return _handle(_to_dtype(_values(src), dst, rtz), dst)

    return patched


def _patched_dot(original):
    def patched(self, a, b, d, input_precision, max_num_imprecise_acc):
        if not _by_value(a, b, d):
            return original(self, a, b, d, input_precision, max_num_imprecise_acc)
        # Low-precision products are exact in fp64; the GPU accumulates them in fp32.
        acc = np.matmul(_values(a).astype(np.float64), _values(b).astype(np.float64))
        return _handle(_to_dtype(acc + _values(d), d.dtype), d.dtype)

    return patched


def _atomic_fadd_by_value(ptr, val, mask):
    # Programs run one after another, so adding element by element is race-free and
    # accumulates repeated addresses within one block the way hardware atomics do.
    dtype = val.dtype
    storage = _storage_dtype(_name(dtype))
    shape = np.broadcast_shapes(
        np.shape(ptr.data), np.shape(val.data), np.shape(mask.data)
    )
    # A writeable copy: triton 3.6's load refuses read-only (broadcast) pointer arrays.
    ptrs = np.array(np.broadcast_to(ptr.data, shape)).reshape(-1)
    vals = np.broadcast_to(_values(val), shape).reshape(-1)
    live = np.broadcast_to(mask.data, shape).reshape(-1)
    old = np.zeros(ptrs.shape, dtype=storage)
    one = np.ones(1, dtype=bool)
    for i in np.flatnonzero(live):
        p = ptrs[i : i + 1]
        current = _ip._interpreter.load(p, one, np.zeros(1, dtype=storage), storage)
        old[i] = current[0]
        _ip._interpreter.store(p, encode(decode(current, dtype) + vals[i], dtype), one)
    return _handle(old.reshape(shape), dtype)


def _patched_atomic_rmw(original):
    def patched(self, rmw_op, ptr, val, mask, sem, scope):
        if not _by_value(val):
            return original(self, rmw_op, ptr, val, mask, sem, scope)
        if rmw_op == _ip._ir.ATOMIC_OP.FADD:
            return _atomic_fadd_by_value(ptr, val, mask)
        if _name(val.dtype) == "fp16":
            # Stored as real float16, which the interpreter's atomics handle themselves.
            return original(self, rmw_op, ptr, val, mask, sem, scope)
        raise InterpreterUnsupported(f"atomic {rmw_op} on {_name(val.dtype)}")

    return patched


def _patched_atomic_cas(original):
    def patched(self, ptr, cmp, val, sem, scope):
        if _by_value(val) and _name(val.dtype) != "fp16":
            raise InterpreterUnsupported(f"atomic_cas on {_name(val.dtype)}")
        return original(self, ptr, cmp, val, sem, scope)

    return patched


def _refuse(construct: str):
    def patched(self, *args, **kwargs):
        raise InterpreterUnsupported(construct)

    return patched


# ---------------------------------------------------------------------------
# Reductions and scans: ReduceOps / ScanOps fast paths work on raw storage bits
# ---------------------------------------------------------------------------


def _pairwise(arrays: list[np.ndarray], axis: int, combine) -> list[np.ndarray]:
    """Reduce equally shaped arrays along `axis` as a tree of adjacent pairs, the
    way a GPU's warp shuffles and shared-memory steps combine partial results.
    `combine(lhs_list, rhs_list)` returns the merged list; an odd element out is
    carried to the next level."""
    while arrays[0].shape[axis] > 1:
        n = arrays[0].shape[axis]
        half = n // 2
        lhs = [np.take(a, np.arange(0, 2 * half, 2), axis=axis) for a in arrays]
        rhs = [np.take(a, np.arange(1, 2 * half, 2), axis=axis) for a in arrays]
        merged = combine(lhs, rhs)
        if n % 2:
            merged = [
                np.concatenate([m, np.take(a, [n - 1], axis=axis)], axis=axis)
                for m, a in zip(merged, arrays)
            ]
        arrays = merged
    return [np.squeeze(a, axis=axis) for a in arrays]


def _patched_sum(original):
    # The GPU adds in the storage type, rounding at every combine step of its
    # reduction tree; a single fp64 sum rounded once would hide bf16 accumulation.
    def patched(self, input):
        if not _by_value(input.handle):
            return original(self, input)
        values = _values(input.handle).astype(np.float32)
        axis = self.axis
        if axis is None:
            values, axis = values.reshape(-1), 0

        def add(lhs, rhs):
            return [decode(encode(lhs[0] + rhs[0], input.dtype), input.dtype)]

        (total,) = _pairwise([values], axis, add)
        if self.keep_dims:
            total = np.expand_dims(total, axis if self.axis is not None else 0)
        return self.to_tensor(encode(total, input.dtype), input.dtype)

    return patched


def _tree_generic_reduce(original):
    # Triton's interpreter folds a combine_fn reduction element by element, left to
    # right: for Welford over a row near 128 that drifts ten times further than
    # the GPU's tree does. Combine adjacent pairs level by level instead.
    def patched(self, input):
        inputs, axis = self.unravel(input, self.axis)
        datas = [arg.handle.data for arg in inputs]
        dtypes = [arg.dtype for arg in inputs]
        if datas[0].shape[axis] == 0:
            return original(self, input)

        def combine(lhs_list, rhs_list):
            args = [self.to_tensor(d, t) for d, t in zip(lhs_list, dtypes)]
            args += [self.to_tensor(d, t) for d, t in zip(rhs_list, dtypes)]
            ret = self.combine_fn.fn(*args)
            ret = ret if isinstance(ret, tuple) else (ret,)
            out = []
            for r, like in zip(ret, lhs_list):
                data = r.handle.data if isinstance(r, tl.core.tensor) else r
                out.append(
                    np.broadcast_to(np.asarray(data), like.shape).astype(like.dtype)
                )
            return out

        datas = _pairwise(datas, axis, combine)
        ret = []
        for data, arg in zip(datas, inputs):
            if self.keep_dims:
                if self.axis is not None:
                    data = np.expand_dims(data, axis)
                else:
                    data = data.reshape((1,) * arg.handle.data.ndim)
            elif self.axis is None:
                data = data.item()
            ret.append(self.to_tensor(data, arg.dtype))
        return ret

    return patched


def _patched_min_max(original):
    def patched(self, input, val_reduce_op, idx_reduce_op=None):
        tensor = input[0] if isinstance(input, tuple) else input
        if not _by_value(tensor.handle):
            return original(self, input, val_reduce_op, idx_reduce_op)
        values = _values(tensor.handle)
        reduce = functools.partial(
            _nan_safe_reduce, axis=self.axis, keepdims=self.keep_dims
        )
        val = idx = None
        if val_reduce_op:
            best = reduce(val_reduce_op, values)
            val = self.to_tensor(encode(best, tensor.dtype), tensor.dtype)
        if idx_reduce_op:
            idx = self.to_tensor(reduce(idx_reduce_op, values), tl.int32)
        if val is not None and idx is not None:
            return val, idx
        return val if val is not None else idx

    return patched


def _nan_safe_reduce(op, values, axis, keepdims):
    # nanargmax/nanargmin raise on an all-NaN slice; there NaN becomes the value that is
    # never chosen over a number, so the slice answers index 0 like upstream's other paths.
    with np.errstate(invalid="ignore"), _quiet_warnings():
        try:
            return op(values, axis=axis, keepdims=keepdims)
        except ValueError:
            fill = -np.inf if op is np.nanargmax else np.inf
            return op(np.nan_to_num(values, nan=fill), axis=axis, keepdims=keepdims)


@contextlib.contextmanager
def _quiet_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _patched_scan(original, op):
    def patched(self, input):
        if not _by_value(input.handle):
            return original(self, input)
        out = op(_values(input.handle).astype(np.float64), axis=self.axis)
        return [self.to_tensor(encode(out, input.dtype), dtype=input.dtype)]

    return patched


# ---------------------------------------------------------------------------
# libdevice
# ---------------------------------------------------------------------------


def _torch_fn(fn):
    return lambda x: fn(torch.from_numpy(np.array(x, dtype=np.float64))).numpy()


def _round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _gamma(x):
    def one(v):
        try:
            return math.gamma(v)
        except (ValueError, OverflowError):
            return (
                math.nan
                if v <= 0 and v == math.floor(v)
                else math.copysign(math.inf, v)
            )

    return np.vectorize(one, otypes=[np.float64])(x)


def _ieee_remainder(x, y):
    def one(a, b):
        try:
            return math.remainder(a, b)
        except ValueError:
            return math.nan

    return np.vectorize(one, otypes=[np.float64])(x, y)


def _fma(x, y, z):
    # fp32 needs a real fused multiply-add: an fp64 product and sum round twice.
    x, y, z = np.broadcast_arrays(x, y, z)
    if x.dtype == np.float32:
        return _ip._interpreter.fma_fp32(x, y, z)
    return _ip._interpreter.fma_fp64(x, y, z)


def _clz(x):
    bits = x.dtype.itemsize * 8
    u = x.view(np.dtype(f"uint{bits}")).astype(np.uint64)
    count = np.zeros(u.shape, dtype=np.int32)
    for shift in (32, 16, 8, 4, 2, 1):
        if shift >= bits:
            continue
        top_clear = (u >> np.uint64(bits - shift)) == 0
        count += np.where(top_clear, shift, 0).astype(np.int32)
        u = np.where(top_clear, (u << np.uint64(shift)) & np.uint64(2**bits - 1), u)
    return count + ((u >> np.uint64(bits - 1)) == 0)


def _popc(x):
    return np.bitwise_count(x.view(np.dtype(f"uint{x.dtype.itemsize * 8}"))).astype(
        np.int32
    )


def _ffs(x):
    u = x.view(np.dtype(f"uint{x.dtype.itemsize * 8}"))
    lowest = u & (~u + u.dtype.type(1))
    return np.where(u == 0, 0, _popc(lowest - u.dtype.type(1)) + 1).astype(np.int32)


def _bitcast_to(np_dtype):
    return lambda x: np.ascontiguousarray(x).view(np_dtype)


_SQRT2 = math.sqrt(2.0)

# Computed in fp64 from fp32 inputs, then rounded once to the libdevice return type.
_LIBDEVICE = {
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "nearbyint": np.rint,
    "round": _round_half_away,
    "llrint": np.rint,
    "llround": _round_half_away,
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "sqrt_rn": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "rsqrt_rn": lambda x: 1.0 / np.sqrt(x),
    "rcp_rn": lambda x: 1.0 / x,
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1.0 / np.cbrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "rhypot": lambda x, y: 1.0 / np.hypot(x, y),
    "norm3d": lambda x, y, z: np.sqrt(x * x + y * y + z * z),
    "rnorm3d": lambda x, y, z: 1.0 / np.sqrt(x * x + y * y + z * z),
    "pow": np.power,
    "fmod": np.fmod,
    "remainder": _ieee_remainder,
    "copysign": np.copysign,
    "fdim": lambda x, y: np.maximum(x - y, 0.0),
    "add_rn": np.add,
    "sub_rn": np.subtract,
    "mul_rn": np.multiply,
    "div_rn": np.divide,
    "saturatef": lambda x: np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0)),
    "erf": _torch_fn(torch.special.erf),
    "erfc": _torch_fn(torch.special.erfc),
    "erfinv": _torch_fn(torch.special.erfinv),
    "erfcx": _torch_fn(torch.special.erfcx),
    "erfcinv": lambda x: -_torch_fn(torch.special.ndtri)(x / 2.0) / _SQRT2,
    "normcdf": _torch_fn(torch.special.ndtr),
    "normcdfinv": _torch_fn(torch.special.ndtri),
    "lgamma": _torch_fn(torch.lgamma),
    "tgamma": _gamma,
    "j0": _torch_fn(torch.special.bessel_j0),
    "j1": _torch_fn(torch.special.bessel_j1),
    "y0": _torch_fn(torch.special.bessel_y0),
    "y1": _torch_fn(torch.special.bessel_y1),
    "cyl_bessel_i0": _torch_fn(torch.special.i0),
    "cyl_bessel_i1": _torch_fn(torch.special.i1),
    "ldexp": np.ldexp,
    "scalbn": np.ldexp,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "finitef": np.isfinite,
    "isfinited": np.isfinite,
    "signbit": np.signbit,
}
# The fast_* variants are approximations on the GPU; the exact value is within their error.
for _fast, _exact in {
    "fast_expf": "exp",
    "fast_logf": "log",
    "fast_log2f": "log2",
    "fast_log10f": "log10",
    "fast_exp10f": "exp10",
    "fast_sinf": "sin",
    "fast_cosf": "cos",
    "fast_tanf": "tan",
    "fast_powf": "pow",
    "fast_dividef": "div_rn",
    "fast_tanhf": "tanh",
}.items():
    _LIBDEVICE[_fast] = _LIBDEVICE[_exact]
# Float -> integer conversions with an explicit rounding mode; saturation as in casts.
for _src in ("float", "double"):
    for _dst in ("int", "uint", "ll", "ull"):
        for _mode, _fn in {
            "rn": np.rint,
            "rz": np.trunc,
            "rd": np.floor,
            "ru": np.ceil,
        }.items():
            _LIBDEVICE[f"{_src}2{_dst}_{_mode}"] = _fn

# These read their arguments at their own precision (integers, bit patterns, exact fma).
_NATIVE = {
    "abs": np.abs,
    "fma": _fma,
    "fma_rn": _fma,
    "nextafter": np.nextafter,
    "ilogb": lambda x: np.frexp(x)[1] - 1,
    "logb": lambda x: (np.frexp(x)[1] - 1).astype(np.float64),
    "popc": _popc,
    "clz": _clz,
    "ffs": _ffs,
    "int_as_float": _bitcast_to(np.float32),
    "float_as_int": _bitcast_to(np.int32),
    "uint_as_float": _bitcast_to(np.float32),
    "float_as_uint": _bitcast_to(np.uint32),
    "longlong_as_double": _bitcast_to(np.float64),
    "double_as_longlong": _bitcast_to(np.int64),
    "double2float_rn": lambda x: x,
    "int2float_rn": lambda x: x,
    "uint2float_rn": lambda x: x,
    "ll2float_rn": lambda x: x,
    "ull2float_rn": lambda x: x,
    "int2double_rn": lambda x: x,
    "uint2double_rn": lambda x: x,
    "ll2double_rn": lambda x: x,
    "ull2double_rn": lambda x: x,
}

# The libdevice function being dispatched, innermost last.
_extern_names: list[str] = []
# libdevice name -> the original CUDA (or HIP) builtin, whose type table picks the variant.
_backends: dict[str, object] = {}


def _libdevice_impl(name: str):
    if name in _NATIVE:
        return _NATIVE[name], True
    if name in _LIBDEVICE:
        return _LIBDEVICE[name], False
    raise InterpreterUnsupported(
        f"libdevice.{name}: porter's interpreter has no CPU implementation of it"
    )


def _call_libdevice(name: str, backend, args, kwargs):
    _libdevice_impl(name)  # refuse unknown functions before touching the arguments
    _extern_names.append(name)
    try:
        return backend(*args, _semantic=_ip.interpreter_semantic, **kwargs)
    except KeyError as err:
        # The backend's type table has no entry for these argument types; the GPU compiler
        # fails on exactly the same lookup.
        raise TypeError(
            f"libdevice.{name} has no variant for argument types {err.args[0]}; "
            "cast the arguments to fp32 first, as Triton requires on the GPU too"
        ) from None
    finally:
        _extern_names.pop()


def _porter_libdevice_dispatch(*args, **kwargs):
    # Called from the swapped-in stub body, whose code object carries the stub's name.
    name = sys._getframe(1).f_code.co_name
    backend = _backends.get(name)
    if backend is None:
        raise InterpreterUnsupported(f"libdevice.{name}: no backend defines it")
    return _call_libdevice(name, backend, args, kwargs)


def _libdevice_stub_body(*args, **kwargs):
    return _porter_libdevice_dispatch(*args, **kwargs)


def _backend_entry(name: str, original):
    @functools.wraps(original)
    def entry(*args, _semantic=None, **kwargs):
        if _semantic is not None and _semantic is not _ip.interpreter_semantic:
            return original(*args, _semantic=_semantic, **kwargs)
        return _call_libdevice(name, original, args, kwargs)

    return entry


def _patched_extern_elementwise(original):
    def patched(self, lib_name, lib_path, symbol, arg_list, ret_type, is_pure):
        if not _extern_names:
            raise InterpreterUnsupported(f"extern_elementwise symbol {symbol}")
        name = _extern_names[-1]
        impl, native = _libdevice_impl(name)
        args = [_values(h) for h in arg_list]
        if not native:
            args = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in args]
        with np.errstate(all="ignore"), _quiet_warnings():
            out = np.asarray(impl(*args))
        return _handle(_to_dtype(out, ret_type.scalar), ret_type.scalar)

    return patched


# ---------------------------------------------------------------------------
# Errors: let InterpreterUnsupported out of the interpreter's InterpreterError wrapper
# ---------------------------------------------------------------------------


def _find_unsupported(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, InterpreterUnsupported):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


_launch_depth = 0  # > 0 while a kernel runs under the interpreter
# id(fn) -> (fn, InterpretedFunction), for JITFunctions called from interpreted kernels.
_interpreted_helpers: dict[int, tuple[object, object]] = {}


def _fp64_arguments(fn, args, kwargs):
    """args and kwargs with each float passed for a parameter annotated
    tl.float64 made an fp64 scalar: the interpreter keeps a Python float as it
    is, which then meets fp64 values as fp32, where a GPU launch passes fp64."""
    notes = getattr(fn, "__annotations__", {})
    wide = {n for n, a in notes.items() if a in (tl.float64, "tl.float64")}
    if not wide:
        return args, kwargs

    def widened(name, value):
        if name not in wide or not isinstance(value, float):
            return value
        handle = _ip.TensorHandle(np.array([value], dtype=np.float64), tl.float64)
        return tl.tensor(handle, tl.float64)

    names = list(inspect.signature(fn).parameters)
    args = tuple(widened(n, v) for n, v in zip(names, args)) + args[len(names) :]
    return args, {k: widened(k, v) for k, v in kwargs.items()}


def _launch_wrapper(original):
    @functools.wraps(original)
    def call(self, *args, **kwargs):
        global _launch_depth
        _launch_depth += 1
        try:
            args, kwargs = _fp64_arguments(self.fn, args, kwargs)
            return original(self, *args, **kwargs)
        except Exception as exc:
            unsupported = _find_unsupported(exc)
            if unsupported is None or unsupported is exc:
                raise
            raise unsupported.with_traceback(unsupported.__traceback__) from None
        finally:
            _launch_depth -= 1

    return call


def _interpreted(jit_fn):
    fn = jit_fn.fn
    cached = _interpreted_helpers.get(id(fn))
    if cached is None or cached[0] is not fn:
        cached = (fn, _ip.InterpretedFunction(fn))
        _interpreted_helpers[id(fn)] = cached
    return cached[1]


def _jit_call_wrapper(original):
    # A @triton.jit function decorated before TRITON_INTERPRET=1 was set (tl.sum and the
    # rest of triton.language.standard, when triton was imported first) is a JITFunction
    # that refuses to be called; inside an interpreted launch, interpret it instead.
    @functools.wraps(original)
    def call(self, *args, **kwargs):
        if _launch_depth == 0:
            return original(self, *args, **kwargs)
        return _interpreted(self)(*args, **kwargs)

    return call


# ---------------------------------------------------------------------------
# Patch bookkeeping
# ---------------------------------------------------------------------------

_MISSING = object()
_saved: list[tuple[object, str, object]] | None = None  # None while disabled


def _set(obj, name: str, value) -> None:
    own = obj.__code__ if name == "__code__" else vars(obj).get(name, _MISSING)
    _saved.append((obj, name, own))
    setattr(obj, name, value)


def _restore() -> None:
    while _saved:
        obj, name, original = _saved.pop()
        if original is _MISSING:
            delattr(obj, name)
        else:
            setattr(obj, name, original)


_BINARY = {
    "create_fadd": np.add,
    "create_fsub": np.subtract,
    "create_fmul": np.multiply,
    "create_fdiv": np.divide,
    "create_precise_divf": np.divide,
    "create_approx_divf": np.divide,
    "create_frem": np.fmod,
    "create_minimumf": np.minimum,
    "create_maximumf": np.maximum,
    "create_minnumf": np.fmin,
    "create_maxnumf": np.fmax,
}
_COMPARE = {
    "LT": np.less,
    "GT": np.greater,
    "LE": np.less_equal,
    "GE": np.greater_equal,
    "EQ": np.equal,
    "NE": np.not_equal,
}
_UNARY = {
    "create_exp": np.exp,
    "create_exp2": np.exp2,
    "create_log": np.log,
    "create_log2": np.log2,
    "create_cos": np.cos,
    "create_sin": np.sin,
    "create_sqrt": np.sqrt,
    "create_precise_sqrt": np.sqrt,
    "create_rsqrt": lambda x: 1.0 / np.sqrt(x),
    "create_floor": np.floor,
    "create_ceil": np.ceil,
    "create_erf": _torch_fn(torch.special.erf),
}
_CONVERSIONS = (
    "create_fp_to_fp",
    "create_fp_ext",
    "create_fp_trunc",
    "create_si_to_fp",
    "create_ui_to_fp",
    "create_fp_to_si",
    "create_fp_to_ui",
)


def _patched_splat(original):
    """A comparison's handle keeps its operands' dtype (int64) over bool data,
    and splatting it filled an int64 array: `(k < k) & mask` was then no mask
    to a load ("mask has unsupported dtype"). Keep a splat bool as int1."""

    def patched(self, *args):
        out = original(self, *args)
        arg = next(a for a in args if isinstance(a, _ip.TensorHandle))
        if np.asarray(arg.data).dtype == np.bool_ and out.data.dtype != np.bool_:
            return _handle(out.data.astype(np.bool_), tl.int1)
        return out

    return patched


def _builder_patches() -> dict:
    """Method name -> factory(original method) -> patched method."""
    factories = {
        name: functools.partial(_float_binary, op=op) for name, op in _BINARY.items()
    }
    for pred, op in _COMPARE.items():
        for prefix, ordered in (("O", True), ("U", False)):
            factories[f"create_fcmp{prefix}{pred}"] = functools.partial(
                _float_compare, op=op, ordered=ordered
            )
    factories.update(
        {name: functools.partial(_float_unary, op=op) for name, op in _UNARY.items()}
    )
    factories.update({name: _patched_conversion for name in _CONVERSIONS})
    factories.update(
        create_splat=_patched_splat,
        create_fneg=_patched_fneg,
        create_fma=_patched_fma,
        create_clampf=_patched_clampf,
        create_dot=_patched_dot,
        create_atomic_rmw=_patched_atomic_rmw,
        create_atomic_cas=_patched_atomic_cas,
        create_extern_elementwise=_patched_extern_elementwise,
        create_inline_asm=lambda original: _refuse("inline_asm_elementwise"),
    )
    return factories


def _patch_builder() -> None:
    builder = _ip.InterpreterBuilder
    for name, factory in _builder_patches().items():
        # Releases differ slightly in which builder methods exist; patch those present.
        if hasattr(builder, name):
            _set(builder, name, factory(getattr(builder, name)))
    if not hasattr(builder, "get_bf16"):
        # Older interpreters lack it, so a Python float meeting a bf16 tensor fails.
        _set(builder, "get_bf16", _get_bf16)


def _get_bf16(self, value):
    return _handle(
        encode(np.array([value], dtype=np.float32), tl.bfloat16), tl.bfloat16
    )


def _patch_reductions() -> None:
    reduce_ops, scan_ops = _ip.ReduceOps, _ip.ScanOps
    _set(reduce_ops, "sum", _patched_sum(reduce_ops.sum))
    _set(reduce_ops, "generic_reduce", _tree_generic_reduce(reduce_ops.generic_reduce))
    _set(reduce_ops, "min_max", _patched_min_max(reduce_ops.min_max))
    _set(scan_ops, "cumsum", _patched_scan(scan_ops.cumsum, np.cumsum))
    _set(scan_ops, "cumprod", _patched_scan(scan_ops.cumprod, np.cumprod))


def _libdevice_modules():
    from triton.language.extra import libdevice as stub

    backends = []
    for package in ("cuda", "hip"):
        module = sys.modules.get(f"triton.language.extra.{package}.libdevice")
        if module is not None:
            backends.append(module)
    return stub, backends


def _patch_libdevice() -> None:
    stub, backends = _libdevice_modules()
    _backends.clear()
    for module in backends:
        for name, fn in list(vars(module).items()):
            if tl.core.is_builtin(fn):
                _backends.setdefault(name, fn)
                _set(module, name, _backend_entry(name, fn))
    _set(stub, "_porter_libdevice_dispatch", _porter_libdevice_dispatch)
    for name, fn in list(vars(stub).items()):
        if callable(fn) and getattr(fn, "__module__", None) == stub.__name__:
            # Swap the code, not the module attribute, so that names bound with
            # `from triton.language.extra.libdevice import tanh` compute as well.
            code = _libdevice_stub_body.__code__.replace(co_name=name)
            _set(fn, "__code__", code)


def _interpreter_active() -> bool:
    knobs = getattr(triton, "knobs", None)
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def _check_triton_version() -> None:
    version = triton.__version__
    if (
        version.split("+")[0] in TESTED_TRITON_VERSIONS
        or os.environ.get(FORCE_ENV) == "1"
    ):
        return
    tested = ", ".join(TESTED_TRITON_VERSIONS)
    raise PorterError(
        f"interpreter fidelity patches were tested on triton {tested}, not {version}; "
        f"set {FORCE_ENV}=1 to apply them anyway"
    )


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def enable_interpreter_fidelity() -> bool:
    """Patch Triton's interpreter to compute like a GPU; True once patched.

    A no-op returning False when TRITON_INTERPRET is off. Calling it again is harmless.
    Raises PorterError on a triton release the patches were not tested on.
    """
    global _ip, _saved
    if _saved is not None:
        return True
    if not _interpreter_active():
        return False
    _check_triton_version()
    import triton.runtime.interpreter as interpreter

    _ip = interpreter
    _saved = []
    try:
        _patch_builder()
        _patch_reductions()
        _patch_libdevice()
        _set(_ip.GridExecutor, "__call__", _launch_wrapper(_ip.GridExecutor.__call__))
        jit_function = triton.runtime.jit.JITFunction
        _set(jit_function, "__call__", _jit_call_wrapper(jit_function.__call__))
    except Exception:
        _restore()
        _saved = None
        raise
    return True


def disable_interpreter_fidelity() -> bool:
    """Undo enable_interpreter_fidelity(); True if anything was patched."""
    global _saved
    if _saved is None:
        return False
    _restore()
    _saved = None
    return True


def fidelity_enabled() -> bool:
    return _saved is not None
