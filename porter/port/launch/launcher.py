"""Plan the launcher: the Python function (or ModelNew.forward) that allocates
outputs, picks block sizes, and calls the kernels and extern ops in Inductor's order."""

from __future__ import annotations

import ast
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from porter.errors import PorterError
from porter.ties import fold_ties
from porter.port.bind.generalize import as_strided_text, launcher_expr
from porter.port.model import KernelPort, PortOptions, PortState, all_steps, module_attr
from porter.ast_tools import (
    bindings,
    full_names,
    is_call,
    literal_text,
    names_in,
    ptr_base,
)
from porter.port.finish.pdl import (
    EARLY_TRIGGER_EXPR,
    ROWS_EARLY_TRIGGER_EXPR,
    loads_at_top,
)
from porter.port.forms.persist import STREAM_ROWS, is_col_loop
from porter.records import Buffer, Capture, CompiledModule
from porter.ties import is_tie

DEFAULT_POINTWISE_BLOCK = 1024
# Looped reductions: bound the registers one program holds. Rendered as
# LOOPED_BLOCK_COLS in templates/kernel.py.j2, where a persistent kernel exists.
LOOPED_MAX_BLOCK = 4096
# Row size in bytes from which the looped kernel is taken over the persistent
# one, by (times the looped kernel reads the row, row-shaped inputs it reads);
# combinations not listed, and kernels that write one value a row
# (_stores_row) or keep Welford statistics (_keeps_welford), keep the
# persistent kernel up to MAX_FUSED_COLS.
# templates/kernel.py.j2 renders it and says why (H200 figures).
LOOPED_MIN_ROW_BYTES = {(2, 1): 8192, (3, 1): 16384, (2, 2): 16384}
# the per-element steps of a Welford accumulation, before and after renaming
WELFORD_STEPS = ("welford_reduce", "welford_accumulate")
NO_PDL_AFTER_EXTERN = (
    "# No programmatic dependent launch right after the extern call: behind a\n"
    "# cuBLAS matmul it took 0.92-1.10x the time at 1-256 tokens on an H200,\n"
    "# less only at 1-16 tokens of 4096 -> 4096 (lab/NOTES.md)."
)


def pdl_behind(previous: "LaunchStep | None", after_extern: bool = False) -> bool:
    """Whether a kernel launched after `previous` (None: first) takes
    programmatic dependent launch: not right after an extern call, unless
    `after_extern` (PortOptions.pdl_after_extern)."""
    return after_extern or previous is None or previous.kind != "extern"


# The launcher's dict of a row kernel's blocks, warps and the arguments only
# its form takes, as the template's row_launch returns it (rendered `**launch`).
LAUNCH = "launch"


@dataclass
class Dim:
    name: str
    expr: str


@dataclass
class Alloc:
    var: str
    sizes: list[str]
    strides: list[str]
    dtype: str
    device: str
    init: str = "torch.empty_strided"

    @property
    def call(self) -> str:
        """The allocation as the launcher writes it: `torch.empty(sizes, ...)`
        where the strides are the contiguous ones, as hand-written code reads."""
        sizes = ", ".join(self.sizes) + ("," if len(self.sizes) == 1 else "")
        where = f"dtype={self.dtype}, device={self.device}"
        if self.init == "torch.empty_strided" and contiguous(self.sizes, self.strides):
            return f"torch.empty(({sizes}), {where})"
        strides = ", ".join(self.strides) + ("," if len(self.strides) == 1 else "")
        return f"{self.init}(({sizes}), ({strides}), {where})"


def contiguous(sizes: list[str], strides: list[str]) -> bool:
    """Whether strides are the row-major ones of sizes but at axes of size 1,
    as expressions of the same names (checked at two sets of values, each name
    its own)."""
    if len(sizes) != len(strides):
        return False
    # `x.shape[1]` as one name
    sizes, strides = (
        [re.sub(r"\b(\w+)\.shape\[(\d+)\]", r"\1_shape_\2", e) for e in exprs]
        for exprs in (sizes, strides)
    )
    names = sorted(
        set(re.findall(r"\b[A-Za-z_]\w*\b", " ".join(sizes + strides))) - {"max", "min"}
    )
    for base in (7, 1000003):
        values = {n: base + 2 * i for i, n in enumerate(names)}
        env = {"__builtins__": {}, "max": max, "min": min, **values}
        try:  # size arithmetic porter wrote itself, evaluated without builtins
            got = [eval(s, env) for s in strides]
            dims = [eval(s, env) for s in sizes]
        except Exception:
            return False
        want, step = [], 1
        for n in reversed(dims):
            want.append(step)
            step *= n
        # an axis of size 1 reaches no element through its stride (torch's own rule)
        if any(g != w and n != 1 for g, w, n in zip(got, want[::-1], dims)):
            return False
    return True


@dataclass
class Calls:
    """The scaffold's helpers some launcher lines call, with the options they
    pass the sizing helpers: the scaffold holds only those helpers, and only
    the branches these calls reach. Recorded as the lines are written."""

    helpers: set[str] = field(default_factory=set)
    # launch_settings(..., row_only=True) / (..., reread=True) is called
    row_only: bool = False
    reread: bool = False
    # the keys looped_min_row_bytes is called with
    looped_keys: set[tuple[int, int]] = field(default_factory=set)

    def __or__(self, other: "Calls") -> "Calls":
        return Calls(
            self.helpers | other.helpers,
            self.row_only or other.row_only,
            self.reread or other.reread,
            self.looped_keys | other.looped_keys,
        )


@dataclass
class LaunchStep:
    kind: str
    call: str = ""
    kernel: str = ""
    grid: str = ""
    args: list[tuple[str, str]] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    num_warps: str = "4"
    num_stages: str = ""
    # A dict of launch arguments only some of the kernels take (rendered `**x`).
    kwargs: str = ""
    # Launched with programmatic dependent launch where the device has it
    # (porter.port.finish.pdl): LAUNCH_PDL=pdl, launch_pdl=pdl.
    pdl: bool = False
    # Where the kernel also takes EARLY_TRIGGER (a pointwise tile kernel, or
    # Inductor's persistent reduction; porter.port.finish.pdl.trigger_after_loads):
    # the expression it is passed.
    early_trigger: str = ""
    # Where a persistent kernel (porter's, or Inductor's persistent reduction)
    # lets the next kernel launch early on its own rows block (BLOCK_ROWS ==
    # 1); the launcher passes nothing for it.
    persistent_trigger: bool = False
    # Where set, the step runs only under this condition, and either the
    # launcher returns after it or, where `otherwise` holds steps, those run
    # instead (porter.port.launch.matmul: the slower way to the same outputs).
    when: str = ""
    otherwise: list["LaunchStep"] = field(default_factory=list)
    calls: Calls = field(default_factory=Calls)
    # It launches a kernel jitted debug=True (an index check): launched with
    # sanitize_overflow=False, as Inductor compiles it.
    debug: bool = False
    # Where set, the step runs in a loop, `for {each}:` (its code in the loop's
    # names), and the steps it repeats are `folded` into it, not written
    # (porter.port.finish.loops).
    each: str = ""
    folded: bool = False


@dataclass
class Launcher:
    name: str
    signature: str
    checks: list[str]
    prelude: list[str]
    dims: list[Dim]
    allocs: list[Alloc]
    steps: list[LaunchStep]
    returns: str
    # The tensor whose device decides programmatic dependent launch (`pdl =
    # pdl_enabled(...)`), where a step takes it.
    device: str = "'cuda'"
    # Checks that read the dims (after them): every size the kernels assume.
    shape_checks: list[str] = field(default_factory=list)
    # Lines before each return: a tensor changed in place that the launcher
    # copied to give it the kernels' layout is copied back.
    epilogue: list[str] = field(default_factory=list)
    # The tensors some kernel stores to, by launcher name.
    written: set[str] = field(default_factory=set)
    # What the prelude and the returned views call (strided_as, reinterpret).
    calls: Calls = field(default_factory=Calls)
    # The rank each input tensor is checked to have.
    ranks: dict[str, int] = field(default_factory=dict)

    def map_code(self, fn: Callable[[str], str]) -> None:
        """Every piece of code the launcher holds replaced by fn(code)."""
        self.checks = [fn(c) for c in self.checks]
        self.prelude = [fn(c) for c in self.prelude]
        for d in self.dims:
            d.expr = fn(d.expr)
        for a in self.allocs:
            a.sizes = [fn(c) for c in a.sizes]
            a.strides = [fn(c) for c in a.strides]
            a.dtype, a.device = fn(a.dtype), fn(a.device)
        for s in self.steps:
            map_step_code(s, fn)
        self.returns, self.device = fn(self.returns), fn(self.device)
        self.shape_checks = [fn(c) for c in self.shape_checks]
        self.epilogue = [fn(c) for c in self.epilogue]

    def dim_lines(self) -> list[str]:
        """The sizes as the launcher binds them: `num_tokens, hidden = x.shape`
        where they name every axis of a tensor of checked rank, in order."""
        lines, i = [], 0
        while i < len(self.dims):
            tensor = re.fullmatch(r"(\w+)\.shape\[0\]", self.dims[i].expr)
            n = self.ranks.get(tensor.group(1), 0) if tensor else 0
            run = self.dims[i : i + n]
            if n > 1 and [d.expr for d in run] == [
                f"{tensor.group(1)}.shape[{k}]" for k in range(n)
            ]:
                names = ", ".join(d.name for d in run)
                lines.append(f"{names} = {tensor.group(1)}.shape")
                i += n
            else:
                lines.append(f"{self.dims[i].name} = {self.dims[i].expr}")
                i += 1
        return lines


def follows_inputs(cap: Capture, b: Buffer, extern_read: set[str]) -> bool:
    """Whether a scratch buffer takes the inputs' dtype: one in the capture's
    dtype does, but an fp32 one the capture found fp32 in a bf16 compile too
    (a softmax of x.float() feeding a top-k) keeps fp32, unless a matmul
    reads it (`extern_read`), which needs the inputs' dtype."""
    return (
        b.dtype == f"torch.{cap.capture_dtype}"
        and b.follows is not False
        and (b.follows or b.name in extern_read or cap.capture_dtype != "float32")
    )


def map_step_code(step: LaunchStep, fn: Callable[[str], str]) -> None:
    """Every piece of code a step holds (its call, grid, arguments, setup and
    the steps it runs otherwise), each passed through `fn`."""
    for attr in ("call", "grid", "num_warps", "num_stages", "kwargs", "when", "each"):
        if getattr(step, attr):
            setattr(step, attr, fn(getattr(step, attr)))
    if step.early_trigger:
        step.early_trigger = fn(step.early_trigger)
    step.args = [(name, fn(value)) for name, value in step.args]
    step.setup = [fn(c) for c in step.setup]
    for other in step.otherwise:
        map_step_code(other, fn)


def _constants_meeting_int32(ports: list[KernelPort]) -> set[str]:
    """The launcher's names held in a constexpr parameter that a kernel adds
    to, or compares with, an int32 value: a runtime int argument (Triton
    types one within int32 as i32) or an index made of tl.arange,
    tl.program_id and those alone. Triton raises on such an op past int32 ("Scalar ... is out of
    range for type int32": Swin's roll by 2**32 + 2); one meeting int64
    rows or loaded ids takes any value."""
    out: set[str] = set()
    for kp in ports:
        constant = {
            p.name: p.value
            for p in kp.params
            if p.annotation == "tl.constexpr" and p.kind == "model"
        }
        runtime = {
            p.name for p in kp.params if p.kind == "runtime" and not p.annotation
        }
        small = {p.name for p in kp.params if p.annotation == "tl.constexpr"}
        for form in kp.forms():
            narrow = set(runtime)
            for stmt in ast.walk(form):
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    target = stmt.targets[0]
                    if isinstance(target, ast.Name) and _int32_only(
                        stmt.value, narrow, small
                    ):
                        narrow.add(target.id)
            for node in ast.walk(form):
                pairs = []
                if isinstance(node, ast.BinOp):
                    pairs = [(node.left, node.right), (node.right, node.left)]
                elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
                    a, b = node.left, node.comparators[0]
                    pairs = [(a, b), (b, a)]
                for mine, other in pairs:
                    names = names_in(mine)
                    if (
                        names
                        and names <= set(constant)
                        and _int32_only(other, narrow, small)
                    ):
                        for name in names:
                            out.update(re.findall(r"\b\w+\b", constant[name]))
    return out


def _int32_only(e: ast.AST, narrow: set[str], small: set[str]) -> bool:
    """Whether e is int32 index math: it reads a name of `narrow`,
    tl.arange or tl.program_id, and no load, cast or name that may be wider
    than the constexprs `small` and `narrow`."""
    text = ast.unparse(e)
    if "tl.load" in text or ".to(" in text or "tl.int64" in text:
        return False
    names = names_in(e) - {"tl"}
    reads = names & narrow or "tl.arange" in text or "tl.program_id" in text
    return bool(reads) and names <= narrow | small


def plan_launcher(
    cap: Capture,
    module: CompiledModule,
    ports: list[KernelPort],
    ref_module,
    options: PortOptions = PortOptions(),
) -> Launcher:
    kernelbench = cap.reference_kind == "kernelbench"
    if kernelbench:
        fn = ref_module.Model.forward
        sig = inspect.signature(fn)
        name = "forward"
    else:
        sig = inspect.signature(ref_module.REFERENCE)
        name = cap.reference_name  # a lambda's is "reference"
    signature = _signature_text(sig)
    inputs = set(cap.input_names)
    scalars = {gi.target for gi in module.inputs if gi.kind == "scalar"}
    checks: list[str] = []
    structure = 0  # the module-structure checks at the front of checks
    # Arguments the capture saw only as their defaults were inlined as
    # constants, unless the kernels take them at run time (a float eps).
    symints = {gi.source for gi in module.inputs if gi.kind == "symint"}
    checked = set()
    narrow = [d for d in dict.fromkeys(cap.input_dtypes.values()) if d in _NARROW_INTS]
    wrapped = cap.wrapped_arguments
    constant = _constants_meeting_int32(ports)
    for pname, p in sig.parameters.items():
        if f"L['{pname}']" in symints:
            # an int the kernels take at run time; a tensor there crashed in Triton
            said = f"captured with {pname} an int; pass an int"
            checks.append(f"if not isinstance({pname}, int):\n    refuse({said!r})")
            said = ""
            if narrow and (wrapped is None or pname in wrapped):
                # eager wraps one past int32 to an int32 tensor's dtype (ids
                # // (2**32 + 3) is ids // 3) where Triton widens the math
                dtypes = " or ".join(d.removeprefix("torch.") for d in narrow)
                said = (
                    f"{pname} must be within int32's range (eager wraps a larger "
                    f"one to a {dtypes} tensor's dtype; the kernels do not)"
                )
            elif pname in constant:
                said = (
                    f"{pname} must be within int32's range (a kernel takes it "
                    "as a compile-time constant, which Triton cannot combine with int32 "
                    "indices past that range)"
                )
            if said:
                test = f"not -(2**31) <= {pname} < 2**31"
                checks.append(f"if {test}:\n    refuse({said!r})")
        if (
            pname in inputs
            or pname in scalars
            or pname == "self"
            or p.default is inspect.Parameter.empty
            or f"L['{pname}']" in symints  # an int the kernels take at run time
            or pname in cap.unread_arguments  # the reference never reads it
        ):
            continue
        checks.append(_refuse_other(pname, p.default))
        checked.add(pname)
    # A tensor argument that may be None (`residual=None`): the capture traced
    # a tensor there, and the reference takes another path without one.
    for pname, p in sig.parameters.items():
        if pname in cap.input_dtypes and p.default is None:
            said = (
                f"captured with {pname} a tensor; re-capture with None for those calls"
            )
            checks.append(f"if {pname} is None:\n    refuse({said!r})")
    # A number the kernels take at run time: the capture traced a number there
    # (`if cap is not None` took that side), so None or a tensor is refused.
    for pname in sig.parameters:
        if pname in scalars and pname not in inputs:
            checks.append(_refuse_non_number(pname))
    # So is a module attribute the kernels take (ModelNew(torch.tensor(0.5))),
    # and a parameter they read that another constructor argument leaves None
    # (nn.Linear(..., bias=False)).
    held = {}  # the module's tensors the kernels read: followed the call's dtype?
    for gi in module.inputs:
        if gi.kind == "scalar" and gi.source.startswith("L['self']"):
            checks.append(_refuse_non_number(module_attr(gi.target)))
        elif gi.kind == "tensor" and gi.source.startswith("L['self']"):
            held[module_attr(gi.target)] = gi.dtype == f"torch.{cap.capture_dtype}"
    # Values the compiled graph holds as constants (a reduction dim, a
    # module's training flag): Dynamo would recompile for another value.
    for c in cap.constants:
        expr = c["expr"]
        if not kernelbench and expr.startswith("self"):
            continue
        if expr in checked:
            continue
        # An int the graph took as a size, then fixed by a guard (math.log(n),
        # `if n == 4` after tensor math), is a constant of the kernels too.
        value = tuple(c["value"]) if c.get("tuple") else c["value"]
        check = _refuse_other(expr, _Code(value) if c.get("code") else value)
        if expr.startswith(("len(self", "type(self")):
            # The module's structure, before any check reads a submodule of it
            checks.insert(structure, check)
            structure += 1
        else:
            checks.append(check)
    # Sizes the capture saw as constants (a KernelBench file's fixed feature
    # size) that the scaffold passes as literals (a constexpr row size, an
    # output's shape): another size must not run silently.
    literal = {p.value for kp in ports for p in kp.params if p.value.isdigit()}
    literal |= {str(s) for b in module.buffers for s in b.sizes if str(s).isdigit()}
    # ...or that a kernel's index arithmetic still spells out (x1 = x // 32);
    # a captured size the port replaced by a stride argument is not checked.
    literal |= {
        str(n.value)
        for kp in ports
        for form in kp.forms()
        for n in ast.walk(form)
        if isinstance(n, ast.Constant) and type(n.value) is int and n.value > 1
    }
    # The kernels index each tensor with as many axes as it had: a 3-d x
    # where a 2-d one was captured would take its second axis for the row.
    ranked = [
        (gi.target, len(gi.sizes))
        for gi in module.inputs
        if gi.kind == "tensor" and gi.target in inputs
    ]
    # and each the graph reads only sizes of (`like.shape[-1]`), spelled with
    # the capture's positive axis: another rank moves it
    for gi in module.inputs:
        m = re.fullmatch(r"L\['(\w+)'\]\.size\(\)\[\d+\]", gi.source or "")
        sized = m.group(1) if m else None
        if sized in cap.input_ranks and all(sized != t for t, _ in ranked):
            ranked.append((sized, cap.input_ranks[sized]))
    ranks = dict(ranked)
    # A 0-d tensor (a scale) may come as a number, which eager takes.
    for t in [t for t, n in ranked if n == 0 and t in inputs]:
        said = f"captured with {t} a tensor; pass torch.tensor({t})"
        checks.append(f"if not isinstance({t}, torch.Tensor):\n    refuse({said!r})")
    if ranked:
        checks.append(_rank_check(ranked))
    # Branches the reference took in Python on a scalar or a size, and the
    # ties of sizes its views rely on: the kernels are that side's alone.
    # (folded again: a manifest written before a fold learned more keeps all)
    # Checked once the sizes are bound, their tests spelled with the sizes'
    # names; each message keeps the caller's terms (x.shape[1]).
    branches = [
        (lambda spell, c=cond: _refuse_branch(cap.reference_name, c, spell))
        for cond in fold_ties(cap.guards)
    ]
    for cond in cap.assumed:
        said = (
            f"the kernels assume {cond}, as the capture's arguments had it; "
            "capture again with the values you need"
        )
        branches.append(
            lambda spell, c=cond, said=said: (
                f"if not ({_divisors_nonzero(spell(c))}):\n    refuse({said!r})"
            )
        )
    wrapper_var = {gi.wrapper_name: gi.target.replace(".", "_") for gi in module.inputs}
    written = written_tensors(ports) | extern_written(module, wrapper_var)
    tensor_inputs = [
        gi.target for gi in module.inputs if gi.kind == "tensor" and gi.target in inputs
    ]
    params = [
        gi.target
        for gi in module.inputs
        if gi.kind == "tensor" and gi.target not in inputs
    ]
    # The tensor whose dtype the outputs follow: an input in the dtype the
    # capture was made in (not an int64 id, nor an fp32 scale), else a module
    # parameter in it (an embedding's table, where the inputs are its ids);
    # where the capture recorded no dtypes, the first input.
    tensors = [gi for gi in module.inputs if gi.kind == "tensor"]
    in_dtype = [gi for gi in tensors if gi.dtype == f"torch.{cap.capture_dtype}"]
    # An input seen to follow the call's dtype comes before one that only
    # matched it in the capture's dtype (fp32 top-k weights beside the
    # activation): a bf16 call had been refused for the weights' dtype.
    follows = set(cap.input_follows or [])
    in_dtype.sort(key=lambda gi: gi.target not in follows)
    # (not an argument of its own fixed dtype: a float64 table cast down first)
    floats = [
        gi
        for gi in tensors
        if "float" in gi.dtype
        and (
            cap.input_follows is None or gi.target in follows or gi.target not in inputs
        )
    ]
    ranked = (
        [gi for gi in in_dtype if gi.target in inputs]
        + [gi for gi in in_dtype if gi.target not in inputs]
        + floats
        + (
            []
            if any(gi.dtype for gi in tensors)
            else sorted(tensors, key=lambda gi: gi.target not in inputs)
        )
    )
    first_float = ranked[0].target.replace(".", "_") if ranked else None
    if follows and first_float not in follows:
        # An argument the kernels read for its dtype alone (vLLM's
        # _make_alibi_bias's query) follows the call where the tables they
        # read (fp32 slopes) do not: the call's dtype is its.
        first_float = next(
            iter(n for n in cap.input_follows if n in inputs), first_float
        )
    if not in_dtype:
        # Only an argument's dtype reaches the graph (`.to(like.dtype)`): the
        # outputs follow that argument.
        like = [
            n for n, d in cap.input_dtypes.items() if d == f"torch.{cap.capture_dtype}"
        ]
        if like:
            first_float = like[0]
            in_dtype = [like[0]]
    holder = tensor_inputs[0] if tensor_inputs else first_float
    # float64 too: the kernels compute in fp32, which a float64 caller did not ask for.
    others = [
        d
        for d in ("float32", "float16", "bfloat16", "float64")
        if d not in cap.dtypes_served
    ]
    # The input whose dtype the outputs follow, a graph input or one read only
    # for its dtype (torch.finfo(like.dtype).min): the check reads it.
    decides = bool(ranked and ranked[0].target in inputs) or first_float in inputs
    if cap.dtypes_served and others and decides:
        served = [f"torch.{d}" for d in cap.dtypes_served]
        test = (
            f"!= {served[0]}" if len(served) == 1 else f"not in ({', '.join(served)})"
        )
        lower = [d for d in others if d != "float64"]
        why = [f"{' and '.join(lower)} may compute differently"] if lower else []
        if "float64" in others:
            why.append("the kernels would compute float64 in fp32")
        said = (
            f"captured in {cap.capture_dtype}, checked in "
            f"{', '.join(cap.dtypes_served)} only: {', and '.join(why)}; "
            "re-capture with --dtype for it"
        )
        if not lower:
            # float64 alone: short enough for one line
            said = (
                f"{first_float} must be {', '.join(cap.dtypes_served)} "
                "(the kernels compute in fp32, not float64)"
            )
        checks.append(f"if {first_float}.dtype {test}:\n    refuse({said!r})")
    checks += _dtype_ties(cap, first_float if decides else None)
    if held:
        checks.append(_module_tensors(held, first_float if decides else None))
    device = f"{holder}.device" if holder else "'cuda'"

    dims = []
    for d in cap.dims:
        if d.axes:
            input_name, axis = d.axes[0]
            dims.append(Dim(d.name, f"{input_name}.shape[{axis}]"))
    named = {d.expr: d.name for d in dims}

    def spell(cond: str) -> str:
        return re.sub(
            r"(?<![\w.])\w+\.shape\[\d+\]", lambda m: named.get(m[0], m[0]), cond
        )

    size_checks = [branch(spell) for branch in branches]

    var_of: dict[str, str] = {}
    allocs = []
    # A scratch buffer no bf16 compile told apart keeps fp32 (a BatchNorm's
    # batch mean held in bf16 was off by its rounding), unless an extern call
    # (a matmul) reads it, which needs the inputs' dtype.
    extern_read = module.extern_reads(matmul=True)
    for b in module.buffers:
        out_idx = module.output_of(b.name)
        var = var_of[b.name] = module.buffer_var(b.name)
        dtype = b.dtype
        ref_idx = _reference_output(cap, module, out_idx)
        if (
            ref_idx is not None
            and cap.output_dtypes
            and ref_idx >= len(cap.output_dtypes)
        ):
            raise PorterError(
                f"{cap.reference_name}'s compiled graph returns more outputs than it "
                "does; porter cannot tell which is which"
            )
        if ref_idx is not None and cap.output_dtypes:
            fixed = cap.output_dtypes[ref_idx]
            if fixed != "input":
                dtype = fixed
            elif in_dtype or not any(gi.dtype for gi in tensors):
                # (a capture that recorded no dtypes: the first input's)
                dtype = f"{first_float}.dtype"
            # else: no tensor holds the capture's dtype (a dtype argument set
            # it, which the launcher checks): the buffer's own dtype
        elif first_float and follows_inputs(cap, b, extern_read):
            dtype = f"{first_float}.dtype"
        allocs.append(
            Alloc(
                var,
                [launcher_expr(s) for s in b.sizes],
                [_nonzero_divisors(launcher_expr(s)) for s in b.strides],
                dtype,
                device,
            )
        )
    for made in module.produced:
        var_of[made] = module.buffer_var(made)
    symbols = {s: launcher_expr(t) for s, t in module.symbols.items()}

    steps = []
    port_by_name = {kp.record.name: kp for kp in ports}
    for step in module.steps:
        if step.kind == "extern":
            extern = LaunchStep("extern")
            extern.call = _extern_call(
                step.text, wrapper_var, var_of, symbols, extern.calls
            )
            steps.append(extern)
            continue
        kp = port_by_name.get(step.name)
        if kp is not None:  # None: fused into an earlier kernel's launch
            previous = steps[-1] if steps else None
            launch = _launch(kp, inputs, pdl_behind(previous, options.pdl_after_extern))
            if not launch.pdl:
                launch.setup.insert(0, NO_PDL_AFTER_EXTERN)
            elif kp.tile is not None:
                launch.early_trigger = EARLY_TRIGGER_EXPR
            steps.append(launch)

    # ...or that an extern call spells out: a Linear's weight viewed with the
    # captured in_features (`reinterpret(weight, (64, 48), (1, 64), 0)`).
    literal |= {
        str(n.value)
        for step in steps
        if step.kind == "extern"
        for n in ast.walk(ast.parse(step.call))
        if isinstance(n, ast.Constant) and type(n.value) is int and n.value > 1
    }
    specialized = {
        tuple(a) for d in cap.dims if not d.symbolic for a in d.axes or d.derived
    }
    shape_checks = size_checks + _shape_checks(
        module, inputs, dims, literal, specialized
    )
    state = sorted(
        gi.target
        for gi in module.inputs
        if gi.kind == "tensor"
        and gi.target not in inputs
        and gi.target.replace(".", "_") in written
    )
    state = [module_attr(t) for t in state] + _reduced_into(ports, inputs, cap)
    if state and tensor_inputs:
        # Eager skips a BatchNorm's running-statistics update on an empty batch;
        # the kernels would average nothing into them.
        empty = " or ".join(f"{t}.numel() == 0" for t in tensor_inputs)
        shape_checks.append(
            f"if {empty}:\n    refuse("
            f"{f'an empty input: the kernels would update {state[0]} from no rows, which eager may skip (a BatchNorm in training); call it with rows'!r})"
        )
    returns, calls = [], Calls()
    for o in module.outputs:
        if o in var_of or o in wrapper_var:
            returns.append(var_of.get(o, wrapper_var.get(o)))
        else:
            # A view of a buffer (`reinterpret_tensor(buf2, (s0,), (1,), 0)`: a
            # keepdim statistic returned squeezed): the same view, in launcher terms.
            returns.append(_extern_call(o, wrapper_var, var_of, symbols, calls))
    if cap.output_map:
        returns = _map_outputs(cap, module, returns)
    elif cap.output_dtypes:
        returns = returns[
            : len(returns)
            - len(_state_returned(module, inputs, len(cap.output_dtypes)))
        ]
    returns = _converted_copies(cap, returns, allocs)
    ret = ", ".join(returns) if len(returns) != 1 else returns[0]
    # The tensors' bindings and layouts come last (bind_layouts), once every
    # stage has settled which kernels read them.
    return Launcher(
        name,
        signature,
        checks,
        [],
        dims,
        allocs,
        steps,
        ret,
        device,
        shape_checks=shape_checks,
        written=written,
        calls=calls,
        ranks=ranks,
    )


def bind_layouts(
    launcher: Launcher,
    cap: Capture,
    module: CompiledModule,
    pinned: set[tuple[str, int]] = frozenset(),
) -> None:
    """The launcher's first lines: each tensor bound to a name, with the
    strides the kernels that read or write it assume (None: any), copied
    only where it has others; a tensor changed in place and so copied gets
    the result back before the launcher returns. Read off the final launch
    steps (the matmul and bias stages add kernels of their own)."""
    inputs = set(cap.input_names)
    strided = {
        var: {axis for axis in axes if (var, axis) not in pinned}
        for var, axes in _kernel_strides(launcher).items()
    }
    viewed = _viewed(launcher)
    prelude, epilogue, given_of, whole = [], [], {}, {}
    returned = {m["name"] for m in cap.output_map if m.get("kind") == "input"}
    followed = {n for n in cap.output_layouts if n}
    whole_layout: dict[str, str] = {}  # the caller's tensor, where rebound
    for name in cap.contiguous_only:
        said = (
            f"eager changes {name} in place only where it is contiguous (a strided "
            f"one it copies first); pass {name} contiguous"
        )
        prelude.append(f"if not {name}.is_contiguous():\n    refuse({said!r})")
    changed = sorted(launcher.written & inputs)
    if changed:
        # An expanded tensor: every program would write the one row its
        # elements share, where eager refuses to change it in place.
        said = (
            f"{' or '.join(changed)} is expanded (a stride of 0 over a size past "
            "1), so its elements share memory; eager refuses to change it in place"
        )
        overlap = (
            f"any(s == 0 and n > 1 for n, s in zip({changed[0]}.shape, {changed[0]}.stride()))"
            if len(changed) == 1
            else f"any(s == 0 and n > 1 for t in {_tuple(changed)} for n, s in zip(t.shape, t.stride()))"
        )
        prelude.append(f"if {overlap}:\n    refuse({said!r})")
    # An extern call's outputs may follow its input's layout (a sort of a
    # column-major x gives column-major values), which a kernel after it would
    # index as the capture's: its inputs take the captured strides too.
    follows = _extern_reads(launcher) if _launches(launcher) else set()
    for gi in module.inputs:
        if gi.kind != "tensor":
            continue
        var = gi.target.replace(".", "_")
        source = gi.target if gi.target in inputs else module_attr(gi.target)
        if var not in strided and var not in viewed and var not in follows:
            # No kernel takes it (only an extern call, which reads any layout).
            if var != source:
                prelude.append(f"{var} = {source}")
            continue
        free = strided.get(var, set()) if var not in viewed else set()
        free = _outer_axes(free, gi.sizes, gi.strides, cap)
        expected = [
            None if axis in free or str(size) == "1" else launcher_expr(stride)
            for axis, (size, stride) in enumerate(zip(gi.sizes, gi.strides))
        ]
        if var in launcher.written and any(e is not None for e in expected):
            # Changed in place: where the launcher copies it to the kernels'
            # layout, the caller's tensor gets the result back.
            given = f"{var}_given" if var == source else source
            if var == source:
                prelude.append(f"{given} = {var}")
                given_of[var] = given
            epilogue.append(f"if {var} is not {given}:\n    {given}.copy_({var})")
            source = given
        line = _layout_line(var, source, expected, launcher.calls)
        if line and var == source and var in returned and var not in given_of:
            # Returned as it came (eager's `return x, ...`): the caller's
            # tensor itself, not the launcher's copy of it.
            prelude.append(f"{var}_given = {var}")
            whole[var] = f"{var}_given"
        if line and var == source and var in followed and var not in whole:
            prelude.append(f"{var}_given = {var}")
            whole_layout[var] = f"{var}_given"
        if line:
            prelude.append(line)
    launcher.prelude = prelude + launcher.prelude
    launcher.epilogue = epilogue
    # The checks and sizes run before the prelude binds a module's tensors to
    # names: there they read them off the module.
    launcher.checks = [off_module(c, module, inputs) for c in launcher.checks]
    launcher.shape_checks = [
        off_module(c, module, inputs) for c in launcher.shape_checks
    ]
    for d in launcher.dims:
        d.expr = off_module(d.expr, module, inputs)
    # An output that is an input changed in place is the caller's tensor.
    launcher.returns = re.sub(
        r"\b\w+\b", lambda m: given_of.get(m.group(0), m.group(0)), launcher.returns
    )
    if whole:
        launcher.returns = _returned_whole(launcher.returns, whole)
    if followed:
        callers = {**{v: v for v in followed}, **given_of, **whole, **whole_layout}
        launcher.returns = _laid_out_like_inputs(
            launcher.returns, cap.output_layouts, callers, launcher.calls
        )


def _laid_out_like_inputs(
    returns: str, layouts: list[str | None], callers: dict[str, str], calls: Calls
) -> str:
    """`returns` with each output whose layout eager makes follow an input's
    (cap.output_layouts) laid out as the caller's tensor: a contiguous x
    gets a contiguous result from a channels_last capture, a copy made only
    at a layout other than the capture's."""

    def laid_out(i: int, item: ast.expr) -> str:
        name = layouts[i] if i < len(layouts) else None
        if name not in callers or not isinstance(item, ast.Name):
            return ast.unparse(item)
        calls.helpers.add("laid_out_like")
        return f"laid_out_like({item.id}, {callers[name]})"

    if len(_returned_items(returns)) != len(layouts):
        return returns
    return _map_returns(returns, laid_out)


def off_module(code: str, module: CompiledModule, inputs: set[str]) -> str:
    """code with each size of a module tensor the prelude binds to a name read
    off the module instead (a plain tensor attribute's size is a symbol of the
    graph, self.inv_freq.shape[0]): for checks, which run before the prelude."""
    held = {
        gi.target.replace(".", "_"): module_attr(gi.target)
        for gi in module.inputs
        if gi.kind == "tensor" and gi.target not in inputs
    }
    if not held:
        return code
    early = re.compile(
        r"(?<![\w.])(" + "|".join(map(re.escape, held)) + r")(?=\.shape\b)"
    )
    return early.sub(lambda m: held[m.group(1)], code)


def _returned_whole(returns: str, names: dict[str, str]) -> str:
    """`returns` with each output that is one of names' tensors, whole (not a
    view of it), renamed."""
    return _map_returns(
        returns,
        lambda _, i: (
            names.get(i.id, i.id) if isinstance(i, ast.Name) else ast.unparse(i)
        ),
    )


def _returned_items(returns: str) -> list[ast.expr]:
    tree = ast.parse(returns.strip(), mode="eval").body
    return tree.elts if isinstance(tree, ast.Tuple) else [tree]


def _map_returns(returns: str, fn) -> str:
    """`returns` with each returned item i rewritten as fn(i, item)'s text."""
    tree = ast.parse(returns.strip(), mode="eval").body
    texts = [fn(i, item) for i, item in enumerate(_returned_items(returns))]
    if not isinstance(tree, ast.Tuple):
        return texts[0]
    return ", ".join(texts) + ("," if len(texts) == 1 else "")


def _outer_axes(free: set[int], sizes, strides, cap: Capture) -> set[int]:
    """The axes of `free` (strides the kernels take) that were outside every
    other axis in memory at capture. A row index Inductor merged over two axes
    (heads, then tokens, of a transposed x) steps by the inner one's stride,
    and the outer one's is then fixed by it: read as any, a view whose strides
    break that relation was read at the wrong rows."""
    if not free:
        return free
    env = {"__builtins__": {}, **{d.name: d.size for d in cap.dims}}
    found = []
    # A size no dim names (x.size(2)) at two values past 1: an order of axes
    # that holds at both is the layout's, not the example's.
    for unknown in (3, 5):

        def value(e) -> int:
            text = re.sub(r"\b\w+\.(?:size\(\d+\)|shape\[\d+\])", str(unknown), str(e))
            return int(eval(text, env))

        try:  # size arithmetic of the capture's own dim names
            n, st = [value(e) for e in sizes], [value(e) for e in strides]
        except Exception:  # noqa: BLE001 - a size porter cannot evaluate: as before
            return free
        found.append(
            {
                i
                for i in free
                if all(
                    st[i] >= st[j] * n[j]
                    for j in range(len(n))
                    if j not in free and n[j] > 1
                )
            }
        )
    return found[0] & found[1]


def _kernel_strides(launcher: Launcher) -> dict[str, set[int]]:
    """Per tensor some launch passes as a pointer (`x_ptr=x`), the axes whose
    stride every such launch also passes (`x_stride0=x.stride(0)`)."""
    seen: dict[str, list[set[int]]] = {}
    for step in all_steps(launcher.steps):
        if step.kind not in ("launch", "matmul"):
            continue
        taken: dict[str, set[int]] = {}
        for _, value in step.args:
            m = re.fullmatch(r"(\w+)\.stride\((\d+)\)", value)
            if m:
                taken.setdefault(m.group(1), set()).add(int(m.group(2)))
        for name, value in step.args:
            if name.endswith("_ptr") and value.isidentifier():
                seen.setdefault(value, []).append(taken.get(value, set()))
    return {t: set.intersection(*axes) for t, axes in seen.items()}


def _extern_reads(launcher: Launcher) -> set[str]:
    """The names an extern call reads (`torch.ops.aten.sort.stable(x, ...)`)."""
    out = set()
    for step in all_steps(launcher.steps):
        if step.kind == "extern":
            for node in ast.walk(ast.parse(step.call)):
                if isinstance(node, ast.Assign):
                    out |= names_in(node.value)
    return out


def _launches(launcher: Launcher) -> bool:
    """Whether the launcher launches a kernel of its own."""
    return any(s.kind in ("launch", "matmul") for s in all_steps(launcher.steps))


def _viewed(launcher: Launcher) -> set[str]:
    """Tensors a launch step takes a view of with Inductor's strides
    (`x.as_strided(...)`): those strides assume the captured layout."""
    out = set()
    for step in all_steps(launcher.steps):
        for line in step.setup:
            out |= set(re.findall(r"\b(\w+)\.as_strided\(", line))
    return out


def _reference_output(cap: Capture, module: CompiledModule, graph_idx: int | None):
    """The reference's output index of the graph's output `graph_idx` (they
    differ where the reference returns an input as itself first)."""
    if graph_idx is None or not cap.output_map:
        return graph_idx
    target_of = {gi.wrapper_name: gi.target for gi in module.inputs}
    k = 0
    for i, e in enumerate(cap.output_map):
        if e["kind"] == "graph" or (
            e["kind"] == "input"
            and k < len(module.outputs)
            and target_of.get(module.outputs[k]) == e["name"]
        ):
            if k == graph_idx:
                return i if e["kind"] == "graph" else None
            k += 1
    return None


def _state_returned(module: CompiledModule, inputs: set[str], wanted: int) -> list[str]:
    """The graph's outputs past the first `wanted` when each is a module buffer
    (Dynamo returns one a forward reassigns, `self.step += 1`, to store it
    back): the reference does not return them. Empty where any is not."""
    target_of = {gi.wrapper_name: gi.target for gi in module.inputs}
    extra = module.outputs[wanted:]
    if all(o in target_of and target_of[o] not in inputs for o in extra):
        return extra
    return []


def _nonzero_divisors(expr: str) -> str:
    """A stride expression with each size it divides by taken as 1 where it is
    0 (`hidden * (frames // (frames // pt))` at frames < pt): the tensor is
    then empty, its strides unread, where the division raised
    ZeroDivisionError."""
    tree = ast.parse(expr, mode="eval")
    divisions = _divisions(tree)
    for n in divisions:
        n.right = ast.BoolOp(ast.Or(), [n.right, ast.Constant(1)])
    return ast.unparse(tree) if divisions else expr


def _divisions(tree: ast.AST) -> list[ast.BinOp]:
    """Each `//`, `%` or `/` in tree by something other than a number."""
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.BinOp)
        and isinstance(n.op, (ast.FloorDiv, ast.Mod, ast.Div))
        and not isinstance(n.right, ast.Constant)
    ]


def _divisors_nonzero(cond: str) -> str:
    """`cond` preceded by `d != 0 and` for each term d it divides by
    (`x.shape[1] % g == 0`, g an argument or a size): at 0 the check refuses
    the call, where evaluating it raised ZeroDivisionError."""
    divisors = [ast.unparse(n.right) for n in _divisions(ast.parse(cond, mode="eval"))]
    nonzero = [f"{d} != 0" for d in dict.fromkeys(divisors)]
    return " and ".join(nonzero + [f"({cond})" if nonzero else cond])


def _converted_copies(cap: Capture, returns: list[str], allocs: list[Alloc]):
    """`returns` with each output eager copies at other dtypes (a strided slice
    of a buffer, `.to(x.dtype)`: a no-op only at the capture dtype) computed in
    a buffer of the capture dtype and converted, as eager does: a view at that
    dtype, a new contiguous tensor at the others. Its buffer must back no other
    output."""
    tensors = [i for i, r in enumerate(returns) if r != "None"]
    out = list(returns)
    for k in cap.outputs_copied:
        if k >= len(tensors):
            continue
        i = tensors[k]
        base = _viewed_buffer(returns[i])
        alloc = next((a for a in allocs if a.var == base), None)
        others = [r for j, r in enumerate(returns) if j != i]
        if alloc is None or base in names_in(ast.parse(", ".join(others) or "0")):
            continue
        dtype, alloc.dtype = alloc.dtype, f"torch.{cap.capture_dtype}"
        out[i] = f"{returns[i]}.to({dtype})"
    return out


def _viewed_buffer(expr: str) -> str | None:
    """The buffer `expr` views (`out.as_strided(...)`), None for anything else."""
    m = re.fullmatch(r"(\w+)\.as_strided\(.*\)", expr.strip(), re.S)
    return m.group(1) if m else None


def _map_outputs(cap: Capture, module: CompiledModule, returns: list[str]) -> list[str]:
    """The reference's outputs from the graph's: an input returned as itself
    (changed in place) is that input, whether or not the graph returns it too."""
    target_of = {gi.wrapper_name: gi.target for gi in module.inputs}
    out, k = [], 0
    for e in cap.output_map:
        if e["kind"] == "none":
            out.append("None")
        elif e["kind"] == "same":
            out.append(out[e["index"]])
        elif e["kind"] == "input":
            if (
                k < len(module.outputs)
                and target_of.get(module.outputs[k]) == e["name"]
            ):
                k += 1  # the graph returns it as well
            out.append(e["name"].replace(".", "_"))
        else:
            if k >= len(returns):
                break
            out.append(returns[k])
            k += 1
    if (
        k < len(returns)
        and len(_state_returned(module, set(cap.input_names), k)) == len(returns) - k
    ):
        returns = returns[:k]
    if k != len(returns) or len(out) != len(cap.output_map):
        raise PorterError(
            f"{cap.reference_name}'s outputs do not line up with its compiled graph's "
            f"({len(cap.output_map)} against {len(returns)}); porter cannot tell which is which"
        )
    return out


def _shape_checks(
    module,
    inputs: set[str],
    dims: list[Dim],
    literal: set[str],
    specialized: set[tuple[str, int]],
) -> list[str]:
    """One check that every tensor has the sizes the kernels assume: a size
    the capture saw as a constant the kernels still spell out (a KernelBench
    file's feature size), and every size the graph ties to a dim (a weight of
    `hidden`, a residual of x's shape, the 1-d targets a loss broadcasts
    along predictions' columns); eager's broadcasting of a size-1 axis is
    refused, not read out of bounds."""
    named = {d.name: d.expr for d in dims}
    conds, said = [], []
    # The caller's tensors first: theirs is the likelier mistake.
    for gi in sorted(module.inputs, key=lambda gi: gi.target not in inputs):
        if gi.kind != "tensor" or not gi.sizes:
            continue
        ref = gi.target if gi.target in inputs else module_attr(gi.target)
        want = []
        for axis, size in enumerate(gi.sizes):
            size = str(size)
            here = f"{gi.target}.shape[{axis}]"
            expr = launcher_expr(size)
            if size.isdigit():
                # A module's parameter or buffer of another fixed size (a conv
                # weight of another kernel size) changes sizes the kernels
                # derived from it, even where none spells it out.
                # So does one Dynamo or a retry with only per-call sizes
                # symbolic fixed: sizes derived from it (a conv's output, 14 of
                # 16) are constants in the kernels, which no longer say 16.
                # Dynamo always fixes a size of 1 (the kernels then never
                # index that axis: a [1, H] bound read for every row), and 0.
                fixed = (
                    size in ("0", "1")
                    or size in literal
                    or gi.target not in inputs
                    or (gi.target, axis) in specialized
                )
                want.append((axis, size if fixed else None))
            elif expr == here or named.get(expr) == here:
                # the axis that defines the dim (`hidden = x.shape[1]`); one a
                # dim was read from but the graph ties to another size (w's
                # columns bound to 4 * s.shape[1]) is checked
                want.append((axis, None))
            else:
                want.append((axis, expr))
        checked = [(a, e) for a, e in want if e is not None]
        if not checked:
            continue
        if len(checked) == len(want):
            whole = ", ".join(e for _, e in checked) + (
                "," if len(checked) == 1 else ""
            )
            conds.append(f"{ref}.shape != ({whole})")
        else:
            conds += [f"{ref}.shape[{a}] != {e}" for a, e in checked]
        shown = ", ".join(
            (spell_dims(e, named) if e is not None else "_") for _, e in want
        ) + ("," if len(want) == 1 else "")
        said.append(f"{ref} ({shown})")
    if not conds:
        return []
    cond = " or ".join(conds)
    message = f"captured for shapes {', '.join(said)}; re-capture for other sizes"
    return [f"if {cond}:\n    refuse({message!r})"]


def _module_tensors(held: dict[str, bool], first: str | None) -> str:
    """The check of the module's parameters and buffers the kernels read:
    each a tensor (nn.Linear(bias=False) leaves one None) and, where it
    followed the call's dtype at capture, of `first`'s dtype (eager promotes a
    bf16 x times an fp32 weight to fp32; the kernels return x's dtype)."""
    names = ", ".join(held)
    follow = [n for n, f in held.items() if f and first is not None]
    if len(follow) == len(held) == 1:
        test = f"{names} is None or {names}.dtype != {first}.dtype"
        said = f"{names} must be a tensor of {first}'s dtype, as at capture"
    elif follow and len(follow) == len(held):
        test = f"any(t is None or t.dtype != {first}.dtype for t in {_tuple(held)})"
        said = f"{names} must be tensors of {first}'s dtype, as at capture"
    elif follow:
        test = (
            f"any(t is None for t in {_tuple(held)}) or "
            f"any(t.dtype != {first}.dtype for t in {_tuple(follow)})"
        )
        said = f"{names} must be tensors, {', '.join(follow)} of {first}'s dtype, as at capture"
    else:
        test = f"any(t is None for t in {_tuple(held)})"
        said = f"captured with {names} tensors; re-capture with the values you need"
    return f"if {test}:\n    refuse({said!r})"


def _tuple(names) -> str:
    """A tuple's text: `(a,)` for one, `(a, b)` for more (no trailing comma,
    which black would spread over a line each)."""
    names = list(names)
    return f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def _dtype_ties(cap: Capture, first: str | None) -> list[str]:
    """Checks of the other tensor arguments' dtypes: one that followed the
    call's dtype at capture must have `first`'s, one that did not (an fp32
    scale, int64 ids, a bool mask) its captured dtype. Eager promotes a mixed
    call (bf16 slopes beside fp32 scores round the bias in bf16) where the
    kernels, compiled for one mix, do not."""
    if cap.input_follows is None:
        return []
    follow = [n for n in cap.input_follows if n != first and first is not None]
    fixed = {
        n: d
        for n, d in cap.input_dtypes.items()
        if n not in cap.input_follows and n != first
    }
    out = []
    if follow:
        test = _differ([f"{n}.dtype" for n in follow], [f"{first}.dtype"] * len(follow))
        if _too_long(test):  # black would give each dtype a line
            test = f"any(t.dtype != {first}.dtype for t in {_tuple(follow)})"
        names = " and ".join(filter(None, [", ".join(follow[:-1]), follow[-1]]))
        said = f"{names} must have {first}'s dtype, as at capture"
        out.append(f"if {test}:\n    refuse({said!r})")
    if fixed:
        test = _differ([f"{n}.dtype" for n in fixed], list(fixed.values()))
        shown = ", ".join(f"{n} {d.removeprefix('torch.')}" for n, d in fixed.items())
        said = f"captured with {shown}; re-capture for other dtypes"
        out.append(f"if {test}:\n    refuse({said!r})")
    return out


# Int tensors an int argument past int32 is wrapped to in eager.
_NARROW_INTS = ("torch.int32", "torch.int16", "torch.int8", "torch.uint8")


def _rank_check(ranked: list[tuple[str, int]]) -> str:
    """The check of the tensor arguments' ranks, as captured."""
    ranks = [str(n) for _, n in ranked]
    test = _differ([f"{t}.dim()" for t, _ in ranked], ranks)
    if _too_long(test):  # black would give each rank a line
        names = _tuple(t for t, _ in ranked)
        test = f"[t.dim() for t in {names}] != [{', '.join(ranks)}]"
    said = ", ".join(f"{t} {n}-d" for t, n in ranked)
    return (
        f"if {test}:\n    refuse("
        f"'captured with {said}; re-capture with the ranks you need')"
    )


def _too_long(test: str) -> bool:
    """`if <test>:` past black's line in a method's body."""
    return len(f"        if {test}:") > 88


def _differ(now: list[str], then: list[str]) -> str:
    """`a != b`, or `(a, c) != (b, d)` for several."""
    if len(now) == 1:
        return f"{now[0]} != {then[0]}"
    return f"({', '.join(now)}) != ({', '.join(then)})"


def spell_dims(expr: str, named: dict[str, str]) -> str:
    """A size expression in the caller's terms: hidden -> x.shape[1]."""
    return re.sub(
        r"\b[A-Za-z_]\w*\b", lambda m: named.get(m.group(0), m.group(0)), expr
    )


class _Code(str):
    """A value whose repr is its own text (torch.bfloat16)."""

    def __repr__(self) -> str:
        return str(self)


def _refuse_other(expr: str, value) -> str:
    nan = isinstance(value, float) and math.isnan(value)
    value = _literal(value)
    test = f"{expr} is not None" if value is None else f"{expr} != {value!r}"
    if nan:
        test = f"{expr} == {expr}"  # any number but NaN itself
    said = f"captured with {expr} {'is' if value is None else '=='} {value!r}"
    return f"if {test}:\n    refuse({f'{said}; re-capture with the value you need'!r})"


def _refuse_non_number(name: str) -> str:
    said = f"captured with {name} a number; re-capture with the value you need"
    return f"if not isinstance({name}, (int, float)):\n    refuse({said!r})"


def _refuse_branch(reference: str, cond: str, spell=lambda c: c) -> str:
    """The check that the call is on the side of `cond` the capture took, its
    test spelled by `spell` (sizes by their names), its message in the
    caller's terms."""
    if cond.startswith("?"):
        raise PorterError(
            f"{reference} branches in Python on {cond[1:]}, which porter cannot "
            "check in the scaffold; nothing was written: compute both sides "
            "with torch.where, or take the branch out of the reference"
        )
    said = (
        f"captured where {cond}: torch.compile recorded it (a branch in the "
        "reference, or an op's condition on sizes, where eager may raise); "
        "capture again with values on the other side for those calls (a size: "
        "--set NAME=V; a float argument: its default or make_inputs)"
    )
    least = re.fullmatch(r"(\d+) <= (\S*\.shape\[.*)", cond)
    names = set(re.findall(r"\b[A-Za-z_][\w.]*\b(?!\()", cond))
    if " == " in cond and ".shape[" not in cond and len(names) == 1:
        # var(x, correction=ddof): an op takes the argument as a number
        said = (
            f"captured where {cond}: torch.compile fixed {names.pop()} at that "
            "value (an op takes it as a number); capture again with the value "
            "you need"
        )
    elif " == " in cond and ".shape[" not in cond and not cond.startswith("?"):
        # range(a + b + 1): Python arithmetic on arguments, which Dynamo fixed
        spelled = cond.replace(" + -1 * ", " - ")
        said = (
            f"captured where {spelled}: a value the reference computes in Python "
            "from its arguments, which torch.compile fixed; capture again with "
            "the values you need"
        )
    elif least and int(least[1]) != 2:
        # x[:4] of a size Dynamo traced at 4 or more: a length of min(4, n)
        # the kernels hold as 4
        said = (
            f"captured where {cond}: the kernels hold that side alone (a branch "
            f"in the reference, or a slice of {least[1]} of {least[2]}, which they "
            f"take as {least[1]} long); capture again with a value on the other "
            "side for those calls (a size: --set NAME=V)"
        )
    elif re.fullmatch(r"[A-Za-z_][\w.\[\]]* != [01]|[12] <= \S*\.shape\[.*", cond):
        # Dynamo compiles an int or a size at 0 or 1 apart (top_k == 1, a
        # group of one), branch or none: say both
        said = (
            f"captured where {cond}: torch.compile gives 0 and 1 graphs of their "
            "own, or the reference branches on it; capture again with "
            "a value on the other side for those calls (a size: --set NAME=V; an "
            "argument: its default or make_inputs)"
        )
    if is_tie(cond) and "/" in cond.replace("//", ""):
        # math.log(max_distance / (n // 4)): a float Python computed from an
        # argument and a size, which the kernels hold as the capture's value
        said = (
            f"the kernels assume {cond}, a number the reference computes in Python "
            "from its arguments and sizes, as at capture; capture again with the "
            "values you need"
        )
    elif is_tie(cond):
        # a view or reshape into groups or halves: eager raises on the other side
        said = f"the kernels assume {cond}, as the reference's view of it does"
    elif _argument_against_size(cond):
        # x[:, -k:] traced at k <= width: eager clamps past it, a slice the
        # kernels do not take; not a branch of the reference's own
        said = (
            f"the kernels assume {cond}, as the capture's arguments had it; "
            "capture again with values on the other side for those calls"
        )
    elif re.fullmatch(r"0 <= [\w.\[\]]+|[\w.\[\]]+ >= 0", cond) or (
        (cond.endswith(" >= 0") or cond.startswith("0 <= ")) and ".shape[" in cond
    ):
        # Dynamo's bound on an int it divides by or sizes with, or on a slice
        # bound computed from sizes (x[:, h - n:]), not a branch
        spelled = cond.replace(" + -1 * ", " - ")
        said = f"the kernels assume {spelled}, as the reference's sizes do"
    return f"if not ({_divisors_nonzero(spell(cond))}):\n    refuse({said!r})"


def _argument_against_size(cond: str) -> bool:
    """`k <= x.shape[1]`: int arguments on one side, a size on the other."""
    node = ast.parse(cond, mode="eval").body
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return False
    sides = [ast.unparse(node.left), ast.unparse(node.comparators[0])]
    sized = [".shape[" in side for side in sides]
    plain = sides[sized.index(False)] if sized.count(True) == 1 else ""
    return bool(re.fullmatch(r"[A-Za-z_][\w\s+*-]*", plain))


def _reduced_into(ports, inputs: set[str], cap: Capture) -> list[str]:
    """The inputs a kernel reducing over a per-call dim changes in place
    (F.batch_norm's running statistics passed as arguments) and that have no
    axis of that dim: at an empty batch it still runs, over the other dims,
    and writes a statistic of nothing."""
    per_call = {d.name for d in cap.dims if d.role == "runtime"} | {
        f"{t}.shape[{a}]" for d in cap.dims if d.role == "runtime" for t, a in d.axes
    }

    def reads_per_call(expr: str) -> bool:
        return any(
            re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", expr) for n in per_call
        )

    # a tensor with an axis of the per-call dim is empty at an empty batch
    # (`done |= hit` of a (batch,) flag): nothing is written into it
    emptied = {t for d in cap.dims if d.role == "runtime" for t, _ in d.axes}
    out = []
    for kp in ports:
        row, rows = param_for(kp, "r0_numel"), param_for(kp, "xnumel")
        if reads_per_call(row) and not reads_per_call(rows):
            out += sorted(written_tensors([kp]) & inputs - emptied - set(out))
    return out


def written_tensors(ports) -> set[str]:
    """The tensors some kernel stores to (its outputs, and inputs it changes
    in place), by launcher name."""
    out = set()
    for kp in ports:
        values = {p.name: p.value for p in kp.params if p.kind == "pointer"}
        for form in kp.forms(matmul=True):
            for call in ast.walk(form):
                if (
                    isinstance(call, ast.Call)
                    and call.args
                    and (
                        is_call(call, "tl.store")
                        or ast.unparse(call.func).startswith("tl.atomic_")
                    )
                ):
                    base = ptr_base(call.args[0])
                    if base in values:
                        out.add(values[base])
    return out


# Overload names after an op's (`aten.index_put_.default`): not the op.
_OVERLOADS = {"default", "Tensor", "Scalar", "out", "self", "dim", "int"}


def extern_written(module: CompiledModule, wrapper_var: dict[str, str]) -> set[str]:
    """The tensors an extern call changes in place, by launcher name
    (`wrapper_var`: wrapper name to launcher name): the first argument of an
    in-place aten op (`aten.index_put_(x, ...)`, named with a trailing
    underscore) and any `out=` argument."""
    out = set()
    for step in module.steps:
        if step.kind != "extern":
            continue
        node = ast.parse(step.text.strip()).body[0]
        call = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
        if not isinstance(call, ast.Call):
            continue
        parts = ast.unparse(call.func).split(".")
        op = parts[-2] if parts[-1] in _OVERLOADS and len(parts) > 1 else parts[-1]
        targets = [kw.value for kw in call.keywords if kw.arg == "out"]
        if op.endswith("_") and not op.startswith("__") and call.args:
            targets.append(call.args[0])
        for t in targets:
            if isinstance(t, ast.Name) and t.id in wrapper_var:
                out.add(wrapper_var[t.id])
    return out


def _layout_line(
    var: str, source: str, expected: list[str | None], calls: Calls
) -> str:
    """The launcher line that binds `var` to the tensor with the strides the
    kernels assume (None: any), copying it only where it has others."""
    if all(e is None for e in expected):
        return f"{var} = {source}" if var != source else ""
    if expected[:-1] == [None] * (len(expected) - 1) and expected[-1] == "1":
        if var == source:
            return unit_stride(var)
        return (
            f"{var} = {source} if {source}.stride(-1) == 1 else {source}.contiguous()"
        )
    strides = ", ".join("None" if e is None else e for e in expected)
    if len(expected) == 1:
        strides += ","
    calls.helpers.add("strided_as")
    if re.search(rf"\b{re.escape(source)}\.stride\(", strides):
        # strides given by the tensor's own: read again from a copy
        strides = re.sub(rf"\b{re.escape(source)}\.stride\(", "t.stride(", strides)
        return f"{var} = strided_as({source}, lambda t: ({strides}))"
    return f"{var} = strided_as({source}, ({strides}))"


def flat_indexed(ports) -> set[str]:
    """The tensors some kernel reads through a pointer with none of their
    strides among its arguments: it indexes them as packed rows."""
    flat = set()
    for kp in ports:
        strided = {
            p.value.split(".stride(")[0] for p in kp.params if p.kind == "stride"
        }
        flat |= {
            p.value for p in kp.params if p.kind == "pointer" and p.value not in strided
        }
    return flat


def unit_stride(t: str) -> str:
    """The launcher line that gives tensor `t` unit stride along its last
    axis, copying it only where it has another."""
    return f"{t} = {t} if {t}.stride(-1) == 1 else {t}.contiguous()"


# Names an annotation may read in the scaffold, which imports torch alone.
_ANNOTATION_NAMES = {"torch", "int", "float", "bool", "str", "None", "tuple", "list"}


def _signature_text(sig: inspect.Signature) -> str:
    """The reference's signature as the scaffold can define it: an annotation
    of names the scaffold lacks (Optional[torch.Tensor]) kept as a string,
    a default of inf or NaN spelled float("inf")."""
    params = []
    for p in sig.parameters.values():
        if p.annotation is not inspect.Parameter.empty:
            text = (
                p.annotation
                if isinstance(p.annotation, str)
                else inspect.formatannotation(p.annotation)
            )
            names = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", text))
            p = p.replace(
                annotation=_Code(text if names <= _ANNOTATION_NAMES else repr(text))
            )
        if p.default is not inspect.Parameter.empty:
            p = p.replace(default=_literal(p.default))
        params.append(p)
    return str(
        sig.replace(parameters=params, return_annotation=inspect.Signature.empty)
    )


def _literal(value):
    """`value` as the scaffold spells it (literal_text: float("inf"))."""
    if isinstance(value, float) and not math.isfinite(value):
        return _Code(literal_text(value))
    return value


def _extern_call(text: str, wrapper_var, var_of, symbols, calls: Calls) -> str:
    """The wrapper's call (or `name = call` statement) in launcher names;
    the scaffold helpers it then calls go into `calls`."""
    tree = ast.parse(text.strip())
    node = tree.body[0]
    if isinstance(node, ast.Expr):
        node = node.value

    class Fix(ast.NodeTransformer):
        def visit_Name(self, n: ast.Name) -> ast.AST:
            if n.id in wrapper_var:
                return ast.Name(wrapper_var[n.id], n.ctx)
            if n.id in var_of:
                return ast.Name(var_of[n.id], n.ctx)
            if n.id in symbols:
                return ast.parse(symbols[n.id], mode="eval").body
            return n

        def visit_Call(self, n: ast.Call) -> ast.AST:
            self.generic_visit(n)
            func = ast.unparse(n.func)
            if func == "reinterpret_tensor":
                base = n.args[0]
                if isinstance(base, ast.Name) and base.id in var_of.values():
                    # A buffer the launcher allocated at Inductor's strides (a
                    # channels-last one included): a view of its storage.
                    size, stride = n.args[1], n.args[2]
                    offset = ast.unparse(n.args[3]) if len(n.args) > 3 else "0"
                    text = as_strided_text(
                        base.id, ast.unparse(size), ast.unparse(stride), offset
                    )
                    return ast.parse(text, mode="eval").body
                # Inductor's strides assume a contiguous tensor at its storage start.
                n.func = ast.Name("reinterpret", ast.Load())
                calls.helpers.add("reinterpret")
            elif func.startswith("extern_kernels."):
                n.func = ast.parse("torch." + func.split(".", 1)[1], mode="eval").body
            elif func.startswith(("aten.", "prims.")):
                # the wrapper's `aten` is torch.ops.aten (a fallback kernel)
                n.func = ast.parse("torch.ops." + func, mode="eval").body
            return n

    return ast.unparse(Fix().visit(node))


def _launch(kp: KernelPort, inputs: set[str], pdl: bool = False) -> LaunchStep:
    cfg = kp.record.config
    # A GPU capture's autotuned config (block, warps, stages) was chosen at the
    # traced shape alone; porter's launch heuristics, measured across token
    # counts and model sizes on an H200, take precedence wherever the launcher
    # has one (tiles, persistent kernels and their looped branch). The config
    # serves only the launches porter has no heuristic for: a flat pointwise
    # kernel, a reduction without a derived persistent form. Taking it for the
    # looped branch too cost natively captured scaffolds 1.07-1.22x captured/'s
    # time (rmsnorm 4096 at 1024 tokens, logsumexp 32768 at 1-1024, bf16;
    # lab/NOTES.md).
    stages = ""
    early_trigger = ""
    persistent_trigger = False
    args = []
    for p in kp.params:
        args.append((p.name, p.value))
    numel = param_for(kp, "xnumel")
    kwargs = ""
    elem_bytes = _elem_bytes(kp, inputs)
    elem = f", {elem_bytes}" if elem_bytes else ""  # launch_settings' last argument
    setup = [f"{p.value} = {p.view}" for p in kp.params if p.view]
    calls = Calls()
    if kp.tile is not None:
        calls.helpers.add("tile_settings")
        _, cols, rows = kp.tile
        # libdevice (tanh) marks a kernel with much arithmetic a byte; a
        # kernel loading one block of columns (a quantizer) packs more rows.
        work = ", heavy=True" if kp.heavy_math else ""
        if not kp.heavy_math and _column_loads(kp.tree) == 1:
            work = ", loads=1"
        setup.append(
            f"BLOCK_ROWS, BLOCK_COLS, num_warps = tile_settings({rows}, {cols}{elem}{work})"
        )
        setup.append(f"COL_BLOCKS = triton.cdiv({cols}, BLOCK_COLS)")
        grid = f"(triton.cdiv({rows}, BLOCK_ROWS) * COL_BLOCKS,)"
        warps = "num_warps"
    elif kp.record.kind == "pointwise":
        block = (
            cfg.kwargs.get("XBLOCK", DEFAULT_POINTWISE_BLOCK)
            if cfg
            else DEFAULT_POINTWISE_BLOCK
        )
        captured_warps = cfg.num_warps if cfg else 4
        stages = str(cfg.num_stages) if cfg else ""
        heavy = ", heavy=True" if kp.heavy_math else ""
        setup.append(
            f"BLOCK_SIZE, num_warps = flat_settings({numel}, {block}, {captured_warps}{heavy})"
        )
        calls.helpers.add("flat_settings")
        grid = f"(triton.cdiv({numel}, BLOCK_SIZE),)"
        warps = "num_warps"
    else:
        row = param_for(kp, "r0_numel")
        rows_per_program = cfg.kwargs.get("XBLOCK", 1) if cfg else 1
        # launch_settings' row_tensors: one row takes that many tensors' bytes.
        tensors = f", row_tensors={_row_tensors(kp)}" if elem else ""
        # A kernel holding nothing but its rows takes other launches (the
        # template's launch_settings and looped_min_row_bytes say which).
        row_only = ", row_only=True" if elem and _reads_only_rows(kp) else ""
        tensors += row_only
        key = (_passes_over_row(kp.tree), _row_inputs(kp, inputs))
        # Rows it reads twice and writes, held in registers, keep more warps
        # further into prefill (the template's launch_settings says why;
        # logsumexp, writing one value a row, does not).
        reread = bool(row_only) and key == (2, 1) and _stores_row(kp.tree)
        tensors += ", reread=True" if reread else ""
        # what the launch_settings calls below pass, where they pass `tensors`
        options = {"row_only": bool(row_only), "reread": reread}
        if kp.persistent is not None:
            # The autotuned config was for Inductor's looped kernel; the
            # persistent one is sized by the heuristic, from the rows and the
            # row, and the template's row_launch picks the form.
            # A layer norm's held row is reduced twice: its warps follow the
            # row, not the padded block (the template's launch_settings).
            twice = ", reduced_twice=True" if elem and _keeps_welford(kp.tree) else ""
            calls = Calls({"row_launch"}, **options)
            # (it triggers on BLOCK_ROWS == 1 itself: launch_dependents)
            persistent_trigger = bool(pdl and loads_at_top(kp.persistent))
            rule = f"{tensors}{twice}"
            if (
                elem_bytes
                and key in LOOPED_MIN_ROW_BYTES
                and _stores_row(kp.tree)
                and not _keeps_welford(kp.tree)
            ):
                # The looped kernel beats holding the row in registers from a
                # row size that depends on how it reads the row (the template
                # says why).
                rule += f", reads={key}"
                calls.looped_keys.add(key)
            rule += ", once=True" if key[0] == 1 else ""
            rule += ", online=True" if kp.online is not None else ""
            rule += ", split=True" if kp.split_launch[0] else ""
            # Only the persistent kernel takes STREAM_ROWS.
            if any(a.arg == STREAM_ROWS for a in kp.persistent.args.args):
                rule += ", stream=True"
            setup.append(f"form, {LAUNCH} = row_launch({numel}, {row}{elem}{rule})")
            forms = {"persistent": kp.persistent.name, "looped": kp.looped_name}
            if kp.online is not None:
                forms["online"] = kp.online.name
            if kp.split_launch[0]:
                # the looped kernel launched in phases (common.py's SplitRows)
                forms["split"] = kp.looped_name
            if kp.online is not None:
                pick = ", ".join(f'"{f}": {name}' for f, name in forms.items())
                setup.append(f"kernel = {{{pick}}}[form]")
            elif kp.split_launch[0]:
                setup.append(
                    f'kernel = {kp.persistent.name} if form == "persistent" else {kp.looped_name}'
                )
            else:
                setup.append(
                    f'kernel = {kp.looped_name} if form == "looped" else {kp.persistent.name}'
                )
            # the launch keywords carry the blocks and the warps
            args = [(n, v) for n, v in args if n not in ("BLOCK_ROWS", "BLOCK_COLS")]
            kwargs = LAUNCH
            grid = f'(triton.cdiv({numel}, {LAUNCH}["BLOCK_ROWS"]),)'
            warps = ""
        elif kp.record.kind == "persistent_reduction" or "R0_BLOCK" in kp.static_sizes:
            # Inductor's own persistent kernel takes any number of rows a program.
            setup.append(
                f"BLOCK_ROWS, BLOCK_COLS, num_warps = launch_settings({numel}, {row}{elem}{tensors})"
            )
            calls = Calls({"launch_settings"}, **options)
            if pdl and loads_at_top(kp.tree):
                early_trigger = ROWS_EARLY_TRIGGER_EXPR
        else:
            setup.append(f"BLOCK_ROWS = {rows_per_program}")
            setup.append(
                f"_, BLOCK_COLS, num_warps = launch_settings({numel}, min({row}, {LOOPED_MAX_BLOCK}){elem})"
            )
            calls.helpers.add("launch_settings")
            if cfg:
                setup.append(
                    f"num_warps = {cfg.num_warps}  # the autotuner's choice on the capture GPU"
                )
                stages = str(cfg.num_stages)
        if kwargs != LAUNCH:
            grid = f"(triton.cdiv({numel}, BLOCK_ROWS),)"
            warps = "num_warps"
    return LaunchStep(
        "launch",
        kernel=kp.name,
        grid=grid,
        args=args,
        setup=setup,
        num_warps=warps,
        num_stages=stages,
        kwargs=kwargs,
        pdl=pdl,
        early_trigger=early_trigger,
        persistent_trigger=persistent_trigger,
        calls=calls,
    )


def _passes_over_row(fn: ast.FunctionDef) -> int:
    """How many loops over the row a looped reduction kernel makes."""
    return sum(is_col_loop(s) for s in fn.body)


def _stores_row(fn: ast.FunctionDef) -> bool:
    """Whether a looped reduction kernel writes a row (a store inside a loop
    over the row, as rmsnorm's), not one value a row (logsumexp's). Kernels
    that write one value a row hold their rows in registers up to
    MAX_FUSED_COLS whatever LOOPED_MIN_ROW_BYTES says: logsumexp in fp32 over
    4096 columns (16 KB) held in registers took 0.75-0.85 of the looped
    kernel's time from 4096 rows on an H200, where rmsnorm in fp32 over 4096
    took 0.91-0.92 of the persistent kernel's time looped
    (lab/NOTES.md)."""
    return any(
        is_col_loop(s) and any(is_call(n, "tl.store") for n in ast.walk(s))
        for s in fn.body
    )


def _keeps_welford(fn: ast.FunctionDef) -> bool:
    """Whether a looped reduction kernel accumulates Welford statistics (a
    layer norm's): a division an element, which makes its first pass compute
    bound. Such kernels hold their rows up to MAX_FUSED_COLS whatever
    LOOPED_MIN_ROW_BYTES says: a layer norm over 2560-4099 bf16 columns held
    took 0.36-0.42 of the looped kernel's time from 4096 rows on an H200
    (docs/benchmarks/launch-rules.md#persistent-or-looped)."""
    return any(
        isinstance(n, ast.Call) and ast.unparse(n.func).endswith(WELFORD_STEPS)
        for n in ast.walk(fn)
    )


def _reads_only_rows(kp: KernelPort) -> bool:
    """Whether every tensor the kernel loads is one it reads rows of
    (quant_int8's x), with no vector of one value a column beside them
    (rmsnorm's weight): its persistent kernel then holds only the rows in
    registers."""
    strided = _strided(kp)
    pointers = {p.name: p.value.split(".")[0] for p in kp.params if p.kind == "pointer"}
    loaded = {
        n.id
        for fn in (kp.tree, kp.persistent)
        if fn is not None
        for call in ast.walk(fn)
        if is_call(call, "tl.load") and call.args
        for n in ast.walk(call.args[0])
        if isinstance(n, ast.Name) and n.id in pointers
    }
    return bool(loaded) and all(pointers[name] in strided for name in loaded)


def _strided(kp: KernelPort) -> set[str]:
    """The tensors the kernel takes a row stride of: those it reads or writes
    rows of."""
    return {p.value.split(".")[0] for p in kp.params if p.kind == "stride"}


def _row_inputs(kp: KernelPort, inputs: set[str]) -> int:
    """How many of the inputs the kernel reads are rows (they have a row
    stride), as x and residual are in fused_add_rmsnorm; a weight is not."""
    return len(_strided(kp) & inputs)


def _column_loads(fn: ast.FunctionDef) -> int:
    """How many blocks of columns a tile kernel loads: a quantizer's row 1,
    a gated activation's two halves 2; a per-row id or a scale none."""
    by_cols = full_names(fn, {"cols"})
    return sum(
        1
        for n in ast.walk(fn)
        if is_call(n, "tl.load") and n.args and names_in(n.args[0]) & by_cols
    )


def _row_tensors(kp: KernelPort) -> int:
    """How many tensors the kernel reads or writes a row of:
    fused_add_rmsnorm's x, residual and two outputs; not a weight, nor an
    output of one value a row."""
    return len(_strided(kp))


def _elem_bytes(kp: KernelPort, inputs: set[str]) -> str:
    """`x.element_size()` for the first floating-point input the kernel reads
    (the rows it reduces), or else its first floating-point buffer (an
    epilogue updating a matmul's output in place): launch_settings sizes
    threads by bytes, so an fp32 row gets twice the warps of a bf16 one.
    Empty when the kernel has no floating-point pointer."""
    floats = [
        p
        for p in kp.params
        if p.kind == "pointer"
        and kp.pointer_dtype.get(p.name, "").startswith(("*fp", "*bf"))
    ]
    first = next(
        (p for p in floats if p.value in inputs), floats[0] if floats else None
    )
    return f"{first.value}.element_size()" if first else ""


def _indent(lines: list[str]) -> str:
    return "\n".join("    " + line for line in lines)


def param_for(kp: KernelPort, original: str) -> str:
    """The launcher expression for an Inductor size argument (xnumel, r0_numel)."""
    b = kp.bindings.get(original)
    if b is None:
        return "1"
    if b.kind == "literal":
        return b.expr or b.value
    return launcher_expr(b.expr or b.value)


def plan_launch(port: PortState) -> None:
    """The launcher: outputs allocated, launches sized, kernels and extern
    calls in Inductor's order (plan_launcher)."""
    port.launcher = plan_launcher(
        port.cap, port.module, port.kernels, port.ref_module, port.options
    )


def bind_tensor_layouts(port: PortState) -> None:
    """Each tensor bound with the strides its kernels assume, copied only
    where it has others (bind_layouts); a stride a kernel takes but some
    address of the tensor does not read is the captured one (partial_strides)."""
    pinned = set()
    for kp, step in zip(port.kernels, port.launches()):
        for form in kp.forms():
            pinned |= partial_strides(form, step.args)
    bind_layouts(port.launcher, port.cap, port.module, pinned)


def _depends(fn: ast.FunctionDef) -> Callable[[ast.AST], set[str]]:
    """The names an expression of fn reads, through the names it binds."""
    bound = bindings(fn)
    cache: dict[str, set[str]] = {}

    def of_name(name: str) -> set[str]:
        if name not in cache:
            cache[name] = {name}
            for value in bound.get(name, []):
                for n in names_in(value):
                    cache[name] |= of_name(n)
        return cache[name]

    return lambda node: set().union(*(of_name(n) for n in names_in(node)))


def partial_strides(
    fn: ast.FunctionDef, args: list[tuple[str, str]]
) -> set[tuple[str, int]]:
    """(tensor, axis) for each stride the kernel fn takes (`x_stride0 =
    x.stride(0)`) that some load or store address of that tensor does not
    read: Inductor merged the axis into a flat index there (`feats * rows`
    over frames and batch), which assumes the captured stride. Read as any
    stride, a view of every other row was read at the wrong rows."""
    given = dict(args)
    depends = _depends(fn)
    strides = {
        name: (m[1], int(m[2]))
        for name, value in given.items()
        if (m := re.fullmatch(r"(\w+)\.stride\((\d+)\)", value))
    }
    out = set()
    for node in ast.walk(fn):
        if not (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("tl.load", "tl.store", "tl.atomic_add")
            and node.args
        ):
            continue
        reads = depends(node.args[0])
        tensors = {given[n] for n in reads if n.endswith("_ptr") and n in given}
        read = {strides[n] for n in reads if n in strides}
        out |= {ta for ta in strides.values() if ta[0] in tensors and ta not in read}
    return out


def launch_chosen_kernel(port: PortState) -> None:
    """A kernel with a persistent form is launched as `kernel`, the form
    common.py's row_launch chose."""
    for step, kp in zip(port.launches(), port.kernels):
        step.kernel = "kernel" if kp.persistent is not None else kp.tree.name
