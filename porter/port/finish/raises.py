"""Stage: a size at which eager raises is refused there.

A BatchNorm in training raises "Expected more than 1 value per channel" at a
batch of 1; a reference may check `if x.shape[0] == 1: raise`. Dynamo traces
sizes of 2 and more alone (it specializes 0 and 1), so no guard says so, and
the kernels returned numbers (zeros, a running variance of NaN written into
the caller's tensor), or at 0 read and wrote before a tensor (`x[:, -1]` of no
tokens), or a Python `dim / (dim - 2)` raise at 2 where the kernels' constexpr
division does not compile. The capture tried each dim at 1, 0 and 2 and at its
edge sizes (manifest rejected_sizes),
and each int argument at 0 (rejected_arguments: HF's top-k of min(k, vocab),
then its last, at k = 0), at -1 (Adam's sqrt(1 - beta2 ** step)) and from
where Python's float math on it overflows (HF's pow(factor, cur_len - start),
where the kernels return inf); the launcher refuses those calls in eager's
words, every negative value for -1.
"""

from __future__ import annotations

from porter.port.model import PortState


def refuse_sizes_eager_rejects(port: PortState) -> None:
    """Each dim at 1, 0 or 2, and each int argument at 0 or -1, of which eager raises
    on the reference's inputs, or gives outputs of another shape than the
    kernels', as the capture tried, is refused there in the launcher in
    eager's words, instead of the kernels returning numbers."""
    launcher = port.launcher
    named = {d.name for d in launcher.dims}
    axes = {d.name: d.axes for d in port.cap.dims}
    for entry in port.cap.rejected_sizes:
        name = entry["dim"]
        if name in named:
            size = name
        elif axes.get(name):
            tensor, axis = axes[name][0]
            size = f"{tensor.replace('.', '_')}.shape[{axis}]"
        else:
            continue
        at = entry.get("size", 1)  # captures before sizes of 0 were tried
        if entry.get("kind") == "shape":
            said = (
                f"eager's {entry['error']}: torch.compile traced {name} of 2 and "
                "more, and the scaffold refuses it"
            )
            why = "eager's outputs take another shape there"
        else:
            said = f"eager raises at {name} = {at} ({entry['error']}); so does the scaffold"
            why = "eager raises there"
        launcher.shape_checks.append(f"if {size} == {at}:\n    refuse({said!r})")
        port.notes.append(f"a call where {name} == {at} is refused, as {why}")
    # int arguments at 0 (a top-k of min(k, vocab), then its last)
    for entry in port.cap.rejected_arguments:
        name = entry["argument"]
        bound = {"from": ">=", "to": "<="}
        edge = next((k for k in bound if k in entry), None)
        if edge:
            test = f"{name} {bound[edge]} {entry[edge]}"
            said = (
                f"eager raises at {test} ({entry['error']}) with the other "
                "arguments as captured; so does the scaffold"
            )
            launcher.checks.append(f"if {test}:\n    refuse({said!r})")
            port.notes.append(f"a call where {test} is refused, as eager raises there")
            continue
        if entry.get("at") == -1:
            said = (
                f"eager raises at {name} = -1 ({entry['error']}); the scaffold "
                f"refuses every negative {name}"
            )
            launcher.checks.append(f"if {name} < 0:\n    refuse({said!r})")
            port.notes.append(
                f"a call where {name} < 0 is refused, as eager raises at -1"
            )
            continue
        said = f"eager raises at {name} = 0 ({entry['error']}); so does the scaffold"
        launcher.checks.append(f"if {name} == 0:\n    refuse({said!r})")
        port.notes.append(f"a call where {name} == 0 is refused, as eager raises there")
