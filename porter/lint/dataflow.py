"""A small abstract interpreter over a kernel body.

It walks the statements in program order and gives every expression a `Val`:
a handful of facts about where the value came from (a program id, a runtime
integer argument, a raw `tl.load`, float math, ...). Along the way it records
the sites rules care about (products, casts, `//` and `%`, arithmetic on
loaded values, memory operations). Rules read those records; none of them walks
the body again for dataflow.

Branches are joined (may-facts OR, must-facts AND) and loop bodies run twice so
loop-carried values reach a fixed point for these few facts.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from porter.lint import names
from porter.lint.source import CONSTEXPR, FLOAT, POINTER, Aliases, Kernel

# NaN-propagating min/max helpers bound a range exactly like tl.maximum/minimum:
# Inductor's triton_helpers and the ones porter's scaffolds define.
_MIN_MAX_HELPERS = {
    "triton_helpers.maximum": "maximum",
    "triton_helpers.minimum": "minimum",
    "maximum_nan": "maximum",
    "minimum_nan": "minimum",
}

_EMPTY: frozenset = frozenset()

_INT_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
_FLOAT_DTYPES = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8e4nv",
    "float8e5",
    "float8e4b15",
}
_REDUCTIONS = {
    "sum",
    "max",
    "min",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "reduce",
    "xor_sum",
    "prod",
}
_ROUNDING = {"floor", "ceil", "rint", "round", "nearbyint", "trunc"}
_FLOAT_MATH = _ROUNDING | {
    "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "tan",
    "tanh", "sigmoid", "erf", "fma", "div_rn", "fdiv", "pow", "softmax", "fast_expf", "fast_logf",
}  # fmt: skip
_RANGES = {"range", "static_range"}


@dataclass(frozen=True)
class Val:
    """What is known about a value. Flags are may-facts unless noted "must"."""

    # Integer provenance; cleared once the value is int64.
    pid: bool = False  # from tl.program_id(0)
    # from tl.program_id(1|2) (at most 65,535), or a program id % a constexpr
    small_pid: bool = False
    size: bool = False  # from a runtime-size argument (num_tokens, M, ...)
    param: bool = False  # from another runtime int argument (stride, offset)
    index_load: bool = False  # from a loaded value used as an integer
    wide: bool = False  # must: int64 already
    from_pid: bool = False  # from tl.program_id(0), widened or not
    # Precision.
    loads: frozenset = _EMPTY  # raw tl.load results (call node ids) not yet cast
    f64_params: frozenset = _EMPTY  # unannotated float scalar params not yet cast
    floaty: bool = False  # float math happened (division, float literal, exp, ...)
    # must: a float at fp32 or wider (an fp32 operand promotes the whole op to fp32)
    f32: bool = False
    # Range.
    neg: bool = False  # may be negative
    # may be negative by evidence, not just arithmetic: a negation or a negative literal
    negated: bool = False
    # derived from an in-kernel max(|x|) (a quantizer's scale): x / scale is bounded
    absmax: bool = False
    from_abs: bool = False  # tl.abs / abs of something
    const: bool = False  # must: compile-time constant (literal or constexpr)
    clamp_lo: bool = False  # must: bounded below (tl.maximum / tl.clamp)
    clamp_hi: bool = False  # must: bounded above (tl.minimum / tl.clamp)
    # Structure.
    ptr: str | None = None  # base pointer parameter, when this is a pointer
    params: frozenset = _EMPTY  # parameters this value reads
    mults: frozenset = _EMPTY  # ids of `*` nodes that fed this value
    # the products this value is a sum of (no further `*`, `//`, cast in between):
    # added to a pointer, they are the element offset that may pass 2**31
    terms: frozenset = _EMPTY


def join(a: Val, b: Val) -> Val:
    return Val(
        pid=a.pid or b.pid,
        small_pid=a.small_pid or b.small_pid,
        size=a.size or b.size,
        param=a.param or b.param,
        index_load=a.index_load or b.index_load,
        wide=a.wide and b.wide,
        from_pid=a.from_pid or b.from_pid,
        loads=a.loads | b.loads,
        f64_params=a.f64_params | b.f64_params,
        floaty=a.floaty or b.floaty,
        f32=a.f32 and b.f32,
        neg=a.neg or b.neg,
        negated=a.negated or b.negated,
        absmax=a.absmax or b.absmax,
        const=a.const and b.const,
        clamp_lo=a.clamp_lo and b.clamp_lo,
        clamp_hi=a.clamp_hi and b.clamp_hi,
        ptr=a.ptr or b.ptr,
        params=a.params | b.params,
        mults=a.mults | b.mults,
        terms=a.terms | b.terms,
    )


def promote(vals: list[Val]) -> Val:
    """Operands combined by one op (tl.where, tl.maximum): Triton promotes them to
    a common type, so int64 or fp32 on one side makes the result int64 or fp32."""
    out = join_all(vals)
    if any(v.f32 for v in vals):
        out = replace(out, f32=True, loads=_EMPTY)
    return as_int64(out) if any(v.wide for v in vals) else out


def as_int64(v: Val) -> Val:
    """v once it is int64: none of its int32 provenance can overflow any more."""
    return replace(
        v, wide=True, pid=False, small_pid=False, size=False, param=False,
        index_load=False,
    )  # fmt: skip


def _returns(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return)


def _tests_dtype(test: ast.expr) -> bool:
    """A compile-time branch on an element type (`x.dtype == tl.bfloat16`, `is_fp16()`)."""
    for n in ast.walk(test):
        if isinstance(n, ast.Attribute) and (
            n.attr in ("dtype", "element_ty") or n.attr.startswith("is_")
        ):
            return True
    return False


def grows(v: Val) -> bool:
    """An int32 index that grows with the input: rows, tokens, loaded slots."""
    return (v.pid or v.size or v.index_load) and not v.wide


def join_all(vals: list[Val]) -> Val:
    out = vals[0] if vals else Val()
    for v in vals[1:]:
        out = join(out, v)
    return out


@dataclass
class Site:
    """An expression a rule may report on, with the values of its operands."""

    node: ast.AST
    operands: list[Val]
    operand_nodes: list[ast.AST] = field(default_factory=list)
    detail: str = ""  # the operator, or the cast's target dtype


@dataclass
class MemOp:
    kind: str  # "load", "store" or "barrier"
    base: str | None
    node: ast.AST


@dataclass
class Flow:
    """Everything the interpreter recorded for one kernel (dicts keyed by node id)."""

    mults: dict[int, Site] = field(default_factory=dict)
    # Products that reach a pointer offset, and products later cast to int64.
    pointer_mults: set[int] = field(default_factory=set)
    # Products that are a term of a pointer offset: their value is an element offset.
    offset_terms: set[int] = field(default_factory=set)
    widened_terms: set[int] = field(default_factory=set)  # products cast to int64
    casts: dict[int, Site] = field(default_factory=dict)
    divmods: dict[int, Site] = field(default_factory=dict)
    # Arithmetic, comparisons, reductions and math functions, with operand values.
    math_uses: dict[int, Site] = field(default_factory=dict)
    compares: dict[int, Site] = field(default_factory=dict)
    memops: list[MemOp] = field(default_factory=list)  # loads/stores/barriers in order
    # Loads whose value indexes memory (integers, not data), and each load's base.
    index_loads: set[int] = field(default_factory=set)
    load_base: dict[int, str | None] = field(default_factory=dict)
    tested_params: set[str] = field(default_factory=set)  # params used as a condition
    # `acc += x` inside a loop, with the values of acc and x
    accumulations: dict[int, Site] = field(default_factory=dict)
    # Each memory op's branch path: (id of the if, branch taken) pairs.
    memop_paths: dict[int, tuple] = field(default_factory=dict)
    # The test of each `if` on constexpr parameters alone, by the if's id.
    compile_time_tests: dict[int, ast.expr] = field(default_factory=dict)


def analyze(
    kernel: Kernel,
    aliases: Aliases,
    helper: bool = False,
    fp32_pointers: frozenset = _EMPTY,
) -> Flow:
    """`helper`: the function is called from other kernels, so its parameters are
    traced values of unknown type, not launch arguments. `fp32_pointers`: pointer
    parameters every launch site passes an fp32 tensor (a scratch buffer)."""
    interp = _Interpreter(kernel, aliases, helper)
    interp.fp32_pointers = set(fp32_pointers)
    interp.block(kernel.func.body)
    return interp.flow


def _param_val(p) -> Val:
    base = Val(params=frozenset([p.name]))
    if p.kind == POINTER:
        return replace(base, ptr=p.name)
    if p.kind == CONSTEXPR:
        return replace(base, const=True)
    if p.kind == FLOAT:
        f64 = frozenset() if p.annotated else frozenset([p.name])
        return replace(
            base,
            floaty=True,
            f64_params=f64,
            neg=True,
            f32=p.dtype in ("float32", "fp32", "float64", "fp64"),
        )
    if p.is_bool:
        return base
    # Integer arguments are sizes, strides and offsets; a negative value shows up as
    # a subtraction or a negation in the kernel, which is where PT009 looks.
    neg = False
    if p.is_wide:
        return replace(base, wide=True, neg=neg)
    if names.is_runtime_size(p.name):
        return replace(base, size=True, neg=neg)
    return replace(base, param=True, neg=neg)


def _is_bitcast(call: ast.Call) -> bool:
    for kw in call.keywords:
        if kw.arg == "bitcast":
            return not (isinstance(kw.value, ast.Constant) and not kw.value.value)
    return False


def _helper_param_val(p) -> Val:
    """Helper parameters: pointers and constexprs as declared, anything else unknown."""
    if p.kind in (POINTER, CONSTEXPR):
        return _param_val(p)
    return Val(params=frozenset([p.name]))


class _Interpreter:
    def __init__(self, kernel: Kernel, aliases: Aliases, helper: bool):
        self.kernel = kernel
        self.aliases = aliases
        self.flow = Flow()
        self.env: dict[str, Val] = {
            p.name: _helper_param_val(p) if helper else _param_val(p)
            for p in kernel.params
        }
        self.params = {p.name: p for p in kernel.params}
        self._seen_memops: set[int] = set()
        self.path: tuple = ()  # the branches taken to reach the current statement
        self.fp32_pointers: set[str] = set()
        self.loop_depth = 0
        self.fresh_in_loop: set[str] = set()  # names assigned afresh in this loop body

    # -- recording (loop bodies run twice: later visits join into the first record)

    def _record(self, table: dict[int, Site], node: ast.AST, site: Site) -> None:
        old = table.get(id(node))
        if old is not None and len(old.operands) == len(site.operands):
            site.operands = [join(a, b) for a, b in zip(old.operands, site.operands)]
        table[id(node)] = site

    def _memop(self, kind: str, base: str | None, node: ast.AST) -> None:
        if id(node) not in self._seen_memops:
            self._seen_memops.add(id(node))
            self.flow.memops.append(MemOp(kind, base, node))
            self.flow.memop_paths[id(node)] = self.path

    def _pointer_sink(self, offset: Val) -> None:
        """`offset` is added to a pointer: its products and loads index memory."""
        self.flow.pointer_mults |= offset.mults
        self.flow.offset_terms |= offset.terms
        self.flow.index_loads |= offset.loads

    # -- statements

    def block(self, body: list[ast.stmt]) -> None:
        path = self.path
        for stmt in body:
            self.stmt(stmt)
            # After `if c: ...; return`, the rest of the block runs only when not c.
            if isinstance(stmt, ast.If) and _returns(stmt.body):
                self.path = self.path + ((id(stmt), False),)
            elif isinstance(stmt, ast.If) and stmt.orelse and _returns(stmt.orelse):
                self.path = self.path + ((id(stmt), True),)
        self.path = path

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            for target in s.targets:
                self.assign(target, s.value)
                if isinstance(target, ast.Name):
                    self.fresh_in_loop.add(target.id)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, s.value)
        elif isinstance(s, ast.AugAssign):
            value = self.expr(s.value)
            if isinstance(s.target, ast.Name):
                old = self.env.get(s.target.id, Val())
                carried = s.target.id not in self.fresh_in_loop
                if self.loop_depth and carried and isinstance(s.op, (ast.Add, ast.Sub)):
                    site = Site(s, [old, value], [s.target, s.value], "accumulation")
                    self._record(self.flow.accumulations, s, site)
                self.env[s.target.id] = self.binop(
                    s.op, old, value, s, s.target, s.value
                )
        elif isinstance(s, ast.Expr):
            self.expr(s.value)
        elif isinstance(s, ast.If):
            self._tested(s.test)
            self.expr(s.test)
            if self._compile_time(s.test):
                self.flow.compile_time_tests[id(s)] = s.test
            before, path = dict(self.env), self.path
            self.path = path + ((id(s), True),)
            self.block(s.body)
            after_body = self.env
            self.env = dict(before)
            self.path = path + ((id(s), False),)
            self.block(s.orelse)
            self.path = path
            if _tests_dtype(s.test) or self._compile_time(s.test):
                # `if x.dtype.is_bf16(): x = x.to(tl.float32)` (the other side runs when
                # x is not 16-bit float), or a constexpr mode whose path upcasts: x is
                # taken as fp32 after the if.
                for name in set(after_body) | set(self.env):
                    a, b = after_body.get(name), self.env.get(name)
                    if a is not None and b is not None and (a.f32 or b.f32):
                        after_body[name] = self.env[name] = replace(
                            join(a, b), f32=True, loads=_EMPTY
                        )
            self.env = self._join_env(after_body, self.env)
        elif isinstance(s, (ast.For, ast.While)):
            self.loop(s)
        elif isinstance(s, (ast.Return, ast.Assert)):
            value = s.value if isinstance(s, ast.Return) else s.test
            if value is not None:
                self.expr(value)
        elif isinstance(s, ast.With):
            self.block(s.body)

    def loop(self, s: ast.For | ast.While) -> None:
        # A loop-carried Python float (`total = 0.0`) becomes an fp32 scalar tensor.
        for name, v in self.env.items():
            if v.const and v.floaty and not v.params:
                self.env[name] = replace(v, f32=True)
        before = dict(self.env)
        self.loop_depth += 1
        outer_fresh, self.fresh_in_loop = self.fresh_in_loop, set()
        for _ in range(2):
            if isinstance(s, ast.For):
                self.bind(s.target, self.iteration(s.iter))
            else:
                self.expr(s.test)
            self.block(s.body)
            self.env = self._join_env(before, self.env)
        self.loop_depth -= 1
        self.fresh_in_loop = outer_fresh
        self.block(s.orelse)

    def iteration(self, it: ast.expr) -> Val:
        """The loop variable's value: for range(start, stop, step), bounded by its arguments."""
        if isinstance(it, ast.Call) and self._fn(it) in _RANGES and it.args:
            vals = [self.expr(a) for a in it.args]
            for v in vals:
                self.flow.index_loads |= v.loads
            start = vals[0] if len(vals) > 1 else Val(const=True)
            # Triton types the induction variable as its bounds promoted together.
            out = replace(promote(vals), neg=start.neg, const=False, loads=_EMPTY)
            return replace(out, mults=_EMPTY, terms=_EMPTY)
        return self.expr(it)

    def _join_env(self, a: dict[str, Val], b: dict[str, Val]) -> dict[str, Val]:
        out = dict(a)
        for k, v in b.items():
            out[k] = join(out[k], v) if k in out else v
        return out

    def assign(self, target: ast.AST, value: ast.expr) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(
            value, (ast.Tuple, ast.List)
        ):
            if len(target.elts) == len(value.elts):
                vals = [self.expr(v) for v in value.elts]
                for t, v in zip(target.elts, vals):
                    self.bind(t, v)
                return
        self.bind(target, self.expr(value))

    def bind(self, target: ast.AST, val: Val) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = val
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.bind(t.value if isinstance(t, ast.Starred) else t, val)

    def _compile_time(self, test: ast.expr) -> bool:
        """A test on constexpr parameters only (`if casting_mode == LLAMA`)."""
        used = [n.id for n in ast.walk(test) if isinstance(n, ast.Name)]
        return bool(used) and all(
            n in self.params and self.params[n].kind == CONSTEXPR or n not in self.env
            for n in used
        )

    def _tested(self, test: ast.expr) -> None:
        """Remember params used directly as a condition: they behave like 0/1 flags."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            right = test.comparators[0]
            if isinstance(test.ops[0], (ast.Eq, ast.NotEq)) and isinstance(
                right, ast.Constant
            ):
                if right.value in (0, 1, True, False):
                    test = test.left
        if isinstance(test, ast.Name) and test.id in self.params:
            self.flow.tested_params.add(test.id)

    # -- expressions

    def expr(self, node: ast.AST) -> Val:
        handler = getattr(self, "_" + type(node).__name__, None)
        if handler is not None:
            v = handler(node)
        else:
            vals = [
                self.expr(c)
                for c in ast.iter_child_nodes(node)
                if isinstance(c, ast.expr)
            ]
            v = join_all(vals)
        # Whatever proved a value non-negative (max with 0, abs) clears the evidence.
        return v if v.neg or not v.negated else replace(v, negated=False)

    def _Name(self, node: ast.Name) -> Val:
        # Not a parameter or local: a module-level constant, by convention.
        return self.env.get(node.id, Val(const=True))

    def _Constant(self, node: ast.Constant) -> Val:
        v = node.value
        if isinstance(v, float):
            return Val(floaty=True, const=True, neg=v < 0, negated=v < 0)
        if isinstance(v, int):
            return Val(const=True, neg=v < 0, negated=v < 0)
        return Val(const=True)

    def _Attribute(self, node: ast.Attribute) -> Val:
        if self.aliases.canon(node) and self.aliases.canon(node).startswith("triton."):
            return Val(const=True)  # tl.float32 and friends
        if node.attr in ("dtype", "element_ty", "shape"):
            return Val(const=True)
        return self.expr(node.value)

    def _Subscript(self, node: ast.Subscript) -> Val:
        self.expr(node.slice)
        return self.expr(node.value)

    def _IfExp(self, node: ast.IfExp) -> Val:
        self._tested(node.test)
        self.expr(node.test)
        return join(self.expr(node.body), self.expr(node.orelse))

    def _UnaryOp(self, node: ast.UnaryOp) -> Val:
        v = self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant):
                return replace(v, neg=True, negated=True)
            return replace(v, neg=True, negated=True, clamp_lo=False, clamp_hi=False)
        return v

    def _BinOp(self, node: ast.BinOp) -> Val:
        left = self.expr(node.left)
        right = self.expr(node.right)
        return self.binop(node.op, left, right, node, node.left, node.right)

    def binop(self, op, left: Val, right: Val, node, lnode, rnode) -> Val:
        operands, nodes = [left, right], [lnode, rnode]
        if isinstance(op, ast.Mult):
            self._record(self.flow.mults, node, Site(node, operands, nodes, "*"))
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            detail = "//" if isinstance(op, ast.FloorDiv) else "%"
            self._record(self.flow.divmods, node, Site(node, operands, nodes, detail))
        if isinstance(op, (ast.Add, ast.Sub)) and (left.ptr or right.ptr):
            self._pointer_sink(right if left.ptr else left)
            return Val(ptr=left.ptr or right.ptr, params=left.params | right.params)
        self._record(
            self.flow.math_uses, node, Site(node, operands, nodes, "arithmetic")
        )
        wide = left.wide or right.wide  # int32 op int64 promotes before the op
        f32 = left.f32 or right.f32  # so does bf16 op fp32
        if isinstance(op, ast.Sub):
            # Less a compile-time constant stays put (`n - 1` on sizes); less a
            # runtime value can go below zero.
            neg = left.neg or (
                not right.const and not self._ceil_div_idiom(lnode, rnode, left)
            )
        elif isinstance(op, (ast.Pow, ast.Mod, ast.FloorDiv)):
            # % takes the dividend's sign (C semantics); divisors computed in a kernel
            # are sizes, and signed-parameter divisors are reported where they are used.
            neg = left.neg
        else:
            neg = left.neg or right.neg
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            return self._divmod(op, left, right, neg, node)
        return Val(
            pid=(left.pid or right.pid) and not wide,
            small_pid=(left.small_pid or right.small_pid) and not wide,
            size=(left.size or right.size) and not wide,
            param=(left.param or right.param) and not wide,
            index_load=(left.index_load or right.index_load) and not wide,
            wide=wide,
            from_pid=left.from_pid or right.from_pid,
            loads=_EMPTY if f32 else left.loads | right.loads,
            f64_params=left.f64_params | right.f64_params,
            floaty=left.floaty or right.floaty or isinstance(op, ast.Div),
            f32=f32,
            neg=neg,
            negated=left.negated or right.negated,
            absmax=left.absmax or right.absmax,
            const=left.const and right.const,
            params=left.params | right.params,
            mults=left.mults
            | right.mults
            | ({id(node)} if isinstance(op, ast.Mult) else _EMPTY),
            terms=self._terms(op, node, left, right),
        )

    @staticmethod
    def _divmod(op, left: Val, right: Val, neg: bool, node) -> Val:
        """`a // b` is at most a; `a % b` is below b as well, so `pid % num_pid_n` or
        `offs % PAGE_SIZE` no longer grows with the input (it counts as a small index).
        """
        wide = left.wide or right.wide
        bounded = isinstance(op, ast.Mod) and not grows(right)
        growth = dict(
            pid=left.pid, size=left.size, index_load=left.index_load, param=left.param
        )
        if wide or bounded:
            growth = dict.fromkeys(growth, False)
        return Val(
            small_pid=(left.small_pid or (bounded and grows(left))) and not wide,
            wide=wide,
            from_pid=left.from_pid or right.from_pid,
            loads=left.loads | right.loads,
            floaty=left.floaty or right.floaty,
            f32=left.f32 or right.f32,
            neg=neg,
            negated=left.negated,
            const=left.const and right.const,
            params=left.params | right.params,
            mults=left.mults | right.mults,
            **growth,
        )

    @staticmethod
    def _terms(op, node, left: Val, right: Val) -> frozenset:
        if isinstance(op, ast.Mult):
            return frozenset([id(node)])
        if isinstance(op, (ast.Add, ast.Sub)):
            return left.terms | right.terms
        return _EMPTY

    def _ceil_div_idiom(self, lnode, rnode, left: Val) -> bool:
        """`n + BLOCK - 1` (ceil-div numerator) is non-negative when n is."""
        if not (isinstance(rnode, ast.Constant) and isinstance(rnode.value, int)):
            return False
        if left.neg or not (
            isinstance(lnode, ast.BinOp) and isinstance(lnode.op, ast.Add)
        ):
            return False
        for term in (lnode.left, lnode.right):
            if isinstance(term, ast.Constant) and isinstance(term.value, int):
                if term.value >= rnode.value:
                    return True
            if isinstance(term, ast.Name) and term.id in self.params:
                if self.params[term.id].kind == CONSTEXPR:
                    return True
        return False

    def _Compare(self, node: ast.Compare) -> Val:
        vals = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        nodes = [node.left, *node.comparators]
        self._record(self.flow.compares, node, Site(node, vals, nodes, "comparison"))
        self._record(self.flow.math_uses, node, Site(node, vals, nodes, "comparison"))
        return Val(params=join_all(vals).params)

    def _BoolOp(self, node: ast.BoolOp) -> Val:
        return join_all([self.expr(v) for v in node.values])

    def _Lambda(self, node: ast.Lambda) -> Val:
        return Val()

    # -- calls

    def _fn(self, call: ast.Call) -> str | None:
        name = self.aliases.tl_name(call.func)
        if name:
            return name
        helper = _MIN_MAX_HELPERS.get(ast.unparse(call.func))
        if helper:
            return helper
        if isinstance(call.func, ast.Name) and call.func.id in ("range", "abs"):
            return call.func.id
        if isinstance(call.func, ast.Name) and call.func.id in ("min", "max"):
            return call.func.id + "imum"  # the builtins bound a value like tl's
        return None

    def _arg(self, call: ast.Call, index: int, *keywords: str) -> ast.expr | None:
        if len(call.args) > index:
            return call.args[index]
        for kw in call.keywords:
            if kw.arg in keywords:
                return kw.value
        return None

    def _eval_args(self, call: ast.Call) -> list[Val]:
        return [self.expr(a) for a in call.args] + [
            self.expr(k.value) for k in call.keywords
        ]

    def _Call(self, node: ast.Call) -> Val:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr
            in ("to", "cast")  # `x.to(dt)` and the tensor method `x.cast(dt)`
            and not self.aliases.tl_name(func)
        ):
            src = self.expr(func.value)
            self._eval_args(node)
            dtype = self.aliases.dtype(self._arg(node, 0, "dtype"))
            return self.cast(node, src, dtype, _is_bitcast(node))
        if isinstance(func, ast.Name) and func.id == "float":
            self._eval_args(node)
            return Val(floaty=True, const=True)  # float("-inf"), a Python scalar
        fn = self._fn(node)
        if fn and fn.startswith("atomic_"):
            return self._call_atomic(node)
        method = getattr(self, "_call_" + fn, None) if fn else None
        if method is not None:
            return method(node)
        if fn in _FLOAT_MATH:
            vals = self._eval_args(node)
            self._record(
                self.flow.math_uses, node, Site(node, vals, list(node.args), fn)
            )
            v = promote(vals) if vals else Val()
            out = Val(
                floaty=True,
                neg=v.neg,
                params=v.params,
                f32=v.f32,
                loads=v.loads,
                absmax=v.absmax,
            )
            if fn in _ROUNDING and vals:  # rounding keeps a clamp's bounds
                out = replace(out, clamp_lo=vals[0].clamp_lo, clamp_hi=vals[0].clamp_hi)
            return out
        if fn in _REDUCTIONS:
            vals = self._eval_args(node)
            v = vals[0] if vals else Val()
            # `tl.sum(x, dtype=tl.float32)` accumulates in fp32 whatever x is.
            acc = self.aliases.dtype(self._arg(node, 99, "dtype"))
            # tl.max and tl.min upcast fp16/bf16 to fp32 before reducing (standard.py).
            if acc in ("float32", "float64") or fn in ("max", "min"):
                v = replace(v, f32=True, loads=_EMPTY)
            if fn == "max" and v.from_abs:
                v = replace(v, absmax=True)
            self._record(self.flow.math_uses, node, Site(node, [v], node.args[:1], fn))
            return replace(v, const=False, mults=_EMPTY, terms=_EMPTY)
        # Unknown call (a helper, a builtin): keep provenance, drop what we can't vouch for.
        vals = self._eval_args(node)
        v = join_all(vals) if vals else Val()
        v = replace(
            v, loads=_EMPTY, ptr=None, clamp_lo=False, clamp_hi=False, mults=_EMPTY,
            terms=_EMPTY,
        )  # fmt: skip
        # A helper handed tl.int64 (`cast(x, tl.int64)`) returns that type.
        if any(self.aliases.dtype(a) in ("int64", "uint64") for a in node.args):
            v = as_int64(v)
        return v

    def cast(
        self, node: ast.Call, src: Val, dtype: str | None, bitcast: bool = False
    ) -> Val:
        if not bitcast:  # a bitcast reinterprets bits; it converts nothing
            self._record(self.flow.casts, node, Site(node, [src], [], dtype or "?"))
        kept = dict(from_pid=src.from_pid, params=src.params, mults=src.mults)
        # (a cast ends the offset's terms: a product inside it is not an element offset)
        if dtype in ("int64", "uint64"):
            self.flow.widened_terms |= src.terms
            signed = dtype == "int64"
            return Val(
                wide=True,
                neg=src.neg and signed,
                negated=src.negated and signed,
                **kept,
            )
        if dtype in _INT_DTYPES:  # narrowing back to 32 bits or fewer
            return Val(
                pid=src.pid,
                small_pid=src.small_pid,
                size=src.size,
                param=src.param or src.wide,
                index_load=src.index_load,
                neg=src.neg and not dtype.startswith("u"),
                negated=src.negated and not dtype.startswith("u"),
                **kept,
            )
        # Float targets (or the pointer's element type): an explicit, stated dtype.
        floaty = src.floaty or dtype in _FLOAT_DTYPES
        return replace(
            src,
            loads=_EMPTY,
            f64_params=_EMPTY,
            index_load=False,
            floaty=floaty,
            f32=dtype in ("float32", "float64"),
            const=False,
            ptr=None,
            terms=_EMPTY,
        )

    def _call_cast(self, node: ast.Call) -> Val:
        src = self.expr(node.args[0]) if node.args else Val()
        for a in node.args[1:]:
            self.expr(a)
        return self.cast(
            node,
            src,
            self.aliases.dtype(self._arg(node, 1, "dtype")),
            _is_bitcast(node),
        )

    def _call_program_id(self, node: ast.Call) -> Val:
        axis = self._arg(node, 0, "axis")
        if isinstance(axis, ast.Constant) and axis.value in (1, 2):
            return Val(small_pid=True)
        return Val(pid=True, from_pid=True)

    def _call_num_programs(self, node: ast.Call) -> Val:
        return Val(param=True)

    def _call_arange(self, node: ast.Call) -> Val:
        self._eval_args(node)
        return Val()

    def _call_full(self, node: ast.Call) -> Val:
        vals = self._eval_args(node)
        dtype = self.aliases.dtype(self._arg(node, 2, "dtype"))
        # tl.full(shape, literal, dtype) is Inductor's way to write a constant.
        const = len(vals) > 1 and vals[1].const
        return Val(
            wide=dtype in ("int64", "uint64"),
            floaty=dtype in _FLOAT_DTYPES,
            f32=dtype in ("float32", "float64"),
            const=const,
        )

    def _call_zeros(self, node: ast.Call) -> Val:
        self._eval_args(node)
        dtype = self.aliases.dtype(self._arg(node, 1, "dtype"))
        return Val(
            wide=dtype in ("int64", "uint64"),
            floaty=dtype in _FLOAT_DTYPES,
            f32=dtype in ("float32", "float64"),
        )

    def _access(self, kind: str, node: ast.Call) -> Val:
        """Evaluate a tl.load/tl.store's arguments and record the access; returns the pointer."""
        ptr = self.expr(node.args[0]) if node.args else Val()
        for a in node.args[1:]:
            self.expr(a)
        for kw in node.keywords:
            self.expr(kw.value)
        if ptr.ptr is None:
            self._pointer_sink(ptr)
        self._memop(kind, ptr.ptr, node)
        return ptr

    def _call_load(self, node: ast.Call) -> Val:
        base = self._access("load", node).ptr
        self.flow.load_base[id(node)] = base
        if base in self.fp32_pointers:
            return Val(f32=True, floaty=True, index_load=True)
        return Val(loads=frozenset([id(node)]), index_load=True)

    def _call_store(self, node: ast.Call) -> Val:
        self._access("store", node)
        return Val()

    def _call_debug_barrier(self, node: ast.Call) -> Val:
        self._memop("barrier", None, node)
        return Val()

    def _call_make_block_ptr(self, node: ast.Call) -> Val:
        base = self._arg(node, 0, "base")
        vals = self._eval_args(node)
        return Val(
            ptr=self.expr(base).ptr if base is not None else None,
            params=join_all(vals).params,
        )

    def _call_advance(self, node: ast.Call) -> Val:
        vals = self._eval_args(node)
        return Val(ptr=vals[0].ptr if vals else None)

    def _call_dot(self, node: ast.Call) -> Val:
        self._eval_args(node)  # low-precision operands are what tl.dot wants
        out_dtype = self.aliases.dtype(self._arg(node, 99, "out_dtype"))
        return Val(floaty=True, f32=out_dtype in (None, "float32", "float64"))

    def _call_where(self, node: ast.Call) -> Val:
        vals = self._eval_args(node)
        return promote(vals[1:3]) if len(vals) >= 3 else join_all(vals)

    def _call_clamp(self, node: ast.Call) -> Val:
        vals = self._eval_args(node)
        self._record(
            self.flow.math_uses, node, Site(node, vals[:1], node.args[:1], "clamp")
        )
        x = vals[0] if vals else Val()
        lo_neg = vals[1].neg if len(vals) > 1 else True
        return replace(x, clamp_lo=True, clamp_hi=True, neg=lo_neg, mults=_EMPTY)

    def _call_maximum(self, node: ast.Call) -> Val:
        vals = self._eval_args(node)
        self._record(
            self.flow.math_uses, node, Site(node, vals, list(node.args), "maximum")
        )
        v = promote(vals)
        neg = all(x.neg for x in vals)  # max(x, 0) is non-negative
        # Constants are bounded both ways, so min(max(x, lo), hi) is clamped.
        hi = all(x.clamp_hi or x.const for x in vals)
        return replace(
            v, clamp_lo=True, clamp_hi=hi, neg=neg, const=False, mults=_EMPTY
        )

    def _call_minimum(self, node: ast.Call) -> Val:
        vals = self._eval_args(node)
        self._record(
            self.flow.math_uses, node, Site(node, vals, list(node.args), "minimum")
        )
        v = promote(vals)
        lo = all(x.clamp_lo or x.const for x in vals)
        v = replace(v, clamp_hi=True, clamp_lo=lo, const=False, mults=_EMPTY)
        if not all(grows(x) for x in vals):  # min(n - start, BLOCK) is at most BLOCK
            v = replace(v, pid=False, size=False, index_load=False)
        return v

    def _call_abs(self, node: ast.Call) -> Val:
        vals = self._eval_args(node)
        self._record(
            self.flow.math_uses, node, Site(node, vals, list(node.args), "abs")
        )
        return replace(join_all(vals), neg=False, mults=_EMPTY, from_abs=True)

    def _call_range(self, node: ast.Call) -> Val:
        return join_all(self._eval_args(node))

    def _call_multiple_of(self, node: ast.Call) -> Val:
        vals = self._eval_args(node)
        return vals[0] if vals else Val()

    _call_max_contiguous = _call_multiple_of
    _call_max_constancy = _call_multiple_of

    def _call_atomic(self, node: ast.Call) -> Val:
        ptr = self.expr(node.args[0]) if node.args else Val()
        for a in node.args[1:]:
            self.expr(a)
        for kw in node.keywords:
            self.expr(kw.value)
        self._memop("store", ptr.ptr, node)
        return Val()
