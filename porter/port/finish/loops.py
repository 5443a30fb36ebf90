"""loop_repeated_launches: one kernel launched the same way for several tensors
is launched from a loop over them.

share_identical_kernels leaves a kernel that Inductor wrote once a tensor
(an RMSNorm of q and of k, rotary of query and of key) launched once a
tensor, each launch with its own launch-settings lines and every argument on
a line of its own: 20-40 lines written twice that differ in a few names. A
hand-written launcher loops over the tensors; so does the scaffold's.
"""

from __future__ import annotations

import ast
import re

from porter.ast_tools import names_in, stored_names, unique_name
from porter.port.launch.launcher import Launcher, LaunchStep, map_step_code
from porter.port.model import PortState


def loop_repeated_launches(port: PortState) -> None:
    """Consecutive launches of one kernel whose code differs only in the
    names of the tensors and sizes they take become one launch in a loop
    over those names."""
    launcher = port.launcher
    steps = launcher.steps
    folded = 0
    i = 0
    while i < len(steps):
        run = _run(launcher, i)
        if len(run) > 1:
            _fold(launcher, run)
            folded += len(run) - 1
        i += len(run)
    if folded:
        port.notes.append(
            "a kernel launched the same way for several tensors is launched "
            "from a loop over them"
        )


def _code(step: LaunchStep) -> str:
    """The step as one block of Python: its setup lines and its launch (an
    extern step's call)."""
    if step.kind != "launch":
        return "\n".join(step.setup + [step.call or "pass"])
    args = [f"{n}={v}" for n, v in step.args]
    extras = (step.early_trigger, step.kwargs, step.num_warps, step.num_stages)
    args += [f"_{k}={v or None}" for k, v in enumerate(extras)]
    return "\n".join(step.setup + [f"{step.kernel}[{step.grid}]({', '.join(args)})"])


def _same_kind(a: LaunchStep, b: LaunchStep) -> bool:
    return (
        a.kind == b.kind == "launch"
        and a.kernel == b.kernel
        and not (a.when or b.when or a.otherwise or b.otherwise or a.each)
        and (a.pdl, a.debug, a.persistent_trigger, a.calls)
        == (b.pdl, b.debug, b.persistent_trigger, b.calls)
    )


def _pairing(a: str, b: str) -> dict[str, str] | None:
    """b's names by a's where the two blocks are the same code under a
    one-to-one renaming of plain names (attributes and keywords equal);
    None where they differ otherwise."""
    try:
        ta, tb = ast.parse(a), ast.parse(b)
    except SyntaxError:
        return None
    na = [n.id for n in ast.walk(ta) if isinstance(n, ast.Name)]
    nb = [n.id for n in ast.walk(tb) if isinstance(n, ast.Name)]
    if len(na) != len(nb):
        return None
    pairs: dict[str, str] = {}
    for x, y in zip(na, nb):
        if pairs.setdefault(x, y) != y:
            return None
    if len(set(pairs.values())) != len(pairs):
        return None
    back = {y: x for x, y in pairs.items()}
    for node in ast.walk(tb):
        if isinstance(node, ast.Name):
            node.id = back[node.id]
    return pairs if ast.dump(ta) == ast.dump(tb) else None


def _run(launcher: Launcher, i: int) -> list[int]:
    """The steps from i on that repeat step i under other names (i alone
    where none does)."""
    steps = launcher.steps
    run, first = [i], _code(steps[i])
    bound_in_run: set[str] = set()
    while run[-1] + 1 < len(steps):
        j = run[-1] + 1
        if not _same_kind(steps[i], steps[j]):
            break
        pairs = _pairing(first, _code(steps[j]))
        if pairs is None:
            break
        bound_in_run |= stored_names(ast.parse(_code(steps[j - 1])))
        local = {a for a in pairs if a != pairs[a]} & stored_names(ast.parse(first))
        free = {a for a in pairs if a != pairs[a]} - local
        # the loop's values are read before it runs: none may be one that
        # an earlier launch binds; a name bound differently must be bound
        # before it is read, and not read after the loop
        if (
            {pairs[a] for a in free} & bound_in_run
            or not _bound_before_read(first, local)
            or _read_after(launcher, j, local | {pairs[a] for a in local})
        ):
            break
        run.append(j)
    return run


def _bound_before_read(code: str, names: set[str]) -> bool:
    bound: set[str] = set()
    for stmt in ast.parse(code).body:
        reads = {
            n.id
            for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        if reads & (names - bound):
            return False
        bound |= stored_names(stmt)
    return True


def _read_after(launcher: Launcher, j: int, names: set[str]) -> bool:
    """Whether one of names is read after launch j."""
    later: list[str] = []
    for step in launcher.steps[j + 1 :]:
        later += [_code(step)] + [_code(o) for o in step.otherwise]
    later += launcher.epilogue + [launcher.returns]
    return any(names & names_in(ast.parse(code)) for code in later)


def _all_names(launcher: Launcher) -> set[str]:
    seen: set[str] = set()

    def collect(code: str) -> str:
        try:
            seen.update(names_in(ast.parse(code)))
        except SyntaxError:
            seen.update(re.findall(r"[A-Za-z_]\w*", code))
        return code

    launcher.map_code(collect)
    seen.update(d.name for d in launcher.dims)
    seen.update(a.var for a in launcher.allocs)
    seen.update(re.findall(r"[A-Za-z_]\w*", launcher.signature))
    return seen


def _fold(launcher: Launcher, run: list[int]) -> None:
    steps = launcher.steps
    first = steps[run[0]]
    code = _code(first)
    assigned = stored_names(ast.parse(code))
    pairings = [_pairing(code, _code(steps[j])) for j in run[1:]]
    names = sorted(
        (n.lineno, n.col_offset, n.id)
        for n in ast.walk(ast.parse(code))
        if isinstance(n, ast.Name)
    )
    # in the order the code first reads them
    differ = [
        a
        for a in dict.fromkeys(n for _, _, n in names)
        if any(p[a] != a for p in pairings)
    ]
    taken = _all_names(launcher)
    renames: dict[str, str] = {}
    for a in differ:
        candidates = _neutral(first, a, [p[a] for p in pairings], a in assigned)
        name = next(
            (c for c in candidates if c not in taken | set(renames.values())), None
        )
        renames[a] = name or unique_name(candidates[0], taken | set(renames.values()))
    # in the order the kernel takes them
    order = [names_in(ast.parse(v)) for _, v in first.args]
    loop_vars = sorted(
        (a for a in differ if a not in assigned),
        key=lambda a: next((k for k, ns in enumerate(order) if a in ns), len(order)),
    )
    rows = [tuple(loop_vars)] + [tuple(p[a] for a in loop_vars) for p in pairings]
    map_step_code(first, lambda c: _renamed(c, renames))
    header = ", ".join(renames[a] for a in loop_vars)
    values = ", ".join("(" + ", ".join(r) + ")" for r in rows)
    first.each = f"{header} in ({values})"
    for j in run[1:]:
        steps[j].folded = True


def _renamed(code: str, renames: dict[str, str]) -> str:
    """code with its plain names renamed where they stand, its comments and
    layout kept (attributes and keywords left)."""
    lines = code.split("\n")
    edits = sorted(
        (n.lineno - 1, n.col_offset, n.end_col_offset, renames[n.id])
        for n in ast.walk(ast.parse(code))
        if isinstance(n, ast.Name) and n.id in renames
    )
    for row, start, end, name in reversed(edits):
        text = lines[row].encode()
        lines[row] = (text[:start] + name.encode() + text[end:]).decode()
    return "\n".join(lines)


def _neutral(step: LaunchStep, a: str, others: list[str], local: bool) -> list[str]:
    """Names for a name and its pairs, the first free one taken: the kernel
    pointer a tensor is passed as (x_ptr=query: x), then what the names share
    (q_weight, k_weight: weight; scratch_buf2_view0, scratch_buf5_view0:
    scratch_view), then that without a leading num (num_heads, num_kv_heads:
    heads)."""
    out = []
    for param, value in step.args:
        if value == a and param.endswith("_ptr") and not local:
            out.append(param.removesuffix("_ptr"))
    split = [[t for t in n.split("_") if t] for n in others]
    common = [t for t in a.split("_") if t and all(t in o for o in split)]
    if not common:
        stems = [[re.sub(r"\d+$", "", t) for t in o] for o in split]
        common = [
            re.sub(r"\d+$", "", t)
            for t in a.split("_")
            if t and all(re.sub(r"\d+$", "", t) in o for o in stems)
        ]
    common = [re.sub(r"\d+$", "", t) for t in common if re.sub(r"\d+$", "", t)]
    if common:
        out.append("_".join(common))
        if common[0] == "num" and len(common) > 1:
            out.append("_".join(common[1:]))
    return out or ["x"]
