"""PT004: a runtime size (num_tokens, xnumel, ...) that Triton specializes on.

Strides are deliberately not reported: they are fixed by the tensor layout, so
the `== 1` / divisible-by-16 variants are compiled once at warmup, and the
`stride == 1` variant is what lets Triton vectorize contiguous rows.
"""

from __future__ import annotations

from collections.abc import Iterator

from porter.lint import names
from porter.lint.context import Context, KernelContext
from porter.lint.findings import WARNING, Hit, Rule, hit
from porter.lint.pt003_specialized_flag import flag_params
from porter.lint.source import INT

RULE = Rule(
    id="PT004",
    name="specialized-size",
    severity=WARNING,
    title="per-call runtime size is specialized",
    reason=(
        "Triton specializes integer arguments on `== 1` and divisibility by 16; a token or "
        "element count changes every call, so new values trigger runtime JIT compiles."
    ),
    fix='add it to `@triton.jit(do_not_specialize=["num_tokens", ...])`',
)


def _masked_against_program_id(kc: KernelContext) -> set[str]:
    """Int params compared with indices derived from tl.program_id(0) (`offs < n`,
    `row >= n_rows`). Axes 1 and 2 are left out: runtime sizes belong in grid[0], so
    what bounds those axes is a per-model size."""
    out: set[str] = set()
    for site in kc.flow.compares.values():
        if len(site.operands) != 2:
            continue
        a, b = site.operands
        for idx, bound in ((a, b), (b, a)):
            if idx.from_pid and not bound.from_pid:
                out |= set(bound.params)
    return {n for n in out if not names.is_per_model(n) and not names.is_stride_name(n)}


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        if kc.helper:
            continue  # called, not launched: nothing to specialize
        kernel = kc.kernel
        dns = kernel.do_not_specialize
        flags = {p.name for p in flag_params(kernel, kc.flow.tested_params)}
        masked = _masked_against_program_id(kc)
        for p in kernel.params:
            if p.kind != INT or p.is_bool or p.name in dns or p.name in flags:
                continue
            if names.is_stride_name(p.name):
                continue
            if names.is_runtime_size(p.name):
                why = "is a per-call runtime size"
            elif p.name in masked:
                why = "bounds a program-id-derived index, so it varies with the input"
            else:
                continue
            yield hit(
                p.node,
                f"`{p.name}` of `{kernel.name}` {why} but is specialized "
                f"(== 1, % 16): new values recompile the kernel at runtime",
                f'add "{p.name}" to `@triton.jit(do_not_specialize=[...])`',
            )
