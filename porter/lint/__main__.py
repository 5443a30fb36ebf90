"""`python -m porter.lint PATH... [--format text|json|sarif]` or `--explain RULE`."""

import argparse
import sys

from porter.lint.command import add_arguments, run


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m porter.lint",
        description="Check Triton kernels against porter's kernel-writing rules.",
    )
    add_arguments(parser)
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
