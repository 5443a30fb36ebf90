"""PT003: a runtime 0/1 flag that Triton specializes on, outside do_not_specialize."""

from __future__ import annotations

from collections.abc import Iterator

from porter.lint import names
from porter.lint.context import Context
from porter.lint.findings import ERROR, Hit, Rule, hit
from porter.lint.source import INT, Kernel, Param

RULE = Rule(
    id="PT003",
    name="specialized-flag",
    severity=ERROR,
    title="runtime 0/1 flag is specialized",
    reason=(
        "Triton specializes integer arguments on `== 1` (and divisibility by 16); a flag "
        "that alternates 0/1 between calls compiles a second variant mid-serving."
    ),
    fix="add the flag to `@triton.jit(do_not_specialize=[...])`, annotate it `: tl.int1`, "
    "or make it `tl.constexpr` if it picks a code path on purpose",
)


def flag_params(kernel: Kernel, tested: set[str]) -> list[Param]:
    dns = kernel.do_not_specialize
    return [
        p
        for p in kernel.params
        if p.kind == INT
        and not p.is_bool
        and p.name not in dns
        and (names.is_flag_name(p.name) or p.name in tested)
    ]


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        if kc.helper:
            continue  # called, not launched: nothing to specialize
        for p in flag_params(kc.kernel, kc.flow.tested_params):
            yield hit(
                p.node,
                f"`{p.name}` of `{kc.kernel.name}` looks like a runtime 0/1 flag and is "
                f"specialized: switching it recompiles the kernel",
                f'add "{p.name}" to `@triton.jit(do_not_specialize=[...])` '
                f"(or make it tl.constexpr if it selects a code path)",
            )
