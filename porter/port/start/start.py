"""The port's first passes: the capture checked and split so that each
kernel launch is one kernel, then a KernelPort for each kernel."""

from __future__ import annotations

import copy
import re

from porter.errors import PorterError
from porter.port.model import KernelPort, PortState
from porter.records import Capture


def relaunched_apart(cap: Capture) -> Capture:
    """A copy of the capture in which a kernel Inductor launches more than once
    (the same copy for a key cache and a value cache) is one kernel a launch:
    porter binds a kernel's arguments to what one launch passes it."""
    seen: dict[str, int] = {}
    steps = [s for m in cap.modules for s in m.steps if s.kind == "launch"]
    for step in steps:
        seen[step.name] = seen.get(step.name, 0) + 1
    if all(n == 1 for n in seen.values()):
        return cap
    cap = copy.deepcopy(cap)
    records = {k.name: k for k in cap.kernels}
    count: dict[str, int] = {}
    for module in cap.modules:
        for step in module.steps:
            if step.kind != "launch" or seen.get(step.name, 1) == 1:
                continue
            k = count[step.name] = count.get(step.name, 0) + 1
            if k == 1:
                continue
            record = records[step.name]
            name = f"{step.name}_launch{k}"
            twin = copy.deepcopy(record)
            twin.name = name
            twin.source = re.sub(rf"\bdef {step.name}\(", f"def {name}(", record.source)
            cap.kernels.insert(cap.kernels.index(record) + k - 1, twin)
            module.kernels.append(name)
            step.name = name
    return cap


def one_launch_a_kernel(port: PortState) -> None:
    """A kernel Inductor launches more than once becomes one kernel a launch
    (relaunched_apart)."""
    if len(port.cap.modules) != 1:
        raise PorterError(
            f"{port.cap.reference_name} compiled into {len(port.cap.modules)} graphs "
            "(graph breaks); porter ports one graph: remove the graph breaks "
            "(torch._dynamo.explain shows them)"
        )
    # A graph break at the reference's first op (bincount, nonzero: an output
    # sized by the data) leaves one graph, whose inputs are values Python
    # computed before it (Dynamo's ___stack0), not the reference's arguments.
    stacked = [gi for gi in port.cap.modules[0].inputs if gi.source.startswith("L['___")]
    if stacked:
        raise PorterError(
            f"{port.cap.reference_name}: torch.compile ran its first ops in Python and "
            "compiled only what follows (a graph break, at an op whose output size "
            "depends on the data, such as bincount or nonzero); porter ports one "
            "graph of the whole reference: move that op out of it or make its size fixed"
        )
    port.cap = relaunched_apart(port.cap)
    port.module = port.cap.modules[0]


def start_kernels(port: PortState) -> None:
    """A KernelPort for each captured kernel, with the launch that calls it."""
    for record in port.cap.kernels:
        launch = next(
            (
                s
                for s in port.module.steps
                if s.kind == "launch" and s.name == record.name
            ),
            None,
        )
        port.kernels.append(
            KernelPort(
                record=record, launch=launch, capture_dtype=port.cap.capture_dtype
            )
        )
