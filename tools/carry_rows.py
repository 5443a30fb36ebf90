"""Carry stored benchmark rows over a kernel.py change that leaves their
launches as they were.

A row records the kernel.py it timed (`kernel_sha`, the hash of
porter.bench.fingerprint.code_text), and `porter report` flags a row timed on another
kernel.py than its case holds now. Many generator changes leave most points'
launches alone: a branch on a constexpr that folds away at those points, a
launcher that passes an argument under a new name. For each such row this
finds the kernel.py it timed in git history, runs that launcher and today's at
the row's point on uninitialized CPU inputs without calling the kernels, as on
a Hopper GPU (programmatic dependent launch on, tools/regcount.py's way),
compiles every launch for sm_90 with the triton installed and compares the two
launch by launch: the kernel's name and SASS, the grid, the launch's options
(warps, stages, launch_pdl) and its arguments (tensors by dtype, shape,
strides and offset; the rest by value). The torch ops each launcher runs (a
cuBLAS matmul, say) are compared in the same order, by overload and
arguments, without computing them: the same call with the same arguments is
the same work on the GPU, whatever the torch version, as long as both are
compared under one.

Where everything matches, `--write` gives the row today's kernel_sha and
records `carried` (the sha it was timed on, the triton that compiled the
check, the date); elsewhere the row stays as it is and the first difference is
printed. A row carried before is checked again against the kernel.py it was
timed on, not the one it was carried to. Run it with the triton the rows were
timed with (the GPU machine's), so that the SASS compared is the SASS that
ran, and `--recheck` to check the rows carried with another triton again
(one that no longer matches goes back to the kernel.py it was timed on):

    python3 tools/carry_rows.py rmsnorm softmax --write
    python3 tools/carry_rows.py --save-history H     # where the repository is
    python3 tools/carry_rows.py --history H --recheck --write  # on the GPU machine
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_map  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

from porter.bench.fingerprint import (  # noqa: E402
    code_fingerprint,
    kernel_fingerprint,
    uses_common,
)
from porter.bench.points import Point, sizes_of  # noqa: E402
from porter.errors import PorterError  # noqa: E402
from porter.testing.parity import import_kernel, load_case  # noqa: E402

regcount = import_kernel(ROOT / "tools" / "regcount.py", "regcount_for_carry")

ALLOCATIONS = {"aten.empty_strided", "aten.empty"}
# Torch ops the check runs as they are (allocations and views: nothing to
# compute); any other (a cuBLAS matmul, a copy) it records without computing.
CHEAP_OPS = {
    "aten.empty_strided",
    "aten.empty",
    "aten.view",
    "aten._unsafe_view",
    "aten.as_strided",
    "aten.t",
    "aten.transpose",
    "aten.permute",
    "aten.expand",
    "aten.slice",
    "aten.select",
    "aten.unsqueeze",
    "aten.squeeze",
    "aten.alias",
    "aten.detach",
}


def _layout(value) -> str:
    """An argument or output as the comparison sees it: a tensor by its
    layout (a kernel's data pointer alignment is in its SASS), a sequence item
    by item, anything else by value."""
    if isinstance(value, torch.Tensor):
        return (
            f"tensor {value.dtype} {tuple(value.shape)} {value.stride()} "
            f"+{value.storage_offset()}"
        )
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_layout(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_layout(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _not_computed(func, args, kwargs):
    """What an op returns, allocated but not computed (nothing here reads it):
    its `out` tensor, the tensor it mutates, or empty outputs of the shapes
    and strides it would give (from torch's meta kernels)."""
    if isinstance(kwargs.get("out"), torch.Tensor):
        return kwargs["out"]
    if func._schema.is_mutable and args and isinstance(args[0], torch.Tensor):
        return args[0]

    def to_meta(t):
        if not isinstance(t, torch.Tensor):
            return t
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")

    def from_meta(t):
        if not isinstance(t, torch.Tensor):
            return t
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)

    meta_args, meta_kwargs = tree_map(to_meta, (args, kwargs))
    return tree_map(from_meta, func(*meta_args, **meta_kwargs))


class _Ops(TorchDispatchMode):
    """Records each torch op run under it (its overload, its arguments and
    outputs by _layout). Allocations and views run; any other op is recorded
    without being computed (_not_computed): the check compares what the
    launcher asks of torch, which with the same arguments is the same work on
    the GPU."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if str(func.overloadpacket) in CHEAP_OPS:
            out = func(*args, **kwargs)
        else:
            out = _not_computed(func, args, kwargs)
        if str(func.overloadpacket) in ALLOCATIONS:
            # torch.empty(sizes) and torch.empty_strided(sizes, the contiguous
            # strides) are the same allocation: compared by what they give
            self.ops.append(("allocation", str(out.device), _layout(out)))
        else:
            self.ops.append((str(func), _layout((args, kwargs)), _layout(out)))
        return out


def history(case_dir: Path) -> dict[str, tuple[str, str | None]]:
    """kernel_sha -> (the kernel.py text, the common.py text it imports from or
    None), for every committed version of the case's kernel.py and of the
    common.py beside its folder (versions of equal code share a hash; the
    newest is kept)."""
    rel = case_dir.resolve().relative_to(ROOT) / "kernel.py"
    common_rel = rel.parent.parent / "common.py"
    commits = subprocess.run(
        ["git", "log", "--format=%H", "--", str(rel), str(common_rel)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    found = {}
    for commit in commits:
        text = _show(commit, rel)
        if text:
            common = _show(commit, common_rel) if uses_common(text.encode()) else None
            found.setdefault(sha_of(text, common), (text, common))
    return found


def _show(commit: str, rel: Path) -> str:
    return subprocess.run(
        ["git", "show", f"{commit}:{rel}"], cwd=ROOT, capture_output=True, text=True
    ).stdout


def sha_of(text: str, common: str | None = None) -> str:
    """A kernel.py text's kernel_sha (with the common.py it imports from), as
    porter bench records it."""
    return code_fingerprint(text.encode(), None if common is None else common.encode())


def point_of(row: dict) -> Point:
    """The row's point: its dtype and sizes ("num_tokens=4096xhidden=1024")."""
    return Point(row["dtype"], sizes_of(row["shape"]))


class Fingerprints:
    """The launch trace of a module at a point, its SASS compiled once per
    distinct specialization."""

    def __init__(self, arch: int = 90) -> None:
        self.target = GPUTarget("cuda", arch, 32)
        self.sass: dict[tuple, str] = {}

    def _sass(self, kernel, bound, options) -> str:
        src, constexprs = regcount.source_of(kernel, bound)
        key = (
            hashlib.sha256(kernel.src.encode()).hexdigest(),
            repr(src.signature),
            repr(constexprs),
            repr(src.attrs),
            repr(options),
        )
        if key not in self.sass:
            compiled = triton.compile(src, target=self.target, options=options)
            listing = regcount._cuobjdump(compiled.asm["cubin"], "--dump-sass")
            self.sass[key] = hashlib.sha256(listing.encode()).hexdigest()[:16]
        return self.sass[key]

    def trace(self, case, module, point: Point) -> list[tuple]:
        """[("op", overload, arguments, outputs) | ("launch", kernel, SASS hash,
        grid, launch options, arguments)] in the order the launcher runs them."""
        ops = _Ops()
        marks: list[int] = []  # how many ops ran before each launch
        seen = regcount.launches(
            case,
            module,
            point.dtype,
            point,
            pdl=True,
            around=ops,
            on_launch=lambda *_: marks.append(len(ops.ops)),
        )
        out: list[tuple] = []
        at = 0
        for mark, (name, kernel, bound, options, launch) in zip(marks, seen):
            out += [("op", *op) for op in ops.ops[at:mark]]
            at = mark
            grid = launch.get("grid")
            if callable(grid):
                grid = grid(dict(bound.arguments))
            extra = {
                k: repr(v) for k, v in launch.items() if k not in ("grid", "warmup")
            }
            sass = self._sass(kernel, bound, options)
            # Constexprs are in the SASS (a new one folding away is no change).
            params = regcount.inspect.signature(kernel.fn).parameters
            args = {
                k: _layout(v)
                for k, v in bound.arguments.items()
                if "constexpr" not in str(params[k].annotation)
            }
            out.append(("launch", name, sass, repr(grid), extra, args))
        out += [("op", *op) for op in ops.ops[at:]]
        return out


_PARTS = {
    "launch": ("kernel", "SASS", "grid", "launch options", "arguments"),
    "op": ("op", "arguments", "outputs"),
}


def first_difference(old: list[tuple], new: list[tuple]) -> str | None:
    """Where two launch traces first differ, in words; None where they match."""
    for i, (a, b) in enumerate(zip(old, new), 1):
        if a == b:
            continue
        if a[0] != b[0]:
            return f"step {i}: {a[0]} {a[1]} -> {b[0]} {b[1]}"
        parts = [n for n, x, y in zip(_PARTS[a[0]], a[1:], b[1:]) if x != y]
        return f"step {i} ({a[0]} {a[1]}) differs in its {' and '.join(parts)}"
    if len(old) != len(new):
        return f"{len(old)} steps -> {len(new)}"
    return None


def carry_case(
    case_dir: Path,
    rows: list[dict],
    prints: Fingerprints,
    say,
    texts=None,
    recheck: bool = False,
) -> int:
    """Carry the case's stale rows that match (in place), and with recheck
    check the rows carried before again; how many rows end carried. A row
    carried before that no longer matches goes back to the kernel_sha it was
    timed on. texts: kernel_sha -> (kernel.py text, common.py text or None)
    (default: the case's git history)."""
    current = kernel_fingerprint(case_dir)
    todo = [
        r
        for r in rows
        if r.get("kernel_sha")
        and (r["kernel_sha"] != current or (recheck and r.get("carried")))
    ]
    if not todo:
        return 0
    texts = history(case_dir) if texts is None else texts
    case = load_case(case_dir)
    today = case.kernel
    modules: dict[str, object] = {}
    carried = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, row in enumerate(todo, 1):
            label = f"{case_dir.name} {row['dtype']} {row['shape']}"
            # A row carried before is checked against the kernel.py it timed.
            old_sha = row.get("carried", {}).get("from", row["kernel_sha"])
            diff = None
            if old_sha not in texts:
                diff = f"no kernel.py {old_sha} in the history"
            else:
                if old_sha not in modules:
                    text, common = texts[old_sha]
                    # the version's own common.py beside it, as in a case folder
                    path = Path(tmp) / old_sha / "case" / "kernel.py"
                    path.parent.mkdir(parents=True)
                    path.write_text(text)
                    if common is not None:
                        (path.parent.parent / "common.py").write_text(common)
                    name = f"carry_{case_dir.name}_{old_sha}"
                    modules[old_sha] = import_kernel(path, name)
                point = point_of(row)
                try:
                    old = prints.trace(case, modules[old_sha], point)
                    diff = first_difference(old, prints.trace(case, today, point))
                except PorterError as err:
                    # sizes named as the case no longer names them (a re-capture)
                    diff = f"not traced at its point: {err}"
            if diff:
                if row.get("carried"):
                    # Back to the kernel.py it was timed on: plainly stale.
                    row["kernel_sha"] = row.pop("carried")["from"]
                    say(f"{label}: carried before, not now: {diff}")
                else:
                    say(f"{label}: not carried, {diff}")
            else:
                row["kernel_sha"] = current
                row["carried"] = {
                    "from": old_sha,
                    "triton": triton.__version__,
                    "date": datetime.date.today().isoformat(),
                }
                carried += 1
            if i % 10 == 0:
                say(f"{case_dir.name}: {i} of {len(todo)} rows checked")
    return carried


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " ")
    )
    ap.add_argument("cases", nargs="*", help="case names (default: every stored)")
    ap.add_argument(
        "--dir",
        default=str(ROOT / "docs" / "benchmarks"),
        help="the stored rows, <case>.json (default: docs/benchmarks)",
    )
    ap.add_argument(
        "--captured",
        default=str(ROOT / "captured"),
        help="the case folders (default: captured)",
    )
    ap.add_argument("--arch", type=int, default=90, help="compute capability")
    ap.add_argument("--write", action="store_true", help="write the carried rows back")
    ap.add_argument(
        "--recheck",
        action="store_true",
        help="check the rows carried before again too (with the triton the rows "
        "were timed with, say); one that no longer matches goes back to the "
        "kernel.py it was timed on",
    )
    ap.add_argument(
        "--history",
        metavar="DIR",
        help="kernel.py versions as DIR/<case>/<kernel_sha>.py, in place of git "
        "history (a machine without the repository's .git)",
    )
    ap.add_argument(
        "--save-history",
        metavar="DIR",
        help="write the cases' kernel.py versions from git history there, for "
        "--history, and stop",
    )
    args = ap.parse_args()
    folder = Path(args.dir)
    names = args.cases or sorted(p.stem for p in folder.glob("*.json"))
    prints = Fingerprints(args.arch)

    def say(line: str) -> None:
        print(f"carry_rows: {line}", file=sys.stderr, flush=True)

    total = 0
    for name in names:
        path = folder / f"{name}.json"
        case_dir = Path(args.captured) / name
        if not path.is_file() or not (case_dir / "kernel.py").is_file():
            say(f"{name}: no stored rows or no case folder; skipped")
            continue
        if args.save_history:
            out = Path(args.save_history) / name
            out.mkdir(parents=True, exist_ok=True)
            for sha, (text, common) in history(case_dir).items():
                (out / f"{sha}.py").write_text(text)
                if common is not None:
                    (out / f"{sha}.common.py").write_text(common)
            continue
        texts = None
        if args.history:
            # Keyed by their own code's hash, whatever the files are called;
            # NAME.common.py is the common.py that NAME.py imports from.
            texts = {}
            for version in (Path(args.history) / name).glob("*.py"):
                if version.name.endswith(".common.py"):
                    continue
                text = version.read_text()
                beside = version.with_name(f"{version.stem}.common.py")
                common = beside.read_text() if beside.is_file() else None
                texts[sha_of(text, common)] = (text, common)
        rows = json.loads(path.read_text())
        carried = carry_case(case_dir, rows, prints, say, texts, args.recheck)
        total += carried
        say(f"{name}: {carried} row(s) carried")
        if args.write:
            path.write_text(json.dumps(rows, indent=1) + "\n")
    if args.save_history:
        say(f"kernel.py versions written under {args.save_history}")
        return 0
    say(f"{total} row(s) carried" + ("" if args.write else " (not written: --write)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
