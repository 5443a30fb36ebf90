"""Inductor's helper and libdevice calls replaced by core ops or porter's helpers (core_math)."""

from __future__ import annotations

import ast
import copy

from porter.ast_tools import bindings, read_counts, walk_stmts
from porter.port.model import KernelPort


def _todo(text: str) -> ast.stmt:
    """A marker statement the renderer turns into a `# TODO(porter): ...` comment."""
    return ast.Expr(ast.Constant(f"TODO(porter): {text}"))


# libdevice.exp2, log2 and sqrt stay: Inductor picks them over tl's
# approximate ex2/lg2/sqrt, and an MX quantizer's floor(log2(amax)) or 2 ** e
# needs them exact; tl.sqrt_rn, exact too, takes no fp64 (math.sqrt(1 - a)
# of a float argument).
CORE_MATH = {
    "libdevice.rsqrt": "tl.rsqrt",
    "libdevice.exp": "tl.exp",
    "libdevice.log": "tl.log",
    "libdevice.sin": "tl.sin",
    "libdevice.cos": "tl.cos",
    "libdevice.abs": "tl.abs",
    "libdevice.fabs": "tl.abs",
    "libdevice.floor": "tl.floor",
    "libdevice.ceil": "tl.ceil",
    "libdevice.erf": "tl.erf",
    "tl_math.exp": "tl.exp",
    "tl_math.log": "tl.log",
    "tl_math.abs": "tl.abs",
    "tl_math.sin": "tl.sin",
    "tl_math.cos": "tl.cos",
    "tl_math.sqrt": "tl.sqrt",
    "tl_math.exp2": "tl.exp2",
    "tl_math.log2": "tl.log2",
    "triton_helpers.promote_to_tensor": "",
}


def _half(node: ast.AST) -> bool:
    """The constant 0.5, bare or as Inductor writes an fp64 one
    (`tl.full([], 0.5, tl.float64).to(tl.float64)`)."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
    ):
        node = node.func.value
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.full":
        node = node.args[1] if len(node.args) > 1 else None
    return isinstance(node, ast.Constant) and node.value == 0.5


# Inductor's helpers with a porter-written equivalent in templates/helpers.py.j2.
HELPERS = {
    "triton_helpers.maximum": "maximum_nan",
    "triton_helpers.minimum": "minimum_nan",
    "triton_helpers.max2": "max_nan",
    "triton_helpers.min2": "min_nan",
    "triton_helpers.any": "any_true",
    "triton_helpers.welford_reduce": "welford_accumulate",
    "triton_helpers.welford_combine": "welford_merge",
    "triton_helpers.welford": "welford_finish",
    "triton_helpers.online_softmax_reduce": "online_softmax_finish",
    "triton_helpers.online_softmax_combine": "online_softmax_accumulate",
    "triton_helpers.maximum_with_index": "argmax_step",
    "triton_helpers.max_with_index": "argmax_rows",
    "triton_helpers.minimum_with_index": "argmin_step",
    "triton_helpers.min_with_index": "argmin_rows",
    "triton_helpers.select_one": "select_masked",
    "triton_helpers.div_floor_integer": "floor_div",
    "triton_helpers.remainder_integer": "floor_mod",
    "triton_helpers.pow_integer": "int_pow",
    "triton_helpers.prod": "row_product",
    "triton_helpers.bucketize_binary_search": "bucketize",
}


HELPER_DEPENDS = {
    "max_nan": {"maximum_nan"},
    "min_nan": {"minimum_nan"},
    "welford_finish": {"welford_merge"},
    "online_softmax_finish": {"max_nan", "maximum_nan", "exp_ftz"},
    "online_softmax_accumulate": {"maximum_nan", "exp_ftz"},
    "rescale_sum": {"exp_ftz"},
    "argmax_rows": {"argmax_step"},
    "argmin_rows": {"argmin_step"},
    "row_product": {"multiply"},
}


# libdevice functions a GPU computes in an instruction or two (a rounding to an
# integer, a sign): a quantizer's nearbyint leaves it bound by memory, not math.
ONE_INSTRUCTION = {
    "nearbyint",
    "rint",
    "trunc",
    "round",
    "copysign",
    "signbit",
    "isnan",
    "isinf",
    "fmin",
    "fmax",
    "sqrt",  # sqrt.rn: a core op (tl.sqrt_rn), not a long libdevice routine
}


UNSUPPORTED = {
    "tl.inline_asm_elementwise": "inline assembly is target-specific",
    "tl.rand": "random numbers cannot match eager bit for bit",
    "tl.randn": "random numbers cannot match eager bit for bit",
    "tl.randint": "random numbers cannot match eager bit for bit",
}


def _is_division(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("triton.language.div_rn", "tl.div_rn")
        and len(node.args) == 2
    ) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div))


def _operands(node: ast.AST) -> list[ast.AST]:
    return node.args if isinstance(node, ast.Call) else [node.left, node.right]


def float_floor_divisions(fn: ast.FunctionDef) -> int:
    """Inductor's float floor division, `floor(a / b)`, as torch computes it
    (floor_div_float, from the exact remainder): 1.0 // 0.1 is 9 in eager and
    10 as floor(a / b), 1 // -inf -1 and -0, inf // 1 NaN and inf. In place;
    how many."""
    bound = bindings(fn)
    reads = read_counts(fn)
    swapped = 0
    for node in ast.walk(fn):
        if not (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("libdevice.floor", "tl.floor")
            and len(node.args) == 1
        ):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Name) and len(bound.get(arg.id, [])) == 1:
            if reads.get(arg.id) != 1:
                continue
            arg = bound[arg.id][0]
        if not _is_division(arg):
            continue
        node.func = ast.Name("floor_div_float", ast.Load())
        node.args = [copy.deepcopy(a) for a in _operands(arg)]
        swapped += 1
    return swapped


def core_math(kp: KernelPort) -> None:
    """Use triton core ops where they are exact (tl.exp, tl.rsqrt...); keep
    libdevice only where core has none (tanh, erf...); swap Inductor's helpers
    for porter's own readable ones; flag what cannot be ported faithfully."""
    # Only where the kernel fuses a floor division and no floor of its own:
    # torch.floor(x / s) is floor(a / b) in eager too. (Inductor's fmod and
    # remainder take no floor of a quotient, `a % b` with a sign fix: `fmod(x,
    # y), x // y` in one kernel gave 10 for 1.0 // 0.1, eager 9.)
    aten = set(kp.record.aten)
    floor_divides = bool(aten & {"aten.div", "aten.floor_divide"}) and not (
        aten & {"aten.floor"}
    )
    swapped = float_floor_divisions(kp.tree) if floor_divides else 0
    if swapped:
        kp.helpers.add("floor_div_float")

    class Fix(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            nonlocal swapped
            name = ast.unparse(node.func)
            if name == "libdevice.pow" and len(node.args) == 2 and _half(node.args[1]):
                # int(t ** 0.5) of a size, recomputed in the kernel: the GPU's
                # pow(9.0, 0.5) truncated to 2 where Python's gives 3; a
                # square root is exact there
                node.func = ast.parse("libdevice.sqrt", mode="eval").body
                node.args = node.args[:1]
                name = "libdevice.sqrt"
            if name in CORE_MATH:
                swapped += 1
                if CORE_MATH[name] == "":
                    return node.args[0]
                node.func = ast.parse(CORE_MATH[name], mode="eval").body
            elif name == "triton_helpers.bucketize_binary_search" and not _no_sorter(
                node
            ):
                kp.todos.append(
                    "searchsorted with a sorter has no porter equivalent yet"
                )
            elif name in HELPERS:
                if name == "triton_helpers.bucketize_binary_search":
                    node.args = node.args[:8]  # no sorter: its three Nones
                swapped += 1
                helper = HELPERS[name]
                kp.helpers.add(helper)
                kp.helpers |= HELPER_DEPENDS.get(helper, set())
                node.func = ast.Name(helper, ast.Load())
                if helper.startswith("online_softmax"):
                    node.args = node.args[:-1]  # use_fast_math: porter keeps exact exp
            elif name.startswith("libdevice."):
                kp.uses_libdevice = True
                kp.heavy_math |= name.split(".", 1)[1] not in ONE_INSTRUCTION
            elif name.startswith(("triton_helpers.", "tl_math.")):
                kp.todos.append(f"{name} has no porter equivalent yet")
            return node

    Fix().visit(kp.tree)
    for fn in kp.combine_fns:  # a scan's combine (logcumsumexp's) calls them too
        Fix().visit(fn)
    for stmt, body in walk_stmts(kp.tree.body):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in UNSUPPORTED:
                why = UNSUPPORTED[ast.unparse(node.func)]
                body.insert(body.index(stmt), _todo(f"{ast.unparse(node.func)}: {why}"))
                kp.todos.append(f"{ast.unparse(node.func)}: {why}")
                break
    if swapped:
        kp.notes.append(
            f"replaced {swapped} Inductor helper/libdevice call(s) by core ops or porter helpers"
        )


def _no_sorter(call: ast.Call) -> bool:
    """Inductor's bucketize_binary_search called with no sorter (its last
    three arguments None), as torch.bucketize and plain searchsorted do."""
    return len(call.args) == 11 and all(
        isinstance(a, ast.Constant) and a.value is None for a in call.args[8:]
    )
