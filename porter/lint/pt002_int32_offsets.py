"""PT002: an element offset computed in int32 from an index that grows with the input."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from porter.lint import names
from porter.lint.context import Context, KernelContext
from porter.lint.dataflow import Site, Val, grows
from porter.lint.findings import ERROR, INFO, Hit, Rule, hit

RULE = Rule(
    id="PT002",
    name="int32-offset",
    severity=ERROR,
    title="element offset computed in int32",
    reason=(
        "tl.program_id, integer arguments and loaded indices are int32; `row * stride` "
        "wraps once it reaches 2**31 (16,384 rows of a 131,072-wide vocab, a large KV "
        "cache) and the pointer reads the wrong memory."
    ),
    fix="widen a factor before multiplying: `row = tl.program_id(0).to(tl.int64)`, "
    "or annotate the argument `: tl.int64`",
)

# `pid * 2`, `pid * 3`: structural factors (pairs, xyz) would need 2**30 programs to
# overflow; tile sizes and strides are what push offsets past 2**31.
_SMALL_LITERAL = 16


def _small_literal(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and 0 <= node.value <= _SMALL_LITERAL
    )


def _index_kind(v: Val) -> str:
    if v.index_load and not (v.pid or v.size):
        return "a loaded index"
    if v.size and not v.pid:
        return "a runtime size"
    return "a program id"


def _small_factor(node: ast.AST) -> bool:
    """A head count or a per-head width: tokens x heads fits in int32 at any realistic size."""
    if not isinstance(node, ast.Name):
        return False
    low = node.id.lower()
    per_head = ("head_dim", "head_size", "rotary_dim", "rot_dim", "dim_half")
    return names.is_head_count(node.id) or any(w in low for w in per_head)


# Tables whose entries address a KV cache: an entry times a stride spans the cache.
_CACHE_TABLE = (
    "block_table",
    "req_to_token",
    "slot_mapping",
    "page",
    "kv_indices",
    "cache",
)


def _cache_index(idx: Val, flow) -> bool:
    bases = {flow.load_base.get(i) or "" for i in idx.loads}
    return any(w in b.lower() for b in bases for w in _CACHE_TABLE)


def _judge(site: Site, kc: KernelContext, decode: bool) -> tuple[str, str] | None:
    """(severity, what) for `a * b` as an element offset, or None when it fits.

    Error only where the file shows the offset spans something that passes 2**31:
    two input-sized factors, a KV-cache table entry times a stride, a vocab-wide row.
    A row index times a stride is reported at info: whether rows x stride reaches
    2**31 depends on tensor sizes the file does not show."""
    (a, b), (an, bn) = site.operands, site.operand_nodes
    if a.wide or b.wide or _small_literal(an) or _small_literal(bn):
        return None
    for idx, other, onode in ((a, b, bn), (b, a, an)):
        if not grows(idx):
            continue
        kind = _index_kind(idx)
        if grows(other):
            return ERROR, (
                f"{kind} times another input-sized factor; the product passes 2**31 "
                f"at sizes as small as 46,341 x 46,341"
            )
        runtime = other.param or other.size
        if runtime and idx.index_load and _cache_index(idx, kc.flow):
            return ERROR, (
                f"a KV-cache table entry times a runtime stride; a cache passes 2**31 "
                f"elements at ordinary sizes, and the offset wraps there"
            )
        if runtime and any("vocab" in n.lower() for n in other.params):
            return ERROR, (
                f"{kind} times a vocabulary-wide stride; 16,384 rows of a 131,072 "
                f"vocabulary reach 2**31"
            )
        if _small_factor(onode):
            return INFO, (
                f"{kind} times a head count or per-head width; it wraps only past "
                f"2**24 rows, and the linter cannot see the row count"
            )
        if decode and idx.pid and not (idx.size or idx.index_load):
            return INFO, (
                "a program id times a runtime stride in a decode kernel, where "
                "program ids count sequences (hundreds), not tokens"
            )
        if runtime:
            return INFO, (
                f"{kind} times a runtime stride or size: it wraps once rows x stride "
                f"reach 2**31 (16,384 x 131,072), and the linter cannot see the "
                f"tensor's size; widen if it can get there"
            )
        if other.const:
            return INFO, (
                f"{kind} times a compile-time width; it wraps once the tensor passes "
                f"2**31 elements, and the linter cannot see the tensor's size"
            )
    for idx, other in ((a, b), (b, a)):
        if idx.small_pid and (other.param or other.size or grows(other)):
            return INFO, (
                "a program id of grid axis 1 or 2 (at most 65,535) times a runtime "
                "stride; it wraps only if that stride passes 32,768, and the linter "
                "cannot see which dimension it strides"
            )
    return None


def _decode_only(ctx: Context, kc: KernelContext) -> bool:
    return names.decode_only(kc.kernel.name, Path(ctx.module.path).stem)


def _widened_too_late(kc: KernelContext) -> set[int]:
    """`(pid * stride).to(tl.int64)`: the int32 product wrapped before the cast."""
    flow = kc.flow
    return {
        n
        for n in flow.widened_terms & flow.pointer_mults
        if not any(v.const for v in flow.mults[n].operands)
    }


def check(ctx: Context) -> Iterator[Hit]:
    for kc in ctx.kernels:
        late = _widened_too_late(kc)
        decode = _decode_only(ctx, kc)
        for node_id in sorted(
            kc.flow.offset_terms | late, key=lambda n: kc.flow.mults[n].node.lineno
        ):
            site = kc.flow.mults[node_id]
            judged = _judge(site, kc, decode)
            if judged is None:
                continue
            severity, what = judged
            if node_id in late:
                severity, what = ERROR, (
                    f"{what.split(':')[0].split(';')[0]}, cast to int64 only after the "
                    f"int32 product was computed (the cast cannot undo a wrap)"
                )
            expr = ast.unparse(site.node)
            left, right = (ast.unparse(n) for n in site.operand_nodes)
            yield hit(
                site.node,
                f"`{expr}` in `{kc.kernel.name}` is an element offset computed in "
                f"int32 from {what}",
                f"widen before multiplying: `{_widened(left)} * {right}`",
                severity if severity != ERROR else None,
            )


def _widened(text: str) -> str:
    node = ast.parse(text, mode="eval").body
    atom = isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
    return f"{text}.to(tl.int64)" if atom else f"({text}).to(tl.int64)"
