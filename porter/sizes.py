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


def add_set_option(parser: Any) -> None:
    """`--set NAME=VALUE` (repeatable): sizes to capture at (read with parse_sets)."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="capture with this size: a KernelBench file's size global "
        "(batch_size=16, input_shape=(128,)) or a porter reference's DIMS entry "
        "(hidden=512); repeatable. The kernels stay general either way",
    )


def parse_sets(items: list[str]) -> dict[str, Any]:
    """`--set` words as {name: int or tuple of ints}; ValueError says how to
    write a word that is not one."""
    import ast

    out: dict[str, Any] = {}
    for item in items:
        name, eq, text = item.partition("=")
        try:
            value = ast.literal_eval(text.strip()) if eq else None
        except (ValueError, SyntaxError):
            value = None
        ok_int = isinstance(value, int) and not isinstance(value, bool)
        ok_tuple = isinstance(value, tuple) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
        if not name.isidentifier() or not (ok_int or ok_tuple):
            raise ValueError(
                f"--set {item}: write NAME=VALUE with a whole number or a tuple of "
                "them, e.g. --set batch_size=16 or --set input_shape=(128,)"
            )
        out[name] = value
    return out
