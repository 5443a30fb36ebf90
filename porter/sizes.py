"""Model sizes from the command line: `--dims NAME=V[,V...] ...`, as porter bench
and the tools/ scripts take it. Kept apart from porter.bench so that building
the CLI's parser does not import torch."""

from __future__ import annotations

from typing import Any


def add_dims_option(parser: Any) -> None:
    """`--dims NAME=V[,V...] ...`, as porter bench and the tools/ scripts take
    it (read with parse_dims)."""
    parser.add_argument(
        "--dims",
        nargs="+",
        default=[],
        metavar="NAME=V[,V...]",
        help="model sizes to sweep instead of the captured ones, one dim a word, "
        "e.g. hidden=2048,4096,8192 or num_heads=32 head_dim=128",
    )


def parse_dims(items: list[str]) -> dict[str, list[int]]:
    """`--dims` words, each NAME=V[,V...], as model sizes for `sweep`; a
    ValueError says how to write a word that is not."""
    sizes: dict[str, list[int]] = {}
    for item in items:
        name, _, values = item.partition("=")
        try:
            sizes[name] = [int(v) for v in values.split(",")]
        except ValueError:
            hint = (
                ", one dim a word: --dims num_heads=32 head_dim=128"
                if "=" in values
                else ", e.g. hidden=2048,4096"
            )
            raise ValueError(
                f"--dims {item}: write NAME=V[,V...] with integer sizes{hint}"
            ) from None
    return sizes


def add_point_options(parser: Any) -> None:
    """CASE, `--dims`, `--tokens`, `--dtype` and `--variant`: the points and the
    kernel.py files the tools/ probes (launch_probe, regcount) take."""
    parser.add_argument("case")
    add_dims_option(parser)
    parser.add_argument("--tokens", type=int, nargs="*", default=[1, 64, 4096, 32768])
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument(
        "--variant", nargs="*", default=[], help="other kernel.py files"
    )
