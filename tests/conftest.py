"""Fixtures shared by the tests: the linear-layer tests' matmul calls, porter_jitcheck."""

import pytest
import torch


@pytest.fixture
def matmul_calls(monkeypatch):
    """The names of the torch.mm / torch.addmm calls made while the test runs,
    in order (each still computes)."""
    seen = []
    for name in ("mm", "addmm"):
        real = getattr(torch, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(torch, name, spy)
    return seen


def gelu_linear64(x, weight, bias):
    """tanh-GELU of x @ weight.T + bias, in float64."""
    y = x.double() @ weight.double().T + bias.double()
    return 0.5 * y * (1 + torch.tanh(0.7978845608028654 * (y + 0.044715 * y**3)))


@pytest.fixture
def gelu_linear_reference():
    return gelu_linear64


@pytest.fixture
def porter_jitcheck(porter_device):
    """jitcheck(case_folder, **options) -> JitReport, on this session's device
    (here, not in porter's pytest plugin: porter.jitcheck imports porter.testing)."""
    from porter.jitcheck import jitcheck
    from porter.testing.parity import load_case

    def check(case, **options):
        loaded = load_case(case) if not hasattr(case, "manifest") else case
        return jitcheck(loaded, device=porter_device, **options)

    return check
