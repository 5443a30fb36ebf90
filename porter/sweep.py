"""porter sweep: capture, port and check every reference of a folder, in parallel.

Each reference ends in one of three verdicts:

* pass: captured, ported, and the scaffold matched eager PyTorch (scored
  against float64) at sizes the capture never saw, in each dtype, on views,
  at huge, infinite, NaN and subnormal values, in each module mode, with every input or buffer the reference changes in
  place compared too; where it refused some of those calls, it said so.
* refused: porter or the scaffold declined it in one line (at capture, or at
  every call), which is honest;
* failed: anything else (a crash, a scaffold that does not import, a wrong
  number): a porter bug.

The check is independent of what porter inferred: it picks its own sizes from
the reference file (a KernelBench file's size globals, a porter reference's
DIMS), its own views and modes, and asks eager PyTorch for the truth. It
tries the generated suite's argument values as well as its own, so a pass
here is not a failure of `porter test` there.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from porter.errors import PorterError

DEFAULT_DTYPES = ("float32", "bfloat16")
# Seconds one reference may take (capture, port and check) before it is failed.
DEFAULT_TIMEOUT = 600
# The check's sizes stay near the capture's (already cut to about 2^16 input
# elements): the CPU interpreter runs about 40k elements in 0.1 s.
LAYOUTS = ("padded", "row_step", "offset")


@dataclass
class Verdict:
    reference: str
    status: str  # pass | refused | failed
    stage: str  # capture | port | import | check | worker
    why: str = ""
    case: str = ""
    checked: int = 0  # calls compared with eager
    passed: int = 0
    refused: int = 0  # calls the scaffold refused in its own words
    skipped: int = 0  # calls eager itself rejects, or the interpreter cannot run
    seconds: float = 0.0
    refusals: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- discovery


def references(paths: list[str]) -> list[Path]:
    """The .py reference files under `paths` (files, or folders searched one
    level deep), in a stable order."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(
                p for p in path.glob("*.py") if not p.name.startswith(("_", "."))
            )
        elif path.is_file() and path.suffix == ".py":
            found.append(path)
        else:
            raise PorterError(f"{path}: no such file or folder of .py references")
    if not found:
        raise PorterError(f"no .py reference files under {', '.join(paths)}")
    seen, out = set(), []
    for p in found:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            out.append(p)
    return out


# ---------------------------------------------------------------- the check


def size_variants(case) -> list[dict[str, int]]:
    """Sizes to check at, none of them the captured ones: each free size of the
    reference changed alone, then all at once, then the leading size at one
    and at zero. Free sizes are read from the reference file itself (a
    KernelBench file's size globals that shape its inputs, a porter
    reference's DIMS), not from what porter inferred."""
    ref = case.reference
    base = _free_sizes(ref)
    out: list[dict[str, int]] = []
    for name, value in base.items():
        for new in _other_sizes(value):
            if _eager_runs(ref, {**base, name: new}):
                out.append({**base, name: new})
                break
    # All at once: the same step for every size first (sizes the reference
    # ties, as a loss's batch and width, move together), else one by one.
    together = dict(base)
    steps = {name: _other_sizes(value) for name, value in base.items()}
    for k in range(min((len(v) for v in steps.values()), default=0)):
        trial = {name: steps[name][k] for name in base}
        if _eager_runs(ref, trial):
            together = trial
            break
    else:
        for name, value in base.items():
            for new in steps[name]:
                if _eager_runs(ref, {**together, name: new}):
                    together[name] = new
                    break
    if together != base and together not in out:
        out.append(together)
    if base:
        lead = next(iter(base))
        for n in (1, 0):
            sizes = {**base, lead: n}
            if sizes not in out and n != base[lead] and _eager_runs(ref, sizes):
                out.append(sizes)
    return out


def _other_sizes(value: int) -> list[int]:
    """Sizes the capture did not see: an odd step up, a larger even one, a
    smaller one."""
    out = [value + 3, 2 * value + 2, max(2, value // 2 + 1), value + 1]
    return [v for v in dict.fromkeys(out) if v != value]


def _free_sizes(ref) -> dict[str, int]:
    if ref.kind == "porter":
        return {d.name: d.size for d in ref.dims}
    from porter.reference import _current_sizes, _kernelbench_shapes, _shapes_of

    sizes = _current_sizes(ref)
    base = _shapes_of(_kernelbench_shapes(ref, {}))
    free = {}
    for name, value in sizes.items():
        try:
            grown = _shapes_of(_kernelbench_shapes(ref, {name: value + 3}))
        except PorterError:
            continue
        if grown != base:
            free[name] = value
    # The leading size first: the one whose change moves the first input's
    # first axis.
    return dict(sorted(free.items(), key=lambda kv: not _leads(ref, kv, base)))


def _leads(ref, item, base) -> bool:
    from porter.reference import _kernelbench_shapes, _shapes_of

    name, value = item
    grown = _shapes_of(_kernelbench_shapes(ref, {name: value + 3}))
    first = next((i for i, s in enumerate(base) if s), None)
    return first is not None and grown[first][0] != base[first][0]


def _eager_runs(ref, sizes: dict[str, int]) -> bool:
    import torch

    try:
        if sum(_numels(ref, sizes)) > 1 << 18:
            return False  # too slow for the CPU interpreter
        torch.manual_seed(0)
        fn = ref.build(sizes)
        inputs = ref.make_inputs(sizes, ref.dtypes[0], "cpu")
        with torch.no_grad():
            fn(*inputs)
        return True
    except Exception:  # noqa: BLE001 - the reference rejects these sizes
        return False


def _numels(ref, sizes) -> list[int]:
    import torch

    return [
        v.numel()
        for v in ref.make_inputs(sizes, ref.dtypes[0], "meta")
        if isinstance(v, torch.Tensor)
    ]


def check_case(
    folder: Path,
    dtypes: tuple[str, ...] = DEFAULT_DTYPES,
    seed: int = 0,
    device: str = "cpu",
) -> Verdict:
    """The independent check of one case folder (see the module docstring)."""
    import torch

    from porter.testing import InterpreterUnsupported, ReferenceRejects
    from porter.testing.parity import (
        ParityError,
        Scenario,
        ScaffoldRefuses,
        check_parity,
        index_scenarios,
        load_case,
    )

    verdict = Verdict(reference="", status="pass", stage="check", case=str(folder))
    try:
        case = load_case(folder)
    except Exception as err:  # noqa: BLE001 - the scaffold does not import
        verdict.status, verdict.stage = "failed", "import"
        verdict.why = f"kernel.py does not import: {type(err).__name__}: {_line(err)}"
        return verdict
    ref = case.reference
    variants = size_variants(case)
    if not variants:
        variants = [{d.name: d.size for d in ref.dims}]
    scenarios = []
    # the dtypes asked for, and those the reference itself lists
    dtypes = tuple(dict.fromkeys([*dtypes, *ref.dtypes]))
    for dtype in dtypes:
        if dtype not in ("float32", "float16", "bfloat16"):
            continue
        for sizes in variants:
            scenarios.append(Scenario(dtype, sizes))
        for layout in LAYOUTS:
            scenarios.append(Scenario(dtype, variants[0], layout=layout))
        # huge, inf, NaN and subnormal values in the activation, as the
        # generated suite's: a pass had covered make_inputs' values alone
        scenarios.append(Scenario(dtype, variants[0], values="difficult"))
        for i, value in enumerate(case.call_values(variants[0], dtype)):
            for changed in _other_call_arguments(value):
                scenarios.append(
                    Scenario(dtype, variants[0], args={i: changed}, optional=True)
                )
        if ref.kind == "kernelbench":
            # The other module mode and other constructor arguments: followed,
            # or refused in the scaffold's own words.
            scenarios.append(Scenario(dtype, variants[0], mode="eval", optional=True))
            scenarios.append(Scenario(dtype, variants[0], mode="train", optional=True))
            for i, value in enumerate(ref.init_values(variants[0])):
                changed = _other_argument(value)
                if changed is not None:
                    scenarios.append(
                        Scenario(dtype, variants[0], init={i: changed}, optional=True)
                    )
    # The generated suite's own argument values too (0.0, 1.0, past int32):
    # a sweep's pass where `porter test` fails there said the wrong thing.
    scenarios += [sc for sc in case.scenarios() if sc.args and sc.dtype in dtypes]
    # Each free size at 0 and each int tensor argument holding an index far
    # out of range or negative, in the first dtype: eager's own answer, or
    # its error, which the scaffold must meet with a refusal, not numbers.
    first = next((d for d in dtypes if d in ("float32", "float16", "bfloat16")), None)
    if first is not None:
        for name in _free_sizes(ref):
            scenarios.append(Scenario(first, {**variants[0], name: 0}, optional=True))
        values = case.call_values(variants[0], first)
        scenarios += index_scenarios(values, first, variants[0])
    # The call it was captured on: a refusal there is a port that serves nothing.
    # So is the same call in another dtype the case serves (its suite fails
    # there: "the scaffold refused a call it must serve").
    captured = case.manifest.get("capture_dtype", "float32")
    captured_sizes = {d.name: d.size for d in ref.dims}
    must = [d for d in dict.fromkeys([captured, *case.dtypes]) if d in dtypes]
    must_serve = [Scenario(d, captured_sizes) for d in must]
    scenarios[:0] = must_serve
    new_sizes_passed = {d: 0 for d in dtypes}
    for sc in scenarios:
        try:
            check_parity(case, sc, device=device, seed=seed)
        except (ReferenceRejects, InterpreterUnsupported):
            verdict.skipped += 1
            continue
        except (ParityError, ScaffoldRefuses) as err:
            verdict.checked += 1
            cause = err.__cause__
            served = any(sc is m for m in must_serve)
            # (a scaffold that cannot allocate at an int past int32 refuses
            # there, as porter test counts it, and eager is not tried)
            refused = isinstance(cause, NotImplementedError) or isinstance(
                err, ScaffoldRefuses
            )
            if refused and not served:
                verdict.refused += 1
                said = cause if isinstance(cause, NotImplementedError) else err
                message = f"{sc.id}: {_line(said)}"
                if len(verdict.refusals) < 5:
                    verdict.refusals.append(message)
                continue
            verdict.status = "failed"
            verdict.why = _line(err)
            if served and isinstance(cause, NotImplementedError):
                verdict.why = (
                    f"it refuses the call it was captured on in {sc.dtype}, "
                    f"a dtype it serves: {_line(cause)}"
                )
            return verdict
        except Exception as err:  # noqa: BLE001 - a porter bug in the check
            verdict.checked += 1
            verdict.status = "failed"
            verdict.why = f"{sc.id}: {type(err).__name__}: {_line(err)}"
            return verdict
        verdict.checked += 1
        verdict.passed += 1
        new_sizes_passed[sc.dtype] = new_sizes_passed.get(sc.dtype, 0) + 1
    if verdict.passed == 0:
        verdict.status = "refused"
        verdict.why = (
            verdict.refusals[0]
            if verdict.refusals
            else "no call could be checked (eager or the interpreter rejects them all)"
        )
    return verdict


def _other_call_arguments(value: Any) -> list[Any]:
    """Other values of a call's argument: _other_argument's, and for a float
    None (`cap: float | None`), for an int its double (a log or a ratio the
    kernels hold as a constant moves with it where one more may not)."""
    if not isinstance(value, (bool, int, float, tuple)):
        return []  # a tensor, None, a string
    out = [v for v in (_other_argument(value),) if v is not None]
    if isinstance(value, float):
        out.append(None)
    elif isinstance(value, int) and not isinstance(value, bool) and value:
        out.append(2 * value)
    return [v for i, v in enumerate(out) if v != value and v not in out[:i]]


def _other_argument(value: Any) -> Any:
    """Another value of a constructor argument: a float scaled, an int one
    more, a flag flipped; None for what there is no other of."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        new = value * 0.5 - 0.375  # other than the parity suite's own choice
        return new if new != value else value - 1.0
    if (
        isinstance(value, tuple)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return tuple(v + 1 for v in value)
    return None


def _line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text[:400] if text else type(err).__name__


# ---------------------------------------------------------------- one reference


def run_one(
    path: str,
    out: str,
    sets: dict[str, Any],
    dtypes: tuple[str, ...],
    device: str = "cpu",
) -> dict[str, Any]:
    """Capture, port and check one reference on `device` (cpu: the
    codegen-only capture and Triton's interpreter); never raises."""
    from porter.pipeline import capture, default_case_name

    start = time.monotonic()
    path_ = Path(path)
    verdict = Verdict(reference=path, status="failed", stage="capture")
    try:
        result = capture(
            path_,
            name=default_case_name(path_),
            out=out,
            device=device,
            force=True,
            progress=lambda _: None,
            sizes=_sets_for(path_, sets),
        )
        verdict = check_case(result.case, dtypes, device=device)
        verdict.reference = path
        if device == "cpu" and verdict.status == "pass":
            # the interpreter runs what the GPU compiler would reject
            from porter.testing import compiles

            _, errors = compiles.check(result.case)
            if errors:
                verdict.status, verdict.stage = "failed", "compile"
                verdict.why = f"does not compile for sm_{compiles.ARCH}: {errors[0]}"
    except PorterError as err:
        verdict.status, verdict.why = "refused", _line(err)
    except Exception as err:  # noqa: BLE001 - a porter bug: reported, not raised
        verdict.status = "failed"
        where = traceback.extract_tb(err.__traceback__)[-1]
        verdict.why = (
            f"internal error: {type(err).__name__}: {_line(err)} "
            f"({Path(where.filename).name}:{where.lineno})"
        )
    verdict.seconds = round(time.monotonic() - start, 1)
    return asdict(verdict)


def _sets_for(path: Path, sets: dict[str, Any]) -> dict[str, Any] | None:
    """--set values the reference has (a sweep's files name different globals)."""
    if not sets:
        return None
    import ast

    from porter.reference import read_source

    names = set()
    for node in ast.parse(read_source(path)).body:
        for t in getattr(node, "targets", [getattr(node, "target", None)]):
            if hasattr(t, "id"):
                names.add(t.id)
        if (
            isinstance(node, ast.Assign)
            and getattr(node.targets[0], "id", "") == "DIMS"
        ):
            if isinstance(node.value, ast.Dict):
                names |= {
                    k.value for k in node.value.keys if isinstance(k, ast.Constant)
                }
    return {k: v for k, v in sets.items() if k in names} or None


# ---------------------------------------------------------------- the pool


def _serve(conn, env: dict[str, str]) -> None:  # pragma: no cover - a child process
    os.environ.update(env)
    if env.get("PORTER_SWEEP_DEVICE", "cpu") == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
        from porter.testing import enable_interpreter_fidelity
        from porter.testing.bounds import enable_bounds_checks

        enable_interpreter_fidelity()
        enable_bounds_checks()
    import warnings

    warnings.simplefilter("ignore")
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        conn.send(run_one(*task))


class _Worker:
    def __init__(self, ctx, device: str = "cpu") -> None:
        self.conn, child = ctx.Pipe()
        env = {
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "PORTER_SWEEP_DEVICE": device,
        }
        self.proc = ctx.Process(target=_serve, args=(child, env), daemon=True)
        self.proc.start()
        child.close()
        self.task: tuple | None = None
        self.started = 0.0

    def submit(self, task: tuple) -> None:
        self.task, self.started = task, time.monotonic()
        self.conn.send(task)

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()


def sweep(
    paths: list[str],
    out: str | Path,
    jobs: int | None = None,
    sets: dict[str, Any] | None = None,
    dtypes: tuple[str, ...] = DEFAULT_DTYPES,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] = lambda _: None,
    device: str = "cpu",
) -> list[dict[str, Any]]:
    """Every reference under `paths` through capture, port and the check, in
    `jobs` worker processes on `device`; one verdict dict per reference, in
    file order."""
    files = references(paths)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(files)))
    ctx = multiprocessing.get_context("spawn")
    todo = [(str(f), str(out), dict(sets or {}), tuple(dtypes), device) for f in files]
    results: dict[str, dict[str, Any]] = {}
    workers = [_Worker(ctx, device) for _ in range(jobs)]
    try:
        while todo or any(w.task for w in workers):
            for i, w in enumerate(workers):
                if w.task is None and todo:
                    w.submit(todo.pop(0))
                if w.task is None:
                    continue
                done = None
                if w.conn.poll(0.05):
                    try:
                        done = w.conn.recv()
                    except EOFError:
                        done = _lost(w, "the worker process died (out of memory?)")
                elif not w.proc.is_alive():
                    done = _lost(w, f"the worker process died (exit {w.proc.exitcode})")
                elif time.monotonic() - w.started > timeout:
                    done = _lost(w, f"timed out after {timeout:.0f} s")
                if done is None:
                    continue
                results[done["reference"]] = done
                progress(
                    f"[{len(results)}/{len(files)}] {Path(done['reference']).name}: "
                    f"{done['status']}"
                    + (f" ({done['why']})" if done["status"] != "pass" else "")
                )
                # A CUDA error (a device-side assert) leaves the process's
                # context unusable: every later reference there would fail.
                if done["stage"] == "worker" or (
                    device == "cuda" and done["status"] == "failed"
                ):
                    w.proc.kill()
                    workers[i] = _Worker(ctx, device)
                else:
                    w.task = None
    finally:
        for w in workers:
            w.stop()
    return [results[str(f)] for f in files]


def _lost(worker: _Worker, why: str) -> dict[str, Any]:
    verdict = Verdict(
        reference=worker.task[0],
        status="failed",
        stage="worker",
        why=why,
        seconds=round(time.monotonic() - worker.started, 1),
    )
    return asdict(verdict)


# ---------------------------------------------------------------- the summary


def summary_table(results: list[dict[str, Any]]) -> str:
    """A Markdown table, one row a reference, and a count line."""
    lines = [
        "| reference | verdict | calls passed / refused / checked | why |",
        "| --- | --- | --- | --- |",
    ]
    for r in results:
        why = r["why"].replace("|", "\\|")
        if r["status"] == "pass" and r["refused"]:
            why = "refused some calls: " + r["refusals"][0].replace("|", "\\|")
        lines.append(
            f"| {Path(r['reference']).name} | {r['status']} | "
            f"{r['passed']} / {r['refused']} / {r['checked']} | {why} |"
        )
    counts = {
        s: sum(r["status"] == s for r in results) for s in ("pass", "refused", "failed")
    }
    lines.append("")
    lines.append(
        f"{counts['pass']} passed, {counts['refused']} refused, "
        f"{counts['failed']} failed, of {len(results)}"
    )
    return "\n".join(lines) + "\n"


def write_results(
    results: list[dict[str, Any]], out: Path, device: str = "cpu"
) -> tuple[Path, Path]:
    """OUT/sweep.md (the table, with the versions and date it ran with) and
    OUT/sweep.json; references and cases by file and folder name alone."""
    import datetime

    import torch
    import triton

    import porter

    out = Path(out)
    rows = [
        {
            **r,
            "reference": Path(r["reference"]).name,
            "case": Path(r["case"]).name if r["case"] else "",
            # the file by name in what was said of it, not where it lay
            "why": r["why"].replace(r["reference"], Path(r["reference"]).name),
            "refusals": [
                x.replace(r["reference"], Path(r["reference"]).name)
                for x in r["refusals"]
            ],
        }
        for r in results
    ]
    facts = {
        "porter": porter.__version__,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "device": device,
        "date": datetime.date.today().isoformat(),
    }
    table = out / "sweep.md"
    data = out / "sweep.json"
    said = ", ".join(f"{k} {v}" for k, v in facts.items())
    table.write_text(f"porter sweep ({said})\n\n" + summary_table(rows))
    data.write_text(json.dumps({**facts, "results": rows}, indent=2) + "\n")
    return table, data
