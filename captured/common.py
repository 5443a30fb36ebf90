"""What the kernels porter ported into this folder share: the launch rules, the
PDL switch, layout helpers and Triton helpers. Each case's kernel.py imports the
names it uses; take this file along with any of them.

Written by porter 0.1.0. The figures behind each rule are in porter's
docs/benchmarks/launch-rules.md; edit the rules here and every case follows.
"""

import os

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from torch._subclasses.fake_tensor import FakeTensor

# Kernels launch with programmatic dependent launch on Hopper and later: each may
# start while the one before drains (docs/benchmarks/launch-rules.md#pdl).
# PORTER_PDL=0 turns it off for the process, PDL = False from the next launch.
PDL = os.environ.get("PORTER_PDL", "1") != "0"
_HOPPER = {}  # device -> compute capability 9.0 or later, asked once


def pdl_enabled(device):
    """Whether kernels on this device launch with PDL (never under the interpreter)."""
    if not PDL or triton.knobs.runtime.interpret or device.type != "cuda":
        return False
    if device not in _HOPPER:
        _HOPPER[device] = (
            torch.version.hip is None
            and torch.cuda.get_device_capability(device)[0] >= 9
        )
    return _HOPPER[device]


@triton.jit
def pdl_wait(LAUNCH_PDL: tl.constexpr, EARLY_TRIGGER: tl.constexpr = True):
    """A kernel's first step under PDL: wait for the kernel before it, whose
    writes it may read; with EARLY_TRIGGER, let the next kernel launch now."""
    if LAUNCH_PDL:
        tl.extra.cuda.gdc_wait()
        if EARLY_TRIGGER:
            tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def pdl_release(LAUNCH_PDL: tl.constexpr, EARLY_TRIGGER: tl.constexpr):
    """Let the next kernel launch where pdl_wait did not, once the loads are issued."""
    if LAUNCH_PDL:
        if not EARLY_TRIGGER:
            tl.extra.cuda.gdc_launch_dependents()


# Rows up to MAX_FUSED_COLS stay in one program's registers; wider rows take the
# looped kernel (docs/benchmarks/launch-rules.md#persistent-or-looped).
MAX_FUSED_COLS = 8192
LOOPED_BLOCK_COLS = 4096
LOOPED_WARPS = 16


# A looped kernel reading its row once (an argmax) with about 4 rows an SM or
# more: programs of 512 threads, 4 an SM, keep more rows' loads in flight than
# one of 1024 (docs/benchmarks/launch-rules.md#persistent-or-looped).
ONCE_MIN_ROWS = 512
ONCE_BLOCK_COLS = 2048


def looped_settings(num_rows, row_size, elem_bytes=2, once=False):
    """(block, warps) of the looped kernel."""
    if once and num_rows >= ONCE_MIN_ROWS:
        return ONCE_BLOCK_COLS, LOOPED_WARPS
    if row_size >= 32768:
        if elem_bytes <= 2:
            return 8192, 32
        return (16384 if num_rows >= 4096 else 2048), 32
    if row_size * elem_bytes < 16384:
        return LOOPED_BLOCK_COLS, LOOPED_WARPS // 2
    return LOOPED_BLOCK_COLS, LOOPED_WARPS


# Rows of LOOPED_MIN_ROW_BYTES[reads, inputs] bytes or more take the looped kernel:
# it re-reads them from cache instead of holding them (docs/benchmarks/launch-rules.md#persistent-or-looped).
LOOPED_MIN_ROW_BYTES = {(2, 1): 8192, (3, 1): 16384, (2, 2): 16384}
# Rows read twice stay held up to HELD_MAX_BYTES at decode sizes, or always
# where nothing but the row is read (row_only).
HELD_DECODE_MAX_ROWS = 256
HELD_MAX_BYTES = 16384


def looped_min_row_bytes(key, num_rows, elem_bytes=2, row_only=False):
    """LOOPED_MIN_ROW_BYTES[key] for num_rows rows of elem_bytes elements."""
    if key[0] >= 3 and elem_bytes <= 2:
        return float("inf")
    if key == (2, 2) and (num_rows <= 64 or num_rows >= 1024):
        return 2 * LOOPED_MIN_ROW_BYTES[key]
    if key == (2, 1) and (row_only or num_rows <= HELD_DECODE_MAX_ROWS):
        return max(LOOPED_MIN_ROW_BYTES[key], 2 * HELD_MAX_BYTES)
    return LOOPED_MIN_ROW_BYTES[key]


# Many wide rows take the single-pass kernel: small programs streaming a row hide
# memory latency better than one holding it (docs/benchmarks/launch-rules.md#online).
ONLINE_MIN_COLS = 32768
ONLINE_MIN_ROWS = 1024
ONLINE_BLOCK_BYTES = 8192


def online_block_cols(elem_bytes=4):
    """The single-pass kernel's block: ONLINE_BLOCK_BYTES of elem_bytes elements."""
    return ONLINE_BLOCK_BYTES // elem_bytes


def online_min_rows(elem_bytes=2):
    """ONLINE_MIN_ROWS for rows of elem_bytes elements (2-byte rows: four times as many)."""
    return ONLINE_MIN_ROWS * (4 if elem_bytes <= 2 else 1)


# Row loads are marked evict_first while the tensor fits well in L2, and carry no
# hint from STREAM_MIN_BYTES on; a runtime branch, so no variant compiles mid-prefill
# (docs/benchmarks/launch-rules.md#stream).
STREAM_MIN_BYTES = 32 << 20


def stream_rows(row_size, elem_bytes=2):
    """Rows from which the tensor is STREAM_MIN_BYTES or more (the kernel's STREAM_ROWS)."""
    return triton.cdiv(STREAM_MIN_BYTES, max(row_size, 1) * elem_bytes)


# Up to this many rows of 4096, a kernel re-reading held rows keeps 32 bytes a
# thread; past them 4 warps (docs/benchmarks/launch-rules.md#row-launch).
REREAD_MANY_WARPS_MAX_ROWS = 2048


def launch_settings(
    num_rows,
    row_size,
    elem_bytes=2,
    row_tensors=2,
    row_only=False,
    reread=False,
    reduced_twice=False,
):
    """(rows a program, block, warps) for a reduction over rows of row_size
    elements: narrow rows packed 4 KB a program, one row a program at decode sizes
    or where a row moves 16 KB, 32 bytes a thread for wide rows
    (docs/benchmarks/launch-rules.md#row-launch)."""
    block = triton.next_power_of_2(max(row_size, 1))  # an empty row: one masked block
    if block <= 1024 and num_rows <= 256:
        return 1, block, min(8, max(1, block * elem_bytes // 512))
    if block <= 1024 and row_size * elem_bytes * row_tensors >= 16384:
        return 1, block, 1
    if block <= 1024:
        rows = max(2, 4096 // (block * elem_bytes))
        return rows, block, min(rows * (2 if row_only else 1), 8)
    if block == 4096 and num_rows > (REREAD_MANY_WARPS_MAX_ROWS if reread else 512):
        warps = 4
    else:
        warps = min(32, block * elem_bytes // 1024)
    if reduced_twice:
        # A held row reduced twice (its mean, then deviations from it) pays for a
        # padded block's masked lanes in warps that only synchronize: no more
        # warps than 32 bytes a thread of the row itself
        # (docs/benchmarks/launch-rules.md#row-launch).
        live = max(1, row_size * elem_bytes // 1024)
        warps = min(warps, 1 << (live.bit_length() - 1))
    return 1, block, warps


# Few rows of SPLIT_MIN_COLS or more are split over several programs each, up
# to SPLIT_PROGRAMS in all (8 an SM of an H100 or H200), where each warp of the
# looped kernel would walk more than SPLIT_WARP_COLS columns of its row, and
# while that excess is SPLIT_ROW_COLS columns or more a row: the split's extra
# launches cost about one looped walk of SPLIT_WARP_COLS, and each row more
# shares its SMs (docs/benchmarks/launch-rules.md#split). MAX_SPLITS, a power
# of two, is the partials a row split_partial loads at once.
SPLIT_MIN_COLS = 16384
SPLIT_WARP_COLS = 1024
SPLIT_ROW_COLS = 40
SPLIT_PROGRAMS = 1056
MAX_SPLITS = 128
MAX_SPLITS_BLOCK = tl.constexpr(MAX_SPLITS)
SPLIT_BLOCK_COLS = 2048
SPLIT_WARPS = 8


def split_count(num_rows, row_size, elem_bytes=2, once=False):
    """Programs a row of the split-row kernel; 1: not split."""
    _, warps = looped_settings(num_rows, row_size, elem_bytes, once)
    excess = row_size // warps - SPLIT_WARP_COLS
    if row_size < SPLIT_MIN_COLS or excess < max(num_rows, 1) * SPLIT_ROW_COLS:
        return 1
    most = min(MAX_SPLITS, SPLIT_PROGRAMS // max(num_rows, 1))
    return max(1, min(most, row_size // (2 * SPLIT_BLOCK_COLS)))


def row_launch(
    num_rows,
    row_size,
    elem_bytes=2,
    reads=None,
    once=False,
    online=False,
    split=False,
    stream=False,
    **rule,
):
    """(form, launch keywords) of a reduction over rows that has a persistent
    kernel and a looped one: rows held in registers (launch_settings, taking
    `rule`) unless the block is over MAX_FUSED_COLS or, for a kernel passing
    over its row `reads` = (passes, inputs), moves looped_min_row_bytes; then
    one row a program, streamed in blocks (looped_settings). With online, many
    very wide rows take the single-pass kernel; with split, few wide rows the
    split-row kernel; with stream, the persistent kernel takes STREAM_ROWS
    (docs/benchmarks/launch-rules.md#persistent-or-looped)."""
    rows, block, warps = launch_settings(num_rows, row_size, elem_bytes, **rule)
    if online and block >= ONLINE_MIN_COLS and num_rows >= online_min_rows(elem_bytes):
        rows, block, warps = launch_settings(
            num_rows, online_block_cols(elem_bytes), elem_bytes
        )
        return "online", {"BLOCK_ROWS": rows, "BLOCK_COLS": block, "num_warps": warps}
    splits = split_count(num_rows, row_size, elem_bytes, once) if split else 1
    if splits > 1:
        launch = {
            "BLOCK_ROWS": 1,
            "BLOCK_COLS": SPLIT_BLOCK_COLS,
            "num_warps": SPLIT_WARPS,
        }
        return "split", {**launch, "SPLITS": splits}
    row_only = rule.get("row_only", False)
    if block > MAX_FUSED_COLS or (
        reads
        and block * elem_bytes
        >= looped_min_row_bytes(reads, num_rows, elem_bytes, row_only)
    ):
        block, warps = looped_settings(num_rows, row_size, elem_bytes, once)
        return "looped", {"BLOCK_ROWS": 1, "BLOCK_COLS": block, "num_warps": warps}
    launch = {"BLOCK_ROWS": rows, "BLOCK_COLS": block, "num_warps": warps}
    if stream:
        launch["STREAM_ROWS"] = stream_rows(row_size, elem_bytes)
    return "persistent", launch


class SplitRows:
    """A looped kernel that can also run split over each row. Launch keywords
    without SPLITS: one launch of every loop (PHASE -1). With SPLITS: a (rows,
    SPLITS) grid launched once a phase, each phase handing the next `partials`
    fp32 values a row and split (docs/benchmarks/launch-rules.md#split)."""

    def __init__(self, kernel, phases, partials):
        self.kernel, self.phases, self.partials = kernel, phases, partials

    def __getattr__(self, name):  # fn, run, device_caches: the kernel's own
        if name == "kernel":  # not set yet: a copy being made
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def __getitem__(self, grid):
        def launch(**args):
            tensor = next(v for v in args.values() if isinstance(v, torch.Tensor))
            if "SPLITS" not in args:
                # PHASE -1 reads no partials: any tensor stands in for them
                whole = {"partials_ptr": tensor, "SPLITS": 1, "PHASE": -1}
                return self.run(grid=grid, warmup=False, **whole, **args)
            rows, splits = grid[0] * args["BLOCK_ROWS"], args["SPLITS"]
            partials = torch.empty(
                (rows, self.partials, splits), dtype=torch.float32, device=tensor.device
            )
            for phase in range(self.phases):
                self.run(
                    grid=(grid[0], splits),
                    warmup=False,
                    partials_ptr=partials,
                    PHASE=phase,
                    **args,
                )

        return launch


def split_rows(phases, partials):
    """Decorates a looped kernel that can run split over each row (SplitRows)."""
    return lambda kernel: SplitRows(kernel, phases, partials)


# Blocks of at most DECODE_BLOCK elements let the next kernel launch right after
# their wait; longer ones after their loads (docs/benchmarks/launch-rules.md#pdl).
DECODE_BLOCK = 512
# A column block pads the row at most this much more than blocks of 256 would.
PAD_MAX = 33 / 32
# Above decode sizes a program reads at least this much of its rows: under PDL a
# program reading 2 KB took 1.2x the time (docs/benchmarks/launch-rules.md#tile).
TILE_MIN_READ_BYTES = 4096


def tile_settings(num_rows, row_size, elem_bytes=2, heavy=False, loads=2):
    """(rows, columns, warps) of a block of a (rows, column blocks) pointwise
    launch: up to 4096 columns, 16 bytes a thread, rows packed until a program
    reads TILE_MIN_READ_BYTES in its `loads` blocks of columns; at decode sizes
    blocks of 512; heavy (libdevice) kernels two elements a thread
    (docs/benchmarks/launch-rules.md#tile)."""
    block_cols = triton.next_power_of_2(max(row_size, 1))
    elements = num_rows * row_size
    if elements <= (1 << 19 if heavy else 1 << 18):
        block_cols = min(block_cols, DECODE_BLOCK)
        return DECODE_BLOCK // block_cols, block_cols, 8 if heavy else 4
    block_cols = min(block_cols, 1024 if heavy and elem_bytes <= 2 else 4096)
    # Masked lanes cost as much as live ones: halve a block that pads the row
    # past PAD_MAX (docs/benchmarks/launch-rules.md#tile).
    least = 256 * triton.cdiv(row_size, 256)
    while (
        block_cols > 256
        and block_cols * triton.cdiv(row_size, block_cols) > PAD_MAX * least
    ):
        block_cols //= 2
    elements = 1024 if heavy else max(1024, TILE_MIN_READ_BYTES // (elem_bytes * loads))
    block_rows = max(1, elements // block_cols)
    warps = block_rows * block_cols * elem_bytes // 512
    return block_rows, block_cols, min(32, max(4, warps))


def flat_settings(numel, block, warps, heavy=False):
    """(block, warps) of a 1-D pointwise launch: the capture's choice, or blocks
    of 512 at decode sizes (docs/benchmarks/launch-rules.md#flat)."""
    if numel <= (1 << 19 if heavy else 1 << 18):
        return 512, 8 if heavy else 4
    return block, warps


# Small matmuls run with their epilogue as one Triton kernel instead of cuBLAS and a
# second kernel (docs/benchmarks/launch-rules.md#matmul).
MATMUL_EPILOGUE_MAX_ROWS = 1024
MATMUL_EPILOGUE_MAX_MACS = 1 << 28
# Past those rows, by output element bytes: the widest inner size measured to win.
MATMUL_WIDE_MAX_INNER = {2: 512, 4: 128}
# fp32 goes through tl.dot as three TF32 products; one row only up to this size,
# past which cuBLAS's matrix-vector kernel wins.
MATMUL_FP32_ONE_ROW_MAX_MACS = 1 << 15


def matmul_in_one_kernel(num_rows, inner_size, num_cols, elem_bytes):
    """Whether a num_rows x inner_size x num_cols matmul and its epilogue run as one kernel."""
    if num_rows > MATMUL_EPILOGUE_MAX_ROWS:
        return inner_size <= MATMUL_WIDE_MAX_INNER.get(elem_bytes, 0)
    if num_rows * inner_size * num_cols > MATMUL_EPILOGUE_MAX_MACS:
        return False
    if elem_bytes == 4:
        return num_rows > 1 or inner_size * num_cols <= MATMUL_FP32_ONE_ROW_MAX_MACS
    return elem_bytes == 2


def matmul_settings(num_rows, inner_size, elem_bytes=2):
    """(rows, columns, inner block, warps, stages) of a block of the matmul kernel (docs/benchmarks/launch-rules.md#matmul)."""
    k_block = max(16, triton.next_power_of_2(inner_size))
    if num_rows > MATMUL_EPILOGUE_MAX_ROWS:
        if elem_bytes == 4:
            return 64, 64, min(k_block, 32), 4, 3
        return 64, 128, min(k_block, 64), 8, (2 if inner_size <= 128 else 3)
    block_rows = 16 if num_rows <= 16 else 32
    if elem_bytes == 4:
        return block_rows, 32, min(k_block, 64), 4, 3
    return block_rows, 32, min(k_block, 128), 4, 4


def refuse(message):
    """Stop a call the kernels were not captured for, in one sentence."""
    raise NotImplementedError(message)


def is_fake(t):
    """Whether t is a tensor the compiler traces with (fake or meta): a launcher
    given one returns its outputs unwritten, as the op's fake implementation."""
    return isinstance(t, FakeTensor) or t.is_meta


_OPS = {}  # (namespace, name) -> (the Library that holds the op, its function)


def define_op(namespace, schema, impl, fake=None):
    """The custom op torch.ops.<namespace>.<name> of `schema`, defined once: impl
    runs it on every device, called straight from the dispatcher; fake (default:
    impl, whose launcher returns before its launches for fake tensors) gives the
    compiler its outputs (docs/engine.md)."""
    name = schema.split("(", 1)[0]
    if (namespace, name) not in _OPS:
        lib = torch.library.Library(namespace, "FRAGMENT")
        lib.define(schema)
        lib.impl(name, impl, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{namespace}::{name}", fake or impl, lib=lib)
        _OPS[namespace, name] = lib, impl
    elif _OPS[namespace, name][1] is not impl:
        raise ValueError(
            f"{namespace}::{name} is another case's op; register this one under "
            "another namespace"
        )
    return getattr(getattr(torch.ops, namespace), name)


def strided_as(t, strides):
    """t where its strides are those the kernels index it with (None: any) on
    every axis longer than one, else a contiguous copy of it, else a copy laid
    out with those strides (a column-major one where the capture saw x.t()).
    `strides` may be a function of the tensor (strides given by its own)."""
    want = strides(t) if callable(strides) else strides
    if t.numel() == 0 or all(
        s is None or n <= 1 or t.stride(i) == s
        for i, (n, s) in enumerate(zip(t.shape, want))
    ):
        return t
    t = t.contiguous()
    want = strides(t) if callable(strides) else strides
    if all(
        s is None or n <= 1 or t.stride(i) == s
        for i, (n, s) in enumerate(zip(t.shape, want))
    ):
        return t
    # Strides that pack the tensor in another axis order: a copy that has them,
    # each any-stride axis (innermost first) where the next known stride needs
    # it (a transposed capture's (None, T * W, 1)), the rest outermost.
    packed, strides = 1, list(want)
    free = [i for i in reversed(range(t.dim())) if want[i] is None and t.shape[i] > 1]
    known = [i for i in range(t.dim()) if want[i] is not None and t.shape[i] > 1]
    for i in sorted(known, key=lambda i: want[i]) + [None]:
        while free and (i is None or packed < want[i]):
            strides[free[0]] = packed
            packed *= t.shape[free.pop(0)]
        if i is None:
            break
        if want[i] != packed:
            raise NotImplementedError(
                f"the kernels index a tensor with strides {tuple(want)}, which a "
                f"{tuple(t.shape)} tensor cannot have; re-capture with this layout"
            )
        packed *= t.shape[i]
    for i, n in enumerate(t.shape):
        if n <= 1 and strides[i] is None:
            strides[i] = packed
    return torch.empty_strided(t.shape, strides, dtype=t.dtype, device=t.device).copy_(
        t
    )


def laid_out_like(out, t):
    """out in the layout eager gives an elementwise result of t: its axes in
    t's order in memory (channels_last in, channels_last out). Copied only
    where t came in an order other than the capture's, which the kernels
    wrote out in."""
    if out.dim() != t.dim() or (t.is_contiguous() and out.is_contiguous()):
        return out
    if out.shape == t.shape and out.stride() == t.stride():
        return out  # the capture's layout: a channels_last call of one
    if any(n > 1 and s == 0 for n, s in zip(t.shape, t.stride())):
        return out  # an expanded t: eager lays its result out by the others
    order = sorted(range(t.dim()), key=lambda d: (t.shape[d] > 1, -t.stride(d)))
    strides, step = [0] * t.dim(), 1
    for d in reversed(order):  # innermost first
        strides[d], step = step, step * out.shape[d]
    if all(n <= 1 or a == b for n, a, b in zip(out.shape, out.stride(), strides)):
        return out
    want = torch.empty_strided(out.shape, strides, dtype=out.dtype, device=out.device)
    return want.copy_(out)


def reinterpret(t, size, stride, offset):
    """A view of t's elements as Inductor's wrapper laid them out (it assumed a
    contiguous tensor); offset counts from t's first element, not its storage."""
    t = t.contiguous()
    return t.as_strided(size, stride, t.storage_offset() + offset)


@triton.jit
def maximum_nan(a, b):
    # Like torch.maximum: a NaN on either side wins. One max.NaN instruction on
    # the GPU; with a tl.where of compares, row maxima took up to 1.2x as long
    # on an H200.
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def minimum_nan(a, b):
    # Like torch.minimum: a NaN on either side wins.
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def max_nan(x, axis):
    # tl.max drops NaN on some targets; torch.amax keeps it.
    return tl.reduce(x, axis, maximum_nan)


@triton.jit
def min_nan(x, axis):
    return tl.reduce(x, axis, minimum_nan)


@triton.jit
def to_e5m2_eager(x):
    # x in float8_e5m2 as eager rounds it: from 61440, half way past the
    # largest value (57344), to +-inf, where the GPU's conversion saturates.
    bits = x.to(tl.float8e5).to(tl.uint8, bitcast=True)
    inf = tl.where(x < 0, 0xFC, 0x7C).to(tl.uint8)
    bits = tl.where(tl.abs(x) >= 61440.0, inf, bits)
    return bits.to(tl.float8e5, bitcast=True)


@triton.jit
def any_true(x, axis):
    return tl.max(x, axis) != 0


@triton.jit
def welford_accumulate(value, mean, m2, count, first_block):
    # One step of Welford's running mean/variance per lane: numerically
    # stable where sum(x^2) - sum(x)^2 cancels.
    if first_block:
        new_mean = value
        new_m2 = tl.zeros_like(m2)
        new_count = tl.full(count.shape, 1, count.dtype)
    else:
        delta = value - mean
        new_count = count + 1
        new_mean = mean + delta / new_count
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_count


@triton.jit
def welford_merge(mean_a, m2_a, count_a, mean_b, m2_b, count_b):
    # Chan et al.'s pairwise merge; equal means give delta 0 so inf - inf
    # cannot turn an overflowed row into NaN.
    count = count_a + count_b
    delta = tl.where(mean_a == mean_b, 0.0, mean_b - mean_a)
    frac_b = tl.where(count == 0.0, 0.0, count_b / count)
    mean = mean_a + delta * frac_b
    m2 = m2_a + m2_b + delta * delta * count_a * frac_b
    return mean, m2, count


@triton.jit
def welford_finish(mean, m2, count, axis):
    # Merge the per-lane partial statistics into one (mean, m2, count) per row.
    return tl.reduce((mean, m2, count), axis, welford_merge)


@triton.jit
def row_mean_m2(value, mask, axis, count):
    # The whole row is in registers: mean, then the sum of squared deviations
    # from it (as exact as Welford, without its per-step divisions). count:
    # the elements mask keeps in a stored row; the row size, where known,
    # spares a reduction (and its barriers) counting them.
    mean = tl.sum(tl.where(mask, value, 0.0), axis) / count
    delta = tl.where(mask, value - tl.expand_dims(mean, axis), 0.0)
    return mean, tl.sum(delta * delta, axis), tl.zeros_like(mean) + count


# exp_ftz's PTX where the kernels compile for an NVIDIA GPU. Triton's
# interpreter runs no inline assembly, and other GPUs take other assembly:
# there it is tl.exp. Read when the module is imported, as @triton.jit itself
# reads TRITON_INTERPRET.
EXP_FTZ = tl.constexpr(not triton.knobs.runtime.interpret and torch.version.hip is None)


@triton.jit
def exp_ftz(x):
    # tl.exp's own approximation (ex2.approx of x * log2(e)) with results under
    # 2^-126 flushed to 0: tl.exp keeps them at a compare and two multiplies an
    # element. Over 32768 columns on an H200 this took 0.91-0.96 of tl.exp's
    # time in bf16 and fp16; LLVM then leaves loops that call it rolled, so
    # a looped kernel unrolls a row of two blocks itself (lab/NOTES.md).
    if EXP_FTZ and x.dtype == tl.float32:
        return tl.inline_asm_elementwise(
            "ex2.approx.ftz.f32 $0, $1;",
            "=f,f",
            [x * 1.4426950408889634],
            dtype=tl.float32,
            is_pure=True,
            pack=1,
        )
    else:
        return tl.exp(x)


@triton.jit
def online_softmax_accumulate(running_max, running_sum, block_max):
    # Rescale the running sum to the new maximum; each new element adds exp(0) = 1.
    new_max = maximum_nan(running_max, block_max)
    keep = tl.where(new_max == float("-inf"), 1.0, exp_ftz(running_max - new_max))
    add = tl.where(new_max == float("-inf"), 1.0, exp_ftz(block_max - new_max))
    return new_max, running_sum * keep + add


@triton.jit
def online_softmax_finish(lane_max, lane_sum, axis):
    # Combine per-lane (max, sum) pairs into the row's max and sum of exp(x - max).
    row_max = max_nan(lane_max, axis)
    shift = tl.where(
        tl.expand_dims(row_max, axis) == float("-inf"),
        0.0,
        lane_max - tl.expand_dims(row_max, axis),
    )
    return row_max, tl.sum(lane_sum * exp_ftz(shift), axis)


@triton.jit
def rescale_sum(acc, shift_old, shift_new):
    # acc holds sum(exp(x - shift_old)): the same sum against shift_new. An
    # empty sum stays 0 (0 * exp(inf) would be NaN); a NaN sum stays NaN.
    return tl.where(acc == 0, 0.0, acc * exp_ftz(shift_old - shift_new))


@triton.jit
def argmax_step(a, a_index, b, b_index):
    # Like torch.argmax: NaN counts as the largest value, and of equal values
    # (NaN equal to NaN) the lower index wins.
    a_nan = a != a
    b_nan = b != b
    same = (a == b) | (a_nan & b_nan)
    take_a = (a > b) | (a_nan & ~b_nan) | (same & (a_index < b_index))
    return tl.where(take_a, a, b), tl.where(take_a, a_index, b_index)


@triton.jit
def argmax_rows(values, indices, axis):
    return tl.reduce((values, indices), axis, argmax_step)


@triton.jit
def argmin_step(a, a_index, b, b_index):
    # Like torch.argmin: NaN counts as the smallest value, and of equal values
    # (NaN equal to NaN) the lower index wins.
    a_nan = a != a
    b_nan = b != b
    same = (a == b) | (a_nan & b_nan)
    take_a = (a < b) | (a_nan & ~b_nan) | (same & (a_index < b_index))
    return tl.where(take_a, a, b), tl.where(take_a, a_index, b_index)


@triton.jit
def argmin_rows(values, indices, axis):
    return tl.reduce((values, indices), axis, argmin_step)


@triton.jit
def select_masked(x, mask, dim, keep_dims=False):
    # The one element of each row where mask is set, bit for bit: sum its raw
    # bits with zeros elsewhere, then read them back as x's type.
    bits = x.to(tl.core.get_int_dtype(x.dtype.primitive_bitwidth, False), bitcast=True)
    picked = tl.sum(tl.where(mask, bits, 0), dim, keep_dims=keep_dims)
    return picked.to(bits.dtype).to(x.dtype, bitcast=True)


@triton.jit
def floor_div(a, b):
    # Integer division rounding toward minus infinity, as torch's //; Triton's
    # // truncates toward zero.
    quotient = a // b
    inexact = (a % b) != 0
    return tl.where(inexact & ((a < 0) != (b < 0)), quotient - 1, quotient)


@triton.jit
def shift_left(a, b):
    # torch's a << b: 0 where b is negative or the width or more, where
    # Triton's shift is undefined (an H200 gave 0 for lo | (hi << -4)).
    base = a + b * 0  # the dtype the shift is in
    width = base.dtype.primitive_bitwidth
    ok = (b >= 0) & (b < width)
    return tl.where(ok, base << tl.where(ok, b, 0), 0).to(base.dtype)


@triton.jit
def shift_right(a, b):
    # torch's a >> b: the sign (-1 or 0) where b is negative or the width or
    # more, where Triton's shift is undefined.
    base = a + b * 0  # the dtype the shift is in
    width = base.dtype.primitive_bitwidth
    ok = (b >= 0) & (b < width)
    far = tl.where(base < 0, -1, 0)
    return tl.where(ok, base >> tl.where(ok, b, 0), far).to(base.dtype)


@triton.jit
def floor_div_float(a, b):
    # Float floor division as torch computes it (Python's //), from the exact
    # remainder: 1.0 // 0.1 is 9, 1 // -inf is -1 and inf // 1 is NaN, where
    # floor(a / b) gives 10, -0 and inf.
    rest = libdevice.fmod(a, b)
    quotient = (a - rest) / b
    quotient = tl.where((rest != 0) & ((b < 0) != (rest < 0)), quotient - 1.0, quotient)
    floored = tl.floor(quotient)
    floored = tl.where(quotient - floored > 0.5, floored + 1.0, floored)
    # a quotient of 0 keeps a / b's sign (-0.0 for -1 // inf)
    floored = tl.where(quotient != 0, floored, (a / b) * 0.0)
    return tl.where(b == 0, a / b, floored)


@triton.jit
def floor_mod(a, b):
    # The remainder with b's sign, as torch's %; Triton's % takes a's.
    rest = a % b
    return tl.where((rest != 0) & ((rest < 0) != (b < 0)), rest + b, rest)


@triton.jit
def int_pow(base, exponent):
    # base ** exponent for integers by squaring; a negative exponent gives 0
    # (1 for base 1, +-1 for base -1), as torch's integer pow.
    result = tl.full(base.shape, 1, base.dtype)
    square = base
    left = exponent
    while tl.max(left) > 0:
        result = tl.where((left & 1) != 0, result * square, result)
        square = square * square
        left = left >> 1
    negative = tl.where(
        base == -1, tl.where((exponent & 1) != 0, -1, 1), tl.where(base == 1, 1, 0)
    )
    return tl.where(exponent < 0, negative.to(base.dtype), result)


@triton.jit
def bucketize(
    values,
    edges_ptr,
    size,
    numel,
    stride,
    starts,
    INDEX: tl.constexpr,
    RIGHT: tl.constexpr,
):
    # torch.bucketize: how many of each value's sorted edges lie below it (at
    # or below it with RIGHT), by halving [low, high) once a bit of size;
    # NaN lies past every edge, as in eager.
    low = tl.zeros(values.shape, INDEX)
    high = tl.full(values.shape, size, INDEX)
    if size > 0:  # a constexpr size of 0 with the loop in did not compile
        bits = tl.zeros([], INDEX) + size
        while bits > 0:
            mid = (low + high) // 2
            where = starts + mid * stride
            valid = (mid < high) & (where < numel)
            edge = tl.load(edges_ptr + where, mask=valid, other=0)
            if RIGHT:
                below = edge <= values
            else:
                below = edge < values
            below = (below | (values != values)) & valid
            low = tl.where(below, mid + 1, low)
            high = tl.where(below | ~valid, high, mid)
            bits = bits // 2
    return low


@triton.jit
def multiply(a, b):
    return a * b


@triton.jit
def row_product(x, axis):
    return tl.reduce(x, axis, multiply)


@triton.jit
def split_cols(cols, BLOCK_COLS: tl.constexpr, SPLITS, PHASE: tl.constexpr):
    # [start, stop) of a row this program walks: all of it at PHASE -1, else
    # slice program_id(1) of SPLITS, in whole blocks.
    start = 0
    stop = cols
    if PHASE >= 0:
        size = tl.cdiv(tl.cdiv(cols, SPLITS), BLOCK_COLS) * BLOCK_COLS
        start = tl.program_id(1) * size
        stop = tl.minimum(start + size, cols)
    return start, stop


@triton.jit
def split_partial(
    acc,
    OP: tl.constexpr,
    partials,
    SLOT: tl.constexpr,
    LOOP: tl.constexpr,
    row_mask,
    SPLITS,
    PHASE: tl.constexpr,
):
    # Loop LOOP's lane accumulator: its phase stores acc reduced over the slice
    # as the row's partial SLOT; later phases load the row's partials in its
    # place, which the kernel then reduces by the same OP (max, min or sum).
    if PHASE == LOOP:
        if OP == "max":
            part = max_nan(acc, 1)[:, None]
        elif OP == "min":
            part = min_nan(acc, 1)[:, None]
        else:
            part = tl.sum(acc, 1)[:, None]
        tl.store(partials + SLOT * SPLITS + tl.program_id(1), part, row_mask)
    if PHASE > LOOP:
        splits = tl.arange(0, MAX_SPLITS_BLOCK)[None, :]
        mask = row_mask & (splits < SPLITS)
        neutral = (
            float("-inf") if OP == "max" else (float("inf") if OP == "min" else 0.0)
        )
        acc = tl.load(partials + SLOT * SPLITS + splits, mask, other=neutral)
    return acc
