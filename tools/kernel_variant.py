"""Write a variant of a scaffold's kernel.py for tools/launch_probe.py --variant
(and tools/regcount.py --variant): a candidate kernel form, to time against the
generator's own before changing the generator.

    python3 tools/kernel_variant.py stream-helper captured/fused_add_rmsnorm/kernel.py \
        -o /tmp/fam_helper.py

Forms:
  stream-helper  The persistent kernel's eviction hint as one branch around a
                 helper: the kernel tests `rows < STREAM_ROWS` once and calls
                 `<kernel>_body(..., ROW_EVICTION)`, a @triton.jit function
                 holding the whole body, with the hint as a constexpr
                 ("evict_first", or "" for none). The scaffold's own form
                 branches around each hinted load instead, so both loads' code
                 share one body (more registers where a thread holds much of
                 the row: docs/benchmarks/NOTES.md).

The variant keeps every name the launcher calls; only kernel code changes
(comments are dropped: the file is printed again from its syntax tree).
"""

from __future__ import annotations

import argparse
import ast
import copy
import sys
from pathlib import Path

# The generator's own test for the branch hint_row_loads writes.
from porter.port.persist import STREAM_ROWS, _is_stream_branch

ROW_EVICTION = "ROW_EVICTION"


def _hint_to_param(node: ast.AST) -> None:
    """eviction_policy="evict_first" -> eviction_policy=ROW_EVICTION."""
    for n in ast.walk(node):
        if isinstance(n, ast.keyword) and n.arg == "eviction_policy":
            if isinstance(n.value, ast.Constant) and n.value.value == "evict_first":
                n.value = ast.Name(ROW_EVICTION, ast.Load())


def stream_helper(fn: ast.FunctionDef) -> list[ast.FunctionDef] | None:
    """[body helper, dispatching kernel] for a kernel with STREAM_ROWS
    branches; None for any other kernel."""
    branches = [s for s in fn.body if _is_stream_branch(s)]
    if not branches:
        return None
    rows = ast.unparse(branches[0].test.left)
    body = copy.deepcopy(fn)
    body.name = f"{fn.name}_body"
    body.decorator_list = [ast.parse("triton.jit", mode="eval").body]
    for arg in body.args.args:
        if arg.arg == STREAM_ROWS:
            arg.arg = ROW_EVICTION
    flat = []
    for stmt in body.body:
        if _is_stream_branch(stmt):
            for inner in stmt.body:  # the hinted side; the hint becomes the param
                _hint_to_param(inner)
                flat.append(inner)
        else:
            flat.append(stmt)
    body.body = flat
    params = [a.arg for a in fn.args.args if a.arg != STREAM_ROWS]
    call = f"{body.name}({', '.join(params)}, {{}})"
    dispatch = copy.deepcopy(fn)
    dispatch.body = ast.parse(
        f"if {rows} < {STREAM_ROWS}:\n"
        f"    {call.format(repr('evict_first'))}\n"
        f"else:\n"
        f"    {call.format(repr(''))}\n"
    ).body
    return [body, dispatch]


FORMS = {"stream-helper": stream_helper}


def variant(source: str, form: str) -> tuple[str, list[str]]:
    """The module's source with `form` applied to every kernel it fits, and the
    names of those kernels."""
    tree = ast.parse(source)
    out, changed = [], []
    for node in tree.body:
        new = FORMS[form](node) if isinstance(node, ast.FunctionDef) else None
        if new is None:
            out.append(node)
        else:
            out += new
            changed.append(node.name)
    tree.body = out
    text = ast.unparse(ast.fix_missing_locations(tree))
    try:
        import black

        text = black.format_str(text, mode=black.Mode())
    except ImportError:  # the GPU machine may lack it; the code is the same
        pass
    return text, changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("form", choices=sorted(FORMS))
    ap.add_argument("kernel", help="a scaffold's kernel.py")
    ap.add_argument("-o", "--out", required=True, help="where the variant goes")
    args = ap.parse_args()
    src = Path(args.kernel)
    if not src.is_file():
        print(f"kernel_variant: {src}: no such file", file=sys.stderr)
        return 1
    text, changed = variant(src.read_text(), args.form)
    if not changed:
        print(
            f"kernel_variant: {src}: no kernel of the form {args.form} applies to "
            "(a persistent kernel with STREAM_ROWS branches)",
            file=sys.stderr,
        )
        return 1
    Path(args.out).write_text(text)
    print(f"kernel_variant: wrote {args.out} ({args.form}: {', '.join(changed)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
