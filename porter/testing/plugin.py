"""pytest plugin (entry point `porter`), active wherever porter is installed.

--porter-device cpu|cuda picks where parity tests run (default: cuda when torch
sees a GPU). On the CPU it turns on Triton's interpreter before any kernel module
is imported, and makes the interpreter faithful for bf16/fp16/fp8 and libdevice, and checks every
load and store against the launch's tensor arguments (porter.testing.bounds).
Under pytest-xdist on a machine with several GPUs, each worker takes its own GPU.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("porter")
    group.addoption(
        "--porter-device",
        choices=["auto", "cpu", "cuda"],
        default=os.environ.get("PORTER_DEVICE", "auto"),
        help="where porter parity tests run (default: cuda when available)",
    )


def _device(config) -> str:
    choice = config.getoption("--porter-device")
    if choice != "auto":
        return choice
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped without one")
    device = _device(config)
    config._porter_device = device
    if device == "cpu":
        # Must be set before kernel.py files run @triton.jit.
        os.environ["TRITON_INTERPRET"] = "1"
        from porter.testing import enable_interpreter_fidelity
        from porter.testing.bounds import enable_bounds_checks

        enable_interpreter_fidelity()
        enable_bounds_checks()
        # The interpreter computes with numpy, which warns on every inf - inf or
        # 0 * inf of the difficult inputs; the parity verdict judges those values.
        config.addinivalue_line(
            "filterwarnings", "ignore::RuntimeWarning:triton.runtime.interpreter"
        )
    else:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        if worker.startswith("gw"):
            import torch

            count = torch.cuda.device_count()
            if count > 1:
                torch.cuda.set_device(int(worker[2:]) % count)


@pytest.fixture
def porter_device(request) -> str:
    return request.config._porter_device




def pytest_collection_modifyitems(config, items):
    if config._porter_device == "cuda":
        return
    skip = pytest.mark.skip(
        reason="needs a CUDA device (run with --porter-device cuda on a GPU)"
    )
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
