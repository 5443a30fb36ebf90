"""Stage: a max or min over an empty axis is refused, as eager refuses it.

torch.amax, amin, max, min, argmax and argmin raise on an empty reduced axis
("Expected reduction dim to be specified for input.numel() == 0"): there is
no value to give. Inductor's kernel reduces nothing to its identity (-inf for
a max) and a per-tensor fp8 scale came out as 1e-12 instead of an error. A
launcher whose reduction kernel computes one of those ops (the aten ops
capture records above it) refuses a call whose reduced size is 0. An amax
beside a softmax, log-softmax or logsumexp is taken as theirs (the shift
Inductor's decomposition takes), and those serve an empty axis.
"""

from __future__ import annotations

import re

from porter.port.launch.launcher import param_for, spell_dims
from porter.port.model import KernelPort, PortState

# Reductions with no value over an empty axis, which eager refuses.
NO_IDENTITY = (
    "aten.amax",
    "aten.amin",
    "aten.max",
    "aten.min",
    "aten.argmax",
    "aten.argmin",
)
_REDUCED = ("r0_numel", "rnumel")
# Ops whose decomposition takes an amax of their own (the shift of a stable
# exp) and which serve an empty axis: F.cross_entropy over a 0 x 0 score
# matrix is nan in eager, and its kernel lists aten.amax beside them.
SHIFTED = ("aten._softmax", "aten._log_softmax", "aten.logsumexp", "aten._safe_softmax")


def refuse_empty_extrema(port: PortState) -> None:
    """A launcher whose reduction computes a max, min, argmax or argmin
    (torch's, not the elementwise maximum) refuses a call whose reduced size
    is 0, as eager does, instead of returning the reduction's identity."""
    launcher = port.launcher
    named = {d.name: d.expr for d in launcher.dims}
    seen: list[str] = []
    for kp in port.kernels:
        aten = _aten_ops(kp)
        ops = [op for op in aten if op in NO_IDENTITY]
        if any(op in SHIFTED for op in aten):
            ops = [op for op in ops if op not in ("aten.amax", "aten.amin")]
        if not ops or kp.record.kind not in ("reduction", "persistent_reduction"):
            continue
        size = _reduced_size(kp)
        if size is None or size.isdigit() or size in seen:
            continue
        if _outputs_empty_with(launcher, size):
            continue  # softmax over no columns: eager returns an empty tensor
        seen.append(size)
        op = ops[0].removeprefix("aten.")
        said = f"{op} over an empty axis ({spell_dims(size, named)} == 0) has no value; eager raises"
        launcher.shape_checks.append(f"if {size} == 0:\n    refuse({said!r})")
        port.notes.append(f"a call where {size} == 0 is refused: {op} of nothing")


def _outputs_empty_with(launcher, size: str) -> bool:
    """Whether every tensor the launcher returns is allocated with `size` as
    one of its sizes (a softmax's [tokens, vocab]), and it changes no input:
    at size 0 nothing holds the reduction's value."""
    returned = set(re.findall(r"\b\w+\b", launcher.returns))
    allocs = {a.var: a for a in launcher.allocs}
    outputs = [allocs[n] for n in returned if n in allocs]
    return (
        bool(outputs)
        and all(size in a.sizes for a in outputs)
        and not (launcher.written - set(allocs))
        and not any(n not in allocs and n in launcher.written for n in returned)
    )


def _aten_ops(kp: KernelPort) -> list[str]:
    """The aten ops the kernel computes, as capture recorded them; for a
    manifest written before it did, the op names in Inductor's kernel name
    (triton_red_fused__to_copy_abs_amax_clamp_0)."""
    if kp.record.aten:
        return kp.record.aten
    return [f"aten.{word}" for word in kp.record.name.split("_")]


def _reduced_size(kp: KernelPort) -> str | None:
    """The launcher's expression for the kernel's reduced size: its own
    parameter's, or, where binding merged it into another argument of the same
    size (argmax over a row whose length is also its stride, ks0), what the
    launch binds it to."""
    for p in kp.params:
        if p.original in _REDUCED:
            return p.value
    return next((param_for(kp, n) for n in _REDUCED if n in kp.bindings), None)
