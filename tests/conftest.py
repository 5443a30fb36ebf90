"""Fixtures shared by the linear-layer tests (test_bias, test_matmul)."""

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
