"""Stage: launch a flat pointwise kernel over a (rows, cols) grid.

Inductor indexes a pointwise kernel by one flat offset and recovers the column
and row with `offsets % K` and `offsets // K`. In int64 (porter widens offsets
so they cannot overflow) that is an emulated 64-bit division per element, and
the modulo hides from Triton that a row's columns are contiguous, so loads are
not vectorized. A hand-written kernel (vLLM's silu_and_mul) puts rows in
grid[0] and column blocks in grid[1] instead: the column index is a plain
arange, the row index a program id. porter keeps both on grid[0] (COL_BLOCKS
column blocks a row block, a constexpr), so that consecutive programs take
consecutive column blocks of a row, in memory order as Inductor's flat grid.
On an H200 (graph replay) it took 0.93-0.99 of the 2-D grid's time at 1-256
tokens where a row is one column block (silu_and_mul and gelu_tanh_and_mul
over 512 columns, rotary_neox over 4 heads of 64), 0.95-1.03 from 1024
tokens, and 0.99-1.03 over 4096 columns and 32 heads of 128
(lab/NOTES.md).

`tile_rows_by_cols` rewrites

    block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    mask = offsets < numel
    x0 = offsets % K
    x1 = offsets // K

into

    row_block = tl.program_id(0) // COL_BLOCKS
    col_block = tl.program_id(0) % COL_BLOCKS
    rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]
    mask = (rows < num_rows) & (cols < K)
    x0 = cols
    x1 = rows

when K is a per-model (constexpr) size, numel is K times a whole number of
rows, and nothing else reads the flat offset but further `offsets // (K * q)`
row splits (rotary's token index), which become `rows // q`.

A kernel with no column index, which reads only the flat offset (linear_gelu's
epilogue over the matmul's output, `out_ptr + offsets`), is tiled the same
way when its element count is a per-model factor K times per-call dims
(`out_features * num_tokens`): K becomes a new constexpr and `offsets = rows *
K + cols`. With only a runtime element count in the mask, Triton cannot tell
that a thread's elements are in bounds together and loads them one at a time.
"""

from __future__ import annotations

import ast
import re

import sympy

from porter.port.bind.generalize import RESERVED, ident, set_signature
from porter.port.model import KernelPort, Param
from porter.ties import sym_expr
from porter.ast_tools import full_names, is_call, names_in, rename_names, unique_name

PREAMBLE = [
    "block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE",
    "offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]",
]


class _Sizes:
    """Launcher size expressions as sympy symbols and back: `x.shape[1]` and
    `(a // b)` terms become plain symbols (a floor is opaque to the algebra)."""

    def __init__(self) -> None:
        self.floors: dict[str, str] = {}

    def to_sympy(self, text: str) -> sympy.Expr | None:
        floors = self.floors

        class Opaque(ast.NodeTransformer):
            # every `a // b` (its operands nested as they may be) a symbol
            def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
                if isinstance(node.op, ast.FloorDiv):
                    key = f"({ast.unparse(node)})"
                    floors.setdefault(key, f"_floor{len(floors)}")
                    return ast.Name(floors[key], ast.Load())
                return self.generic_visit(node)

        try:
            text = ast.unparse(Opaque().visit(ast.parse(text.strip(), mode="eval")))
        except SyntaxError:
            return None
        # `x.shape[1]` is a size like any other: a plain symbol for sympy
        return sym_expr(re.sub(r"(\w+)\.shape\[(\d+)\]", r"\1__size\2", text))

    def names(self, expr: sympy.Expr) -> set[str]:
        """The names expr reads, those inside its opaque floors included."""
        names = set()
        for symbol in map(str, expr.free_symbols):
            floor = next((f for f, key in self.floors.items() if key == symbol), None)
            names |= set(re.findall(r"[A-Za-z_]\w*", floor)) if floor else {symbol}
        return names

    def to_text(self, expr: sympy.Expr) -> str:
        text = str(sympy.factor(expr)).replace(" ", "")
        for floor, key in self.floors.items():
            text = text.replace(key, floor)
        return re.sub(r"(\w+)__size(\d+)", r"\1.shape[\2]", text)


def _exact_quotient(num: str, den: str) -> str | None:
    """num / den as a launcher expression when it is a polynomial (an exact
    number of rows); `a // b` terms are treated as opaque symbols."""
    sizes = _Sizes()
    n, d = sizes.to_sympy(num), sizes.to_sympy(den)
    if n is None or d is None or d == 0:
        return None
    q = sympy.cancel(n / d)
    _, den_q = sympy.fraction(q)
    if den_q != 1 or q.is_number and q != int(q):
        return None
    return sizes.to_text(q)


# The least literal per-model factor of a flat element count taken as its row
# size (a warp's 32 lanes across one row).
MIN_LITERAL_ROW = 32


def _model_factor(numel: str, runtime_dims: frozenset[str]) -> str | None:
    """The per-model factor of a flat element count (`out_features` of
    `out_features * num_tokens`), as a launcher expression: the product of its
    factors that name no per-call dim, or a literal of at least
    MIN_LITERAL_ROW (`96 * batch`). None when there is none, or nothing
    per-call is left beside it."""
    sizes = _Sizes()
    n = sizes.to_sympy(numel)
    if n is None:
        return None
    model, per_call = sympy.Integer(1), sympy.Integer(1)
    for f in sympy.Mul.make_args(sympy.factor(n)):
        if sizes.names(f) & runtime_dims:
            per_call *= f
        else:
            model *= f
    if per_call.is_number:
        return None
    if model.is_number:
        # A size the capture fixed (a KernelBench file's features) is a row;
        # a small literal is a multiplier (two halves of a gated input).
        return str(int(model)) if model >= MIN_LITERAL_ROW else None
    return sizes.to_text(model)


# The names the tile's head assigns or reads.
_HEAD_NAMES = frozenset({"row_block", "col_block", "rows", "cols", "mask", "num_rows"})


class _Replace(ast.NodeTransformer):
    """Replace the nodes whose id is a key by their value."""

    def __init__(self, replace: dict[int, ast.expr]) -> None:
        self.replace = replace

    def visit(self, node: ast.AST) -> ast.AST:
        if id(node) in self.replace:
            return self.replace[id(node)]
        return super().visit(node)


def _split_rows(d: str, k: str, k_value: str, params: dict[str, Param]):
    """For `offsets // d`: None when d is the row size K (the row itself), q
    when d is K times a whole number q of rows, False when it is neither."""
    if d == k:
        return None
    if d not in params or params[d].kind not in ("model", "runtime"):
        return False
    q = _exact_quotient(params[d].value, k_value)
    return False if q is None else q


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
    new_params: list[Param] = []
    if col is not None:
        k = col.value.right.id
        if k not in params or params[k].kind != "model":
            return False
        k_value = params[k].value
    else:
        # No column index: the kernel reads only the flat offset (an epilogue
        # over a matmul's output). Its rows are the per-model factor of the
        # element count, a new constexpr, so that Triton sees whole rows in the
        # mask and vectorizes; a runtime element count hides that.
        k_value = _model_factor(params[numel].value, kp.runtime_dims)
        if k_value is None:
            return False
        k = "row_size" if k_value.isdigit() else ident(k_value)
        if k in _HEAD_NAMES:
            k = f"{k}_size"  # a dim named cols: the head's cols would shadow it
        taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        if k in params or k in taken:
            return False
        new_params.append(Param(k, "model", k_value, "tl.constexpr", ""))
    rows_expr = _exact_quotient(params[numel].value, k_value)
    if rows_expr is None:
        return False
    # A row split `offsets // D` anywhere in a statement (D a size that is K
    # times a whole number q of rows) becomes `rows // q`, or `rows` at q = 1:
    # per row, not a 64-bit division per element (merge_attn_states' head and
    # token, `offsets // head_dim % num_tokens`, `offsets // (head_dim *
    # num_tokens)`). Any other use reads the flat offset, rebuilt as `rows * K
    # + cols` (a packed tensor indexed directly, `x_ptr + offsets`: the
    # launcher packs inputs a kernel indexes this way).
    splits: list[tuple[ast.BinOp, str | None]] = []
    flat_uses = False
    for s in body[3:]:
        if s is col:
            continue
        uses = [n for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == "offsets"]
        if not uses:
            continue
        found = [
            (node, _split_rows(node.right.id, k, k_value, params))
            for node in ast.walk(s)
            if isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.FloorDiv)
            and isinstance(node.left, ast.Name)
            and node.left.id == "offsets"
            and isinstance(node.right, ast.Name)
        ]
        found = [(node, q) for node, q in found if q is not False]
        splits += found
        flat_uses |= len(found) < len(uses)
    # A scalar broadcast to the flat block (a per-tensor scale, `x /
    # tl.broadcast_to(scale, [BLOCK_SIZE])`) is broadcast to the tile instead.
    block_broadcasts = [
        node
        for s in body[3:]
        for node in ast.walk(s)
        if is_call(node, "tl.broadcast_to")
        and len(node.args) == 2
        and ast.unparse(node.args[1]) == "[BLOCK_SIZE]"
    ]
    # The rest must not read the flat block, nor already use a name the new
    # head assigns.
    head_assigns = {"BLOCK_SIZE", "row_block", "col_block", "rows", "cols"}
    broadcast_blocks = {id(n.args[1].elts[0]) for n in block_broadcasts}
    if any(
        isinstance(n, ast.Name)
        and n.id in head_assigns
        and id(n) not in broadcast_blocks
        for s in body[3:]
        for n in ast.walk(s)
    ):
        return False

    # The rewrite.
    for node in block_broadcasts:
        node.args[1] = ast.parse("[BLOCK_ROWS, BLOCK_COLS]", mode="eval").body
    replace: dict[int, ast.expr] = {}
    for node, q in splits:
        if q in (None, "1"):
            replace[id(node)] = ast.Name("rows", ast.Load())
            continue
        name = ident(q)
        if name in RESERVED - {"num_rows"}:
            name = f"{name}_size"  # a dim named cols: the index would shadow it
        # A name another size has already (`8 * d * h` and `d * h` are both
        # x_shape_size): its own name, or the row split read the other size
        # (a channel softmax's batch index read D'H', not 8 D'H': out of bounds).
        known = {p.name: p.value for p in [*kp.params, *new_params]}
        if name in known and _exact_quotient(known[name], q) != "1":
            name = unique_name(
                name,
                set(known) | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)},
            )
        if name not in params and all(p.name != name for p in new_params):
            per_call = bool(set(re.findall(r"[A-Za-z_]\w*", q)) & kp.runtime_dims)
            kind, note = ("runtime", "") if per_call else ("model", "tl.constexpr")
            new_params.append(Param(name, kind, q, note, ""))
        replace[id(node)] = ast.parse(f"rows // {name}", mode="eval").body
    if replace:
        _Replace(replace).visit(fn)
    if col is not None:
        col.value = ast.Name("cols", ast.Load())
    # One grid axis: program p takes row block p // COL_BLOCKS, column block
    # p % COL_BLOCKS, so programs launched one after another walk memory in
    # order, as Inductor's flat grid does.
    head = [
        "row_block = tl.program_id(0) // COL_BLOCKS",
        "col_block = tl.program_id(0) % COL_BLOCKS",
        "rows = row_block.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]",
        "cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]",
        f"mask = (rows < num_rows) & (cols < {k})",
    ]
    at_mask = len(head) - 1
    if flat_uses:
        head.append(f"offsets = rows * {k} + cols")
    fn.body = [ast.parse(line).body[0] for line in head] + body[3:]
    # `x0 = cols`, `x1 = rows`: plain aliases now, folded away.
    aliases = {}
    for s in list(fn.body[at_mask + 1 :]):
        if (
            isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name)
            and ast.unparse(s.value) in ("cols", "rows")
        ):
            aliases[s.targets[0].id] = ast.unparse(s.value)
            fn.body.remove(s)
    # The row count takes the dim's name when it is one (num_tokens).
    rows_name = rows_expr if rows_expr.isidentifier() else "num_rows"
    if rows_name != "num_rows" and (rows_name in params or rows_name in _HEAD_NAMES):
        rows_name = "num_rows"
    head_names = _HEAD_NAMES
    if (
        rows_name
        in {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} - head_names
    ):
        rows_name = "num_rows"
    # A parameter already named num_rows (a dim of that name the kernel reads
    # besides its row count) keeps its name; the row count takes another.
    others = {name for name in params if name != numel}
    if rows_name in others:
        rows_name = unique_name(rows_name, others)
    fn.body[at_mask] = ast.parse(f"mask = (rows < {rows_name}) & (cols < {k})").body[0]
    rename_names(fn, {**aliases, numel: rows_name})
    kp.params = [
        (Param(rows_name, "runtime", rows_expr, "", numel) if p.name == numel else p)
        for p in kp.params
        if p.name != "BLOCK_SIZE"
    ]
    blocks = [
        Param("BLOCK_ROWS", "block", "BLOCK_ROWS", "tl.constexpr", "XBLOCK"),
        Param("BLOCK_COLS", "block", "BLOCK_COLS", "tl.constexpr", ""),
        Param("COL_BLOCKS", "block", "COL_BLOCKS", "tl.constexpr", ""),
    ]
    kp.params = kp.params + new_params + blocks
    # Sizes only the flat index needed (K * num_heads ...) are no longer read.
    read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    kp.params = [
        p for p in kp.params if p.kind not in ("model", "runtime") or p.name in read
    ]
    set_signature(kp)
    kp.tile = (k, k_value, rows_expr)
    kp.notes.append(
        "pointwise kernels run on (rows, column blocks) tiles: no 64-bit % and // "
        "per element, contiguous columns the compiler can vectorize"
    )
    return True


def column_masked_loads(kp: KernelPort) -> bool:
    """In a tiled kernel, load a per-column vector (a bias or a scale, at an
    address that reads `cols` and nothing derived from `rows`) under the
    column bound alone: `tl.load(b_ptr + cols, cols < K)` is one row of values
    that broadcasts over the block's rows, where under the tile's `mask` it
    is loaded again for every row of the block (Inductor's flat kernel
    compiled for a GPU masks it so: linear_gelu's bias). False when there is
    no such load."""
    changed = _one_axis_loads(kp, "cols")
    if changed:
        kp.notes.append(
            "per-column vectors (a bias, a scale) load one row a block under the "
            "column bound and broadcast over the block's rows"
        )
    return changed


def row_masked_loads(kp: KernelPort) -> bool:
    """In a tiled kernel, load a per-row value (a token's position or weight,
    at an address that reads `rows` and nothing derived from `cols`) under the
    row bound alone: `tl.load(w_ptr + rows, rows < num_rows)` is one column of
    values that broadcasts over the block's columns, where under the tile's
    `mask` every column of the block loads it again (merge_attn_states'
    weights, rotary's positions). False when there is no such load."""
    changed = _one_axis_loads(kp, "rows")
    if changed:
        kp.notes.append(
            "per-row values (a position, a weight) load one column a block under "
            "the row bound and broadcast over the block's columns"
        )
    return changed


def _one_axis_loads(kp: KernelPort, axis: str) -> bool:
    """Bound each load under the tile's `mask` whose address reads only `axis`
    (rows or cols) by that axis's half of the mask."""
    if kp.tile is None:
        return False
    fn = kp.tree
    bounds = _tile_bounds(fn)
    if bounds is None:
        return False
    # Names computed from the row index, and from the column index.
    deps = {
        "rows": full_names(fn, {"rows", "row_block", "mask", "offsets"}),
        "cols": full_names(fn, {"cols", "col_block", "mask", "offsets"}),
    }
    other = "cols" if axis == "rows" else "rows"
    changed = False
    for call in ast.walk(fn):
        if not (
            isinstance(call, ast.Call)
            and ast.unparse(call.func) == "tl.load"
            and len(call.args) >= 2
            and ast.unparse(call.args[1]) == "mask"
        ):
            continue
        address = names_in(call.args[0])
        if address & deps[other] or not address & deps[axis]:
            continue
        call.args[1] = ast.parse(bounds[axis], mode="eval").body
        changed = True
    return changed


def _tile_bounds(fn: ast.FunctionDef) -> dict[str, str] | None:
    """The two halves of the tile's `mask = (rows < R) & (cols < K)`, by axis."""
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.Assign)
            and ast.unparse(stmt.targets[0]) == "mask"
            and isinstance(stmt.value, ast.BinOp)
            and isinstance(stmt.value.op, ast.BitAnd)
        ):
            halves = [ast.unparse(stmt.value.left), ast.unparse(stmt.value.right)]
            if halves[0].startswith("rows < ") and halves[1].startswith("cols < "):
                return {"rows": halves[0], "cols": halves[1]}
    return None
