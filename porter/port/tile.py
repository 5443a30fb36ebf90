"""Stage: launch a flat pointwise kernel over a (rows, cols) grid.

Inductor indexes a pointwise kernel by one flat offset and recovers the column
and row with `offsets % K` and `offsets // K`. In int64 (porter widens offsets
so they cannot overflow) that is an emulated 64-bit division per element, and
the modulo hides from Triton that a row's columns are contiguous, so loads are
not vectorized. A hand-written kernel (vLLM's silu_and_mul) puts rows in
grid[0] and column blocks in grid[1] instead: the column index is a plain
arange, the row index a program id.

`tile_rows_by_cols` rewrites

    block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    mask = offsets < numel
    x0 = offsets % K
    x1 = offsets // K

into

    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_rows) & (cols < K)
    x0 = cols
    x1 = rows

when K is a per-model (constexpr) size, numel is K times a whole number of
rows, and nothing else reads the flat offset but further `offsets // (K * q)`
row splits (rotary's token index), which become `rows // q`.
"""

from __future__ import annotations

import ast
import re

import sympy

from porter.port.generalize import _sym, ident, set_signature
from porter.port.model import KernelPort, Param
from porter.port.passes import _rename

PREAMBLE = [
    "block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE",
    "offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]",
]


def _exact_quotient(num: str, den: str) -> str | None:
    """num / den as a launcher expression when it is a polynomial (an exact
    number of rows); `a // b` terms are treated as opaque symbols."""
    floors: dict[str, str] = {}

    def opaque(text: str) -> str:
        def sub(m: re.Match) -> str:
            key = f"_floor{len(floors)}"
            floors.setdefault(m.group(0), key)
            return floors[m.group(0)]

        # innermost `(a // b)` groups, repeatedly
        prev = None
        while prev != text:
            prev = text
            text = re.sub(r"\([^()]*//[^()]*\)", sub, text)
        return text

    def symbols(text: str) -> str:
        # `x.shape[1]` is a size like any other: a plain symbol for sympy
        return re.sub(r"(\w+)\.shape\[(\d+)\]", r"\1__size\2", opaque(text))

    n, d = _sym(symbols(num)), _sym(symbols(den))
    if n is None or d is None or d == 0:
        return None
    q = sympy.cancel(n / d)
    _, den_q = sympy.fraction(q)
    if den_q != 1 or q.is_number and q != int(q):
        return None
    text = str(sympy.factor(q)).replace(" ", "")
    text = re.sub(r"(\d+)\*\*(\d+)", r"\1**\2", text)
    for expr, key in floors.items():
        text = text.replace(key, expr)
    text = re.sub(r"(\w+)__size(\d+)", r"\1.shape[\2]", text)
    return text


def tile_rows_by_cols(kp: KernelPort) -> bool:
    """Rewrite a flat pointwise kernel onto a (rows, column blocks) grid; record
    the row count on kp.tile for the launcher. False when the pattern differs."""
    fn = kp.tree
    body = fn.body
    if kp.record.kind != "pointwise" or len(body) < 4:
        return False
    if [ast.unparse(s) for s in body[:2]] != PREAMBLE:
        return False
    mask = body[2]
    if not (
        isinstance(mask, ast.Assign)
        and ast.unparse(mask.targets[0]) == "mask"
        and isinstance(mask.value, ast.Compare)
        and ast.unparse(mask.value.left) == "offsets"
        and isinstance(mask.value.ops[0], ast.Lt)
        and isinstance(mask.value.comparators[0], ast.Name)
    ):
        return False
    numel = mask.value.comparators[0].id
    params = {p.name: p for p in kp.params}
    if numel not in params or params[numel].kind != "runtime":
        return False
    col = next(
        (
            s
            for s in body[3:]
            if isinstance(s, ast.Assign)
            and isinstance(s.value, ast.BinOp)
            and isinstance(s.value.op, ast.Mod)
            and ast.unparse(s.value.left) == "offsets"
            and isinstance(s.value.right, ast.Name)
        ),
        None,
    )
    if col is None:
        return False
    k = col.value.right.id
    if k not in params or params[k].kind != "model":
        return False
    rows_expr = _exact_quotient(params[numel].value, params[k].value)
    if rows_expr is None:
        return False
    # A row split `offsets // D` (D a constexpr size that is K times a whole
    # number) becomes `rows // (D / K)`; any other use reads the flat offset,
    # rebuilt as `rows * K + cols` (a packed tensor indexed directly, `x_ptr +
    # offsets`: the launcher packs inputs a kernel indexes this way).
    splits: dict[int, tuple[ast.Assign, str | None]] = {}
    flat_uses = False
    for s in body[3:]:
        if s is col:
            continue
        uses = [n for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == "offsets"]
        if not uses:
            continue
        if not (
            isinstance(s, ast.Assign)
            and isinstance(s.value, ast.BinOp)
            and isinstance(s.value.op, ast.FloorDiv)
            and ast.unparse(s.value.left) == "offsets"
            and isinstance(s.value.right, ast.Name)
            and len(uses) == 1
        ):
            flat_uses = True
            continue
        d = s.value.right.id
        if d == k:
            splits[id(s)] = (s, None)
            continue
        q = None
        if d in params and params[d].kind == "model":
            q = _exact_quotient(params[d].value, params[k].value)
        if q is None:
            flat_uses = True  # keep `offsets // D` on the rebuilt flat offset
            continue
        splits[id(s)] = (s, q)
    if any(
        isinstance(n, ast.Name) and n.id == "BLOCK_SIZE"
        for s in body[3:]
        for n in ast.walk(s)
    ):
        return False

    # The rewrite.
    new_params: list[Param] = []
    for s, q in splits.values():
        if q is None:
            s.value = ast.Name("rows", ast.Load())
            continue
        name = ident(q)
        if name not in params and all(p.name != name for p in new_params):
            new_params.append(Param(name, "model", q, "tl.constexpr", ""))
        s.value = ast.parse(f"rows // {name}", mode="eval").body
    col.value = ast.Name("cols", ast.Load())
    head = [
        "rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS"
        " + tl.arange(0, BLOCK_ROWS)[:, None]",
        "cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]",
        f"mask = (rows < num_rows) & (cols < {k})",
    ]
    if flat_uses:
        head.append(f"offsets = rows * {k} + cols")
    fn.body = [ast.parse(line).body[0] for line in head] + body[3:]
    # `x0 = cols`, `x1 = rows`: plain aliases now, folded away.
    aliases = {}
    for s in list(fn.body[3:]):
        if (
            isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name)
            and ast.unparse(s.value) in ("cols", "rows")
        ):
            aliases[s.targets[0].id] = ast.unparse(s.value)
            fn.body.remove(s)
    # The row count takes the dim's name when it is one (num_tokens).
    rows_name = rows_expr if rows_expr.isidentifier() else "num_rows"
    if rows_name != "num_rows" and rows_name in params:
        rows_name = "num_rows"
    head_names = {"rows", "cols", "mask", "num_rows"}
    if (
        rows_name
        in {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} - head_names
    ):
        rows_name = "num_rows"
    fn.body[2] = ast.parse(f"mask = (rows < {rows_name}) & (cols < {k})").body[0]
    _rename(fn, {**aliases, numel: rows_name})
    kp.params = [
        (Param(rows_name, "runtime", rows_expr, "", numel) if p.name == numel else p)
        for p in kp.params
        if p.name != "BLOCK_SIZE"
    ]
    blocks = [
        Param("BLOCK_ROWS", "block", "BLOCK_ROWS", "tl.constexpr", "XBLOCK"),
        Param("BLOCK_COLS", "block", "BLOCK_COLS", "tl.constexpr", ""),
    ]
    kp.params = kp.params + new_params + blocks
    # Sizes only the flat index needed (K * num_heads ...) are no longer read.
    read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    kp.params = [p for p in kp.params if p.kind != "model" or p.name in read]
    set_signature(kp)
    kp.tile = (k, params[k].value, rows_expr)
    kp.notes.append(
        "pointwise kernels run on a (rows, column blocks) grid: no 64-bit % and // "
        "per element, contiguous columns the compiler can vectorize"
    )
    return True
