"""Dataclasses passed between porter's stages (reference -> capture -> parse -> port).

Everything here is plain data: it round-trips through manifest.json with
`to_dict` / `from_dict`, so a stored capture can be ported again later without
re-running torch.compile.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Dim:
    """A named size of the reference's inputs (`num_tokens`, `hidden`).

    role "runtime": varies from call to call (becomes a runtime kernel argument);
    role "model": fixed once the model is built (becomes a constexpr).
    axes: where the size appears as itself, as (input name, axis) pairs.
    derived: axes whose size grows with it but is not it (2 * intermediate).
    """

    name: str
    size: int
    role: str
    axes: list[tuple[str, int]] = field(default_factory=list)
    symbolic: bool = True
    derived: list[tuple[str, int]] = field(default_factory=list)

    def fixed_axes(self, inputs: list["GraphInput"]) -> list[tuple[str, int]]:
        """Its axes a compiled graph reads as a constant (x's rows a Python
        loop walks, beside y's of the same dim kept a symbol)."""
        sizes = {
            (gi.target, axis): str(size)
            for gi in inputs
            if gi.kind == "tensor" and not gi.shape_only
            for axis, size in enumerate(gi.sizes)
        }
        return [tuple(a) for a in self.axes if sizes.get(tuple(a), "").isdigit()]


@dataclass
class KernelArg:
    name: str
    type: str  # Triton signature type: "*fp32", "i32", "fp32", "constexpr"


@dataclass
class LaunchConfig:
    """The launch parameters Inductor's autotuner chose (GPU captures only)."""

    kwargs: dict[str, int]
    num_warps: int
    num_stages: int


@dataclass
class KernelRecord:
    name: str
    source: str  # the kernel exactly as Inductor wrote it (decorators included)
    kind: str  # pointwise | reduction | persistent_reduction | other
    signature: list[KernelArg]
    size_hints: dict[str, int]
    reduction_hint: str | None
    grid_type: str | None
    module: int  # index of the compiled module it came from
    config: LaunchConfig | None = None
    # The aten ops Inductor fused into it ("aten.index_select"), from the
    # comment above its source; empty in captures older than this field.
    aten: list[str] = field(default_factory=list)


@dataclass
class Binding:
    """What one launch argument is bound to.

    kind: "input" (a reference input, `target` its name), "output" (`target` the
    output index), "scratch" (a buffer the wrapper allocates), "size" (an integer
    expression over size symbols; `expr` in dim names where they are known),
    "literal" (a constant).
    """

    param: str
    value: str  # the wrapper's expression, e.g. "arg2_1", "buf3", "s77", "256"
    kind: str
    target: str | None = None
    expr: str | None = None
    # A reinterpret_tensor view of the bound tensor (sizes, strides, offset as
    # expressions in dims), when the pointer is not the tensor's own start.
    view: dict[str, Any] | None = None


@dataclass
class Step:
    """One call in the wrapper, in order: a Triton launch or an extern op."""

    kind: str  # "launch" | "extern"
    name: str  # kernel name or extern op (e.g. "extern_kernels.mm")
    args: list[Binding] = field(default_factory=list)
    text: str = ""  # the wrapper's line, for the reader


@dataclass
class GraphInput:
    """One argument of a compiled module's `call`, tied back to the reference."""

    wrapper_name: str  # arg0_1
    source: (
        str  # Dynamo's source: L['x'], L['self']._modules['ln']._parameters['weight']
    )
    kind: str  # "tensor" | "symint"
    target: str  # reference input name ("x") or parameter path ("ln.weight")
    sizes: list[str] = field(default_factory=list)
    strides: list[str] = field(default_factory=list)
    # A scalar's value at capture: the launcher passes it as a literal where
    # the reference reads it from a module-level global (math.pi).
    value: float | None = None
    # A tensor's dtype at capture ("torch.bfloat16").
    dtype: str = ""
    # Read for its shape alone: a size the graph has no symbol for is the
    # example's, not one the graph fixed.
    shape_only: bool = False


@dataclass
class Buffer:
    name: str
    sizes: list[str]
    strides: list[str]
    dtype: str
    # Whether its dtype follows the inputs' (a bf16 capture of the reference
    # gives it bf16) or is its own (an fp32 softmax of x.float()); None where
    # porter did not look (an older capture, or one in a low-precision dtype,
    # whose buffers in that dtype follow it).
    follows: bool | None = None


@dataclass
class CompiledModule:
    index: int
    inputs: list[GraphInput]
    symbols: dict[str, str]  # s77 -> "x.size(0)"; size symbol -> where it is read
    buffers: list[Buffer]
    steps: list[Step]
    outputs: list[str]  # wrapper names returned by call
    kernels: list[str]
    # Names an extern call assigns (`buf4 = aten.topk(...)`, `buf5 = buf4[0]`):
    # tensors the launcher gets from torch, not allocates.
    produced: list[str] = field(default_factory=list)
    # Names the launcher binds to something else: the dims (Capture sets them)
    reserved: list[str] = field(default_factory=list, repr=False)

    def extern_reads(self, matmul: bool) -> set[str]:
        """Buffers an extern call names: a matmul's (whose operands share the
        inputs' dtype, or torch raises), or any other's (a top-k, a sort:
        they take fp32 and bf16 alike)."""
        return {
            name
            for step in self.steps
            if step.kind == "extern" and bool(_MATMUL.search(step.text)) == matmul
            for name in _BUFFER.findall(step.text)
        }

    def output_of(self, buffer: str) -> int | None:
        """The output a buffer is, or holds the storage of (returned as a
        view: `reinterpret_tensor(buf0, ...)`); None for scratch. An extern
        call's result whose storage an output reuses after reading it (a
        convolution's, then the kernel after it writes there) stays scratch."""
        if buffer in self.outputs:
            return self.outputs.index(buffer)
        if buffer in self.produced:
            return None
        for idx, out in enumerate(self.outputs):
            if not out.isidentifier() and _BUFFER.findall(out)[:1] == [buffer]:
                return idx
        return None

    def output_var(self, idx: int) -> str:
        """The launcher's name for output idx: out, or out0, out1.. of several;
        result, result0.. where an argument of the reference has such a name
        (vLLM's ops take the output buffer as `out`) or a dim (`out` features:
        the output's allocation overwrote the size)."""
        taken = {gi.target for gi in self.inputs} | set(self.reserved)
        n = len(self.outputs)
        for stem in ("out", "result", "output_"):
            names = [stem] if n == 1 else [f"{stem}{i}" for i in range(n)]
            if not taken & set(names):
                break
        return stem if n == 1 else f"{stem}{idx}"

    def buffer_var(self, buffer: str) -> str:
        """The launcher's name for a buffer: output_var's, or scratch_buf3."""
        idx = self.output_of(buffer)
        return f"scratch_{buffer}" if idx is None else self.output_var(idx)

    def rewritten_extern_results(self) -> list[str]:
        """An extern call's results a kernel writes into and the call does
        not return (a sort's values, then its softmax's cumsum there): they
        take the inputs' dtype, so a bf16 call rounds what the kernels keep
        there, which an fp32 capture held whole."""
        return sorted(
            {
                a.target or a.value
                for step in self.steps
                if step.kind == "launch"
                for a in step.args
                if a.param.startswith(("out_ptr", "in_out_ptr"))
                and a.kind == "scratch"
                and (a.target or a.value) in self.produced
                and self.output_of(a.target or a.value) is None
            }
        )

    def unmatched_fp32(self) -> list[str]:
        """fp32 buffers a non-matmul extern call reads that no lower-precision
        compile told apart (Buffer.follows unknown): in bf16 the reference may
        hold them in fp32 or in bf16, and the two round differently."""
        return sorted(
            self.extern_reads(matmul=False)
            & {
                b.name
                for b in self.buffers
                if b.dtype == "torch.float32" and b.follows is None
            }
        )


_MATMUL = re.compile(r"\b(mm|addmm|bmm|baddbmm|convolution|_mm_plus_mm|linear)\b")
_BUFFER = re.compile(r"\bbuf\d+\b")


@dataclass
class Capture:
    """Everything one `porter capture` learned; manifest.json is this as JSON."""

    porter_version: str
    torch_version: str
    triton_version: str
    device: str  # "cuda" | "cpu"
    target: str  # e.g. "cuda:90 (NVIDIA H200)" or "codegen-only cuda:90 (no GPU)"
    reference_file: str
    reference_sha256: str
    reference_kind: str  # "porter" | "kernelbench"
    reference_name: str
    input_names: list[str]
    dtypes: list[str]
    capture_dtype: str
    dims: list[Dim]
    modules: list[CompiledModule]
    kernels: list[KernelRecord]
    date: str
    warnings: list[str] = field(default_factory=list)
    # per output: "input" (follows the inputs' dtype) or a fixed torch dtype
    output_dtypes: list[str] = field(default_factory=list)
    # Outputs (indices into output_dtypes) eager returns as a strided view at
    # the capture dtype and as a contiguous copy at others: a slice of a float32
    # buffer, .to(x.dtype). The scaffold keeps that buffer float32 and converts.
    outputs_copied: list[int] = field(default_factory=list)
    # Sizes at which Dynamo fixed a derived size of 0 or 1 (x.view(n, 4, -1)
    # at a hidden size of 4) and the scaffold still serves: the suite checks them.
    edge_sizes: list[dict[str, int]] = field(default_factory=list)
    # Int arguments at 0 of which eager raises ZeroDivisionError: refused there.
    zero_divisors: list[str] = field(default_factory=list)
    # Dims at 1 or 0 of which eager raises ({"dim", "size", "error"}): refused there.
    rejected_sizes: list[dict[str, Any]] = field(default_factory=list)
    # Int arguments at 0 of which eager raises otherwise ({"argument", "error"}):
    # refused there; "at": -1, every negative one; "from"/"to": the first value
    # up/down from the captured one at which Python's float math overflows.
    rejected_arguments: list[dict[str, Any]] = field(default_factory=list)
    # Each tensor argument's rank at capture: one the graph reads only a size
    # of (`like.shape[-1]`) is checked too, as the launcher indexes its shape.
    input_ranks: dict[str, int] = field(default_factory=dict)
    # Bounds of int arguments by sizes the compile took from the capture's
    # values (`start + length <= x.shape[1]`): the launcher checks them.
    assumed: list[str] = field(default_factory=list)
    # Non-tensor values the compiled graph holds as constants (a reduction
    # dim, a module's training flag), as launcher expressions and values: the
    # scaffold refuses other values. "tuple": the value was a tuple.
    constants: list[dict[str, Any]] = field(default_factory=list)
    # Conditions of the branches the reference took in Python on a scalar or
    # a size (`temperature >= 1e-05`), in the launcher's names: the scaffold
    # checks each ("?" + Dynamo's text: one it cannot spell; the port refuses).
    guards: list[str] = field(default_factory=list)
    # The module's training flag at capture (KernelBench), None for a function.
    training: bool | None = None
    # Sizes set with --set, or chosen to keep the capture small.
    overrides: dict[str, Any] = field(default_factory=dict)
    # Per reference output, in order: {"kind": "graph"} (the compiled graph's
    # next output), {"kind": "input", "name": n} (the input itself, changed
    # in place and returned), or {"kind": "none"}. Empty: all from the graph.
    output_map: list[dict[str, Any]] = field(default_factory=list)
    # Each tensor argument's dtype at capture ("torch.bfloat16"), by name.
    input_dtypes: dict[str, str] = field(default_factory=dict)
    # The tensor arguments whose dtype follows the call's (make_inputs in
    # another dtype changes it); the others keep input_dtypes' at any call (an
    # fp32 scale, int64 ids). None: not recorded (an older capture).
    input_follows: list[str] | None = None
    # Float dtypes whose traced graph is the capture dtype's (the scaffold
    # serves these); empty: not checked (an older capture), all of them.
    dtypes_served: list[str] = field(default_factory=list)
    # Tensor arguments eager changes in place (or returns) only where they
    # come contiguous (`x.contiguous().div_(t)` copies a strided x): the
    # scaffold refuses other layouts of these.
    contiguous_only: list[str] = field(default_factory=list)
    # Call arguments Dynamo neither guarded on nor put in the graph: the
    # reference never reads them, and the scaffold takes any value.
    unread_arguments: list[str] = field(default_factory=list)
    # Int arguments eager wraps to a 32-bit or narrower tensor's dtype; None:
    # not recorded (an older capture), any beside such a tensor.
    wrapped_arguments: list[str] | None = None
    # Per output, the tensor argument whose layout eager's output follows
    # (an elementwise op's result is laid out as its input: channels_last in,
    # channels_last out), None where it follows none.
    output_layouts: list[str | None] = field(default_factory=list)
    # Sources of the inputs (L['cache']) that only ops raising on a negative
    # index index (index_select, gather, embedding): a kernel reading them
    # through a loaded index does not wrap it (porter.port.clean.negative_index).
    raise_on_negative: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for module in self.modules:
            module.reserved = [d.name for d in self.dims]

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for module in data["modules"]:
            module.pop("reserved", None)  # the dims', set again on reading
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Capture":
        known = {f.name for f in dataclasses.fields(cls)}
        data = {k: v for k, v in data.items() if k in known}  # e.g. "generated"
        data["dims"] = [
            Dim(
                **{
                    **d,
                    "axes": [tuple(a) for a in d["axes"]],
                    "derived": [tuple(a) for a in d.get("derived", [])],
                }
            )
            for d in data["dims"]
        ]
        data["modules"] = [_module_from_dict(m) for m in data["modules"]]
        data["kernels"] = [_kernel_from_dict(k) for k in data["kernels"]]
        return cls(**data)


def _module_from_dict(m: dict[str, Any]) -> CompiledModule:
    m = dict(m)
    m["inputs"] = [GraphInput(**i) for i in m["inputs"]]
    m["buffers"] = [Buffer(**b) for b in m["buffers"]]
    m["steps"] = [
        Step(**{**s, "args": [Binding(**b) for b in s["args"]]}) for s in m["steps"]
    ]
    return CompiledModule(**m)


def _kernel_from_dict(k: dict[str, Any]) -> KernelRecord:
    k = dict(k)
    k["signature"] = [KernelArg(**a) for a in k["signature"]]
    if k.get("config") is not None:
        k["config"] = LaunchConfig(**k["config"])
    return KernelRecord(**k)
