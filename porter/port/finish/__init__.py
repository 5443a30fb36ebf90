"""Port passes of the finish phase: the last rewrites of every kernel form."""
