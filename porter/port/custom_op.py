"""The scaffold's custom op: its schema, the arguments it mutates and a fake
implementation, planned from the launcher, so torch.compile (fullgraph) and CUDA
graphs take the ported function as one opaque op (docs/engine.md)."""

from __future__ import annotations

import ast
import inspect
import math
import re
from dataclasses import dataclass, field

from porter.ast_tools import assigned_names, literal_text, names_in, stored_names
from porter.port.model import module_attr
from porter.records import Capture

# Python types of an argument and their schema spelling.
_SCALAR_TYPES = {bool: "bool", int: "int", float: "float", str: "str"}


@dataclass
class CustomOp:
    """How `register_op` (or `ModelNew.as_op`) makes the launcher a
    torch.library custom op. refusal: where set, the one sentence it raises
    instead."""

    name: str
    schema: str = ""
    # The fake implementation's body: sizes, output allocations, return.
    fake: list[str] = field(default_factory=list)
    # Where set, the launcher is its own fake: for a fake `fake_tensor` it
    # returns its outputs before launch step `fake_at`, and `fake` is unused.
    fake_at: int | None = None
    fake_tensor: str = ""
    refusal: str = ""
    # Whether the function returns only its own arguments, changed in place (as
    # vLLM's in-place ops do): the op then calls it and returns nothing.
    in_place: bool = False
    # A KernelBench module's parameters and buffers the kernels read, as
    # (state-dict name, the op's argument): passed after the forward's own.
    state: list[tuple[str, str]] = field(default_factory=list)
    # The forward's own arguments, by name (a module's op).
    inputs: list[str] = field(default_factory=list)
    # The op's Python parameters (its impl's and fake's): the forward's, with
    # the defaults its schema gives them (the dispatcher leaves them out), then
    # the state's.
    params: list[str] = field(default_factory=list)

    @property
    def state_attrs(self) -> list[str]:
        """The state tensors as OpModel reads them off its module."""
        return [module_attr(t).replace("self", "self.model", 1) for t, _ in self.state]


def plan_custom_op(
    cap: Capture, launcher, sig: inspect.Signature, module=None
) -> CustomOp:
    """The op of a function scaffold's launcher, or of a KernelBench module's
    forward (module: the compiled graph, whose inputs name the module's
    parameters and buffers the kernels read)."""
    name = launcher.name
    tensors = set(cap.input_dtypes)
    if module is not None and not tensors:  # a capture older than input_dtypes
        tensors = {gi.target for gi in module.inputs if gi.kind == "tensor"}
    tensors &= set(cap.input_names)
    state = []
    kernelbench = module is not None and cap.reference_kind == "kernelbench"
    if kernelbench:
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])  # self
        for gi in module.inputs:
            var = gi.target.replace(".", "_")
            if (
                gi.kind == "tensor"
                and gi.target not in cap.input_names
                and (gi.target, var) not in state
            ):
                state.append((gi.target, var))
    params, python, refusal = [], [], ""
    # A schema spells no inf or NaN default, and no default may come before
    # a parameter without one: then none has its default in the op.
    spelled = not any(
        isinstance(p.default, float) and not math.isfinite(p.default)
        for p in sig.parameters.values()
    )
    for pname, p in sig.parameters.items():
        kind = _schema_type(pname, p, tensors, module)
        if kind is None:
            refusal = (
                f"{name}'s argument {pname!r} has no custom-op schema type "
                "(tensors, bool, int, float and str have one)"
            )
            break
        mutated = kind == "Tensor" and pname in launcher.written
        text = f"Tensor(a{len(params)}!) {pname}" if mutated else f"{kind} {pname}"
        python.append(pname)
        if p.default is not inspect.Parameter.empty and not state and spelled:
            text += f"={_schema_default(p.default)}"  # (state follows: none)
            python[-1] += f"={literal_text(p.default)}"
        params.append(text)
    for _, var in state:
        python.append(var)
        written = var in launcher.written
        params.append(f"Tensor(a{len(params)}!) {var}" if written else f"Tensor {var}")
    outputs = _outputs(launcher.returns)
    kinds = [e["kind"] for e in cap.output_map] or ["graph"] * len(outputs)
    in_place = set(kinds) == {"input"} and not state
    if not refusal and not in_place:
        refusal = _output_refusal(name, outputs, kinds) or _alias_refusal(
            name, outputs, launcher, tensors | {v for _, v in state}
        )
    returns = ", ".join(["Tensor"] * len(outputs))
    if in_place or outputs == ["None"]:
        returns = "()"
    elif len(outputs) > 1:
        returns = f"({returns})"
    fake = ["return None"] if returns == "()" else _fake_body(launcher)
    if state:
        fake = [_in_op_terms(line, state) for line in fake]
    # A module's op keeps its own fake (its state passed as arguments).
    fake_at = (
        None
        if kernelbench or refusal
        else fake_return_at(launcher, set(sig.parameters))
    )
    return CustomOp(
        name=name,
        schema=f"({', '.join(params)}) -> {returns}",
        fake=fake,
        fake_at=fake_at,
        fake_tensor=(
            launcher.device.removesuffix(".device") if fake_at is not None else ""
        ),
        refusal=refusal,
        in_place=in_place,
        state=state,
        inputs=list(sig.parameters),
        params=python,
    )


def _in_op_terms(line: str, state: list[tuple[str, str]]) -> str:
    """A launcher line of a module's forward as its fake reads it: the state
    tensors by their argument names, other attributes (settings) off `model`."""
    for target, var in sorted(state, key=lambda s: -len(s[0])):
        line = re.sub(re.escape(module_attr(target)) + r"\b", var, line)
    return re.sub(r"\bself\.", "model.", line)


def _schema_type(
    pname: str, p: inspect.Parameter, tensors: set[str], module
) -> str | None:
    if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
        return None
    if pname in tensors:
        return "Tensor?" if p.default is None else "Tensor"
    for t, spelled in _SCALAR_TYPES.items():
        if p.annotation is t:
            return spelled
    value = p.default
    if value is inspect.Parameter.empty or value is None:
        # unannotated, no default: what the capture saw it as
        for gi in module.inputs if module is not None else []:
            if gi.source == f"L[{pname!r}]":
                if gi.kind == "symint":
                    return "int"
                if gi.kind == "scalar" and isinstance(gi.value, (int, float)):
                    return "float" if isinstance(gi.value, float) else "int"
        return None
    return _SCALAR_TYPES.get(type(value))


def _schema_default(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    return repr(value)


def _outputs(returns: str) -> list[str]:
    """The launcher's returned expressions, one a reference output."""
    node = ast.parse(returns, mode="eval").body
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    return [ast.unparse(e) for e in elts]


def _output_refusal(name: str, outputs: list[str], kinds: list[str]) -> str:
    """Why the outputs make no op's (an op's outputs are new tensors, or
    nothing at all), or ""."""
    if outputs == ["None"]:
        return ""
    if "input" in kinds:
        return (
            f"{name} returns one of its arguments itself beside new tensors, which "
            "a custom op cannot (an op's outputs alias nothing); call the function instead"
        )
    if "None" in outputs:
        return f"{name} returns None among tensors, which a custom op cannot"
    if "same" in kinds or len(set(outputs)) != len(outputs):
        return f"{name} returns one tensor twice, which a custom op cannot"
    return ""


def _alias_refusal(name: str, outputs: list[str], launcher, inputs: set[str]) -> str:
    """Why outputs that are views (of one buffer, or of an argument) make no
    op's, or "": an op's outputs alias nothing."""
    tensors = {a.var for a in launcher.allocs} | inputs
    for s in launcher.steps:
        if s.kind == "extern" and "=" in s.call.split("(")[0]:
            tensors |= set(assigned_names(ast.parse(s.call).body[0]))
    seen: set[str] = set()
    for out in outputs:
        base = _viewed(ast.parse(out, mode="eval").body)
        bases = {base} & tensors
        if bases & inputs:
            arg = sorted(bases & inputs)[0]
            return (
                f"{name} returns a view of its argument {arg!r}, which a custom op "
                "cannot (an op's outputs alias nothing); call the function instead"
            )
        if bases & seen:
            return (
                f"{name} returns two views of one tensor, which a custom op cannot "
                "(an op's outputs alias nothing); call the function instead"
            )
        seen |= bases
    return ""


def _viewed(node: ast.AST) -> str | None:
    """The tensor an output expression is (a name) or views (`buf.as_strided(...)`,
    `buf[:, 1:]`, `reinterpret(buf, ...)`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return _viewed(node.value)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            return _viewed(node.func.value)
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "reinterpret"
            and node.args
        ):
            return _viewed(node.args[0])
    return None


def fake_return_at(launcher, params: set[str]) -> int | None:
    """The launch step before which the launcher can return its outputs for
    fake tensors, being then its own fake: every output is bound by then (sizes,
    allocations, torch calls), and what follows binds none of them (launches,
    torch calls writing `out=` an output). None where a later torch call makes
    an output, or copies go back (a separate fake does)."""
    if launcher.epilogue or not re.fullmatch(r"\w+\.device", launcher.device):
        return None
    first = next((i for i, s in enumerate(launcher.steps) if s.kind != "extern"), None)
    if first is None:
        return None
    bound = {d.name for d in launcher.dims} | {a.var for a in launcher.allocs}
    for text in launcher.prelude + [s.call for s in launcher.steps[:first]]:
        bound |= _bound_by(text)
    later = set()
    for s in launcher.steps[first:]:
        for step in [s, *s.otherwise]:
            if step.kind == "extern":
                later |= _bound_by(step.call)
    # an in-place function returns its arguments themselves; a helper the
    # return calls (laid_out_like) is no output
    tree = ast.parse(launcher.returns)
    called = {
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    needed = names_in(tree) - called - {"None"}
    if needed & later or not needed <= bound | params:
        return None
    return first


def _bound_by(text: str) -> set[str]:
    """The names a launcher line binds, inside its blocks too."""
    return stored_names(ast.parse(text))


def _fake_body(launcher) -> list[str]:
    """Statements that give the outputs' sizes, dtypes and strides without
    running a kernel: the launcher's sizes, layouts, allocations, the torch
    calls it makes unconditionally, and its return."""
    lines = [f"{d.name} = {d.expr}" for d in launcher.dims]
    # Layout lines (a contiguous copy) change no output's metadata: kept only
    # where a torch call or the return reads what they bind.
    externs = [s.call for s in launcher.steps if s.kind == "extern" and not s.when]
    read = set().union(
        *(names_in(ast.parse(text)) for text in externs + [launcher.returns])
    )
    # ...and the lines those read (`h0_given = h0` before
    # `h0 = strided_as(h0_given, ...)`)
    kept = []
    for line in reversed(launcher.prelude):
        if set(assigned_names(ast.parse(line).body[0])) & read:
            kept.insert(0, line)
            read |= names_in(ast.parse(line))
    lines += kept
    for a in launcher.allocs:
        lines.append(f"{a.var} = {a.call}")
    lines += externs
    lines.append(f"return {launcher.returns}")
    return _used_dims(lines, len(launcher.dims))


def _used_dims(lines: list[str], n: int) -> list[str]:
    """lines less those of its first n (the sizes) that nothing after reads."""
    keep = lines[n:]
    for line in reversed(lines[:n]):
        name = line.split(" = ", 1)[0]
        if any(name in names_in(ast.parse(later)) for later in keep):
            keep.insert(0, line)
    return keep
