"""check_zero_divisors: an integer division by a tensor's value stops at 0, as
eager does.

Inductor lowers `a // b` and `a % b` of int tensors with a guard of its own:
`b_test = b == 0`, the division by `tl.where(b_test, 1, b)`, and 0 where
`b_test` holds. Eager on the CPU raises ZeroDivisionError there (CUDA returns
what its hardware gives), so a page size or a group count of 0 in the input
came back as a quotient of 0, silently. The kernel now asserts the divisor is
not 0 (compiled in with debug=True, as the index checks are).
"""

from __future__ import annotations

import ast

from porter.ast_tools import bindings, is_call
from porter.port.finish.asserts import loaded_from
from porter.port.model import PortState


def _guarded_divisors(form: ast.FunctionDef) -> list[tuple[int, str, ast.AST]]:
    """(statement index, the test's name, the divisor) for each top-level
    `t = b == 0` whose `tl.where(t, 1, b)` the kernel divides by."""
    found = []
    for i, stmt in enumerate(form.body):
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Compare)
            and len(stmt.value.ops) == 1
            and isinstance(stmt.value.ops[0], ast.Eq)
            and isinstance(stmt.value.comparators[0], ast.Constant)
            and stmt.value.comparators[0].value == 0
        ):
            continue
        test, divisor = stmt.targets[0].id, stmt.value.left
        for node in ast.walk(form):
            if (
                is_call(node, "tl.where")
                and len(node.args) == 3
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id == test
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == 1
                and ast.dump(node.args[2]) == ast.dump(divisor)
            ):
                found.append((i, test, divisor))
                break
    return found


def _mask_of(form: ast.FunctionDef, divisor: ast.AST) -> str | None:
    """The mask of the load the divisor comes from; the kernel's `mask` else."""
    bound = bindings(form)
    if isinstance(divisor, ast.Name) and len(bound.get(divisor.id, [])) == 1:
        value = bound[divisor.id][0]
        if is_call(value, "tl.load") and len(value.args) > 1:
            return ast.unparse(value.args[1])
    names = {n.id for n in ast.walk(form) if isinstance(n, ast.Name)}
    return "mask" if "mask" in names else None


def check_zero_divisors(port: PortState) -> None:
    """An integer division by a tensor's value (Inductor's guarded `//` and
    `%`) asserts the divisor is not 0, where eager raises: the kernel had
    returned 0."""
    for kp, form, _ in port.forms():
        added = 0
        for i, test, divisor in reversed(_guarded_divisors(form)):
            tensors = sorted(loaded_from(divisor, bindings(form), set()))
            if not tensors:
                continue  # an argument: the launcher refuses 0 (divisors.py)
            what = " or ".join(t.removesuffix("_ptr") for t in tensors)
            said = (
                f"{what} holds 0, which an integer division divides by (eager raises)"
            )
            mask = _mask_of(form, divisor)
            cond = f"~{test}" if mask is None else f"~{test} | ~{mask}"
            check = ast.parse(f"tl.device_assert({cond}, {said!r})").body[0]
            form.body.insert(i + 1, check)
            added += 1
        if added:
            kp.notes.append(
                "an integer division by a tensor's value asserts it is not 0, "
                "where eager raises (Inductor's kernels give 0)"
            )
