"""Stage: port captured kernels into a standalone, shape-general scaffold.

port_capture runs the pass pipeline (porter.port.pipeline) on a capture and
returns the scaffold's typed model (porter.port.scaffold.Scaffold), which
porter.render turns into kernel.py."""

from __future__ import annotations

from porter.port.model import PortOptions, PortState
from porter.port.pipeline import run_pipeline
from porter.port.scaffold import Scaffold, build_scaffold
from porter.records import Capture


def port_capture(
    cap: Capture, ref_module, options: PortOptions = PortOptions()
) -> Scaffold:
    """The scaffold of a capture of the reference module `ref_module`."""
    port = PortState(cap, None, ref_module, options)
    return build_scaffold(run_pipeline(port))
