"""porter: turn Inductor's generated Triton kernels into standalone, tested kernels."""

__version__ = "0.1.0"
