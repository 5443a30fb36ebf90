# The files here are lint inputs, read as text by tests/test_lint.py; never import them.
collect_ignore_glob = ["*.py"]
