import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer and tanh-GELU (KernelBench format)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x), approximate="tanh")


batch_size = 8
in_features = 64
out_features = 96


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
