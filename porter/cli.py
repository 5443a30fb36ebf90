"""The `porter` command: a thin layer over porter.pipeline.

Errors a user can act on print one line and exit 1; anything else is a bug in
porter and prints one line pointing at --debug, which shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import traceback
from pathlib import Path

from porter import __version__
from porter.errors import PorterError
from porter.sizes import add_dims_option, add_set_option, parse_dims, parse_sets

EXIT_ERROR = 1
EXIT_INTERNAL = 3


# Commands that load torch and triton before their work starts.
LOADS_TORCH = {"capture", "sweep", "diff", "port", "test", "jitcheck", "bench"}


def _load_torch() -> None:
    """Import torch and triton with Ctrl-C held until both are in: an
    interrupt inside triton's native module setup aborts the process (a C++
    terminate) instead of raising KeyboardInterrupt."""
    held = []
    previous = signal.signal(signal.SIGINT, lambda *_: held.append(True))
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


def _capture(args: argparse.Namespace) -> int:
    from porter.pipeline import capture

    result = capture(
        args.file,
        name=args.name,
        out=args.out,
        device=args.device,
        force=args.force,
        static=tuple(args.static),
        dtype=args.dtype,
        debug=args.debug,
        sizes=_sets(args.set),
    )
    if result.replaced:
        print(
            f"porter: wrote {result.case}, replacing the capture of {result.replaced}"
        )
    elif result.changed is None:
        print(f"porter: wrote {result.case}")
    elif result.changed:
        from porter.pipeline import CHANGES

        lines = result.changed.splitlines()
        kernels = sum(line.startswith("--- ") for line in lines)
        differ = sum(
            line[:1] in "+-" and not line.startswith(("+++ ", "--- ")) for line in lines
        )
        print(
            f"porter: wrote {result.case}; Inductor's generated code changed since the "
            f"stored capture ({kernels} kernel(s), {differ} line(s) differ: "
            f"{result.case / CHANGES})"
        )
    else:
        print(f"porter: wrote {result.case}; Inductor's generated code is unchanged")
    _say_written(result.case, result.written)
    _say_written(result.case.parent, result.common)
    for warning in result.warnings:
        print(f"porter: warning: {warning}", file=sys.stderr)
    return 0


def _say_written(case: Path, written) -> None:
    """What happened to the files the engineer edited."""
    if written is None:
        return
    for rel in written.kept:
        print(
            f"porter: kept your edited {case / rel} (porter's version of it is unchanged)"
        )
    for rel in written.merged:
        print(f"porter: merged porter's changes into your edited {case / rel}")
    for rel in written.conflicts:
        print(
            f"porter: your edits to {case / rel} and porter's changes overlap: it is left "
            f"as it was; {case / rel}.porter-merge has both, marked <<<<<<< yours ... "
            ">>>>>>> porter's; resolve them there and move it over the file"
        )
    for backup in written.backups:
        print(f"porter: kept your file as it was before as {case / backup}")


def _sets(items: list[str]) -> dict:
    try:
        return parse_sets(items)
    except ValueError as err:
        raise PorterError(str(err)) from None


def _sweep(args: argparse.Namespace) -> int:
    from porter import sweep

    results = sweep.sweep(
        args.paths,
        args.out,
        jobs=args.jobs,
        sets=_sets(args.set),
        dtypes=tuple(args.dtype),
        timeout=args.timeout,
        progress=lambda m: print(f"porter: {m}", file=sys.stderr, flush=True),
        device=args.device,
    )
    table, data = sweep.write_results(results, Path(args.out), args.device)
    print(sweep.summary_table(results), end="")
    print(f"porter: wrote {table} and {data}")
    return 1 if any(r["status"] == "failed" for r in results) else 0


def _diff(args: argparse.Namespace) -> int:
    from porter.pipeline import diff

    text = diff(args.case, device=args.device)
    if text:
        print(text, end="")
        print("porter: Inductor's generated code differs from the stored capture")
        return 1
    print("porter: Inductor's generated code is the same as the stored capture")
    return 0


def _port(args: argparse.Namespace) -> int:
    from porter.pipeline import port

    result = port(args.case, force=args.force)
    print(f"porter: wrote {Path(args.case) / 'kernel.py'} and test_parity.py")
    _say_written(Path(args.case), result.written)
    _say_written(Path(args.case).parent, result.common)
    return 0


def _test(args: argparse.Namespace) -> int:
    try:
        import pytest
    except ImportError:
        raise PorterError(
            "porter test runs pytest, which is not installed here: "
            "`python3 -m pip install pytest`, then run it again"
        ) from None

    from porter.store import read_manifest

    for case in map(Path, args.cases):
        # A case, or a folder of them (captured/); never pytest's "no tests ran".
        inner = (
            [m.parent for m in case.glob("*/manifest.json")] if case.is_dir() else []
        )
        for folder in inner or [case]:
            read_manifest(folder)
            if not (folder / "test_parity.py").is_file():
                raise PorterError(
                    f"{folder}: test_parity.py is missing; run porter port {folder} "
                    "to write it again"
                )
    # porter's plugin alone: other pytest plugins installed here (a
    # benchmark plugin's warnings) are no part of a parity run.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    argv = [str(c) for c in args.cases] + [
        "-q",
        "-p",
        "porter.testing.plugin",
        # Cases are told apart by their folders, wherever they are.
        "--import-mode=importlib",
        "--porter-device",
        args.device,
        "-p",
        "no:cacheprovider",
    ]
    return int(pytest.main(argv + list(args.pytest_args)))


def _jitcheck(args: argparse.Namespace) -> int:
    from porter.jitcheck import format_report, jitcheck, torch_compile_baseline
    from porter.testing.parity import load_case

    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        _interpreter_for_cpu()
    case = load_case(args.case)
    dtype = args.dtype or case.dtypes[0]
    if dtype not in case.dtypes:
        raise PorterError(
            f"--dtype {dtype}: {case.name} was captured for "
            f"{', '.join(case.dtypes)}; pick one of those"
        )
    warm = (
        ("contiguous", "offset", "row_sliced") if args.warm_views else ("contiguous",)
    )
    tokens = tuple(args.tokens) if args.tokens else None
    report = jitcheck(
        case,
        device=device,
        tokens=tokens,
        warm_layouts=warm,
        dtype=dtype,
        progress=lambda m: print(f"porter: {m}", file=sys.stderr),
    )
    if device == "cuda" and args.baseline:
        from porter.jitcheck import GPU_SWEEP

        report.torch_compile = torch_compile_baseline(
            case, device, tokens or GPU_SWEEP, dtype
        )
    print(format_report(report))
    return 0 if report.clean else 1


def _bench(args: argparse.Namespace) -> int:
    import torch

    from porter.bench.points import DEFAULT_TOKENS, sweep, tensor_bytes
    from porter.bench.report import merge_rows, write_case
    from porter.bench.timing import run
    from porter.testing.parity import load_case

    if args.rounds < 2:
        # One round lets the call timed first replay slow (lab/NOTES.md).
        raise PorterError(f"--rounds {args.rounds}: give 2 or more")
    if args.launches < 1:
        raise PorterError(f"--launches {args.launches}: give 1 or more")
    case = load_case(args.case)
    tokens = tuple(args.tokens) if args.tokens else DEFAULT_TOKENS
    dtypes = tuple(args.dtype) if args.dtype else None

    def point_bytes(sizes, dtype):
        inputs = case.reference.make_inputs(sizes, dtype, "meta")
        return 4 * tensor_bytes(inputs)  # inputs, outputs, parity copies

    cuda = torch.cuda.is_available()
    limit = torch.cuda.get_device_properties(0).total_memory // 2 if cuda else None
    try:
        model_sizes = parse_dims(args.dims)
    except ValueError as err:
        raise PorterError(str(err)) from None
    try:
        points = sweep(case.manifest, tokens, dtypes, point_bytes, limit, model_sizes)
    except ValueError as err:
        raise PorterError(f"--dims: {err}") from None
    for dtype in sorted(set(dtypes or ()) - set(case.manifest["dtypes"])):
        print(
            f"porter: warning: {dtype} is not among {case.name}'s dtypes "
            f"({', '.join(case.manifest['dtypes'])}); its points are still parity-checked",
            file=sys.stderr,
        )
    if not cuda:
        raise PorterError(
            "porter bench times kernels on a CUDA GPU; torch sees none here"
        )
    rows, facts = run(
        case,
        points,
        progress=lambda m: print(f"porter: {m}", file=sys.stderr),
        rounds=args.rounds,
        launches=args.launches,
    )
    stored = Path(args.out) / f"{case.name}.json"
    if args.merge and stored.exists():
        rows = merge_rows(json.loads(stored.read_text()), rows)
    for path in write_case(rows, facts, Path(args.out), case.name):
        print(f"porter: wrote {path}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from porter.bench.report import aggregate

    folder = Path(args.dir)
    if not any(folder.glob("*.json")):
        raise PorterError(
            f"{folder}: no benchmark results (*.json); run porter bench on a GPU first"
        )
    captured = Path(args.captured)
    (folder / "README.md").write_text(
        aggregate(folder, captured if captured.is_dir() else None)
    )
    print(f"porter: wrote {folder / 'README.md'}")
    return 0


def _interpreter_for_cpu() -> None:
    """Kernels must be decorated under the interpreter: set it before loading them."""
    import os

    os.environ["TRITON_INTERPRET"] = "1"
    from porter.testing import enable_interpreter_fidelity
    from porter.testing.bounds import enable_bounds_checks

    enable_interpreter_fidelity()
    enable_bounds_checks()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="porter",
        description=(
            "Turn the Triton kernels PyTorch Inductor generates into standalone "
            "kernels you own, with parity tests that keep them honest."
        ),
    )
    parser.add_argument("--version", action="version", version=f"porter {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks and torch's log chatter"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "capture",
        help="compile a reference with torch.compile and capture Inductor's kernels",
        description=(
            "Run the reference in FILE under torch.compile, capture every Triton kernel "
            "Inductor generates and write the case to OUT/NAME/. FILE is porter's "
            "reference format or a KernelBench file (docs/reference-format.md)."
        ),
    )
    p.add_argument("file", metavar="FILE.py", help="the reference file")
    p.add_argument("--name", help="case name (default: the file's stem)")
    p.add_argument(
        "--out",
        default="captured",
        help="parent folder of the case (default: captured/)",
    )
    p.add_argument(
        "--device",
        default="auto",
        choices=["auto", "cpu", "cuda"],
        help="cuda: native capture with autotuned configs; cpu: codegen-only Triton "
        "target, no GPU needed (default: cuda when available)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite a case whose generated files were edited, keeping each as a backup",
    )
    p.add_argument(
        "--static",
        action="append",
        default=[],
        metavar="DIM",
        help="capture DIM with its example size hard-coded instead of as a symbol (repeatable)",
    )
    p.add_argument(
        "--dtype", help="dtype of the example inputs (default: the reference's first)"
    )
    add_set_option(p)
    p.set_defaults(func=_capture)

    p = sub.add_parser(
        "sweep",
        help="capture, port and check every reference of a folder, in parallel",
        description=(
            "Capture, port and check every .py reference under PATHs (folders are "
            "searched one level deep) in worker processes, then print a table: "
            "pass (the scaffold matched eager at sizes, dtypes, views and modes the "
            "capture never saw), refused (in one line, at capture or at every call) "
            "or failed. Writes OUT/sweep.md and OUT/sweep.json. Exit 1 if any failed."
        ),
    )
    p.add_argument(
        "paths", metavar="PATH", nargs="+", help="reference files or folders"
    )
    p.add_argument(
        "--out",
        default="sweep",
        help="where the cases and results go (default: sweep/)",
    )
    p.add_argument(
        "--jobs", type=int, help="worker processes (default: one a CPU core)"
    )
    p.add_argument(
        "--dtype",
        nargs="+",
        default=["float32", "bfloat16"],
        choices=["float32", "float16", "bfloat16"],
        help="dtypes to check in (default: float32 bfloat16)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=600,
        metavar="S",
        help="seconds one reference may take before it is failed (default 600)",
    )
    p.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda"],
        help="cpu: codegen-only capture, checked under Triton's interpreter "
        "(default); cuda: native capture, checked on the GPU",
    )
    add_set_option(p)
    p.set_defaults(func=_sweep)

    p = sub.add_parser(
        "diff",
        help="show how Inductor's code for a case changed since it was captured",
        description="Re-compile CASE's stored reference and diff the kernels; the case is not touched.",
    )
    p.add_argument("case", metavar="CASE", help="a case folder, e.g. captured/rmsnorm")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.set_defaults(func=_diff)

    p = sub.add_parser(
        "port",
        help="regenerate a case's kernel.py and test_parity.py from its stored capture",
        description="Re-run the port passes on CASE's manifest; edited files are protected like capture's.",
    )
    p.add_argument("case", metavar="CASE", help="a case folder, e.g. captured/rmsnorm")
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite edited files, keeping each as a backup",
    )
    p.set_defaults(func=_port)

    p = sub.add_parser(
        "test",
        help="run the parity tests of one or more cases",
        description="Run CASE/test_parity.py with pytest (extra pytest arguments after --).",
    )
    p.add_argument("cases", metavar="CASE", nargs="+")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.set_defaults(func=_test)

    p = sub.add_parser(
        "jitcheck",
        help="find kernel variants compiled after warmup (unintended JIT recompiles)",
        description=(
            "Warm CASE's kernels up like an engine (fresh allocations, a few token "
            "counts), sweep num_tokens and views, and report every variant compiled "
            "after warmup. Exit 1 if there is any."
        ),
    )
    p.add_argument("case", metavar="CASE")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument(
        "--tokens",
        type=int,
        nargs="+",
        help="token counts to sweep (on the CPU, from 1024, or past 2^18 input "
        "elements, the launches are keyed without running the kernels)",
    )
    p.add_argument(
        "--dtype",
        help="the inputs' dtype (default: the case's first; a scaffold may launch "
        "other kernels in another, e.g. linear_gelu's one-kernel matmul in bf16)",
    )
    p.add_argument(
        "--warm-views",
        action="store_true",
        help="also warm offset and row-sliced views up (an engine that uses them should)",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="on a GPU, also count the graphs torch.compile needs for the same sweep",
    )
    p.set_defaults(func=_jitcheck)

    p = sub.add_parser(
        "bench",
        help="time the ported kernel against torch.compile and eager on a GPU",
        description=(
            "Sweep num_tokens (decode to prefill) and dtypes; check parity, then time the "
            "ported kernel, torch.compile (dynamic, and static per shape) and eager, as "
            "medians and as CUDA-graph replays. Writes JSON, a table and a plot per case."
        ),
    )
    p.add_argument("case", metavar="CASE", help="a case folder, e.g. captured/rmsnorm")
    p.add_argument(
        "--dtype",
        nargs="+",
        choices=["bfloat16", "float16", "float32"],
        help="dtypes to sweep (default: the case's, bf16 first)",
    )
    p.add_argument(
        "--tokens",
        type=int,
        nargs="+",
        help="token counts (default 1 ... 65536). The dynamic compile is traced "
        "at the first above 1 of each dtype and model size, and compiled again "
        "for counts from 1024, traced at the first of them: Inductor tunes its "
        "kernels for the size it traced, so each range is compared with "
        "kernels tuned for it. Every run compiles afresh (Inductor's caches "
        "off), so no run is handed a graph another traced",
    )
    add_dims_option(p)
    p.add_argument(
        "--out",
        default="docs/benchmarks",
        help="where <case>.json, .md and .png go (default: docs/benchmarks)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=2,
        metavar="N",
        help="CUDA-graph timing rounds a point, in alternating call orders; the "
        "lowest is kept (default 2)",
    )
    p.add_argument(
        "--launches",
        type=int,
        default=1,
        metavar="N",
        help="calls back to back in each CUDA graph, timed per call (default 1). "
        "At decode sizes one call a graph is mostly the graph's own launch; 20 "
        "gives a kernel's time inside a longer graph, as in an engine's decode step",
    )
    p.add_argument(
        "--merge",
        action="store_true",
        help="keep the stored rows this run does not re-measure (other dtypes or "
        "model sizes) instead of replacing the case's results",
    )
    p.set_defaults(func=_bench)

    p = sub.add_parser(
        "report",
        help="aggregate benchmark results into docs/benchmarks/README.md",
        description="Summarize every <case>.json under DIR into DIR/README.md.",
    )
    p.add_argument(
        "--dir",
        default="docs/benchmarks",
        help="where porter bench wrote its results (default: docs/benchmarks)",
    )
    p.add_argument(
        "--captured",
        default="captured",
        help="the case folders: rows timed on another kernel.py than the one "
        "there now are listed as stale (default: captured)",
    )
    p.set_defaults(func=_report)

    from porter.lint import command as lint_command

    p = sub.add_parser(
        "lint",
        help="check Triton kernels against the kernel-writing rules (docs/lint-rules.md)",
        description="Static checks of every @triton.jit kernel and its launch sites in PATHs.",
    )
    lint_command.add_arguments(p)
    p.set_defaults(func=lint_command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    # `porter test CASE -- -x`: the words after -- are pytest's (argparse
    # would give them to CASE)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    passed = argv[cut + 1 :]
    if args.command == "test":
        args.pytest_args = passed
    elif passed:
        parser.error(f"porter {args.command} takes no arguments after --")
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command in LOADS_TORCH:
            print("porter: loading torch", file=sys.stderr, flush=True)
            _load_torch()
        return args.func(args)
    except PorterError as err:
        if args.debug:
            traceback.print_exc()
        print(f"porter: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("porter: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - a porter bug, shown briefly
        if args.debug:
            traceback.print_exc()
        print(
            f"porter: internal error: {type(err).__name__}: {err} "
            "(re-run with --debug for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def run() -> None:
    """The `porter` command: main(), then out at once. torch's exit handlers
    (Inductor's compile workers, its modules' teardown) took seconds after the
    last line, and a Ctrl-C there printed a traceback; everything porter
    writes is written and flushed before main returns."""
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    try:
        code = main()
    except KeyboardInterrupt:  # while parsing arguments or importing
        print("porter: interrupted; nothing was written", file=sys.stderr)
        code = 130
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
