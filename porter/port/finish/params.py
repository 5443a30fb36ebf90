"""drop_unread_parameters: a size or stride no form of its kernel reads is not a
parameter, and a buffer no launch takes is not allocated.

Inductor passes a symbol per size it indexes by (ks2, a row stride of q read
as a view of qkv); once the port reads that stride as x_stride0, the
symbol it bound to a parameter of its own (q_stride_0) was left in the
signature unread, a constexpr that compiled a variant per value and a line
in every launch for nothing. A scratch buffer a looped kernel now recomputes
(forms.scratch) was allocated, tokens x vocab of fp32, for nothing.
"""

from __future__ import annotations

import re

from porter.ast_tools import read_counts
from porter.port.model import KernelPort, PortState

_INTS = ("runtime", "model", "stride")


def drop_unread_parameters(port: PortState) -> None:
    """An int parameter (a size or a stride) that no form of its kernel reads
    is dropped from the kernel and from its launch."""
    dropped = _drop_unused_allocs(port)
    for kp, step in zip(port.kernels, port.launches()):
        names = _unread(kp)
        if not names:
            continue
        kp.drop_params(names)
        step.args = [(p, v) for p, v in step.args if p not in names]
        dropped += len(names)
    if dropped:
        what = (
            "a size or stride parameter"
            if dropped == 1
            else f"{dropped} size or stride parameters"
        )
        port.notes.append(f"dropped {what} no kernel read")


def _drop_unused_allocs(port: PortState) -> int:
    """A buffer the launcher allocates that no step takes and no output
    returns (a scratch buffer forms.scratch recomputes) is not allocated."""
    launcher = port.launcher
    code: list[str] = []

    def read(c: str) -> str:
        code.append(c)
        return c

    launcher.map_code(read)  # every piece of code the launcher holds
    kept = []
    for a in launcher.allocs:
        word = re.compile(rf"(?<![\w.]){re.escape(a.var)}\b")
        if any(word.search(c or "") for c in code):
            kept.append(a)
    dropped = len(launcher.allocs) - len(kept)
    launcher.allocs = kept
    return dropped


def _unread(kp: KernelPort) -> set[str]:
    forms = kp.forms(matmul=True)
    read: set[str] = set()
    for form in forms:
        read |= set(read_counts(form))
    return {
        p.name
        for p in kp.params
        if p.kind in _INTS
        and p.name not in read
        and all(p.name in {a.arg for a in f.args.args} for f in forms)
    }
