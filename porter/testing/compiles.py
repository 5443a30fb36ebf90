"""Whether a case's kernels compile for a GPU, checked without one.

Triton's interpreter runs some code the GPU compiler rejects (a broadcast of a
constexpr, the dtype of a constexpr), so a scaffold can pass its parity suite
on the CPU and fail on the first GPU call. This runs the case's launcher on
uninitialized CPU inputs without running its kernels, and compiles each
distinct launch for sm_90 with the ptxas in the triton wheel.

Kernels decorated under TRITON_INTERPRET=1 cannot be compiled, so the check
runs in a process of its own:

    python3 -m porter.testing.compiles CASE [DTYPE]
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

# Triton 3.9 warns unless this is set; 3.6 (the H200's) fuses by default.
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

ARCH = 90


def _pointer_types():
    import torch

    return {
        torch.float32: "fp32",
        torch.float16: "fp16",
        torch.bfloat16: "bf16",
        torch.float64: "fp64",
        torch.int8: "i8",
        torch.uint8: "u8",
        torch.int16: "i16",
        torch.int32: "i32",
        torch.int64: "i64",
        torch.bool: "i1",
        getattr(torch, "float8_e4m3fn", None): "fp8e4nv",
        getattr(torch, "float8_e5m2", None): "fp8e5",
        # ROCm's formats: Triton names them, sm_90 has no conversions for them
        getattr(torch, "float8_e4m3fnuz", None): "fp8e4b8",
        getattr(torch, "float8_e5m2fnuz", None): "fp8e5b16",
        getattr(torch, "uint16", None): "u16",
        getattr(torch, "uint32", None): "u32",
        getattr(torch, "uint64", None): "u64",
    }


def source_of(kernel, bound: inspect.BoundArguments):
    """The ASTSource Triton would compile for this launch (its specialization
    by Triton's rules: ints equal to 1 become constexprs, 16-divisible ints and
    16-byte aligned pointers carry tt.divisibility), and the constexprs."""
    import torch
    from triton.compiler import ASTSource

    from porter.testing.launches import jit_kernel, unspecialized

    types = _pointer_types()
    params = inspect.signature(kernel.fn).parameters
    dns, dnsoa = unspecialized(kernel)
    signature, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(params):
        value = bound.arguments[name]
        annotation = str(params[name].annotation)
        divisible = False
        if "constexpr" in annotation:
            signature[name] = "constexpr"
            constexprs[name] = value
            continue
        if isinstance(value, torch.Tensor):
            signature[name] = "*" + types[value.dtype]
            divisible = value.data_ptr() % 16 == 0 and name not in dnsoa
        elif isinstance(value, bool):
            signature[name] = "i1"
        elif isinstance(value, int):
            if value == 1 and name not in dns:
                signature[name] = "constexpr"
                constexprs[name] = 1
                continue
            wide = "int64" in annotation or not -(2**31) <= value < 2**31
            signature[name] = "i64" if wide else "i32"
            divisible = value % 16 == 0 and name not in dns
        elif isinstance(value, float):
            # an argument annotated tl.float64 launches as fp64 (bind.scalar_width)
            wide = "float64" in annotation or annotation == "fp64"
            signature[name] = "fp64" if wide else "fp32"
        else:
            raise TypeError(f"{name}: cannot type {type(value).__name__}")
        if divisible:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return ASTSource(jit_kernel(kernel), signature, constexprs, attrs), constexprs


def compile_errors(folder: str | Path, dtype: str | None = None) -> tuple[int, list[str]]:
    """(launches compiled, one line per launch that failed) for the case's
    contiguous scenarios in `dtype` (default: its first): every kernel form
    its launcher takes there (persistent, looped) once per specialization."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget

    from porter.testing.launches import LaunchRecorder, scaffold_kernels
    from porter.testing.parity import load_case, make_inputs, scaffold_entry

    case = load_case(folder)
    dtype = dtype or case.dtypes[0]
    seen: list[tuple] = []
    recorder = LaunchRecorder(
        scaffold_kernels(case.kernel), execute=False, on_launch=lambda *call: seen.append(call)
    )
    for sc in case.scenarios():
        if sc.dtype != dtype or sc.layout != "contiguous" or sc.values != "random":
            continue
        if sc.mode or sc.init or sc.args:
            continue
        try:
            inputs = make_inputs(case, sc, "cpu", 0, filled=False)
            with recorder, torch.no_grad():
                scaffold_entry(case, dtype, "cpu", sizes=sc.sizes)(*inputs)
        except Exception:  # noqa: BLE001 - the parity suite judges the launcher
            continue
    target = GPUTarget("cuda", ARCH, 32)
    done, errors = set(), []
    for name, kernel, bound, options, _ in seen:
        try:
            src, constexprs = source_of(kernel, bound)
        except KeyError as err:  # a tensor of a dtype Triton has no pointer for
            errors.append(f"{name}: no Triton pointer type for {err}")
            continue
        key = (name, repr(src.signature), repr(constexprs), repr(src.attrs), repr(options))
        if key in done:
            continue
        done.add(key)
        try:
            triton.compile(src, target=target, options=options)
        except Exception as err:  # noqa: BLE001 - reported, one line a launch
            first = " ".join(str(err).split())[:300]
            errors.append(f"{name} {constexprs}: {type(err).__name__}: {first}")
    return len(done), errors


def check(folder: str | Path, dtype: str | None = None, timeout: float = 600) -> tuple[int, list[str]]:
    """compile_errors in a process without Triton's interpreter."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    argv = [sys.executable, "-m", "porter.testing.compiles", str(folder)]
    done = subprocess.run(
        argv + ([dtype] if dtype else []),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = " ".join((done.stderr or done.stdout).split())[-300:]
        return 0, [f"the compile check itself failed: {tail}"]
    return result["launches"], result["errors"]


def main() -> int:
    folder = sys.argv[1]
    dtype = sys.argv[2] if len(sys.argv) > 2 else None
    launches, errors = compile_errors(folder, dtype)
    print(json.dumps({"launches": launches, "errors": errors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
