"""Port passes of the speed phase: rewrites for speed that read those names."""
