"""share_identical_kernels: one kernel where Inductor wrote several that differ
only in their names.

A reference that applies one op to several tensors (an RMSNorm of q and of k,
rotary of query and of key) gets a kernel a tensor from Inductor: the same
code under other names. The scaffold keeps the first, renames what differed
after what the tensors have in common (q_weight_ptr and k_weight_ptr:
weight_ptr; q_ptr and k_ptr: x_ptr) and launches it for each, as a hand-written
port would.
"""

from __future__ import annotations

import ast
import copy
import re

from porter.ast_tools import arg_names, rename_names, stored_names, unique_name
from porter.port.model import KernelPort, PortState


def share_identical_kernels(port: PortState) -> None:
    """A kernel whose every form is an earlier kernel's with other names is
    not written again: its launch calls the earlier one, whose names that
    differed become what both tensors have in common."""
    steps = port.launches()
    for j, kp in enumerate(port.kernels):
        for i in range(j):
            first = port.kernels[i]
            if first.same_as or not _shareable(first, kp):
                continue
            pairs = _pairs(first.forms(), kp.forms())
            if pairs is None:
                continue
            # the launches of the kernels that share it already take its
            # names as they become
            sharing = [steps[i]] + [
                steps[n] for n in range(j) if port.kernels[n].same_as == first.name
            ]
            _share(first, kp, sharing, steps[j], pairs)
            break
    if any(kp.same_as for kp in port.kernels):
        port.notes.append(
            "kernels Inductor wrote again under other names (one op applied to "
            "several tensors) are written once and launched for each"
        )
    _renumber(port)


def _renumber(port: PortState) -> None:
    """The kernels left numbered in order again (rmsnorm_kernel where one is left)."""
    left = [kp for kp in port.kernels if not kp.same_as]
    if len(left) == len(port.kernels):
        return
    base = port.cap.reference_name.lower()
    names = {}
    for i, kp in enumerate(left):
        old = f"{base}_kernel_{port.kernels.index(kp)}"
        new = f"{base}_kernel" if len(left) == 1 else f"{base}_kernel_{i}"
        for form in kp.forms():
            if form.name.startswith(old) and old != new:
                names[form.name] = new + form.name[len(old) :]
                form.name = names[form.name]
        kp.looped_name = names.get(kp.looped_name, kp.looped_name)
    if not names:
        return
    word = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    port.launcher.map_code(lambda code: word.sub(lambda m: names[m.group(1)], code))
    for step in port.steps():
        step.kernel = names.get(step.kernel, step.kernel)
    for kp in port.kernels:
        kp.same_as = names.get(kp.same_as, kp.same_as)


def _shareable(a: KernelPort, b: KernelPort) -> bool:
    return (
        a.matmul is None
        and b.matmul is None
        and [f is None for f in (a.persistent, a.online)]
        == [f is None for f in (b.persistent, b.online)]
        and a.split_launch == b.split_launch
        and (a.tile is None) == (b.tile is None)
        and [ast.dump(f) for f in a.combine_fns] == [ast.dump(f) for f in b.combine_fns]
        and [p.kind for p in a.params] == [p.kind for p in b.params]
    )


def _local_names(fn: ast.FunctionDef) -> set[str]:
    return set(arg_names(fn)) | stored_names(fn)


def _canonical(fn: ast.FunctionDef) -> tuple[str, list[str]]:
    """fn's code with its own names numbered in the order they appear, and
    those names in that order: two kernels with the same code under other
    names give the same text."""
    local, order = _local_names(fn), []
    tree = copy.deepcopy(fn)
    tree.name = "_"
    for node in ast.walk(tree):
        attr = "id" if isinstance(node, ast.Name) else "arg"
        if isinstance(node, (ast.Name, ast.arg)) and getattr(node, attr) in local:
            name = getattr(node, attr)
            if name not in order:
                order.append(name)
            setattr(node, attr, f"_{order.index(name)}")
    return ast.dump(tree), order


def _pairs(
    first: list[ast.FunctionDef], other: list[ast.FunctionDef]
) -> list[dict[str, str]] | None:
    """For each form, its names in `first` by the names they have in `other`;
    None where some form differs in more than names, or a parameter pairs
    with two."""
    out, params = [], {}
    for a, b in zip(first, other):
        (text_a, names_a), (text_b, names_b) = _canonical(a), _canonical(b)
        if text_a != text_b:
            return None
        pairs = dict(zip(names_b, names_a))
        for arg in b.args.args:
            if params.setdefault(arg.arg, pairs[arg.arg]) != pairs[arg.arg]:
                return None
        out.append(pairs)
    return out


def _tokens(name: str) -> list[str]:
    return [t for t in name.split("_") if t]


def _in_common(a: str, b: str) -> str:
    """What two tensor names share, digits aside (out0, out1: out;
    q_weight, k_weight: weight); x where nothing (q, k)."""
    ta = [re.sub(r"\d+$", "", t) for t in _tokens(a)]
    tb = {re.sub(r"\d+$", "", t) for t in _tokens(b)}
    return "_".join(t for t in ta if t and t in tb) or "x"


def _find(tokens: list[str], part: list[str]) -> int | None:
    for k in range(len(tokens) - len(part) + 1):
        if tokens[k : k + len(part)] == part:
            return k
    return None


def _neutral(a: str, subjects: list[tuple[str, str, str]]) -> str:
    """A name for what `a` holds in the first launch and its pair in the
    others: a tensor's name in it becomes what the tensors share (q_stride1:
    x_stride1); a name without one (val_4 beside val_3) reads as well for all."""
    ta = _tokens(a)
    for sa, _, common in subjects:
        pa = _tokens(sa)
        ka = _find(ta, pa)
        if ka is not None:
            return "_".join(ta[:ka] + [common] + ta[ka + len(pa) :])
    return a


def _renames(
    pairs: dict[str, str], subjects: list[tuple[str, str, str]], taken: set[str]
) -> dict[str, str]:
    """New names for the first kernel's names that differ in the other."""
    out = {}
    for b, a in pairs.items():
        if a == b:
            continue
        name = _neutral(a, subjects)
        if name != a and (name in taken or name in out.values()):
            name = unique_name(name, taken | set(out.values()))
        if name != a:
            out[a] = name
    return out


def _share(first: KernelPort, other: KernelPort, steps_a, step_b, pairs) -> None:
    forms_a, forms_b = first.forms(), other.forms()
    params = {arg.arg: pairs[0][arg.arg] for arg in forms_b[0].args.args}
    subjects = sorted(
        (
            (a[: -len("_ptr")], b[: -len("_ptr")], "")
            for b, a in params.items()
            if a != b and a.endswith("_ptr") and b.endswith("_ptr")
        ),
        key=lambda s: -len(s[0]),
    )
    subjects = [(sa, sb, _in_common(sa, sb)) for sa, sb, _ in subjects]
    taken = set().union(*(_local_names(f) for f in forms_a))
    param_names = _renames(params, subjects, taken)
    for fa, form_pairs in zip(forms_a, pairs):
        local = {b: a for b, a in form_pairs.items() if a not in params.values()}
        names = _renames(local, subjects, _local_names(fa) | set(param_names.values()))
        rename_names(fa, {**param_names, **names})
    for p in first.params:
        p.name = param_names.get(p.name, p.name)
    for step in steps_a:
        step.args = [(_new(p, param_names), v) for p, v in step.args]
    step_b.args = [(_new(params.get(p, p), param_names), v) for p, v in step_b.args]
    kernels = {fb.name: fa.name for fa, fb in zip(forms_a, forms_b)}
    if other.looped_name:
        kernels[other.looped_name] = first.looped_name
    word = re.compile(r"\b(" + "|".join(map(re.escape, kernels)) + r")\b")
    step_b.setup = [word.sub(lambda m: kernels[m.group(1)], s) for s in step_b.setup]
    step_b.kernel = kernels.get(step_b.kernel, step_b.kernel)
    other.same_as = first.name


def _new(name: str, mapping: dict[str, str]) -> str:
    return mapping.get(name, name)
