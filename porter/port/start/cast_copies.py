"""Stage: a kernel that only copies a scratch buffer into an output, casting
it, folds into the kernels that wrote the scratch.

Inductor writes a concatenation (`torch.stack([x1 * c - x2 * s, ...], -1)`,
`torch.cat`) into its own buffer, one kernel a slice, and when the result is
then cast (`.to(q.dtype)`), a last kernel copies that fp32 buffer into the
output: the output's bytes go through memory three times, twice at fp32
(GPT-J's interleaved rotary took 2.3x a static compile's time on the H200).
When the copy is element for element (the same flat index in and out, both
contiguous) and nothing else reads the scratch, the kernels before it write
the output directly, through the same views of it, and their stores cast to
the output's dtype: one rounding, as the copy did.
"""

from __future__ import annotations

import ast
import copy
import math

from porter.ast_tools import is_call, is_fp32_cast
from porter.port.launch.launcher import contiguous
from porter.port.model import PortState
from porter.records import Binding, CompiledModule, KernelRecord, Step

# The sizes the dims take, in turn, when the copy's index is checked (three
# shapes, each dim at a different size): an index that equals the flat offset
# at one shape by chance (a size of 1 hiding a stride) is not a copy.
SAMPLE_SIZES = (1, 2, 3, 5, 4)
SAMPLES = 3

# Index lines of Inductor's that need no evaluating: the block's own start.
_BLOCK_LINES = ("tl.program_id(", "xoffset + tl.arange(")


def _function(record: KernelRecord) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(record.source)
    except SyntaxError:
        return None
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)


def copy_indices(fn: ast.FunctionDef) -> tuple[list[ast.Assign], str, str] | None:
    """(the index assignments, the load's index, the store's index) of a kernel
    whose body is one load of in_ptr0, fp32 casts and one store to out_ptr0;
    None for any other kernel."""
    index, load, store = [], None, None
    value_names: set[str] = set()
    for s in fn.body:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            call = s.value
            if (
                store is None
                and is_call(call, "tl.store")
                and len(call.args) == 3
                and isinstance(call.args[1], ast.Name)
                and call.args[1].id in value_names
                and isinstance(call.args[0], ast.BinOp)
                and isinstance(call.args[0].op, ast.Add)
                and ast.unparse(call.args[0].left) == "out_ptr0"
                and ast.unparse(call.args[2]) == "xmask"
            ):
                store = ast.unparse(call.args[0].right)
                continue
            return None
        if not (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
        ):
            return None
        target, value = s.targets[0].id, s.value
        if is_call(value, "tl.load"):
            if load is not None or not (
                value.args
                and isinstance(value.args[0], ast.BinOp)
                and isinstance(value.args[0].op, ast.Add)
                and ast.unparse(value.args[0].left) == "in_ptr0"
                and [ast.unparse(a) for a in value.args[1:]] in (["xmask"], [])
                and all(k.arg in ("mask", "eviction_policy") for k in value.keywords)
            ):
                return None
            load = ast.unparse(value.args[0].right)
            value_names.add(target)
        elif is_fp32_cast(value) and ast.unparse(value.func.value) in value_names:
            value_names.add(target)
        elif ast.unparse(value).startswith(_BLOCK_LINES):
            continue
        elif not any(
            isinstance(n, ast.Call) or isinstance(n, ast.Name) and n.id in value_names
            for n in ast.walk(value)
        ):
            index.append(s)
        else:
            return None
    if load is None or store is None:
        return None
    return index, load, store


def _evaluate(text: str, env: dict) -> int | None:
    try:
        value = eval(compile(text, "<size>", "eval"), {"__builtins__": {}}, env)
    except Exception:
        return None
    return value if isinstance(value, int) else None


def _elements(sizes: list[str], env: dict) -> list[int] | None:
    values = [_evaluate(s, env) for s in sizes]
    return None if any(v is None for v in values) else values


def _is_element_copy(
    step: Step, fn: ast.FunctionDef, module: CompiledModule, dims
) -> bool:
    """At each sample shape: the copy reads and writes flat index i at i, and
    the scratch and the output are contiguous, of its element count."""
    found = copy_indices(fn)
    if found is None:
        return False
    index, load, store = found
    by_param = {b.param: b for b in step.args}
    scratch = _buffer(module, by_param["in_ptr0"].target)
    output = module.outputs[int(by_param["out_ptr0"].target)]
    out = _buffer(module, output)
    if scratch is None or out is None:  # a tensor an extern call made (a sort's)
        return False
    if not all(contiguous(b.sizes, b.strides) for b in (scratch, out)):
        return False
    code = [
        (s.targets[0].id, compile(ast.unparse(s.value), "<index>", "eval"))
        for s in index
    ]
    load_code = compile(load, "<load>", "eval")
    store_code = compile(store, "<store>", "eval")
    for k in range(SAMPLES):
        env = {
            d.name: SAMPLE_SIZES[(i + k) % len(SAMPLE_SIZES)]
            for i, d in enumerate(dims)
        }
        env.update(max=max, min=min)
        sizes = {}
        for b in step.args:
            if b.kind == "size":
                value = _evaluate(b.expr or "", env)
                if value is None:
                    return False
                sizes[b.param] = value
        numel = sizes.get("xnumel")
        shapes = [_elements(b.sizes, env) for b in (scratch, out)]
        if numel is None or any(s is None or math.prod(s) != numel for s in shapes):
            return False
        for x in range(numel):
            local = dict(sizes, xindex=x)
            try:
                for name, line in code:
                    local[name] = eval(line, {"__builtins__": {}}, local)
                if eval(load_code, {}, local) != x or eval(store_code, {}, local) != x:
                    return False
            except Exception:
                return False
    return True


def _buffer(module: CompiledModule, name: str):
    """The allocation named name, or None (an extern call's result)."""
    return next((b for b in module.buffers if b.name == name), None)


def _readers(module: CompiledModule, buffer: str) -> list[tuple[Step, Binding]]:
    """Every launch argument bound to buffer (any view of it)."""
    return [
        (step, b)
        for step in module.steps
        if step.kind == "launch"
        for b in step.args
        if b.kind == "scratch" and b.target == buffer
    ]


def fold_cast_copies(port: PortState) -> None:
    """A kernel that only copies a contiguous scratch buffer into an output,
    element for element (casting fp32 to the output's dtype), is dropped: the
    kernels that wrote the scratch write the output through the same views."""
    while (found := _cast_copy(port.cap, port.module)) is not None:
        if port.cap.modules[0] is port.module:  # the stored capture stays as it was
            port.cap = copy.deepcopy(port.cap)
            port.module = port.cap.modules[0]
            found = _cast_copy(port.cap, port.module)
        _fold(port.cap, port.module, *found)
        port.notes.append(
            f"the copy of a scratch buffer into an output ({found[0].name}) folded "
            "into the kernels that wrote the scratch: they write the output"
        )


def _cast_copy(cap, module: CompiledModule) -> tuple[Step, str, str] | None:
    """(the copy's launch, the scratch, the output index) of the first launch
    that is a cast copy whose scratch only it reads."""
    records = {k.name: k for k in cap.kernels}
    externs = module.extern_reads(True) | module.extern_reads(False)
    for step in module.steps:
        by_param = {b.param: b for b in step.args}
        src, dst = by_param.get("in_ptr0"), by_param.get("out_ptr0")
        if not (
            step.kind == "launch"
            and step.name in records
            and records[step.name].kind == "pointwise"
            and src is not None
            and src.kind == "scratch"
            and src.view is None
            and dst is not None
            and dst.kind == "output"
            and dst.view is None
        ):
            continue
        scratch, output = src.target, module.outputs[int(dst.target)]
        # An fp32 scratch only: the copy of a narrower one (bf16 upcast to an
        # fp32 output) rounds on the way, which the writers would not.
        buffer = _buffer(module, scratch)
        if buffer is None or buffer.dtype != "torch.float32":
            continue
        writers = [(s, b) for s, b in _readers(module, scratch) if s is not step]
        others = [
            b
            for s in module.steps
            if s is not step
            for b in s.args
            if b.kind == "output" and b.target == dst.target
        ]
        if (
            not writers
            or others
            or any(not b.param.startswith("out_ptr") for _, b in writers)
            or module.outputs.count(output) != 1
            or {scratch, output} & externs
        ):
            continue
        fn = _function(records[step.name])
        if fn is not None and _is_element_copy(step, fn, module, cap.dims):
            return step, scratch, dst.target
    return None


def _fold(cap, module: CompiledModule, step: Step, scratch: str, out_idx: str) -> None:
    buffer = _buffer(module, scratch)
    for s in module.steps:
        for b in s.args:
            if b.kind == "scratch" and b.target == scratch:
                b.kind, b.target = "output", out_idx
                b.view = b.view or {
                    "offset": "0",
                    "sizes": list(buffer.sizes),
                    "strides": list(buffer.strides),
                }
    module.steps = [s for s in module.steps if s is not step]
    module.kernels = [k for k in module.kernels if k != step.name]
    module.buffers = [b for b in module.buffers if b.name != scratch]
    cap.kernels = [k for k in cap.kernels if k.name != step.name]
