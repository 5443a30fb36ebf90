"""pytest plugin (entry point `porter`): loaded by pytest wherever porter is installed."""


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped without one")
