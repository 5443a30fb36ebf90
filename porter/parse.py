"""Stage 3: parse one Inductor output module into kernel records and launch sites.

The module is read with `ast`, never executed: its `call(args)` says which
reference input, output or scratch buffer reaches which pointer argument of each
kernel, which size symbol each integer argument is, and where extern ops
(`extern_kernels.mm`) sit between the launches.
"""

from __future__ import annotations

import ast
import copy
import functools
import re
from typing import TYPE_CHECKING

from porter.records import (
    Binding,
    Buffer,
    CompiledModule,
    GraphInput,
    KernelArg,
    KernelRecord,
    Step,
)

if TYPE_CHECKING:
    from porter.reference import Reference

KINDS = {
    "pointwise": "pointwise",
    "reduction": "reduction",
    "persistent_reduction": "persistent_reduction",
}
_ALLOCATORS = re.compile(r"^empty_strided(_\w+)?$")
_SYMBOL = re.compile(r"\b([a-z]+\d+)\b")


def parse_module(
    source: str,
    index: int,
    inputs: list[GraphInput],
    ref: "Reference | None" = None,
) -> tuple[CompiledModule, list[KernelRecord]]:
    tree = ast.parse(source)
    kernels = _kernels(tree, index, source)
    call = _find_call(tree)
    wrapper = _Wrapper(inputs, {k.name: k for k in kernels}, ref)
    if call is not None:
        wrapper.walk(call.body)
        wrapper.classify_buffers()
    # A tensor read for its shape alone (one_hot's num_classes of like.shape[0])
    # gets no assert_size_stride: its layout is the example get_args() makes.
    # Its sizes the graph takes as symbols keep them (a buffer of like's
    # shape), so the launcher checks them where another tensor names the dim.
    examples = _example_layouts(tree)
    for gi in wrapper.inputs:
        if gi.kind == "tensor" and not gi.sizes and gi.wrapper_name in examples:
            sizes, gi.strides = examples[gi.wrapper_name]
            gi.sizes = [wrapper.size_of(gi.target, a, n) for a, n in enumerate(sizes)]
            gi.shape_only = True
    module = CompiledModule(
        index=index,
        inputs=wrapper.inputs,
        symbols=wrapper.symbol_targets(),
        buffers=list(wrapper.buffers.values()),
        steps=wrapper.steps,
        outputs=wrapper.outputs,
        kernels=[k.name for k in kernels],
        produced=list(wrapper.produced),
    )
    return module, kernels


def _example_layouts(tree: ast.Module) -> dict[str, tuple[list[str], list[str]]]:
    """Sizes and strides of each `argN = rand_strided((8,), (1,), ...)` in the
    module's get_args() (numbers: the capture's own sizes)."""
    fn = next(
        (
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name == "get_args"
        ),
        None,
    )
    out: dict[str, tuple[list[str], list[str]]] = {}
    for node in ast.walk(fn) if fn is not None else []:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == "rand_strided"
            and len(node.value.args) >= 2
        ):
            sizes, strides = (
                [ast.unparse(e) for e in _elts(a)] for a in node.value.args[:2]
            )
            out[node.targets[0].id] = (sizes, strides)
    return out


# ---------------------------------------------------------------- kernels


_ATEN = re.compile(r"Original ATen: \[([^\]]*)\]")


def _aten_ops(lines: list[str], lineno: int) -> list[str]:
    """The aten ops of the `Original ATen: [...]` comment in the comment block
    right above line lineno (1-based), in order."""
    i = lineno - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        found = _ATEN.search(lines[i])
        if found:
            return [op.strip() for op in found.group(1).split(",") if op.strip()]
        i -= 1
    return []


def _kernels(tree: ast.Module, index: int, source: str = "") -> list[KernelRecord]:
    lines = source.splitlines()
    out = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not (isinstance(func, ast.Attribute) and func.attr == "triton"):
            continue
        args = node.value.args
        if len(args) < 2 or not isinstance(args[1], ast.Constant):
            continue
        name, source = args[0].value, args[1].value
        record = parse_kernel_source(name, source, index)
        record.aten = _aten_ops(lines, node.lineno)
        out.append(record)
    return out


def parse_kernel_source(name: str, source: str, module: int = 0) -> KernelRecord:
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    kind, meta = "other", {}
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute):
            if (
                isinstance(deco.func.value, ast.Name)
                and deco.func.value.id == "triton_heuristics"
            ):
                kind = KINDS.get(deco.func.attr, "other")
                meta = {kw.arg: kw.value for kw in deco.keywords}
    signature = _signature(fn, meta.get("triton_meta"))
    inductor_meta = _dict_entries(meta.get("inductor_meta"))
    hint = meta.get("reduction_hint")
    return KernelRecord(
        name=name,
        source=source,
        kind=kind,
        signature=signature,
        size_hints=_literal(meta.get("size_hints")) or {},
        reduction_hint=hint.attr if isinstance(hint, ast.Attribute) else None,
        grid_type=_literal(inductor_meta.get("grid_type")),
        module=module,
    )


@functools.lru_cache(maxsize=None)
def launch_meta_params(source: str, name: str) -> frozenset[str]:
    """The kernel's arguments annotated tl.constexpr (XBLOCK, R0_BLOCK)."""
    fn = next(
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.FunctionDef) and n.name == name
    )
    return frozenset(
        a.arg
        for a in fn.args.args
        if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)
    )


def _signature(fn: ast.FunctionDef, triton_meta: ast.AST | None) -> list[KernelArg]:
    types = _literal(_dict_entries(triton_meta).get("signature")) or {}
    out = []
    for arg in fn.args.args:
        ann = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        default = "constexpr" if "constexpr" in ann else "?"
        out.append(KernelArg(arg.arg, types.get(arg.arg, default)))
    return out


def _dict_entries(node: ast.AST | None) -> dict[str, ast.AST]:
    if not isinstance(node, ast.Dict):
        return {}
    return {
        k.value: v
        for k, v in zip(node.keys, node.values)
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    }


def _literal(node: ast.AST | None):
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


# ---------------------------------------------------------------- wrapper


def _find_call(tree: ast.Module) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    return None


class _Wrapper:
    """Walks `call(args)` statement by statement, keeping what each name means."""

    def __init__(
        self,
        inputs: list[GraphInput],
        kernels: dict[str, KernelRecord],
        ref: "Reference | None",
    ) -> None:
        self.inputs = inputs
        self.kernels = kernels
        self.by_wrapper: dict[str, GraphInput] = {}
        self.symbols: dict[str, str] = {}  # symbol -> expression or input target
        self.locals: dict[str, str] = {}  # psN / *_xnumel -> expression
        self.size_vars: dict[str, tuple[str, str]] = {}  # arg2_1_size -> (arg2_1, size)
        self.alias: dict[str, str] = {}  # reused buffer name -> its allocation
        self.views: dict[str, dict] = {}  # reinterpret_tensor views by name
        self.view_calls: dict[str, ast.Call] = {}  # the same views, as written
        self.buffers: dict[str, Buffer] = {}
        self.steps: list[Step] = []
        self.outputs: list[str] = []
        self.produced: list[str] = []  # names extern calls assign
        self.dim_of = {
            f"{name}.size({axis})": d.name
            for d in (ref.dims if ref else [])
            for name, axis in d.axes
            if d.symbolic
        }

    # -- statements
    def walk(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.With):
                self.walk(stmt.body)
            elif isinstance(stmt, ast.Assign):
                self.assign(stmt)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.call(stmt.value)
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                elts = (
                    stmt.value.elts
                    if isinstance(stmt.value, ast.Tuple)
                    else [stmt.value]
                )
                self.outputs = [self.returned(e) for e in elts]

    def assign(self, stmt: ast.Assign) -> None:
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Tuple) and ast.unparse(value) == "args":
            names = [ast.unparse(e) for e in target.elts]
            if len(names) == len(self.inputs):
                for name, gi in zip(names, self.inputs):
                    gi.wrapper_name = name
                    self.by_wrapper[name] = gi
            return
        if not isinstance(target, ast.Name):
            return
        name, text = target.id, ast.unparse(value)
        if isinstance(value, ast.Name) and value.id in self.by_wrapper:
            self.symbols[name] = self.by_wrapper[value.id].target  # s77 = arg0_1
        elif isinstance(value, ast.Name) and value.id in self.symbols:
            self.symbols[name] = value.id  # s52 = s21
        elif isinstance(value, ast.Name) and (
            value.id in self.buffers
            or value.id in self.alias
            or value.id in self.produced
        ):
            self.alias[name] = self.canon(value.id)  # buf1 = buf0; del buf0  # reuse
            if value.id in self.view_calls:  # a new name for a view is that view
                self.view_calls[name] = self.view_calls[value.id]
                self.views[name] = self.views[value.id]
        elif isinstance(value, ast.Call) and ast.unparse(value.func).endswith(
            (".size", ".stride")
        ):
            base = ast.unparse(value.func.value)
            self.size_vars[name] = (base, value.func.attr)
        elif (
            isinstance(value, ast.Subscript)
            and ast.unparse(value.value) in self.size_vars
        ):
            base, what = self.size_vars[ast.unparse(value.value)]
            gi = self.by_wrapper.get(base)
            where = gi.target if gi else base
            self.symbols[name] = f"{where}.{what}({ast.unparse(value.slice)})"
        elif isinstance(value, ast.Call) and _ALLOCATORS.match(ast.unparse(value.func)):
            sizes, strides = value.args[0], value.args[1]
            self.buffers[name] = Buffer(
                name=name,
                sizes=[self.expr(e) for e in _elts(sizes)],
                strides=[self.expr(e) for e in _elts(strides)],
                dtype=ast.unparse(value.args[2]) if len(value.args) > 2 else "",
            )
        elif (
            isinstance(value, ast.Call)
            and ast.unparse(value.func) == "reinterpret_tensor"
        ):
            self.alias[name] = self.canon(ast.unparse(value.args[0]))
            self.views[name] = self.view_of(value)
            self.view_calls[name] = value
        elif (
            isinstance(value, ast.Subscript)
            and isinstance(value.value, ast.Name)
            and value.value.id in self.produced
        ):
            # buf5 = buf4[0]: one tensor of an extern call's tuple
            self.produced.append(name)
            self.steps.append(Step("extern", "getitem", [], f"{name} = {text}"))
        elif not isinstance(value, ast.Call):
            self.locals[name] = self.expr(value)  # ps0 = s27 // 2; k_xnumel = ...
        elif _size_arithmetic(value):
            # k_r0_numel = min(16, s25); ps4 = math.trunc(0.5*torch.sym_float(s0))
            self.locals[name] = self.expr(value)
        else:
            before = len(self.steps)
            self.step_from_call(value, text)
            if len(self.steps) > before and self.steps[-1].kind == "extern":
                # buf4 = torch.ops.aten.topk.default(...): a tensor (or a tuple
                # of them) the call returns, not one it writes into
                self.produced.append(name)
                step = self.steps[-1]
                step.text = f"{name} = {step.text}"

    def call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        if func in ("assert_size_stride", "assert_alignment"):
            gi = self.by_wrapper.get(ast.unparse(node.args[0]))
            if gi is not None and func == "assert_size_stride":
                gi.sizes = [self.expr(e) for e in _elts(node.args[1])]
                gi.strides = [self.expr(e) for e in _elts(node.args[2])]
            return
        self.step_from_call(node, ast.unparse(node))

    def step_from_call(self, node: ast.Call, text: str) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "run":
            kname = ast.unparse(func.value)
            if kname in self.kernels:
                self.steps.append(self.launch(kname, node, text))
                return
        fname = ast.unparse(func)
        if fname.startswith(
            ("extern_kernels.", "aten.", "torch.")
        ) and not fname.endswith(("set_device", "synchronize")):
            args = [self.bind(f"arg{i}", a) for i, a in enumerate(node.args)]
            args += [self.bind(kw.arg, kw.value) for kw in node.keywords if kw.arg]
            self.steps.append(Step("extern", fname, args, self.unaliased(node, text)))

    def unaliased(self, node: ast.Call, text: str) -> str:
        """The extern call's text with every buffer name Inductor reused under
        another name (`buf1 = buf0; del buf0  # reuse`, or a reinterpret_tensor
        view) written as the allocation it names: the launcher knows buffers
        by their allocations."""
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if not names & set(self.alias):
            return text
        parser = self

        class Unalias(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:
                if n.id in parser.view_calls:
                    return self.visit(copy.deepcopy(parser.view_calls[n.id]))
                if n.id in parser.alias:
                    return ast.Name(parser.canon(n.id), ast.Load())
                return n

        return ast.unparse(Unalias().visit(copy.deepcopy(node)))

    def launch(self, kname: str, node: ast.Call, text: str) -> Step:
        # Inductor's run() passes every argument but the launch's meta-parameters
        # (those annotated tl.constexpr, which its autotuner fills in); a size it
        # specialized to a constant (xnumel = 1, "constexpr" in triton_meta) is
        # still passed.
        meta = launch_meta_params(self.kernels[kname].source, kname)
        params = [a for a in self.kernels[kname].signature if a.name not in meta]
        args = [self.bind(p.name, a) for p, a in zip(params, node.args)]
        return Step("launch", kname, args, text)

    def returned(self, node: ast.AST) -> str:
        """An output as the launcher returns it: a buffer by its allocation's
        name, but a view of one (`buf2 = reinterpret_tensor(buf0, ...)`,
        other strides over the same storage) as that view, never its base."""
        name = ast.unparse(node)
        if isinstance(node, ast.Name) and name not in self.view_calls:
            return self.canon(name)
        # a view: written out, with every reused name inside it resolved
        return self.unaliased(node, name)

    # -- values
    def canon(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name

    def view_of(self, call: ast.Call) -> dict:
        sizes, strides = call.args[1], call.args[2]
        return {
            "sizes": [self.expr(e) for e in _elts(sizes)],
            "strides": [self.expr(e) for e in _elts(strides)],
            "offset": self.expr(call.args[3]) if len(call.args) > 3 else "0",
        }

    def bind(self, param: str, node: ast.AST) -> Binding:
        text = ast.unparse(node)
        scalar = node
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "item"
        ):
            scalar = (
                node.func.value
            )  # arg3_1.item(): a float Dynamo passed as a 0-d tensor
        if isinstance(scalar, ast.Name) and scalar.id in self.by_wrapper:
            gi = self.by_wrapper[scalar.id]
            if gi.kind == "scalar" or (gi.kind == "tensor" and scalar is not node):
                # a float argument, or a 0-d tensor read as a number (.item())
                return Binding(param, text, "scalar", gi.target)
        view = None
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "reinterpret_tensor"
        ):
            view = self.view_of(node)
            node = node.args[0]
        raw = ast.unparse(node)
        view = view or self.views.get(raw)
        name = self.canon(raw)
        if name in self.by_wrapper and self.by_wrapper[name].kind == "tensor":
            return Binding(
                param, text, "input", self.by_wrapper[name].target, view=view
            )
        if name in self.buffers or name in self.produced:
            return Binding(param, text, "buffer", name, view=view)
        if isinstance(node, ast.Constant):
            return Binding(param, text, "literal", expr=repr(node.value))
        return Binding(param, text, "size", expr=self.expr(node))

    def expr(self, node: ast.AST) -> str:
        """An integer expression with wrapper locals inlined and symbols named."""
        text = ast.unparse(_plain_arithmetic(node))
        for _ in range(8):  # locals may refer to other locals
            new = _SYMBOL.sub(lambda m: self._name(m.group(1)), text)
            new = re.sub(
                r"\b(\w+_xnumel|\w+_r0_numel|ps\d+)\b",
                lambda m: (
                    f"({self.locals[m.group(1)]})"
                    if m.group(1) in self.locals
                    else m.group(1)
                ),
                new,
            )
            if new == text:
                break
            text = new
        return text

    def _name(self, symbol: str) -> str:
        seen = set()
        while symbol in self.symbols and symbol not in seen:
            seen.add(symbol)
            target = self.symbols[symbol]
            if target in self.dim_of:
                return self.dim_of[target]
            if target not in self.symbols:
                return target
            symbol = target
        if symbol in self.locals:
            return f"({self.locals[symbol]})"
        return symbol

    def size_of(self, target: str, axis: int, example: str) -> str:
        """A tensor's size on an axis as the graph's symbol for it names it,
        or the example's where the graph has none."""
        for symbol, of in self.symbols.items():
            if of == f"{target}.size({axis})":
                return self._name(symbol)
        return example

    def symbol_targets(self) -> dict[str, str]:
        return {s: self._name(s) for s in self.symbols}

    def classify_buffers(self) -> None:
        """Outputs are only known at `return`: name the buffers bound earlier."""
        for step in self.steps:
            for b in step.args:
                if b.kind == "buffer" and b.target in self.outputs:
                    b.kind, b.target = "output", str(self.outputs.index(b.target))
                elif b.kind == "buffer":
                    b.kind = "scratch"


# Functions of sizes Inductor's wrapper computes with, as plain Python spells
# them (the launcher imports neither math nor sym_float).
_SIZE_FUNCTIONS = {
    "min": "min",
    "max": "max",
    "abs": "abs",
    "int": "int",
    "float": "float",
    "math.trunc": "int",
    "torch.sym_float": "float",
    "torch.sym_int": "int",
}


def _size_arithmetic(node: ast.AST) -> bool:
    """Arithmetic of sizes whose every call is one of _SIZE_FUNCTIONS or of
    math's (BLOOM's ALiBi: `min(2 ** math.floor(math.log2(n)), ...)`)."""
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    return all(
        (ast.unparse(c.func) in _SIZE_FUNCTIONS or _MATH.fullmatch(ast.unparse(c.func)))
        and not c.keywords
        for c in calls
    )


_MATH = re.compile(r"math\.\w+")


def _plain_arithmetic(node: ast.AST) -> ast.AST:
    """`node` with _SIZE_FUNCTIONS' calls as plain Python spells them."""

    class Plain(ast.NodeTransformer):
        def visit_Call(self, n: ast.Call) -> ast.AST:
            self.generic_visit(n)
            plain = _SIZE_FUNCTIONS.get(ast.unparse(n.func))
            if plain is not None:
                n.func = ast.Name(plain, ast.Load())
            return n

        def visit_BinOp(self, n: ast.BinOp) -> ast.AST:
            # sympy's a + (-1)*b, as a person writes it: a - b
            self.generic_visit(n)
            if isinstance(n.op, ast.Add):
                for a, b in ((n.left, n.right), (n.right, n.left)):
                    negated = _negated(b)
                    if negated is not None:
                        return ast.BinOp(a, ast.Sub(), negated)
            return n

    return Plain().visit(copy.deepcopy(node))


def _negated(node: ast.AST) -> ast.AST | None:
    """b for `-1*b` or `b*(-1)`; None for anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for one, b in ((node.left, node.right), (node.right, node.left)):
            if ast.unparse(one) == "-1":
                return b
        inner = _negated(node.left)  # (-1)*a*b parses as ((-1)*a)*b
        if inner is not None:
            return ast.BinOp(inner, ast.Mult(), node.right)
    return None


def _elts(node: ast.AST) -> list[ast.AST]:
    return list(node.elts) if isinstance(node, (ast.Tuple, ast.List)) else [node]
