import torch
import torch.nn as nn

class Model(nn.Module):
    """Softmax over the channel axis (dim=1) of a 4-d tensor, with a temperature attribute."""
    def __init__(self, temperature):
        super(Model, self).__init__()
        self.temperature = temperature

    def forward(self, x):
        return torch.softmax(x / self.temperature, dim=1)

batch_size = 3
channels = 10
height = 7
width = 9
temperature = 0.7

def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]

def get_init_inputs():
    return [temperature]
