"""Stage: a max or min over an empty axis is refused, as eager refuses it.

torch.amax, amin, max, min, argmax and argmin raise on an empty reduced axis
("Expected reduction dim to be specified for input.numel() == 0"): there is
no value to give. Inductor's kernel reduces nothing to its identity (-inf for
a max) and a per-tensor fp8 scale came out as 1e-12 instead of an error. A
launcher whose reduction kernel computes one of those ops (the aten ops
capture records above it) refuses a call whose reduced size is 0.
"""

from __future__ import annotations

from porter.port.launch.launcher import spell_dims
from porter.port.model import PortState

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


def refuse_empty_extrema(port: PortState) -> None:
    """A launcher whose reduction computes a max, min, argmax or argmin
    (torch's, not the elementwise maximum) refuses a call whose reduced size
    is 0, as eager does, instead of returning the reduction's identity."""
    launcher = port.launcher
    named = {d.name: d.expr for d in launcher.dims}
    seen: list[str] = []
    for kp in port.kernels:
        ops = [op for op in kp.record.aten if op in NO_IDENTITY]
        if not ops or kp.record.kind not in ("reduction", "persistent_reduction"):
            continue
        size = next((p for p in kp.params if p.original in _REDUCED), None)
        if size is None or size.value.isdigit() or size.value in seen:
            continue
        seen.append(size.value)
        op = ops[0].removeprefix("aten.")
        said = f"{op} over an empty axis ({spell_dims(size.value, named)} == 0) has no value; eager raises"
        launcher.shape_checks.append(f"if {size.value} == 0:\n    refuse({said!r})")
        port.notes.append(f"a call where {size.value} == 0 is refused: {op} of nothing")
