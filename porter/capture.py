"""Stage 2: run the reference under torch.compile and capture Inductor's output code.

On a CUDA machine Inductor compiles and runs natively and we read back the launch
config its autotuner chose. Without a GPU, Inductor's Triton CPU backend is
pointed at a codegen-only Triton target: codegen finishes and is logged, then
compiling the kernel fails, which is expected and swallowed (DESIGN.md).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import datetime
import inspect
import io
import logging
import math
import operator
import os
import re
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch
import triton
from torch._inductor.choices import InductorChoices
from torch._inductor.virtualized import V

import porter
from porter.errors import PorterError
from porter.parse import parse_module
from porter.port.clean.negative_index import NO_WRAP_OPS
from porter.port.model import module_attr
from porter.records import Capture, CompiledModule, GraphInput, LaunchConfig
from porter.reference import FLOAT_DTYPES, Reference, read_source
from porter.ties import fold_ties, is_tie, sym_expr

OUTPUT_CODE_LOGGER = "torch._inductor.codecache.__output_code"
CODEGEN_ONLY_ARCH = 90  # Hopper: the code is what an H100/H200 would get


@dataclass
class _Graph:
    """One graph Dynamo handed to our backend, and what Inductor made of it."""

    # (fx name, source, GraphInput kind, a scalar's value)
    placeholders: list[tuple[str, str, str, float | None]]
    source: str | None = None
    path: str | None = None
    error: str | None = None


@dataclass
class _State:
    records: list[str] = field(default_factory=list)
    graphs: list[_Graph] = field(default_factory=list)
    # Values Dynamo compiled in as constants: (source, value).
    constants: list[tuple[str, Any]] = field(default_factory=list)
    # Every shape-environment guard of the compile, Inductor's included.
    shape_codes: list[str] = field(default_factory=list)
    # Dynamo's graph-break reasons (an op without a fake-tensor kernel)
    breaks: list[str] = field(default_factory=list)
    # Sources of the inputs only ops that raise on a negative index index
    # (_raising_inputs)
    raising: set[str] = field(default_factory=set)

    def guard_filter(self, entries):
        """torch.compile's guard_filter_fn: note the constants, keep every guard."""
        for e in entries:
            found = []
            if e.guard_type in ("CONSTANT_MATCH", "EQUALS_MATCH") and e.has_value:
                if not e.is_global and _plain_constant(e.value):
                    found.append((e.name, e.value))
            elif e.guard_type == "SHAPE_ENV":
                # A float Dynamo made a symbol and then specialized (a loss's
                # margin compared in Python): `L['self']...margin == 1.0`.
                for code in getattr(e.orig_guard, "code_list", None) or []:
                    code = plain_scalars(code)
                    found += _specialized_scalar(code)
                    self.shape_codes.append(code)
            for item in found:
                if item not in self.constants:
                    self.constants.append(item)
        return [True] * len(entries)


# Conditions Dynamo guards on for its own reasons, not the reference's: a size
# of 2 or more (it specializes 0 and 1; the parity suite runs both) and bounds
# at int32's or int64's end.
_SPECIALIZED_SIZE_BELOW = 2
_INDEX_BOUND = 2**31 - 1


_AS_TENSOR = re.compile(r"___as_tensor\((L\['\w+'\](?:\.\w+)*)\)\.item\(\)")


def plain_scalars(code: str) -> str:
    """A guard's code with torch 2.11's spelling of a float argument
    (`___as_tensor(L['scale']).item()`) as torch 2.13's (`L['scale']`): read
    as neither a source nor a number, a branch on it (`if scale > 1.0`) was
    dropped, and the scaffold computed the captured side at every value."""
    return _AS_TENSOR.sub(r"\1", code)


def branch_guards(code: str) -> list[str]:
    """The conditions of a shape-environment guard that record a branch the
    reference took in Python on a scalar argument or a size (`if temperature
    < 1e-5`, `if x.shape[0] <= 64`), as the scaffold spells them
    (`temperature >= 1e-05`, `x.shape[0] <= 64`): the scaffold holds the
    kernels of that side alone. Not a scalar fixed to one value (a constant,
    _specialized_scalar), equal sizes (the launcher's shape checks), strides
    (its layouts), a float not NaN, nor Dynamo's own conditions. Only a
    comparison of a size or scalar with a number or another one is taken:
    conditions of arithmetic on sizes (`max(1, ...)`, products at int32's
    bound) are Dynamo's and Inductor's layout bookkeeping. A condition the
    scaffold cannot spell comes back as `?` + the guard's text."""
    out = []
    for part in _conjuncts(code):
        text = ast.unparse(part)
        if not (isinstance(part, ast.Compare) and len(part.ops) == 1):
            continue
        if _size_tie(part) or _nonnegative_difference(part) or _scaled_bound(part):
            # x.view(b, groups, c // groups): eager raises where groups does
            # not divide c; the kernels would index past the row (fold_ties).
            # x[:, h - n:]: a slice from a difference of sizes, traced where it
            # is not negative; eager wraps a negative start, the kernels read
            # before the row.
            out.append(_scaffold_terms(text) or f"?{text}")
            continue
        negated = _negated_bound(part)
        if negated is not None:
            # x[-n:] (or x[:-n]) with n a size: Dynamo records n <= x's axis
            # as (-1)*n >= (-1)*axis; eager clamps a larger n, the kernels
            # read before x. At n = 0 eager's -0 is 0 (x[-0:] the whole axis,
            # x[:-0] none), the kernels' the other end.
            bound, flipped = negated
            for cond in (flipped, f"1 <= {bound}"):
                out.append(_scaffold_terms(cond) or f"?{cond}")
            continue
        if _rooted_tie(part):
            # h = w = int(t ** 0.5); assert h * w == t: the reference's own
            # check, where eager raises (and a reshape by h and w with it)
            out.append(_scaffold_terms(text) or f"?{text}")
            continue
        if isinstance(part.ops[0], ast.Eq) and (
            _fixed_argument_arithmetic(part) or _argument_tie(part)
        ):
            # math.log(2048 / (beta_fast * 2 * math.pi)): Python math on an
            # argument, which Dynamo fixed to the value it computed; the
            # kernels hold what follows from it
            out.append(_scaffold_terms(text) or f"?{text}")
            continue
        if isinstance(part.ops[0], ast.Eq) or re.search(
            r"\.(stride|storage_offset)\(", text
        ):
            continue
        if "L[" not in text:
            continue
        left, op, right = part.left, part.ops[0], part.comparators[0]
        if not all(_is_source(x) or _number(x) is not None for x in (left, right)):
            if not _argument_arithmetic(part):
                continue
        if ".size()" in text and _dynamos_own(left, op, right):
            continue
        out.append(_scaffold_terms(text) or f"?{text}")
    return out


def _conjuncts(code: str) -> list[ast.AST]:
    """The conditions a guard's code joins with `and` (the code itself where
    it joins none; nothing where it does not parse)."""
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return []
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return node.values
    return [node]


def _size_tie(part: ast.Compare) -> bool:
    """An equality over a floor division or remainder of sizes and int
    arguments alone (is_tie): no stride, no function of Dynamo's (max)."""
    return is_tie(ast.unparse(part)) and all(
        (_is_source(leaf) and ".stride()" not in ast.unparse(leaf))
        or _number(leaf) is not None
        for leaf in _leaves(part)
    )


def _nonnegative_difference(part: ast.Compare) -> bool:
    """`a - b >= 0` (or `0 <= a - b`) over sizes, one of them subtracted:
    Dynamo's record that a slice bound computed from sizes was not negative."""
    op, left, right = part.ops[0], part.left, part.comparators[0]
    if isinstance(op, ast.LtE) and _number(left) == 0:
        side = right
    elif isinstance(op, ast.GtE) and _number(right) == 0:
        side = left
    else:
        return False
    leaves = _leaves(side)
    return (
        ".size()" in ast.unparse(side)
        and all(_is_source(x) or _number(x) is not None for x in leaves)
        and (
            any(_number(x) is not None and _number(x) < 0 for x in leaves)
            or any(
                isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
                for n in ast.walk(side)
            )
        )
    )


_FLIPPED = {ast.GtE: "<=", ast.Gt: "<"}


def _fixed_argument_arithmetic(part: ast.Compare, sizes: bool = False) -> bool:
    """`f(a) == c`: arithmetic on arguments (and on sizes with them where
    `sizes`) equal to a number, as Dynamo guards a value Python math computed
    from them (YaRN's correction range from an int beta_fast)."""
    left, right = part.left, part.comparators[0]
    if _number(left) is not None:
        left, right = right, left
    if _number(right) is None or _number(left) is not None:
        return False
    text = ast.unparse(left)
    if sizes:
        text = re.sub(r"L\['\w+'\]\.size\(\)\[\d+\]", "", text)
    return (
        isinstance(left, (ast.BinOp, ast.Call, ast.UnaryOp))
        and "L[" in text
        and not re.search(r"\.(size|stride|storage_offset)\(", text)
    )


def _argument_tie(part: ast.Compare) -> bool:
    """`a == 3 - b`: arguments tied to each other by arithmetic, as Dynamo
    guards a value Python computed from several (`range(a + b + 1)`, which it
    unrolled); no size or stride in it."""
    text = ast.unparse(part)
    sources = set(re.findall(r"L\['(\w+)'\]", text))
    return (
        len(sources) >= 2
        and not re.search(r"\.(size|stride|storage_offset)\(|\]\.", text)
        and _number(part.left) is None
        and _number(part.comparators[0]) is None
    )


def _negated_bound(part: ast.Compare) -> tuple[str, str] | None:
    """(a, `a <= b`) for `(-1)*a >= (-1)*b` over sources (`a < b` for >):
    Dynamo's record that a slice's negative bound `x[-a:]` stayed within x's
    axis b; None for any other condition."""

    def negated(side: ast.AST) -> ast.AST | None:
        if (
            isinstance(side, ast.BinOp)
            and isinstance(side.op, ast.Mult)
            and _number(side.left) == -1
            and _is_source(side.right)
        ):
            return side.right
        return None

    op = type(part.ops[0])
    a, b = negated(part.left), negated(part.comparators[0])
    if a is None or b is None or op not in _FLIPPED:
        return None
    return ast.unparse(a), f"{ast.unparse(a)} {_FLIPPED[op]} {ast.unparse(b)}"


def _scaled_bound(part: ast.Compare) -> bool:
    """`x.size()[1] <= 4*s.size()[0]`: a size bounded by another times a
    number, as a slice of a repeated tensor (`s.repeat_interleave(4)[:n]`)
    records it. Past it eager raises (the slice is short of x) and the kernels
    wrapped s's index."""
    if not isinstance(part.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
        return False
    if ".size()" not in ast.unparse(part) or ".stride()" in ast.unparse(part):
        return False

    def scaled(side: ast.AST) -> bool:
        return (
            isinstance(side, ast.BinOp)
            and isinstance(side.op, ast.Mult)
            and (_number(side.left) is None) != (_number(side.right) is None)
            and any(_is_source(x) for x in (side.left, side.right))
        )

    left, right = part.left, part.comparators[0]
    return (scaled(left) and _is_source(right)) or (scaled(right) and _is_source(left))


def _leaves(node: ast.AST) -> list[ast.AST]:
    """The operands arithmetic and comparison are built from."""
    if isinstance(node, ast.Compare):
        return [x for side in (node.left, *node.comparators) for x in _leaves(side)]
    if isinstance(node, ast.BinOp):
        return _leaves(node.left) + _leaves(node.right)
    if isinstance(node, ast.UnaryOp) and not isinstance(node.operand, ast.Constant):
        return _leaves(node.operand)
    return [node]


def _rooted_tie(part: ast.Compare) -> bool:
    """`math.trunc(torch.sym_float(t) ** 0.5) ** 2 == t`: a tie of sizes
    through a root the reference took in Python, true only at some sizes."""
    text = ast.unparse(part)
    return (
        isinstance(part.ops[0], ast.Eq)
        and "math.trunc(" in text
        and not re.search(r"\.(stride|storage_offset)\(", text)
        and ast.unparse(part.left).count("math.trunc(") == 2
        and "math.trunc(" not in ast.unparse(part.comparators[0])
    )


def _argument_arithmetic(part: ast.Compare) -> bool:
    """A comparison of arithmetic on arguments alone, no size among them
    (`k % 2 != 1`: get_timestep_embedding's `if dim % 2 == 1`), which only the
    reference's Python makes."""
    leaves = _leaves(part)
    return any(_is_source(x) for x in leaves) and all(
        (_is_source(x) and ".size()" not in ast.unparse(x)) or _number(x) is not None
        for x in leaves
    )


def _is_source(node: ast.AST) -> bool:
    """A guard's source: an argument, one of its sizes, an attribute."""
    text = ast.unparse(node)
    return bool(re.fullmatch(r"L\['\w+'\](\.\w+|\['\w+'\]|\.size\(\)\[\d+\])*", text))


def _number(node: ast.AST) -> float | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None
    return (
        value
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else None
    )


def _dynamos_own(left: ast.AST, op: ast.cmpop, right: ast.AST) -> bool:
    """A size bound Dynamo adds itself: 2 <= size (or size >= 2, size > 1),
    or a bound at an index type's end."""
    lo, hi = _number(left), _number(right)
    if any(v is not None and abs(v) >= _INDEX_BOUND for v in (lo, hi)):
        return True
    if lo is not None:  # 2 <= size, 1 < size
        bound = lo + (1 if isinstance(op, ast.Lt) else 0)
        return isinstance(op, (ast.LtE, ast.Lt)) and bound <= _SPECIALIZED_SIZE_BELOW
    if hi is not None:  # size >= 2, size > 1
        bound = hi + (1 if isinstance(op, ast.Gt) else 0)
        return isinstance(op, (ast.GtE, ast.Gt)) and bound <= _SPECIALIZED_SIZE_BELOW
    return False


_SPELLABLE = (
    ast.Compare,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
)


def _scaffold_terms(
    text: str, functions: tuple[str, ...] = ("int", "float")
) -> str | None:
    """A guard's condition in the launcher's names (L['x'].size()[0] ->
    x.shape[0], L['self'].margin -> self.margin); None where it reads
    something else (a global, a function but `functions`)."""
    text = re.sub(r"\.size\(\)\[(\d+)\]", r".shape[\1]", text)
    text = re.sub(r"\._modules\['(\d+)'\]", r"[\1]", text)  # nn.Sequential's
    text = re.sub(r"\._(?:modules|parameters|buffers)\['(\w+)'\]", r".\1", text)
    text = re.sub(r"L\['(\w+)'\]", r"\1", text)
    text = text.replace("math.trunc(", "int(").replace("torch.sym_float(", "float(")
    # math's constants as the numbers Dynamo read (`G['math'].pi`)
    text = re.sub(
        r"G\['math'\]\.(pi|e|tau)\b", lambda m: repr(getattr(math, m[1])), text
    )
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if any(ast.unparse(c.func) not in functions or c.keywords for c in calls):
        return None
    spellable = _SPELLABLE + (ast.Call,)
    if not all(isinstance(n, spellable) for n in ast.walk(tree)):
        return None
    if any(isinstance(n, ast.Name) and n.id.startswith("_") for n in ast.walk(tree)):
        return None
    return ast.unparse(tree)


def argument_bounds(code: str, ints: set[str]) -> list[str]:
    """The conditions of a guard that bound or tie an int argument by a size
    (`L['start'] + L['length'] <= L['x'].size()[1]`; `L['w'].size()[0] ==
    L['r']`), as the scaffold spells them. Inductor takes bounds from the
    capture's values without a Dynamo guard (a slice x[:, start:start +
    length] sized `length`, not clamped to the row), and a tie (`x[:, :r] *
    w`, `x.repeat(1, reps) + s`) sizes the kernels by one side alone: past
    them the kernels read past a tensor where eager raises."""
    out = []
    for part in _conjuncts(code):
        text = ast.unparse(part)
        # Inductor's specialization: `min(k, vocab) == 1` held at capture,
        # and the kernel indexes a topk of one column with row stride 1
        pinned = (
            isinstance(part, ast.Compare)
            and isinstance(part.ops[0], ast.Eq)
            and _fixed_argument_arithmetic(part, sizes=True)
        )
        if not (
            isinstance(part, ast.Compare)
            and len(part.ops) == 1
            and ".size()" in text
            and ".stride()" not in text
            and set(re.findall(r"L\['(\w+)'\]", text)) & ints
            # both sides symbolic: `length * x.size()[0] >= 2` and int32
            # bounds on a product are Inductor's bookkeeping; but for a sum's
            # bound by a fixed size (a slice of a buffer of 16 positions at
            # an offset: `offset + x.size()[1] <= 16`)
            and (
                (_number(part.left) is None and _number(part.comparators[0]) is None)
                or _fixed_upper_bound(part)
                or pinned
            )
        ):
            continue
        if isinstance(part.ops[0], ast.Eq):
            # a tie of products and sums; one through // or % is a view's,
            # which Dynamo's own guards check (fold_ties)
            if any(
                isinstance(n, ast.BinOp) and isinstance(n.op, (ast.FloorDiv, ast.Mod))
                for n in ast.walk(part)
            ):
                continue
        elif not isinstance(part.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) or any(
            _product_of_sources(n) for n in ast.walk(part)
        ):
            continue
        # min(k, vocab): the guard reads the builtins the scaffold calls too
        functions = ("int", "float", "min", "max") if pinned else ("int", "float")
        spelled = _scaffold_terms(text, functions)
        if spelled is not None and isinstance(part.ops[0], ast.Eq):
            spelled = _one_name_zero(spelled) or spelled
        if spelled is not None and spelled not in out:
            out.append(spelled)
    return out


def _one_name_zero(tie: str) -> str | None:
    """`n == 0` for a tie whose sides differ by a multiple of one name alone
    (`x.shape[1] == x.shape[1] + -1 * past_len`: x[:, past_len:] traced at
    past_len 0, which Dynamo fixes); None for any other tie."""
    try:
        import sympy

        node = ast.parse(tie, mode="eval").body
        names: dict[str, str] = {}

        def symbol(m: re.Match) -> str:
            names.setdefault(f"v{len(names)}", m[0])
            return next(k for k, v in names.items() if v == m[0])

        left, right = (
            sympy.sympify(
                re.sub(r"[A-Za-z_][\w.]*(?:\[\d+\])?", symbol, ast.unparse(n))
            )
            for n in (node.left, node.comparators[0])
        )
        diff = sympy.expand(left - right)
    except Exception:  # noqa: BLE001 - a tie sympy does not read stays as it is
        return None
    if len(diff.free_symbols) != 1:
        return None
    (sym,) = diff.free_symbols
    if sympy.expand(diff / sym).free_symbols:
        return None
    return f"{names[sym.name]} == 0"


def _fixed_upper_bound(part: ast.Compare) -> bool:
    """`a + b <= N` (or `N >= a + b`): a sum of sources bounded by a number
    short of an index type's end."""
    op, left, right = part.ops[0], part.left, part.comparators[0]
    if isinstance(op, (ast.Lt, ast.LtE)):
        side, bound = left, _number(right)
    elif isinstance(op, (ast.Gt, ast.GtE)):
        side, bound = right, _number(left)
    else:
        return False
    return (
        bound is not None
        and 0 < bound < _INDEX_BOUND
        and isinstance(side, ast.BinOp)
        and isinstance(side.op, ast.Add)
        and all(_is_source(x) or _number(x) is not None for x in _leaves(side))
    )


def _product_of_sources(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and _number(node.left) is None
        and _number(node.right) is None
    )


def _specialized_scalar(code: str) -> list[tuple[str, Any]]:
    """(source, value) of a shape-environment guard `SOURCE == CONSTANT` on a
    non-tensor value; nothing for size and stride relations."""
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return []
    if not (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
    ):
        return []
    try:
        # -0.5 is a unary minus over a constant
        value = ast.literal_eval(node.comparators[0])
    except ValueError:
        return []
    left = ast.unparse(node.left)
    if re.search(r"\.(size|stride|storage_offset)\(", left):
        return []
    if not re.fullmatch(_SOURCE, left):
        return _solved_scalar(left, value)
    return [(left, value)] if _plain_constant(value) else []


# A value the reference is called with: an argument, a module's attribute, an
# item of a list of them (a config's factors[0]).
_SOURCE = r"L\['\w+'\](?:\.\w+|\['\w+'\]|\[\d+\])*"


def _solved_scalar(left: str, value: Any) -> list[tuple[str, Any]]:
    """(source, value) where a guard pins one number through arithmetic
    (`-1 * L['t'] == -0.5`: Dynamo baked -t into the graph as a fill value and
    guards on the expression); nothing where it does not name one source or
    pins it to no single value."""
    sources = set(re.findall(_SOURCE, left))
    if len(sources) != 1 or not isinstance(value, (int, float)):
        return []
    source = sources.pop()
    try:
        import sympy

        x = sympy.Symbol("x")
        expr = sympy.sympify(left.replace(source, "x"), locals={"x": x})
        roots = sympy.solve(sympy.Eq(expr, sympy.nsimplify(value)), x)
    except Exception:  # noqa: BLE001 - an expression sympy cannot solve
        return []
    if len(roots) != 1 or not roots[0].is_real:
        return []
    root = roots[0]
    return [(source, int(root) if root.is_integer else float(root))]


def _scalar_value(arg: Any) -> float | None:
    """The Python float behind a scalar graph input, where Dynamo kept it."""
    example = getattr(arg, "_example", None)
    if callable(example) and not isinstance(example, torch.Tensor):
        example = example()  # a weak reference
    try:
        return float(example)
    except (TypeError, ValueError, RuntimeError):
        return None


def _plain_constant(value: Any) -> bool:
    """A value a launcher can compare against its repr (a flag, a dim, a size
    tuple, a dtype)."""
    if isinstance(value, torch.dtype):
        return True
    if value is None or isinstance(value, (bool, int, float, str)):
        return not (isinstance(value, float) and value != value)
    if isinstance(value, (tuple, list)):
        return all(_plain_constant(v) for v in value)
    return False


class _CodegenOnlyDriver:
    """Just enough of a Triton driver for Inductor's codegen to ask for a target."""

    def __init__(self) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", CODEGEN_ONLY_ARCH, 32)

    def is_active(self) -> bool:
        return True

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        return torch.device("cpu")


@contextlib.contextmanager
def codegen_only_target() -> Iterator[None]:
    from triton.runtime.driver import driver

    previous = driver._active
    driver.set_active(_CodegenOnlyDriver())
    try:
        yield
    finally:
        driver._active = previous


class _ListHandler(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(record.getMessage())


@contextlib.contextmanager
def silenced_fds(sink: io.StringIO) -> Iterator[None]:
    """Send everything written to fd 1 and 2 (Python, C++ and Triton chatter) to `sink`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            # Python-level too: logging's last-resort handler and replaced
            # sys.stderr objects (pytest's) do not write through fd 2.
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            sink.write(tmp.read().decode(errors="replace"))


@contextlib.contextmanager
def private_inductor_cache() -> Iterator[None]:
    """A throwaway Inductor cache: no stale hits, nothing left behind in /tmp."""
    previous = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    # Inductor must generate real kernels even inside a CPU parity-test session.
    interpret = os.environ.pop("TRITON_INTERPRET", None)
    path = tempfile.mkdtemp(prefix="porter-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = path
    try:
        yield
    finally:
        if interpret is not None:
            os.environ["TRITON_INTERPRET"] = interpret
        if previous is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = previous
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def quiet_output_code(sink: list[str], chatter: io.StringIO) -> Iterator[None]:
    """Route Inductor's output_code artifact into `sink` and every other torch
    log line into `chatter`, so the user's terminal is not flooded."""
    torch._logging.set_logs(output_code=True)
    code_logger = logging.getLogger(OUTPUT_CODE_LOGGER)
    chatter_handler = logging.StreamHandler(chatter)
    saved = {}
    for name in ["torch", *logging.root.manager.loggerDict]:
        if not name.startswith("torch"):
            continue
        lg = logging.getLogger(name)
        saved[name] = (lg.handlers[:], lg.propagate)
        lg.handlers = []
    torch_logger = logging.getLogger("torch")
    torch_logger.handlers = [chatter_handler]
    code_logger.handlers = [_ListHandler(sink)]
    code_logger.propagate = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for name, (handlers, propagate) in saved.items():
            lg = logging.getLogger(name)
            lg.handlers = handlers
            lg.propagate = propagate
        torch._logging.set_logs()


def _source_name(source: Any) -> str:
    name = getattr(source, "name", None)
    return name() if callable(name) else str(name)


def _make_backend(state: _State, codegen_only: bool):
    from torch._inductor.compile_fx import compile_fx

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]):
        placeholders = []
        for node in gm.graph.nodes:
            if node.op != "placeholder":
                continue
            arg = node.meta.get("grapharg")
            source = _source_name(arg.source) if arg is not None else node.name
            value = node.meta.get("example_value")
            scalar = None
            if isinstance(value, torch.SymInt):
                kind = "symint"
            elif getattr(arg, "pass_arg_as_tensor", False):
                kind = "scalar"  # a Python float Dynamo passes as a 0-d tensor
                scalar = _scalar_value(arg)
            else:
                kind = "tensor"
                if isinstance(value, torch.Tensor):
                    scalar = str(value.dtype)
            placeholders.append((node.name, source, kind, scalar))
        graph = _Graph(placeholders)
        state.graphs.append(graph)
        state.raising |= _raising_inputs(gm)
        before = len(state.records)
        rounds = _rounds_on_purpose(gm)
        try:
            with (
                torch._inductor.config.patch(emulate_precision_casts=rounds),
                _keep_round_trips(rounds),
            ):
                compiled = compile_fx(gm, example_inputs)
        except Exception as err:  # noqa: BLE001 - classified below
            _collect_code(graph, state.records[before:])
            if codegen_only and graph.source is not None:
                # Expected: the codegen-only target cannot compile. Run the graph
                # eagerly so Dynamo goes on to the graphs after a break.
                return gm.forward
            graph.error = f"{type(err).__name__}: {_first_line(err)}"
            raise
        _collect_code(graph, state.records[before:])
        return compiled

    return backend


# Torch-level names of the ops that raise on a negative index (negative_index's
# aten ops: index_select, gather, scatter, embedding, ...), and of those that
# wrap one as Python's x[i] does. Each indexes its first argument, but
# F.embedding its weight.
_RAISING = {op.removeprefix("aten.") for op in NO_WRAP_OPS}
_WRAPPING = {"__getitem__", "__setitem__", "take", "take_along_dim", "index_put"}


def _raising_inputs(gm: torch.fx.GraphModule) -> set[str]:
    """The sources of the graph's inputs that only ops raising on a negative
    index index (through any op before them), so a kernel that also wraps
    another's index (`cache.index_select(0, table[pos])`) keeps the wrap of
    table's index alone (porter.port.clean.negative_index)."""
    import operator

    def indexed(node: torch.fx.Node) -> tuple[bool, Any] | None:
        """(raises, the tensor it indexes) of an indexing node, else None."""
        at = 0
        if node.op == "call_method":
            name = (
                node.target
                if node.target.startswith("__")
                else node.target.removesuffix("_")
            )
        elif node.op == "call_function" and node.target in (
            operator.getitem,
            operator.setitem,
        ):
            index = []
            torch.fx.node.map_arg(
                node.args[1] if len(node.args) > 1 else None, index.append
            )
            if not index:  # slices and ints: no tensor index
                return None
            name = "__getitem__"
        elif (
            node.op == "call_function" and node.target is torch.nn.functional.embedding
        ):
            name, at = "embedding", 1
        elif node.op == "call_function":
            name = getattr(node.target, "__name__", "")
            if getattr(torch, name, None) is not node.target:
                return None
        else:
            return None
        if name not in _RAISING | _WRAPPING or len(node.args) <= at:
            return None
        return name in _RAISING, node.args[at]

    def inputs_of(node: torch.fx.Node, seen: dict) -> set[torch.fx.Node]:
        if node not in seen:
            seen[node] = set()
            if node.op == "placeholder":
                seen[node] = {node}
            else:
                found = set()
                for parent in node.all_input_nodes:
                    found |= inputs_of(parent, seen)
                seen[node] = found
        return seen[node]

    raised, wrapped, seen = set(), set(), {}
    for node in gm.graph.nodes:
        found = indexed(node)
        if found is not None and isinstance(found[1], torch.fx.Node):
            (raised if found[0] else wrapped).update(inputs_of(found[1], seen))
    return {
        _source_name(node.meta["grapharg"].source)
        for node in raised - wrapped
        if node.meta.get("grapharg") is not None
    }


_LOW_FLOATS = (torch.float16, torch.bfloat16)


def _rounds_on_purpose(gm: torch.fx.GraphModule) -> bool:
    """Whether a graph of wider inputs casts a value down to fp16/bf16 and
    computes on it (fake quantization, an int's fp16 overflow): Inductor
    computes that value in fp32 unrounded, unless emulate_precision_casts."""
    low = False
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if not isinstance(value, torch.Tensor) or value.dtype not in _LOW_FLOATS:
            continue
        if node.op == "placeholder":
            return False  # a low-precision call: Inductor's fp32 math is the port
        low |= any(user.op != "output" for user in node.users)
    return low


@contextlib.contextmanager
def _keep_round_trips(keep: bool) -> Iterator[None]:
    """With `keep`, Inductor's pointless_convert leaves a chain of casts as
    traced: torch 2.11's drops `x.to(torch.float16).float()` whole (an int
    past 65504 came back finite, where eager gives inf); later ones keep a
    narrowing one. Where its pattern cannot be found, nothing changes."""
    try:
        from torch._inductor.fx_passes import joint_graph

        entries = [
            e
            for found in joint_graph.patterns.patterns.values()
            for e in found
            if getattr(getattr(e, "handler", None), "__name__", "")
            == "pointless_convert"
        ]
    except Exception:  # noqa: BLE001 - another torch: its own passes stand
        entries = []
    saved = [(e, e.handler) for e in entries] if keep else []
    for e, _ in saved:
        e.handler = lambda *args, **kwargs: None
    try:
        yield
    finally:
        for e, handler in saved:
            e.handler = handler


def _collect_code(graph: _Graph, records: list[str]) -> None:
    for message in records:
        if message.startswith("Output code:") and graph.source is None:
            graph.source = message.split("\n", 1)[1] if "\n" in message else ""
        elif message.startswith("Output code written to:"):
            graph.path = message.split(":", 1)[1].strip()


def _break_reason(reason: str) -> str:
    """A graph-break reason in a line: its first, and the operator it names."""
    if reason.startswith(("generic_jump", "Data-dependent branching")):
        # Dynamo's words for `if x.max() > 0:`
        return (
            "a Python branch on a tensor's value, such as `if x.max() > 0:`; "
            "compute both sides and pick with torch.where"
        )
    first = reason.strip().splitlines()[0] if reason.strip() else "no reason given"
    op = re.search(r"unsupported operator: (\S+)", reason)
    return f"{first}: {op.group(1)}" if op else first


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _cuda_available() -> bool:
    return torch.cuda.is_available()


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if _cuda_available() else "cpu"
    if device == "cuda" and not _cuda_available():
        raise PorterError("--device cuda was asked for but torch sees no CUDA device")
    if device not in ("cpu", "cuda"):
        raise PorterError(f"--device must be auto, cpu or cuda, not {device!r}")
    return device


def _mark_dims(
    ref: Reference, inputs: list[Any], static: set[str], every_size: bool
) -> None:
    """every_size: every axis is compiled as a symbol (dynamic=True) but those
    of --static dims; else only the per-call dims' axes are. A dim whose axes
    Dynamo specialized anyway (tied to a parameter's shape) is found
    non-symbolic after parsing (_settle_dims)."""
    by_name = dict(zip(ref.input_names, inputs))
    for dim in ref.dims:
        dim.symbolic = True
        fixed = dim.name in static or (not every_size and dim.role != "runtime")
        for name, axis in dim.axes + dim.derived:
            value = by_name.get(name)
            if not isinstance(value, torch.Tensor):
                continue
            if fixed:
                torch._dynamo.mark_static(value, axis)
            elif not every_size and value.shape[axis] > 1:
                torch._dynamo.maybe_mark_dynamic(value, axis)
        if fixed:
            dim.symbolic = False


def _settle_dims(ref: Reference, modules: list) -> None:
    """A dim is symbolic where the compiled graph reads its axes as symbols:
    Dynamo specializes sizes of 0 and 1, sizes tied to a parameter's shape,
    and sizes a Python loop walks."""
    sizes = {
        (gi.target, axis): size
        for m in modules
        for gi in m.inputs
        if gi.kind == "tensor"
        for axis, size in enumerate(gi.sizes)
    }
    for dim in ref.dims:
        # a dim only an input's multiple holds (x of 2 * channels) by that axis:
        # F.glu's graph fixes it at 16
        held = dim.axes or dim.derived
        seen = [sizes.get(a) for a in held if a in sizes]
        if seen and all(str(s).isdigit() for s in seen):
            dim.symbolic = False
        # and one the graph fixed on some tensor alone (a Python loop over x's
        # rows, y's kept a symbol): the kernels hold x's size
        if any(dim.fixed_axes(m.inputs) for m in modules):
            dim.symbolic = False


def inductor_patches(codegen_only: bool) -> dict[str, Any]:
    """The Inductor settings a capture compiles under."""
    # One tile dimension: porter's passes read kernels over x (and r); on a
    # GPU Inductor tiled transposing copies in 2-D (ynumel, YBLOCK), which
    # the port left unbound.
    patches: dict[str, Any] = {"force_disable_caches": True, "triton.max_tiles": 1}
    if codegen_only:
        patches["cpu_backend"] = "triton"
    if not hasattr(InductorChoices, "reduction_split_factor"):
        # A torch without the choice: no split at all (see WholeRows).
        patches["split_reductions"] = False
    return patches


# softmax(x / t), t a tensor, kept as written: Inductor's rewrite holds two
# forms behind a per-row finiteness test (docs/capture.md says why products keep it).
def _divides_by_a_tensor(match: Any) -> bool:
    other = match.kwargs.get("other")
    value = getattr(other, "meta", {}).get("val")
    return isinstance(value, torch.Tensor)


@contextlib.contextmanager
def eager_scaled_softmax() -> Iterator[None]:
    """Inductor's rewrite of softmax(x / t), t a tensor, left out while the
    capture compiles (a torch without it: nothing to leave out)."""
    try:
        from torch._inductor.fx_passes.joint_graph import pass_patterns

        patterns = pass_patterns[1].patterns
    except (ImportError, AttributeError, IndexError):
        yield
        return

    def declining(entry: Any) -> Any:
        check = entry.extra_check
        return dataclasses.replace(
            entry, extra_check=lambda m: check(m) and not _divides_by_a_tensor(m)
        )

    changed = {}
    for key, entries in patterns.items():
        ours = [
            getattr(getattr(e, "handler", None), "__name__", "")
            == "div_softmax_pattern"
            for e in entries
        ]
        if any(ours):
            changed[key] = list(entries)
            entries[:] = [declining(e) if o else e for e, o in zip(entries, ours)]
    try:
        yield
    finally:
        for key, entries in changed.items():
            patterns[key][:] = entries


# F.layer_norm and F.rms_norm as Inductor decomposes them
# (torch._decomp, torch._refs), written so that Dynamo keeps eps a graph input:
# the aten ops take a Python float, which fixed eps at the captured value.
def _upcast(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    x = _upcast(input)
    dims = tuple(range(-len(normalized_shape), 0))
    var, mean = torch.var_mean(x, dim=dims, correction=0, keepdim=True)
    out = (x - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    # eager's native_layer_norm writes its output contiguous whatever the
    # input's layout (a permuted view's, then permuted back: KernelBook's LN2d)
    return out.to(input.dtype).contiguous()


def _rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    x = _upcast(input)
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    dims = tuple(range(-len(normalized_shape), 0))
    out = x * torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out.type_as(input)


# F.group_norm keeps its aten op: traced as (x - mean) * rstd, a group of
# huge values left -0.09 where eager gives 0 (KernelBench 35, difficult values).
_NORMS = {"layer_norm": _layer_norm, "rms_norm": _rms_norm}


@contextlib.contextmanager
def runtime_norm_eps() -> Iterator[None]:
    """F's layer and RMS norms (nn.LayerNorm's and nn.RMSNorm's too) traced
    through the forms above while the capture compiles, so a norm's eps is a
    kernel argument as in a norm written out in torch ops."""
    functional = torch.nn.functional
    originals = {n: getattr(functional, n) for n in _NORMS if hasattr(functional, n)}
    for name in originals:
        setattr(functional, name, _NORMS[name])
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(functional, name, original)


class WholeRows(InductorChoices):
    """Inductor's choices, but a reduction with several outputs (rows) is
    never split. On a GPU Inductor splits long rows into partial reductions
    and a pointwise pass when the traced batch is small (softmax over 32768
    columns traced at 4 rows: five kernels and scratch buffers). Tuned for
    that one batch, the split scaffold took 1.9-3.6x the time of the whole-row
    one from 64 rows on an H200 (lab/NOTES.md); porter's launch
    settings cover few rows. A reduction to one value (a whole tensor's amax)
    keeps Inductor's split: there it is the only parallelism."""

    @staticmethod
    def reduction_split_factor(
        device, reduction_numel_hint, numel_hint, inner_reduction
    ):
        if numel_hint > 1:
            return 1
        return InductorChoices.reduction_split_factor(
            device, reduction_numel_hint, numel_hint, inner_reduction
        )


def run_capture(
    ref: Reference,
    device: str = "auto",
    static: tuple[str, ...] = (),
    dtype: str | None = None,
    debug: bool = False,
) -> tuple[Capture, list[str]]:
    """Compile the reference once and return the parsed capture and raw modules."""
    device = resolve_device(device)
    dtype = dtype or ref.dtypes[0]
    unknown = set(static) - {d.name for d in ref.dims}
    if unknown:
        raise PorterError(
            f"--static names {sorted(unknown)}, which are not dims of {ref.name}; "
            f"its dims are {[d.name for d in ref.dims]}"
        )
    torch.manual_seed(0)
    fn = ref.build()
    if isinstance(fn, torch.nn.Module):
        fn = fn.to(device)
    inputs = ref.make_inputs(dtype=dtype, device=device)
    state = dict(fn.named_buffers()) if isinstance(fn, torch.nn.Module) else {}
    state.update(_tensor_attributes(fn))
    with torch.no_grad():
        try:
            eager_out = fn(*inputs)
        except Exception as err:
            raise PorterError(
                f"{ref.path}: the reference raised in eager mode "
                f"({type(err).__name__}: {_first_line(err)}); fix it before capturing"
            ) from err
    if state:
        _refuse_reassigned(ref, fn, state)
    output_dtypes, outputs_copied = _output_dtypes(ref, eager_out, dtype, device)
    _refuse_returned_state(ref, fn, eager_out)
    output_map = _output_map(ref, eager_out, inputs)
    codegen_only = device == "cpu"
    notes: list[str] = []
    failure = ""
    # Every size a symbol first; where Inductor cannot compile that (or lowers
    # it all to extern calls), the per-call sizes alone, the rest constants
    # the launcher then checks.
    for every_size in (True, False):
        if not every_size:
            torch.manual_seed(0)
            inputs = ref.make_inputs(dtype=dtype, device=device)
        _mark_dims(ref, inputs, set(static), every_size)
        state = _State()
        try:
            _compile(ref, fn, inputs, state, codegen_only, every_size, debug)
        except _CompileFailed as err:
            failure = str(err)
            continue
        sources = [g.source for g in state.graphs if g.source is not None]
        failed = next((g.error for g in state.graphs if g.error), None)
        if not sources and failed:
            # Inductor raised on a graph and Dynamo ran it eagerly instead
            scalar = "_local_scalar_dense" in failed
            raise PorterError(
                f"{ref.path}: Inductor could not compile {ref.name} ({failed})"
                + (
                    ": it reads a tensor's value as a Python number (an index "
                    "x[:, pos] by a 0-d tensor pos, .item()); pass that value as "
                    "an int argument, or index with torch.index_select/gather"
                    if scalar
                    else "; nothing was written"
                )
            )
        if len(sources) > 1 and state.breaks:
            raise PorterError(
                f"{ref.path}: {ref.name} compiled into {len(sources)} graphs: "
                f"Dynamo broke the graph ({_break_reason(state.breaks[0])}); "
                "porter ports one graph, and nothing was written"
            )
        if not sources and state.breaks:
            raise PorterError(
                f"{ref.path}: torch.compile produced no Inductor module for "
                f"{ref.name}: Dynamo broke the graph before any tensor work "
                f"({_break_reason(state.breaks[0])}); nothing was written"
            )
        if not sources:
            raise PorterError(
                f"{ref.path}: torch.compile produced no Inductor module for {ref.name}: "
                "it does no tensor work, or Dynamo broke the graph before any "
                "(torch._dynamo.explain shows where; BatchNorm's momentum=None does)"
            )
        modules, kernels = [], []
        for graph in state.graphs:
            for _, source, kind, _ in graph.placeholders:
                _refuse_list_argument(ref, source)
                _refuse_global_tensor(ref, source, kind)
        for index, graph in enumerate(g for g in state.graphs if g.source is not None):
            module, module_kernels = parse_module(
                graph.source, index, _graph_inputs(graph), ref
            )
            _refuse_host_only_calls(ref, module)
            _refuse_tensor_constants(ref, graph.source)
            _refuse_amd_fp8(ref, graph.source)
            _refuse_unnamed_inputs(ref, module, inputs)
            _refuse_float64_math(ref, graph.source, dtype)
            modules.append(module)
            kernels.extend(module_kernels)
        if kernels:
            if not every_size:
                notes.append(
                    f"Inductor could not compile {ref.name} with every size a symbol "
                    f"({failure}); captured with the per-call sizes symbolic, the others "
                    "fixed (the scaffold refuses other values of them)"
                )
            break
        calls = sorted(
            {
                # torch.ops.aten.mul.Tensor -> aten.mul; extern_kernels.mm -> mm
                re.sub(
                    r"^(aten\.\w+)\.\w+$", r"\1", step.name.split("ops.")[-1]
                ).removeprefix("extern_kernels.")
                for module in modules
                for step in module.steps
                if step.kind == "extern"
            }
        )
        failure = (
            f"it lowered everything to extern calls ({', '.join(calls[:4])}), so "
            "there is nothing to port"
            if calls
            else "it lowered everything to views of its inputs, so there is "
            "nothing to port"
        )
    else:
        if failure.startswith("it lowered"):
            raise PorterError(
                f"{ref.path}: Inductor emitted no Triton kernel for {ref.name} ({failure})"
            )
        raise PorterError(
            f"{ref.path}: torch.compile failed ({failure}); re-run with --debug "
            "to see torch's full log"
        )
    per_call = [d for d in ref.dims if d.role == "runtime" and d.symbolic]
    derived = [d for d in ref.dims if not d.axes and d.symbolic]
    _settle_dims(ref, modules)
    for dim in derived:
        if not dim.symbolic:
            notes.append(
                f"torch.compile fixed {dim.name} at {dim.size} (the sizes made from "
                f"it are constants in its graph); the scaffold serves {dim.name} = "
                f"{dim.size} alone and refuses other sizes in one line"
            )
    for dim in per_call:
        if not dim.symbolic and dim not in derived:
            notes.append(
                f"{dim.name} varies per call (DYNAMIC), but torch.compile fixed it "
                f"at {dim.size}: the reference decides on it in Python (a loop "
                f"over it?); the scaffold serves {dim.name} = {dim.size} alone "
                "and refuses other sizes in one line"
            )
    _buffer_dtypes(ref, fn, dtype, device, modules, codegen_only, debug)
    config_warnings: list[str] = []
    if not codegen_only:
        config_warnings = _record_configs(state, kernels)

    # Dynamo's trace alone, once: the dtypes it serves and the branches it took
    guarded: list[str] = []
    crossed: list[dict[str, int]] = []
    arguments = _arguments(ref, dtype, device)
    guard_names: list[str] = []
    base = _traced(ref, dtype, device, guarded, guard_names=guard_names)
    branches = (
        _taken(
            ref,
            dtype,
            device,
            _unmirrored(fold_ties(guarded, at=arguments)),
            base,
            crossed,
        )
        if base is not None
        else []
    )
    branches += [c for c in _literal_slices(base or [], arguments) if c not in branches]
    ints = {n for n, v in arguments.items() if type(v) is int}
    assumed = [
        c
        for code in state.shape_codes
        for c in argument_bounds(code, ints)
        if c not in branches
    ]
    aliasing = _aliasing(ref, dtype, device)  # eager's, once: read twice below
    served = _dtypes_served(ref, dtype, device, base, aliasing, output_dtypes)
    written = _written_numbers(read_source(ref.path))
    limits = _dtype_limits(kernels, dtype, written)
    if limits and served != [dtype]:
        served = [dtype]
        notes.append(
            f"served in {dtype} alone: the kernels hold {dtype}'s {limits} (a "
            "default of torch.nan_to_num, a mask's fill), which another dtype's "
            "would not; capture with --dtype for the others"
        )
    capture_followers = _followers(ref, dtype)
    mixed = _mixed_matmuls(modules, capture_followers, ref.input_names, output_dtypes)
    if dtype == "float32" and mixed and served != ["float32"]:
        served = ["float32"]
        notes.append(
            f"served in float32 alone: a matmul reads or writes {', '.join(mixed)} in its own "
            "dtype beside operands that take the call's (a cast such as "
            ".float() the float32 compile drops); capture with --dtype "
            "bfloat16 or float16 for those"
        )
    unmatched = [b for m in modules for b in m.unmatched_fp32()]
    if dtype == "float32" and unmatched and served != ["float32"]:
        served = ["float32"]
        notes.append(
            "served in float32 alone: an extern call (a top-k, a sort) reads a "
            "float32 value that no lower-precision compile told apart from the "
            "inputs' dtype; capture with --dtype bfloat16 or float16 for those"
        )
    rewritten = [b for m in modules for b in m.rewritten_extern_results()]
    if dtype == "float32" and rewritten and served != ["float32"]:
        served = ["float32"]
        notes.append(
            "served in float32 alone: a kernel keeps float32 values in an extern "
            "call's result (a sort's), which other dtypes' calls make in their "
            "dtype and would round; capture with --dtype bfloat16 or float16 for those"
        )
    capture = Capture(
        porter_version=porter.__version__,
        torch_version=torch.__version__,
        triton_version=triton.__version__,
        device=device,
        target=_describe_target(device),
        reference_file=ref.path.name,
        reference_sha256=ref.sha256,
        reference_kind=ref.kind,
        reference_name=ref.name,
        input_names=ref.input_names,
        dtypes=ref.dtypes,
        capture_dtype=dtype,
        output_dtypes=output_dtypes,
        outputs_copied=outputs_copied,
        edge_sizes=crossed,
        # Eager at values and sizes it may reject runs on the CPU: on a GPU an
        # index it rejects is a device assert, which ends the CUDA context of
        # the rest of the process (the capture's checks, a sweep's suite).
        zero_divisors=_zero_divisors(ref, dtype, "cpu", arguments),
        rejected_arguments=_rejected_arguments(ref, dtype, "cpu", arguments),
        wrapped_arguments=_wrapped_arguments(ref, dtype, "cpu", arguments),
        rejected_sizes=_rejected_sizes(
            ref, dtype, "cpu", crossed, [] if output_map else _output_sizes(modules)
        ),
        input_ranks={
            n: v.dim() for n, v in arguments.items() if isinstance(v, torch.Tensor)
        },
        assumed=list(dict.fromkeys(assumed)),
        dims=ref.dims,
        modules=modules,
        kernels=kernels,
        date=datetime.date.today().isoformat(),
        warnings=notes + config_warnings,
        constants=_module_structure(
            fn,
            modules,
            _none_parameters(
                fn, _mode_free(ref, dtype, device, _constants(state.constants))
            ),
        ),
        guards=branches,
        training=getattr(fn, "training", None),
        overrides=dict(ref.overrides),
        output_map=output_map,
        input_dtypes={
            n: str(t.dtype)
            for n, t in zip(
                ref.input_names, ref.make_inputs(dtype=dtype, device="meta")
            )
            if isinstance(t, torch.Tensor)
        },
        input_follows=capture_followers,
        dtypes_served=served,
        contiguous_only=_contiguous_only(ref, dtype, device, arguments, aliasing),
        unread_arguments=_unread(arguments, base, guard_names),
        output_layouts=_output_layouts(ref, dtype, device, aliasing),
        raise_on_negative=sorted(state.raising),
    )
    return capture, sources


def _mixed_matmuls(
    modules: list[CompiledModule],
    followers: list[str] | None,
    names: list[str],
    output_dtypes: list[str],
) -> list[str]:
    """The operands an extern matmul reads, or writes `out=`, in their own
    dtype beside operands that take the call's (`(q.float() @ ...) @ h0` with
    h0 float32 and q bf16; `(h @ w.t()).float()` into a float32 output): the
    float32 compile drops the casts, no-ops there, and in bfloat16 the
    scaffold handed the matmul two dtypes (RuntimeError). Parameters, and
    scratch buffers not found float32 in a bf16 compile, take the call's."""
    if followers is None:
        return []
    out = []
    for m in modules:
        own_buffers = {b.name for b in m.buffers if b.follows is False}
        for step in m.steps:
            if step.kind != "extern" or not re.search(_MATMUL_OP, step.name):
                continue
            kinds = ("input", "scratch", "buffer", "output")
            operands = [a for a in step.args if a.kind in kinds]
            own = [
                a.target if a.kind != "output" else f"output {a.target}"
                for a in operands
                if (
                    a.kind == "input"
                    and a.target in names
                    and a.target not in followers
                )
                or (a.kind in ("scratch", "buffer") and a.target in own_buffers)
                or (a.kind == "output" and _fixed_output(a.target, output_dtypes))
            ]
            if own and len(own) < len(operands):
                out += [t for t in own if t not in out]
    return out


def _fixed_output(target: str, output_dtypes: list[str]) -> bool:
    """Output `target` (its index) has a dtype of its own, not the inputs'."""
    return (
        target.isdigit()
        and int(target) < len(output_dtypes)
        and output_dtypes[int(target)] != "input"
    )


_MATMUL_OP = r"\b(mm|addmm|bmm|baddbmm|convolution|_mm_plus_mm|linear)\b"


def _followers(ref: Reference, dtype: str) -> list[str] | None:
    """The tensor arguments make_inputs gives in the dtype it is asked for
    (None where it cannot make them in another)."""
    other = "bfloat16" if dtype != "bfloat16" else "float32"
    try:
        now, then = (ref.make_inputs(dtype=d, device="meta") for d in (dtype, other))
    except Exception:  # noqa: BLE001 - the launcher then checks the first alone
        return None
    return [
        n
        for n, a, b in zip(ref.input_names, now, then)
        if isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.dtype != b.dtype
    ]


def _dtype_limits(kernels: list, dtype: str, written: set[float] = frozenset()) -> str:
    """Which of the dtype's limits (torch.finfo's max, min, tiny, eps) some
    kernel holds as a number: Inductor writes them in where an op's
    decomposition reads the dtype (torch.nan_to_num's posinf), in a graph
    Dynamo traces alike for every dtype. A number the reference writes itself
    (`written`: an MX exponent floor of 2.0 ** -126) holds in every dtype."""
    info = torch.finfo(getattr(torch, dtype))
    named = {info.max: "max", info.min: "min", info.tiny: "tiny", info.eps: "eps"}
    named = {v: n for v, n in named.items() if v not in written}
    found = []
    for k in kernels:
        try:
            tree = ast.parse(k.source)
        except SyntaxError:
            continue
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.Constant)
                and type(n.value) is float
                and n.value in named
                and named[n.value] not in found
            ):
                found.append(named[n.value])
    return " and ".join(f"finfo().{f}" for f in found)


_ARITHMETIC = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}


def _written_numbers(source: str) -> set[float]:
    """The float values of the numbers a reference's source writes, arithmetic
    of literals included (`2.0 ** -126`), and of torch.finfo of a dtype it
    names (`torch.finfo(torch.float32).tiny`)."""

    def value(n: ast.AST) -> float | None:
        if isinstance(n, ast.Constant) and type(n.value) in (int, float):
            return float(n.value) if abs(n.value) < 1e308 else None
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            v = value(n.operand)
            return None if v is None else -v
        if isinstance(n, ast.BinOp) and type(n.op) in _ARITHMETIC:
            a, b = value(n.left), value(n.right)
            try:
                return (
                    None
                    if a is None or b is None
                    else float(_ARITHMETIC[type(n.op)](a, b))
                )
            except (ArithmeticError, ValueError):
                return None
        return None

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    out = set()
    for n in ast.walk(tree):
        v = value(n)
        if v is not None:
            out.add(v)
        found = (
            re.fullmatch(
                r"torch\.finfo\(torch\.(\w+)\)\.(max|min|tiny|eps)", ast.unparse(n)
            )
            if isinstance(n, ast.Attribute)
            else None
        )
        if found and isinstance(getattr(torch, found.group(1), None), torch.dtype):
            out.add(
                float(
                    getattr(torch.finfo(getattr(torch, found.group(1))), found.group(2))
                )
            )
    return out


def _dtypes_served(
    ref: Reference,
    dtype: str,
    device: str,
    base: list[str] | None,
    aliasing: tuple | None,
    output_dtypes: list[str],
) -> list[str]:
    """The float dtypes in which Dynamo traces the reference to the same graph
    as in `dtype` (`base`, _traced's; the inputs' dtype aside, _same_graphs): where it does not
    (a mask filled with torch.finfo(x.dtype).min, a clamp only fp16 takes), the
    kernels computed for `dtype` are wrong in the other, and the scaffold
    refuses it. So too where eager's outputs take other dtypes than the
    scaffold's (`output_dtypes`): an fp16 x times a weight kept in bf16 is
    float32, a bf16 or float32 x times it is x's dtype."""
    served = [dtype]
    for other in FLOAT_DTYPES:
        if other == dtype or base is None:
            continue
        codes = _traced(ref, other, device)
        if codes is None or not _same_graphs(base, dtype, codes, other):
            continue
        call = _eager_call(ref, other, device)
        dtypes = [_dtype_of(other if d == "input" else d) for d in output_dtypes]
        if _aliasing_of(call) == aliasing and (
            call is None or [t.dtype for t in _flat_tensors(call[2])] == dtypes
        ):
            served.append(other)
    return [d for d in FLOAT_DTYPES if d in served]


def _dtype_of(name: str) -> torch.dtype:
    return getattr(torch, name.removeprefix("torch."))


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal, NaN where the other is NaN."""
    if not a.is_floating_point():
        return torch.equal(a, b)
    a, b = a.double(), b.double()  # fp8 has no nan_to_num
    return torch.equal(a.isnan(), b.isnan()) and torch.equal(
        torch.nan_to_num(a), torch.nan_to_num(b)
    )


def _eager_call(ref: Reference, dtype: str, device: str) -> tuple | None:
    """(inputs after the call, copies of them before it, the outputs, the
    inputs written in place) of eager in `dtype`; None where eager rejects the
    call. Written is by version counter: a masked_fill_ whose mask is empty in
    one dtype's example writes its input there too."""
    try:
        fn, inputs = _built_in(ref, dtype, device)
        before = [v.clone() if isinstance(v, torch.Tensor) else None for v in inputs]
        versions = [v._version if isinstance(v, torch.Tensor) else None for v in inputs]
        with torch.no_grad():
            out = fn(*inputs)
    except Exception:  # noqa: BLE001 - eager rejects it: nothing to compare
        return None
    written = {
        i
        for i, (v, n) in enumerate(zip(inputs, versions))
        if n is not None and v._version != n
    }
    return inputs, before, out, written


def _aliasing(ref: Reference, dtype: str, device: str) -> tuple | None:
    return _aliasing_of(_eager_call(ref, dtype, device))


def _aliasing_of(call: tuple | None) -> tuple | None:
    """Which input each output of eager's call (_eager_call's) is (or shares
    memory with), which inputs it changes, and which earlier output each
    shares memory with: `x.float().mul_(2)` returns x itself
    and changes it in float32 alone, a new tensor in bfloat16, in one graph."""
    if call is None:
        return None
    inputs, before, out, written = call
    outs = _flat(out)
    storages = [
        v.untyped_storage().data_ptr() if isinstance(v, torch.Tensor) else None
        for v in inputs
    ]
    shared = tuple(
        (
            storages.index(o.untyped_storage().data_ptr())
            if isinstance(o, torch.Tensor)
            and o.untyped_storage().data_ptr() in storages
            else None
        )
        for o in outs
    )
    changed = tuple(
        i
        for i, (v, b) in enumerate(zip(inputs, before))
        if i in written or (b is not None and not _same_values(v, b))
    )
    # Outputs that are views of one buffer in this dtype alone (p[:, :-1].to(
    # x.dtype) beside p[:, -1]: a view in float32, a new tensor in bfloat16).
    made = [
        o.untyped_storage().data_ptr() if isinstance(o, torch.Tensor) else None
        for o in outs
    ]
    twins = tuple(made.index(m) if m is not None else None for m in made)
    return shared, changed, twins


def _relaid(t: torch.Tensor) -> torch.Tensor:
    """t's values in a dense layout of another axis order: contiguous, or
    else its axes laid out in reverse order (column-major)."""
    if _strides_like(t, t.shape) != _strides_like(t.contiguous(), t.shape):
        return t.contiguous()
    order = list(range(t.dim()))[::-1]
    back = sorted(range(t.dim()), key=order.__getitem__)
    return t.permute(order).contiguous().permute(back)


def _strides_like(t: torch.Tensor, shape) -> list[int] | None:
    """Dense strides of `shape` with its axes in t's order in memory (axes of
    one element outermost), as the scaffold's laid_out_like lays out an
    output; None for an expanded t."""
    if any(n > 1 and s == 0 for n, s in zip(t.shape, t.stride())):
        return None
    order = sorted(range(t.dim()), key=lambda d: (t.shape[d] > 1, -t.stride(d)))
    strides, step = [0] * t.dim(), 1
    for d in reversed(order):  # innermost first
        strides[d], step = step, step * shape[d]
    return strides


def _follows(out: Any, t: torch.Tensor) -> bool:
    """out is laid out in t's axis order (strides of axes past one element)."""
    if not isinstance(out, torch.Tensor) or out.dim() != t.dim():
        return False
    if out.numel() == 0 or (strides := _strides_like(t, out.shape)) is None:
        return False
    return all(n <= 1 or a == b for n, a, b in zip(out.shape, out.stride(), strides))


def _output_layouts(
    ref: Reference, dtype: str, device: str, aliasing: tuple | None
) -> list[str | None]:
    """Per output of eager's, the tensor argument whose layout it follows:
    the first that, laid out otherwise (_relaid) alone, gives the output that
    layout too. An output eager returns as an input, or lays out its own way
    (layer_norm's contiguous one), follows none."""
    if aliasing is None:
        return []
    try:
        fn, inputs = _built_in(ref, dtype, device)
        with torch.no_grad():  # in place or not, the layouts are the same
            outs = _flat(fn(*inputs))
    except Exception:  # noqa: BLE001 - eager rejects it: nothing to follow
        return []
    follows: list[str | None] = [None] * len(outs)
    for j, (name, t) in enumerate(zip(ref.input_names, inputs)):
        if not isinstance(t, torch.Tensor) or sum(n > 1 for n in t.shape) < 2:
            continue
        wanted = [
            i
            for i, o in enumerate(outs)
            if follows[i] is None
            and (i >= len(aliasing[0]) or aliasing[0][i] is None)
            and _follows(o, t)
        ]
        if not wanted:
            continue
        again = list(inputs)
        again[j] = _relaid(t)
        try:
            with torch.no_grad():
                other = _flat(fn(*again))
        except Exception:  # noqa: BLE001 - eager rejects the other layout
            continue
        for i in wanted:
            if i < len(other) and _follows(other[i], again[j]):
                follows[i] = name
    return follows


def _contiguous_only(
    ref: Reference,
    dtype: str,
    device: str,
    arguments: dict[str, Any],
    aliasing: tuple | None,
) -> list[str]:
    """The inputs eager changes in place, or returns, only where they come
    contiguous: `logits.contiguous().div_(t)` divides the caller's logits, and
    a copy of strided ones (so does a `.reshape()` it cannot view). The
    scaffold, which changes its inputs at any layout, refuses those strided.
    `aliasing`: _aliasing's in `dtype`."""
    if aliasing is None:
        return []
    # inputs changed, and any sharing storage with an output (the first input
    # of a storage stands for all of its views there)
    shared, changed, _ = aliasing
    storage = {
        i: v.untyped_storage().data_ptr()
        for i, v in enumerate(arguments.get(n) for n in ref.input_names)
        if isinstance(v, torch.Tensor)
    }
    returned = {storage.get(i) for i in shared if i is not None}
    candidates = {*changed, *(i for i, ptr in storage.items() if ptr in returned)}
    out = []
    for i, name in enumerate(ref.input_names):
        v = arguments.get(name)
        if i not in candidates or not isinstance(v, torch.Tensor):
            continue
        if v.dim() == 0 or v.shape[-1] < 2:
            continue  # every layout of it is contiguous
        held = _held(ref, dtype, device, i)
        if (
            held not in (None, (False, False))
            and _held(ref, dtype, device, i, True) != held
        ):
            out.append(name)
    return out


def _held(
    ref: Reference, dtype: str, device: str, i: int, strided: bool = False
) -> tuple[bool, bool] | None:
    """Whether eager changes input i in place, and returns it (or a view at
    its first element); `strided`: input i comes as every other column of a
    wider tensor. Input i alone: others may be views of one buffer with it."""
    try:
        fn, inputs = _built_in(ref, dtype, device)
        v = inputs[i]
        if strided:
            wide = v.new_empty((*v.shape[:-1], 2 * v.shape[-1]))
            v = inputs[i] = wide[..., ::2].copy_(v)
        before = v.clone()
        with torch.no_grad():
            outs = _flat(fn(*inputs))
    except Exception:  # noqa: BLE001 - eager rejects it: nothing to compare
        return None
    returned = any(
        isinstance(o, torch.Tensor) and o.data_ptr() == v.data_ptr() for o in outs
    )
    return not _same_values(v, before), returned


_DTYPE_LITERAL = re.compile(r"\btorch\.(float64|float32|float16|bfloat16)\b")
# A call that makes a tensor of values in the dtype it is given, ending the
# text before that dtype: its values round in it.
_MADE_IN = re.compile(
    r"torch\.(_refs\.)?(tensor|full|full_like|arange|linspace|logspace|scalar_tensor)"
    r"\((?:[^()]|\([^()]*\))*dtype\s*=\s*$"
)


def _same_graphs(base: list[str], dtype: str, codes: list[str], other: str) -> bool:
    """Whether graphs traced in `other` are `base`'s (traced in `dtype`) but
    for the dtype the inputs gave: each dtype literal the same in both, or
    `dtype` in base where the other has `other`, but for a tensor made of
    values in that dtype (torch.tensor(c, dtype=x.dtype): they round in it). An explicit
    `.to(torch.float32)` then matches itself in a bfloat16 trace."""
    if len(base) != len(codes):
        return False
    for a, b in zip(base, codes):
        pa, pb = _DTYPE_LITERAL.split(a), _DTYPE_LITERAL.split(b)
        if len(pa) != len(pb) or pa[0::2] != pb[0::2]:
            return False
        for i, (x, y) in enumerate(zip(pa[1::2], pb[1::2])):
            if x != y and (x, y) != (dtype, other):
                return False
            # torch.tensor(hidden ** 0.5, dtype=h.dtype): bf16 rounds the
            # constant, which kernels computed for fp32 hold unrounded (and
            # kernels computed for bf16 hold rounded in an fp32 call)
            if x != y and _MADE_IN.search(pa[2 * i]):
                return False
    return True


def _unmirrored(conditions: list[str]) -> list[str]:
    """`conditions` without one that says another's mirrored (`start >= 0`
    beside `0 <= start`): Dynamo guards on both."""
    out = []
    for cond in conditions:
        node = ast.parse(cond, mode="eval").body if not cond.startswith("?") else None
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0])
            mirrored = ast.Compare(
                node.comparators[0], [_MIRROR.get(op, op)()], [node.left]
            )
            if ast.unparse(mirrored) in out:
                continue
        out.append(cond)
    return out


def _taken(
    ref: Reference,
    dtype: str,
    device: str,
    conditions: list[str],
    base: list[str],
    crossed: list[dict[str, int]] | None = None,
) -> list[str]:
    """The conditions whose other side Dynamo traces to another graph: the
    reference's own branches. A condition whose other side traces to the same
    graph is a framework's bookkeeping (a convolution's meta function guards
    on a batch of 16 or more), which the scaffold need not check, as is a
    bound on one size the reference traces whole without knowing
    (_branch_free); one porter cannot probe (an attribute, two sizes) is kept.
    `crossed` gets the other side's sizes of each _branch_free one, where the
    graph differed: the suite checks the scaffold serves them."""
    kept = []
    for cond in conditions:
        probe = _other_side(ref, cond)
        if probe is not None and _int_argument(probe):
            kept.append(cond)
        elif probe is None or _traced(ref, dtype, device, **probe) != base:
            if not _branch_free(ref, dtype, device, cond):
                kept.append(cond)
            elif (
                crossed is not None
                and probe is not None
                and probe.get("sizes") not in (None, *crossed)
            ):
                crossed.append(probe["sizes"])
    return kept


def _literal_slices(codes: list[str], arguments: dict[str, Any]) -> list[str]:
    """`N <= x.shape[k]` for each slice of an input by a literal end (x[:4],
    bad[:, :1]) where x had N or more at capture: Inductor's kernels take it
    as N long, where eager clamps a shorter axis (an empty bad-words list,
    fewer tokens than 4)."""
    out = []
    for code in codes:
        for line in code.splitlines():
            if line.startswith(_MADE_SLICE.strip()):
                cond = _scaffold_terms(line.removeprefix(_MADE_SLICE.strip()).strip())
                if cond is not None and cond not in out:
                    out.append(cond)
        for node in ast.walk(ast.parse(code)):
            if not (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and (m := re.fullmatch(r"l_(\w+)_", node.value.id))
            ):
                continue
            tensor = arguments.get(m[1])
            items = (
                node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            )
            if not isinstance(tensor, torch.Tensor) or len(items) > tensor.dim():
                continue
            for axis, item in enumerate(items):
                if not (
                    isinstance(item, ast.Call)
                    and ast.unparse(item.func) == "slice"
                    and len(item.args) == 3
                ):
                    if isinstance(item, ast.Constant) and type(item.value) is int:
                        continue  # x[0, :4]: an index takes its axis
                    break  # an Ellipsis or None: the axes after it are not counted
                start, stop = (_number(a) for a in item.args[:2])
                if ast.unparse(item.args[2]) not in ("None", "1"):
                    continue
                least = _slice_least(
                    None if ast.unparse(item.args[0]) == "None" else start,
                    None if ast.unparse(item.args[1]) == "None" else stop,
                    tensor.shape[axis],
                )
                if least is not None:
                    cond = f"{least} <= {m[1]}.shape[{axis}]"
                    if cond not in out:
                        out.append(cond)
    return out


def _slice_least(start: Any, stop: Any, size: int) -> int | None:
    """The axis length a slice by literal bounds takes whole, where its axis
    had that many or more at capture: x[:4] and x[1:4] 4, x[-3:] and
    x[-3:-1] 3. The kernels hold its length as the capture's, where eager
    clamps a shorter axis; None for any other slice."""
    if type(stop) is int and stop > 0 and (start is None or type(start) is int):
        least = stop if start is None or start >= 0 else None
    elif type(start) is int and start < 0 and (stop is None or type(stop) is int):
        least = -start if stop is None or start < stop < 0 else None
    else:
        least = None
    return least if least is not None and least <= size else None


def _branch_free(ref: Reference, dtype: str, device: str, cond: str) -> bool:
    """Whether `cond`, a lower bound on one size (`3 <= seq`) or a value it
    must not take (`hidden != 4`), is Dynamo's own: the reference traces whole
    with that size unknown to Dynamo (unbacked), so no Python code of it
    decides on the size, and every runtime check that trace adds (an op's own,
    `seq >= 3` for an unfold of 3) holds on the other side. The other side's
    graph then differed only where Dynamo fixed a size of 0 or 1 (x[:, :-1] at
    a length of 2; x.view(n, 4, -1) at a hidden size of 4)."""
    try:
        node = ast.parse(cond, mode="eval").body
    except SyntaxError:
        return False
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return False
    size, op, bound = node.left, type(node.ops[0]), _number(node.comparators[0])
    if bound is None:
        size, op, bound = node.comparators[0], _MIRROR.get(op, op), _number(node.left)
    m = re.fullmatch(r"(\w+)\.shape\[(\d+)\]", ast.unparse(size))
    if (
        m is None
        or op not in (ast.Gt, ast.GtE, ast.NotEq)
        or not isinstance(bound, int)
    ):
        return False
    axis = (m.group(1), int(m.group(2)))
    if axis[0] not in ref.input_names:
        return False
    dim = next((d for d in ref.dims if axis in map(tuple, d.axes)), None)
    axes = [tuple(a) for a in dim.axes] if dim is not None else [axis]
    codes = _traced(ref, dtype, device, unbacked=axes)
    if codes is None:
        return False
    if re.search(rf"sym_min\((?:{bound}, u\d+|u\d+, {bound})\)", "\n".join(codes)):
        # x[:4] of that size: a length of min(4, n), which the bound made 4
        # in the kernels; eager's shorter slice is another kernel
        return False
    other = _VIOLATE[op](bound)
    checks = re.findall(
        r"assertion failed for expression (.+?) on node", "\n".join(codes)
    )
    try:
        import sympy

        # the unbacked sizes (u0, u1: the probed dim's axes) at the other side;
        # a check that reads another size stays undecided, and keeps the bound
        return all(
            bool(
                (e := sympy.sympify(c)).subs(
                    {x: other for x in e.free_symbols if x.name.startswith("u")}
                )
            )
            for c in checks
        )
    except Exception:  # noqa: BLE001 - a check sympy cannot decide: keep the bound
        return False


def _int_argument(probe: dict[str, Any]) -> bool:
    """A probe of an int argument: Inductor's lowering, not Dynamo's graph,
    tells its sides apart (x[:, start:] wraps a negative start), so the
    condition is kept whatever the graph."""
    return any(
        isinstance(v, int) and not isinstance(v, bool)
        for v in probe.get("kwargs", {}).values()
    )


_VIOLATE = {  # a value on the other side of `source OP bound`
    ast.Lt: lambda b: b,
    ast.LtE: lambda b: b + (1 if isinstance(b, int) else abs(b) or 1.0),
    ast.Gt: lambda b: b,
    ast.GtE: lambda b: b - (1 if isinstance(b, int) else abs(b) or 1.0),
    ast.NotEq: lambda b: b,
}
_MIRROR = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}


def _other_side(ref: Reference, cond: str) -> dict[str, Any] | None:
    """_traced's arguments for a call on the other side of `cond` (a size of
    one of the reference's dims, or a call argument), None where porter cannot
    make one (a condition it cannot spell, `?`...)."""
    if cond.startswith("?"):
        return None
    node = ast.parse(cond, mode="eval").body
    left, op, right = node.left, type(node.ops[0]), node.comparators[0]
    bound = _number(right)
    if bound is None:
        left, right, bound = right, left, _number(left)
        op = _MIRROR.get(op, op)
    if bound is None or op not in _VIOLATE:
        return None
    value = _VIOLATE[op](bound)
    text = ast.unparse(left)
    m = re.fullmatch(r"(\w+)\.shape\[(\d+)\]", text)
    if m:
        axis = (m.group(1), int(m.group(2)))
        dim = next((d for d in ref.dims if axis in map(tuple, d.axes)), None)
        if dim is None or int(value) < 2:  # 0 and 1 trace apart anyway
            return None
        return {"sizes": {dim.name: int(value)}}
    if re.fullmatch(r"\w+", text) and text not in ref.input_names:
        return {"kwargs": {text: value}}
    return None


def _traced(
    ref: Reference,
    dtype: str,
    device: str,
    branches: list[str] | None = None,
    sizes: dict[str, int] | None = None,
    kwargs: dict[str, Any] | None = None,
    unbacked: list[tuple[str, int]] | None = None,
    guard_names: list[str] | None = None,
) -> list[str] | None:
    """Dynamo's graphs of the reference in `dtype` (at `sizes`, called with
    `kwargs` too, `unbacked` axes unknown to it); `branches` gets the conditions
    Dynamo guarded on (branch_guards): before Inductor, whose lowering guards
    on sizes of its own that the scaffold's extern calls do not need."""
    codes: list[str] = []

    def backend(gm, _):
        codes.append(gm.code + "".join(_bit_views(gm) + _made_slices(gm)))
        return gm.forward

    def guard_filter(entries):
        if guard_names is not None:
            guard_names.extend(e.name for e in entries)
        for e in entries:
            if e.guard_type == "SHAPE_ENV" and branches is not None:
                for code in getattr(e.orig_guard, "code_list", None) or []:
                    code = plain_scalars(code)
                    branches.extend(c for c in branch_guards(code) if c not in branches)
        return [True] * len(entries)

    torch._dynamo.reset()
    try:
        fn, inputs = _built_in(ref, dtype, device, sizes)
        by_name = dict(zip(ref.input_names, inputs))
        for name, axis in unbacked or []:
            torch._dynamo.decorators.mark_unbacked(by_name[name], axis)
        with _tracing(), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # an unbacked size: a branch on it must fail, not break the graph
            torch._dynamo.optimize(
                backend,
                dynamic=True,
                nopython=bool(unbacked),
                guard_filter_fn=guard_filter,
            )(fn)(*inputs, **(kwargs or {}))
    except Exception:  # noqa: BLE001 - the reference does not run in this dtype
        return None
    finally:
        torch._dynamo.reset()
    return codes


def _bit_views(gm: torch.fx.GraphModule) -> list[str]:
    """A line for each `.view(dtype)` of a float value in gm, naming that
    float's dtype: the same graph text reads other bits (and gives another
    shape) in another input dtype, so no other is served."""
    out = []
    for node in gm.graph.nodes:
        if node.op != "call_method" or node.target != "view":
            continue
        to = node.kwargs.get("dtype", node.args[1] if len(node.args) == 2 else None)
        source = node.args[0].meta.get("example_value") if node.args else None
        if isinstance(to, torch.dtype) and isinstance(source, torch.Tensor):
            if source.dtype.is_floating_point:
                out.append(f"\n# reads the bits of {str(source.dtype)[6:]}")
    return out


_MADE_SLICE = "\n# a literal slice of a tensor made from sizes: "


def _source_name(source) -> str:
    """A Dynamo source's name (a method in older torch, a property since)."""
    name = source.name
    return name() if callable(name) else name


def _made_slices(gm: torch.fx.GraphModule) -> list[str]:
    """A line for each slice by a literal end of a tensor the graph made
    (`torch.zeros_like(h)[:, :2]`), whose axis was that long or longer at
    capture, with the axis's size in the inputs' terms (L['h'].size()[1]):
    Inductor's kernels take the slice as that long, where eager clamps a
    shorter axis. _literal_slices reads it (slices of inputs it reads itself)."""
    import sympy

    out = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not operator.getitem:
            continue
        try:
            out += _made_slice(node, sympy)
        except Exception:  # noqa: BLE001 - torch's internals differ by version
            continue
    return out


def _made_slice(node: torch.fx.Node, sympy) -> list[str]:
    """_made_slices' lines for one getitem node."""
    source, items = node.args[0], node.args[1]
    if not isinstance(source, torch.fx.Node) or source.op == "placeholder":
        return []
    fake = source.meta.get("example_value")
    if not isinstance(fake, torch.Tensor):
        return []
    out = []
    items = items if isinstance(items, tuple) else (items,)
    for axis, item in enumerate(items[: fake.dim()]):
        if type(item) is int:
            continue  # an index takes its axis
        if not isinstance(item, slice):
            break  # an Ellipsis or None: the axes after it are not counted
        size = fake.shape[axis]
        if not isinstance(size, torch.SymInt) or item.step not in (None, 1):
            continue
        hint = size.node.hint
        least = _slice_least(item.start, item.stop, int(hint)) if hint else None
        if least is None:
            continue
        env, expr = size.node.shape_env, size.node.expr
        names = {
            s: _source_name(env.var_to_sources[s][0])
            for s in expr.free_symbols
            if env.var_to_sources.get(s)
        }
        if len(names) == len(expr.free_symbols):
            named = {s: sympy.Symbol(n) for s, n in names.items()}
            out.append(f"{_MADE_SLICE}{least} <= {expr.xreplace(named)}")
    return out


def _arguments(ref: Reference, dtype: str, device: str) -> dict[str, Any]:
    """The reference's arguments at the capture's sizes by name (`self` for a
    module), defaults included: where the guards' sizes are read from."""
    try:
        fn, inputs = _built_in(ref, dtype, device)
        target = fn.forward if isinstance(fn, torch.nn.Module) else fn
        bound = inspect.signature(target).bind_partial(*inputs)
        bound.apply_defaults()
    except Exception:  # noqa: BLE001 - fold_ties samples sizes without them
        return {}
    out = dict(bound.arguments)
    if isinstance(fn, torch.nn.Module):
        out["self"] = fn
    return out


def _zero_divisors(
    ref: Reference, dtype: str, device: str, arguments: dict[str, Any]
) -> list[str]:
    """The int and float arguments (of `arguments`, _arguments') at 0 of which
    eager raises ZeroDivisionError (`1.0 / k` in Python, `ids // k`): the
    scaffold refuses 0 as eager does, where its kernels would return inf or
    zeros."""
    out = []
    for name, value in arguments.items():
        if type(value) not in (int, float) or value == 0:
            continue
        err = _eager_error_at(ref, dtype, device, name, type(value)(0))
        if isinstance(err, ZeroDivisionError) or "ZeroDivisionError" in str(err):
            out.append(name)
    return out


def _rejected_arguments(
    ref: Reference, dtype: str, device: str, arguments: dict[str, Any]
) -> list[dict[str, Any]]:
    """The int arguments at 0 of which eager raises otherwise (HF's top-k:
    the last of topk(x, min(k, vocab)), an IndexError at k = 0): the scaffold
    refuses 0 in eager's words, where its kernels read before a tensor. And
    a positive one at -1 (Adam's math.sqrt(1 - beta2 ** step) of a negative
    step: a math domain error), which the scaffold refuses for every negative
    value, where its kernels would answer NaN. {"argument": name, "error":
    eager's first line, "at": -1 for those}."""
    out = []
    for name, value in arguments.items():
        if type(value) is not int or value == 0:
            continue
        err = _eager_error_at(ref, dtype, device, name, 0)
        if err is not None and not (
            isinstance(err, ZeroDivisionError)
            or "ZeroDivisionError" in str(err)
            or _data_error(ref, dtype, device, name, 0)
        ):
            said = f"{type(err).__name__}: {_first_line(err)}"
            out.append({"argument": name, "error": said[:160]})
        err = _eager_error_at(ref, dtype, device, name, -1) if value > 0 else None
        if err is not None and not _data_error(ref, dtype, device, name, -1):
            said = f"{type(err).__name__}: {_first_line(err)}"
            out.append({"argument": name, "error": said[:160], "at": -1})
        out += _overflow_bounds(ref, dtype, device, name, value)
    return out


def _float_overflow(err: Exception | None) -> bool:
    """Python's float math overflowing (`1.1 ** 8000`, math.exp), not an int
    past int64 (`1 << 64` made a tensor), which int_powers refuses."""
    text = str(err)
    return isinstance(err, OverflowError) and (
        "out of range" in text or "math range" in text or "to float" in text
    )


def _overflow_bounds(
    ref: Reference, dtype: str, device: str, name: str, value: int
) -> list[dict[str, Any]]:
    """Where eager's Python math on int argument `name` overflows a float
    (HF's `pow(factor, cur_len - start)`: OverflowError), found by bisection
    from the captured value out to 2**32 past it: the kernels compute that
    power in floating point and return inf there. {"argument", "error",
    "from": the first value that raises} upward, or "to": the last, downward."""
    out = []
    for step, key in ((1, "from"), (-1, "to")):
        far = value + step * 2**32
        err = _eager_error_at(ref, dtype, device, name, far)
        if not _float_overflow(err):
            continue
        ok = value  # runs; `far` raises OverflowError
        while abs(far - ok) > 1:
            mid = (ok + far) // 2
            if _float_overflow(_eager_error_at(ref, dtype, device, name, mid)):
                far = mid
            else:
                ok = mid
        said = f"{type(err).__name__}: {_first_line(err)}"
        out.append({"argument": name, "error": said[:160], key: far})
    return out


def _wrapped_arguments(
    ref: Reference, dtype: str, device: str, arguments: dict[str, Any]
) -> list[str]:
    """The int arguments eager wraps to a 32-bit or narrower tensor's dtype:
    one past int32 by 2**32 gives what it gives, where one more gives other
    values (`ids // (2**32 + 3)` is ids // 3 of int32 ids). The kernels take
    the whole value, so the scaffold refuses these outside int32's range; an
    argument added to int64 ids beside an unrelated uint8 tensor is not one.
    One eager rejects, or whose effect cannot be seen, counts as wrapped."""
    out = []
    for name, value in arguments.items():
        if type(value) is not int:
            continue
        base, more, wrapped = (
            _eager_at(ref, dtype, device, name, v)
            for v in (value, value + 1, value + 2**32)
        )
        if base is None or more is None or wrapped is None:
            out.append(name)
            continue
        if any(
            not _same_values(a, b) and _same_values(a, c)
            for a, b, c in zip(base, more, wrapped)
            if a.shape == b.shape == c.shape and a.dtype == b.dtype == c.dtype
        ) or all(
            _same_values(a, b)
            for a, b in zip(base, more)
            if a.shape == b.shape and a.dtype == b.dtype
        ):
            out.append(name)
    return out


def _eager_at(
    ref: Reference, dtype: str, device: str, name: str, value: int
) -> list[torch.Tensor] | None:
    """Eager's outputs, and its tensor inputs after the call, with argument
    `name` at `value`; None where eager rejects it."""
    call = _call_at(ref, dtype, device, name, value)
    if call is None:
        return None
    target, bound = call
    try:
        with torch.no_grad():
            got = _flat_tensors(target(*bound.args, **bound.kwargs))
    except Exception:  # noqa: BLE001 - any rejection
        return None
    return got + [t for t in bound.args if isinstance(t, torch.Tensor)]


def _data_error(ref: Reference, dtype: str, device: str, name: str, value: int) -> bool:
    """Whether eager's error at `value` comes from what the int tensors hold,
    not from the value alone: it runs with them all 0, or all 1. An
    ignore_index of 0 is an IndexError on labels that hold -100 (the value
    make_inputs gave for the captured ignore_index), which eager serves on
    other labels; a top-k at k = 0 raises on any."""
    return any(
        _eager_error_at(ref, dtype, device, name, value, ints=fill) is None
        for fill in (0, 1)
    )


def _eager_error_at(
    ref: Reference,
    dtype: str,
    device: str,
    name: str,
    value: Any,
    ints: int | None = None,
) -> Exception | None:
    """What eager raises with argument `name` at `value`, the capture's inputs
    otherwise (with `ints`, every int tensor among them filled with it); None
    where it runs (or the inputs are not built)."""
    call = _call_at(ref, dtype, device, name, value, ints)
    if call is None:
        return None
    target, bound = call
    try:
        with torch.no_grad():
            target(*bound.args, **bound.kwargs)
    except Exception as err:  # noqa: BLE001 - any rejection
        return err
    return None


def _call_at(
    ref: Reference,
    dtype: str,
    device: str,
    name: str,
    value: Any,
    ints: int | None = None,
) -> tuple[Any, inspect.BoundArguments] | None:
    """The reference and its capture inputs bound with argument `name` at
    `value` (with `ints`, every int tensor filled with it); None where the
    inputs are not built."""
    try:
        fn, inputs = _built_in(ref, dtype, device)
        target = fn.forward if isinstance(fn, torch.nn.Module) else fn
        if ints is not None:
            inputs = [
                (
                    torch.full_like(t, ints)
                    if isinstance(t, torch.Tensor)
                    and not t.dtype.is_floating_point
                    and not t.dtype.is_complex
                    and t.dtype != torch.bool
                    else t
                )
                for t in inputs
            ]
        bound = inspect.signature(target).bind_partial(*inputs)
    except Exception:  # noqa: BLE001 - make_inputs itself: not the reference
        return None
    bound.arguments[name] = value
    return target, bound


def _output_sizes(modules: list[CompiledModule]) -> list[list[str]]:
    """Each output's sizes, as the graph computes them from the dims; empty
    where an output is no buffer of a single graph's."""
    if len(modules) != 1:
        return []
    buffers = {b.name: b.sizes for b in modules[0].buffers}
    outputs = modules[0].outputs
    return [buffers[o] for o in outputs] if all(o in buffers for o in outputs) else []


def _shape_at(sizes: list[str], dims: dict[str, int], inputs: dict) -> tuple | None:
    """`sizes` evaluated at these dims and input shapes; None where porter
    cannot read them."""
    values: dict[str, Any] = dict(dims)
    for name, t in inputs.items():
        if isinstance(t, torch.Tensor):
            values.update({f"{name}__size{i}": n for i, n in enumerate(t.shape)})
    out = []
    for text in sizes:
        value = sym_expr(text)
        value = None if value is None else value.subs(values)
        if value is None or not value.is_Integer:
            return None
        out.append(int(value))
    return tuple(out)


def _rejected_sizes(
    ref: Reference,
    dtype: str,
    device: str,
    edges: list[dict[str, int]] = (),
    shapes: list[list[str]] = (),
) -> list[dict[str, Any]]:
    """Each dim at 1, and at 0, where eager raises on the reference's own
    inputs (a BatchNorm in training: "Expected more than 1 value per
    channel"; `x[:, -1]` of no tokens): Dynamo traces sizes of 2 and more
    alone, so no guard says so, and the kernels would return numbers, or
    read and write before a tensor. And at 2, and each edge size of one dim
    (the other side of a guard): HF's dynamic NTK's `dim / (dim - 2)` raises
    at a head_dim of 2, where the kernels' constexpr division does not
    compile. Also where eager's outputs there take another shape than the
    graph's sizes give (`argsort(x)[:, :1]` of an empty row: Dynamo, tracing
    sizes of 2 and more, fixed its width at 1), or another rank where the
    graph's sizes are not at hand (`.squeeze()` drops a batch of 1 too).
    {"dim": name, "size": the
    size, "error": eager's first line or the shapes, "kind": "shape" for
    those}."""
    out = []
    single = [next(iter(e.items())) for e in edges if len(e) == 1]
    ranks = _output_ranks(ref, dtype, device) if not shapes else None
    for dim in ref.dims:
        tried = [1, 0, 2] + [v for name, v in single if name == dim.name]
        for at in dict.fromkeys(tried):
            if dim.size == at:
                continue
            sizes = {d.name: d.size for d in ref.dims} | {dim.name: at}
            try:
                fn, inputs = _built_in(ref, dtype, device, sizes)
            except Exception:  # noqa: BLE001 - make_inputs itself: not the reference
                continue
            try:
                with torch.no_grad():
                    got = _flat_tensors(fn(*inputs))
            except Exception as err:  # noqa: BLE001 - any rejection
                said = f"{type(err).__name__}: {_first_line(err)}"
                out.append({"dim": dim.name, "size": at, "error": said[:160]})
                continue
            at_sizes = ", ".join(f"{k}={v}" for k, v in sizes.items())
            if ranks is not None and len(got) == len(ranks):
                # no sizes to compare (an output is a view of a buffer): its
                # rank, which a squeeze() drops an axis of 1 from
                for i, (t, rank) in enumerate(zip(got, ranks)):
                    if t.dim() != rank:
                        said = f"output {i} is {tuple(t.shape)} at {at_sizes}, the kernels' {rank}-d"
                        out.append(
                            {
                                "dim": dim.name,
                                "size": at,
                                "error": said,
                                "kind": "shape",
                            }
                        )
                        break
            if len(got) != len(shapes):
                continue
            named = dict(zip(ref.input_names, inputs))
            for i, (t, expr) in enumerate(zip(got, shapes)):
                want = _shape_at(expr, sizes, named)
                if want is not None and want != tuple(t.shape):
                    said = f"output {i} is {tuple(t.shape)} at {at_sizes}, the kernels' {want}"
                    out.append(
                        {"dim": dim.name, "size": at, "error": said, "kind": "shape"}
                    )
                    break
    return out


def _output_ranks(ref: Reference, dtype: str, device: str) -> list[int] | None:
    """The rank of each of eager's outputs at the reference's own sizes."""
    try:
        fn, inputs = _built_in(ref, dtype, device)
        with torch.no_grad():
            return [t.dim() for t in _flat_tensors(fn(*inputs))]
    except Exception:  # noqa: BLE001 - eager rejects its own inputs: nothing to compare
        return None


def _built_in(
    ref: Reference, dtype: str, device: str, sizes: dict[str, int] | None = None
) -> tuple[Any, list[Any]]:
    """A fresh build of the reference, and its example inputs (at `sizes`),
    in `dtype`."""
    torch.manual_seed(0)
    fn = ref.build()
    if isinstance(fn, torch.nn.Module):
        fn = fn.to(device=device, dtype=getattr(torch, dtype))
    return fn, ref.make_inputs(sizes, dtype=dtype, device=device)


def _buffer_dtypes(
    ref: Reference,
    fn: Any,
    dtype: str,
    device: str,
    modules: list,
    codegen_only: bool,
    debug: bool,
) -> None:
    """In an fp32 capture an fp32 buffer may hold a value in the inputs'
    dtype or an fp32 one of its own (the softmax of x.float() that a top-k
    reads); Inductor's code for a low-precision dtype tells them apart: the
    reference is compiled again in one, and each buffer of the same name and
    sizes marked as following the inputs or not."""
    if dtype != "float32":
        return
    fp32 = [b for m in modules for b in m.buffers if b.dtype == "torch.float32"]
    # A KernelBench file names no dtypes, and its scaffold serves bf16 too.
    alt = next(
        (d for d in ("bfloat16", "float16") if d in ref.dtypes),
        "bfloat16" if ref.kind == "kernelbench" else None,
    )
    if not fp32 or alt is None:
        return
    state = _State()
    try:
        other, inputs = _built_in(ref, alt, device)
        _compile(ref, other, inputs, state, codegen_only, True, debug)
    except (_CompileFailed, Exception):  # noqa: BLE001 - the buffers stay unmarked
        return
    sources = [g.source for g in state.graphs if g.source is not None]
    if len(sources) != len(modules):
        return
    for module, source, graph in zip(
        modules, sources, [g for g in state.graphs if g.source is not None]
    ):
        twin, _ = parse_module(source, module.index, _graph_inputs(graph), ref)
        theirs = {b.name: b for b in twin.buffers}
        # Only a compile with the same buffers says which is which (a
        # low-precision one may add an fp32 temporary and number them anew).
        if sorted(theirs) != sorted(b.name for b in module.buffers) or any(
            theirs[b.name].sizes != b.sizes for b in module.buffers
        ):
            continue
        for b in module.buffers:
            if b.dtype == "torch.float32":
                b.follows = theirs[b.name].dtype == f"torch.{alt}"


class _CompileFailed(Exception):
    """torch.compile failed on the reference; the message says why, in a line."""


def _compile(
    ref: Reference,
    fn: Any,
    inputs: list[Any],
    state: "_State",
    codegen_only: bool,
    every_size: bool,
    debug: bool,
) -> None:
    """Run `fn` once under torch.compile with porter's backend, filling `state`."""
    chatter = io.StringIO()
    torch._dynamo.reset()
    patches = inductor_patches(codegen_only)
    target_ctx = codegen_only_target() if codegen_only else contextlib.nullcontext()
    # dynamic=True: every size a symbol and every float argument or attribute
    # a runtime value, unless the reference fixes it; then Dynamo guards on it
    # and the guard tells the launcher what to check (state.constants).
    compiled = torch._dynamo.optimize(
        _make_backend(state, codegen_only),
        dynamic=True if every_size else None,
        guard_filter_fn=state.guard_filter,
    )(fn)
    quiet = contextlib.nullcontext() if debug else silenced_fds(chatter)
    # torch 2.11 counts a break under graph_break, 2.13 some under unimplemented
    counters = torch._dynamo.utils.counters
    counters["graph_break"].clear()
    counters["unimplemented"].clear()
    with (
        private_inductor_cache(),
        quiet,
        quiet_output_code(state.records, chatter),
        target_ctx,
        V.set_choices_handler(WholeRows()),
        _tracing(),
        eager_scaled_softmax(),
        runtime_norm_eps(),
    ):
        with torch._inductor.config.patch(patches), torch.no_grad():
            try:
                compiled(*inputs)
            except Exception as err:
                failed = next((g for g in state.graphs if g.error), None)
                why = (
                    failed.error
                    if failed
                    else f"{type(err).__name__}: {_first_line(err)}"
                )
                raise _CompileFailed(why) from err
            else:
                breaks = [*counters["graph_break"], *counters["unimplemented"]]
                _refuse_data_dependent_sizes(ref, breaks)
                state.breaks = breaks
            finally:
                torch._dynamo.reset()
                if debug:
                    print(chatter.getvalue(), file=sys.stderr)
                if debug and codegen_only:
                    print(
                        "porter: (--debug) Inductor's 'Triton compilation failed' "
                        "and '0 compatible backends' lines, if any above, are "
                        "expected without a GPU: porter keeps the generated code "
                        "and runs none of it",
                        file=sys.stderr,
                    )


def _mode_free(
    ref: Reference, dtype: str, device: str, constants: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The constants without the modules' `training` flags where the mode
    changes nothing: Dynamo guards on a flag the module's code reads (an
    InstanceNorm without running statistics reads it), but where eager in
    train and eval mode gives the same outputs and buffers, neither mode
    need be refused."""
    flags = [c for c in constants if c["expr"].endswith(".training")]
    if not flags or ref.kind != "kernelbench":
        return constants
    runs = []
    for mode in (True, False):
        torch.manual_seed(0)
        model = ref.build().to(device).train(mode)
        torch.manual_seed(1)
        inputs = ref.make_inputs(dtype=dtype, device=device)
        model = model.to(getattr(torch, dtype))
        with torch.no_grad():
            try:
                out = _flat(model(*inputs))
            except Exception:  # noqa: BLE001 - one mode fails: the modes differ
                return constants
        runs.append(
            out
            + list(model.buffers())
            + [t for t in inputs if isinstance(t, torch.Tensor)]
        )
    same = len(runs[0]) == len(runs[1]) and all(
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.shape == b.shape
        and torch.equal(torch.nan_to_num(a.float()), torch.nan_to_num(b.float()))
        or a is b is None
        for a, b in zip(*runs)
    )
    return [c for c in constants if c not in flags] if same else constants


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _flat(o)]
    return [out]


_F64_OP = re.compile(
    r'%\w+ : Tensor "f64\[[^\]].*= call_function\[target=torch\.ops\.\w+\.(\w+)\.'
)
# Views of a float64 input compute nothing in float64 (t[:, None].float()); a
# 0-d one is a Python number's math (x.shape[1] ** 0.5), as eager does it.
_VIEWS = {"unsqueeze", "squeeze", "view", "expand", "slice", "select", "permute"}


def _refuse_float64_math(ref: Reference, source: str, dtype: str) -> None:
    """An op of the compiled graph computing a float64 tensor (a float64
    table times positions cast to float64): porter's kernels compute in fp32
    and serve fp32, fp16 and bf16 calls. A float64 input the reference casts
    down first (`t.float()`), or a size's square root, is ported."""
    ops = [m.group(1) for m in _F64_OP.finditer(source)]
    found = next((op for op in ops if op not in _VIEWS), None)
    if found and dtype != "float64":
        raise PorterError(
            f"{ref.path}: {ref.name} computes in float64 (its graph's {found}), which "
            "porter's kernels compute in fp32; nothing was written: give its "
            "float64 inputs in float32, or cast them down first"
        )


# Triton's names of the fnuz fp8 formats (float8_e4m3fnuz, float8_e5m2fnuz)
_AMD_FP8 = re.compile(r"\b(?:tl\.float8e4b8|tl\.float8e5b16|fp8e4b8|fp8e5b16)\b")
_AMD_FP8_NAMES = {"4b8": "float8_e4m3fnuz", "5b16": "float8_e5m2fnuz"}


def _refuse_amd_fp8(ref: Reference, source: str) -> None:
    """A kernel reading or writing an fp8 format of AMD GPUs: its parity ran
    in the interpreter, and sm_90 does not compile it (`type fp8e4b8 not
    supported in this architecture`)."""
    found = _AMD_FP8.search(source)
    if found:
        name = _AMD_FP8_NAMES["4b8" if "4b8" in found.group(0) else "5b16"]
        raise PorterError(
            f"{ref.path}: {ref.name} works in {name}, an fp8 format of AMD GPUs "
            "that Triton does not compile for NVIDIA ones; nothing was written: "
            "use float8_e4m3fn or float8_e5m2"
        )


# A module-level tensor Inductor binds when it loads the module:
# `_tensor_constant0 = None  # device(type='cpu') torch.float32 (16,) (1,) 7f63...`
_CONSTANT = re.compile(
    r"^(\w+) = None  # device\(.*?\) torch\.(\w+) \(([\d, ]*)\)", re.M
)


def _refuse_tensor_constants(ref: Reference, source: str) -> None:
    """A tensor the function builds from literals (a lookup table,
    `torch.tensor([0.0, 0.5, ...])`) that Inductor does not fold into its
    kernels: it binds the values when it loads the module, and the capture,
    which reads the module's text, never sees them (the scaffold read a name
    it never bound)."""
    call = source.split("\ndef call(", 1)[-1]
    for m in _CONSTANT.finditer(source):
        name, dtype, shape = m.groups()
        if re.search(rf"\b{name}\b", call):
            raise PorterError(
                f"{ref.path}: {ref.name} builds a {dtype} tensor of shape "
                f"({shape}) from literals (torch.tensor([...])), which "
                "Inductor keeps outside its kernels where the capture cannot read "
                "it; nothing was written: build it in make_inputs and pass it as "
                "an argument"
            )


def _refuse_unnamed_inputs(
    ref: Reference, module: CompiledModule, inputs: list[Any]
) -> None:
    """Inputs of Inductor's code porter could not match to the graph's: where
    make_inputs gives views of one tensor that are changed in place (k and v as
    kv[:, 0] and kv[:, 1]), torch.compile passes their one base instead, and
    the scaffold would read names it never binds."""
    if all(gi.wrapper_name for gi in module.inputs):
        return
    tensors = [
        (n, v) for n, v in zip(ref.input_names, inputs) if isinstance(v, torch.Tensor)
    ]
    shared = [
        (a, b)
        for i, (a, u) in enumerate(tensors)
        for b, w in tensors[i + 1 :]
        if u.untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
    ]
    why = (
        f"make_inputs gives {shared[0][0]} and {shared[0][1]} as views of one tensor, "
        "which torch.compile passes as their one base; give each its own tensor"
        if shared
        else "torch.compile's code takes other inputs than its graph"
    )
    raise PorterError(
        f"{ref.path}: porter cannot name the compiled code's inputs ({why}); "
        "nothing was written"
    )


def _refuse_host_only_calls(ref: Reference, module: CompiledModule) -> None:
    """An extern call to a CPU-only kernel (attention's
    aten._scaled_dot_product_flash_attention_for_cpu): the scaffold is for the
    GPU, where the op does not exist (on the CPU it died of SIGFPE at a length
    of 0)."""
    for step in module.steps:
        found = re.search(r"[\w.]*_for_cpu\w*", step.text or "")
        if step.kind == "extern" and found:
            raise PorterError(
                f"{ref.path}: the compiled graph of {ref.name} calls {found.group(0)}, "
                "a CPU-only kernel the scaffold could not run on a GPU; capture on a GPU"
            )


def _refuse_data_dependent_sizes(ref: Reference, breaks: list[str]) -> None:
    """A graph break at an op whose output size depends on the data (the
    nonzero of a boolean-mask index): the ops after it ran eagerly, outside
    any graph porter sees, so a scaffold would leave them out."""
    for reason in breaks:
        found = re.search(r"Operator `([\w.]+)`'s output shape depends on", reason)
        if found:
            op = re.sub(r"\.default$", "", found[1])
            why = (
                " (a boolean-mask index calls aten.nonzero)" if "nonzero" in op else ""
            )
            raise PorterError(
                f"{ref.path}: {ref.name} calls {op}{why}, whose output size depends "
                "on the data: a graph "
                "break, which porter cannot port; nothing was written: compute at "
                "sizes the inputs fix (torch.where over every row, scatter_add_ "
                "into a tensor of known size)"
            )


def _refuse_reassigned(ref: Reference, model: torch.nn.Module, before: dict) -> None:
    """A forward that assigns a new tensor to a buffer (`self.ema = self.ema *
    0.9 + ...`) has Dynamo store the graph's output back after the call,
    which a scaffold's kernels cannot do; an update in place ports."""
    buffers = dict(model.named_buffers())
    after = {**buffers, **_tensor_attributes(model)}
    for name, t in before.items():
        if after.get(name) is not t:
            what = "buffer" if name in buffers else "attribute"
            raise PorterError(
                f"{ref.path}: {ref.name}.forward assigns a new tensor to the {what} "
                f"{module_attr(name)}; porter ports buffers updated in place "
                f"({module_attr(name)}.copy_(...))"
            )


def _tensor_attributes(model: Any) -> dict[str, torch.Tensor]:
    """A module's plain tensor attributes, neither parameters nor buffers (an
    RNN's `self.hidden = torch.randn(...)`), by dotted name."""
    if not isinstance(model, torch.nn.Module):
        return {}
    return {
        f"{path}.{name}".lstrip("."): value
        for path, sub in model.named_modules()
        for name, value in vars(sub).items()
        if isinstance(value, torch.Tensor) and not name.startswith("_")
    }


def _unread(
    arguments: dict[str, Any], base: list[str] | None, guard_names: list[str]
) -> list[str]:
    """The number and flag arguments Dynamo neither guarded on nor took into
    its graph (a softcap a reference leaves unused): any value serves."""
    if base is None:
        return []
    text = "\n".join(base + guard_names)
    return [
        name
        for name, value in arguments.items()
        if isinstance(value, (bool, int, float, str))
        and not re.search(rf"\b(l_)?{re.escape(name)}_?\b", text)
    ]


def _refuse_returned_state(ref: Reference, fn: Any, out: Any) -> None:
    """A module's own parameter or buffer returned as an output (`return y,
    self.acc`): Dynamo returns it outside the compiled graph, where the
    scaffold has no output for it."""
    if not isinstance(fn, torch.nn.Module):
        return
    state = [*fn.named_parameters(), *fn.named_buffers()]
    for value in _flat(out):
        name = next((n for n, t in state if t is value), None)
        if name is not None:
            attr = module_attr(name)
            raise PorterError(
                f"{ref.path}: {ref.name} returns its own {attr}; porter ports outputs "
                f"that are new tensors or inputs: return {attr}.clone()"
            )


def _output_map(ref: Reference, out: Any, inputs: list[Any]) -> list[dict[str, Any]]:
    """Which reference outputs are inputs returned as they are (changed in
    place): Dynamo returns those itself, not the compiled graph. Empty where
    every output comes from the graph."""
    if isinstance(out, (tuple, list)) and any(
        isinstance(o, (tuple, list)) for o in out
    ):
        # the scaffold returns one flat tuple: its callers would unpack it wrongly
        raise PorterError(
            f"{ref.path}: {ref.name} returns a tuple inside its tuple of outputs; "
            "return its tensors as one flat tuple"
        )
    entries = []
    seen: list[Any] = []
    for value in _flat(out):
        seen.append(value)
        if value is None:
            entries.append({"kind": "none"})
            continue
        first = next(i for i, v in enumerate(seen) if v is value)
        if first < len(seen) - 1:
            # the same tensor again: Dynamo returns it once from the graph
            entries.append({"kind": "same", "index": first})
            continue
        if not isinstance(value, torch.Tensor):
            raise PorterError(
                f"{ref.path}: {ref.name} returns a {type(value).__name__}; porter ports "
                "references that return tensors (or None)"
            )
        same = [
            name
            for name, t in zip(ref.input_names, inputs)
            if isinstance(t, torch.Tensor) and t is value
        ]
        if same:
            entries.append({"kind": "input", "name": same[0]})
            continue
        for name, t in zip(ref.input_names, inputs):
            if (
                isinstance(t, torch.Tensor)
                and t.numel()
                and value.numel()
                and t.untyped_storage().data_ptr() == value.untyped_storage().data_ptr()
            ):
                raise PorterError(
                    f"{ref.path}: an output of {ref.name} is a view of its input "
                    f"{name}; return the input itself, or a new tensor"
                )
        entries.append({"kind": "graph"})
    if all(e["kind"] == "graph" for e in entries):
        return []
    return entries


def _flat_tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat_tensors(o)]
    return []


def _output_dtypes(
    ref: Reference, out: Any, dtype: str, device: str
) -> tuple[list[str], list[int]]:
    """Per output: "input" if its dtype follows the inputs' (rerun the reference in
    another float dtype to tell), else the fixed dtype it always has (a float32
    scale, an int8 tensor). One capture dtype alone cannot tell them apart.
    Second, the outputs eager returns as a strided view at the capture dtype but
    as a new contiguous tensor at the other (`buf[:, :n].to(x.dtype)` of a
    float32 buffer: .to() copies except at float32)."""
    captured = _flat_tensors(out)
    # the first other float dtype eager runs the reference in (one may reject
    # it: masked_fill(m, -1e9) overflows float16, bfloat16 holds it)
    other, alt = captured, None
    for alt in dict.fromkeys(
        d for d in (*ref.dtypes, "float16", "bfloat16") if d != dtype
    ):
        try:
            fn = ref.build()
            if isinstance(fn, torch.nn.Module):
                fn = fn.to(device=device, dtype=getattr(torch, alt))
            with torch.no_grad():
                other = _flat_tensors(fn(*ref.make_inputs(dtype=alt, device=device)))
            break
        except Exception:  # noqa: BLE001 - a dtype it rejects: try the next
            other = captured  # a reference for one dtype only: all fixed
    dtypes = [
        (
            "input"
            if a.dtype == getattr(torch, dtype) and b.dtype == getattr(torch, alt)
            else str(a.dtype)
        )
        for a, b in zip(captured, other)
    ]
    copied = [
        i
        for i, (a, b) in enumerate(zip(captured, other))
        if dtypes[i] == "input"
        and not a.is_contiguous()
        and b.is_contiguous()
        and a.shape == b.shape
    ]
    return dtypes, copied


def guard_expr(name: str) -> str | None:
    """A guard's source as the scaffold spells it: self._modules['bn'].training
    -> self.bn.training; a forward argument's name as it is. None for sources
    a scaffold has no hold on (dunder attributes, hooks, dict internals)."""
    text = re.sub(r"^L\['(\w+)'\]", r"\1", name)
    # nn.Sequential's members by index: self.seq[1].min_val
    text = re.sub(r"\._modules\['(\d+)'\]", r"[\1]", text)
    text = re.sub(r"\._(?:modules|parameters|buffers)\['(\w+)'\]", r".\1", text)
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*|\[\d+\])*", text):
        return None
    if any(part.startswith("_") for part in re.split(r"[.\[]", text)):
        return None
    return text


def _none_parameters(fn: Any, constants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`constants` and a module's parameters and buffers registered as None
    (nn.Linear with bias=False) that Dynamo did not guard: the kernels add no
    bias, so the scaffold refuses a module that has one."""
    if not isinstance(fn, torch.nn.Module):
        return constants
    said = {c["expr"] for c in constants}
    nones = [
        module_attr(f"{path}.{name}".lstrip("."))
        for path, sub in fn.named_modules()
        for table in (sub._parameters, sub._buffers)
        for name, value in table.items()
        if value is None
    ]
    return constants + [
        {"expr": e, "value": None, "tuple": False} for e in nones if e not in said
    ]


def _module_structure(
    fn: Any, modules: list[CompiledModule], constants: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """`constants` after a module's structure that a constructor argument may
    change: each container's length (nn.ModuleList, nn.Sequential: a depth
    of 3 ran the captured 2 layers, with no error) and the type of each
    submodule whose attributes the kernels or the constants read (LayerNorm
    or Identity picked by a flag), checked before those attributes."""
    if not isinstance(fn, torch.nn.Module):
        return constants
    said = {c["expr"] for c in constants}
    containers = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)
    first = [
        {"expr": f"len({module_attr(path)})", "value": len(sub), "tuple": False}
        for path, sub in fn.named_modules()
        if path and isinstance(sub, containers)
    ]
    read = [c["expr"] for c in constants if c["expr"].startswith("self.")]
    read += [
        module_attr(gi.target)
        for m in modules
        for gi in m.inputs
        if gi.source.startswith("L['self']")
    ]
    for path, sub in fn.named_modules():
        attr = module_attr(path)
        if path and any(e.startswith(f"{attr}.") for e in read):
            name = type(sub).__name__
            first.append(
                {"expr": f"type({attr}).__name__", "value": name, "tuple": False}
            )
    return [c for c in first if c["expr"] not in said] + constants


def _constants(found: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name, value in found:
        expr = guard_expr(name)
        if expr is not None and all(c["expr"] != expr for c in out):
            entry = {
                "expr": expr,
                "value": list(value) if isinstance(value, tuple) else value,
                "tuple": isinstance(value, tuple),
            }
            if isinstance(value, torch.dtype):
                entry["value"] = str(value)  # torch.bfloat16, as code says it
                entry["code"] = True
            out.append(entry)
    return out


def _refuse_list_argument(ref: Reference, source: str) -> None:
    """A tensor the reference takes inside a list or tuple argument
    (`L['streams'][1]`): the launcher would name all of them `streams`."""
    item = re.match(r"L\['(\w+)'\]\[\d+\]", source)
    if not item:
        return
    name = item.group(1)
    try:
        params = {p.name: p.kind for p in ref.call_params()}
    except (TypeError, ValueError):  # a signature inspect cannot read
        params = {}
    if params and name not in params:  # inspect saw through a wrapper Dynamo traced
        raise PorterError(
            f"{ref.path}: {ref.name} is behind a decorator whose wrapper takes "
            f"*{name}; porter sees through torch.no_grad, inference_mode and "
            "torch.compile alone: capture the undecorated function"
        )
    how = (
        f"its tensors as *{name}"
        if params.get(name) == inspect.Parameter.VAR_POSITIONAL
        else f"tensors inside the list or tuple {name}"
    )
    raise PorterError(
        f"{ref.path}: {ref.name} takes {how}, which porter cannot "
        "port; nothing was written: name each tensor as its own parameter"
    )


def _refuse_global_tensor(ref: Reference, source: str, kind: str) -> None:
    """A tensor the reference reads from its file's globals (a module-level
    NF4 table, `G['TABLE']`): the scaffold, standalone, has no such global
    (it read `self.TABLE` in a plain function)."""
    found = re.fullmatch(r"G\['(\w+)'\].*", source)
    if found and kind == "tensor":
        raise PorterError(
            f"{ref.path}: {ref.name} reads the module-level tensor "
            f"{found.group(1)}, which a standalone scaffold does not have; nothing "
            "was written: pass it as an argument (make_inputs can build it)"
        )


def _graph_inputs(graph: _Graph) -> list[GraphInput]:
    out = []
    for _, source, kind, value in graph.placeholders:
        out.append(
            GraphInput(
                wrapper_name="",
                source=source,
                kind=kind,
                target=source_to_target(source),
                value=value if kind == "scalar" else None,
                dtype=value if kind == "tensor" and isinstance(value, str) else "",
            )
        )
    return out


@contextlib.contextmanager
def _tracing() -> Iterator[None]:
    """Dynamo's settings for every trace of the reference: two inputs' axes of
    one example size stay two symbols unless the reference ties them (a square
    example matrix is not a square-only op); a warning or print in the
    reference (InstanceNorm's about num_features) is replayed after the graph
    instead of breaking it in two."""
    from torch.fx.experimental import _config as fx_config

    logging = {warnings.warn, print}
    with (
        fx_config.patch(use_duck_shape=False),
        torch._dynamo.config.patch(reorderable_logging_functions=logging),
    ):
        yield


_KEY = re.compile(r"\['([^']+)'\]|\[(\d+)\]|\.(\w+)")


def source_to_target(source: str) -> str:
    """L['self']._modules['ln']._parameters['weight'] -> ln.weight; L['x'] -> x;
    L['x'].size()[0] -> x.size(0)."""
    size = re.search(r"\.size\(\)\[(\d+)\]$", source)
    if size:
        return f"{source_to_target(source[: size.start()])}.size({size.group(1)})"
    stride = re.search(r"\.stride\(\)\[(\d+)\]$", source)
    if stride:
        return f"{source_to_target(source[: stride.start()])}.stride({stride.group(1)})"
    parts = []
    # an index (a closure's cell, `__closure__[0]`) stays a part: module_attr
    # writes it back as [0]
    for key, index, attr in _KEY.findall(source):
        name = key or index or attr
        if name in ("self", "_modules", "_parameters", "_buffers"):
            continue
        parts.append(name)
    return ".".join(parts) or source


def _describe_target(device: str) -> str:
    if device == "cpu":
        return f"codegen-only Triton target cuda:{CODEGEN_ONLY_ARCH} (no GPU; nothing executed by Inductor)"
    major, minor = torch.cuda.get_device_capability()
    return f"cuda:{major}{minor} ({torch.cuda.get_device_name()})"


def _record_configs(state: _State, kernels: list) -> list[str]:
    """After the first run, read the config the autotuner kept for each kernel."""
    from torch._inductor.codecache import PyCodeCache

    candidates = []
    for attr in ("modules", "modules_no_attr"):
        found = getattr(PyCodeCache, attr, None)
        if isinstance(found, dict):
            candidates += list(found.values())
        elif isinstance(found, list):
            candidates += found
    candidates += [m for m in list(sys.modules.values()) if m is not None]
    missing = []
    for kernel in kernels:
        for module in candidates:
            # vars(), not getattr: torch.ops-style modules invent attributes.
            tuner = getattr(module, "__dict__", {}).get(kernel.name)
            launchers = getattr(tuner, "launchers", None)
            if launchers:
                cfg = launchers[0].config
                kernel.config = LaunchConfig(
                    kwargs={k: int(v) for k, v in cfg.kwargs.items()},
                    num_warps=int(cfg.num_warps),
                    num_stages=int(cfg.num_stages),
                )
                break
        else:
            missing.append(
                f"no autotuned config found for {kernel.name}; the launcher uses porter's heuristic"
            )
    return missing
