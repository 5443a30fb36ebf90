"""Issue 45's size figures for a folder of cases (default captured/): each
kernel.py's code lines (not blank, comment or docstring), its share of comment
and docstring lines, the share of kernel assignments binding tmpN names, and
its code lines repeated verbatim in at least half the other scaffolds.

Repeated lines are counted two ways: single lines, and lines in runs of at
least RUN consecutive code lines that appear as the same run in half the
others. Single lines count the idioms any family of Triton kernels shares
(`).to(tl.float32)`, `BLOCK_ROWS: tl.constexpr,`); runs count copied blocks,
such as a helper function pasted into every file.

    python3 tools/scaffold_size.py [FOLDER] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import sys
from pathlib import Path

RUN = 3  # consecutive code lines that make a copied block
SHORT = 12  # lines this short or shorter (`)`, `else:`) never count as repeated


def code_lines(source: str) -> tuple[list[str], int, int]:
    """(the stripped code lines, comment and docstring lines, all lines)."""
    lines = source.splitlines()
    docs = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
            if ast.get_docstring(node, clean=False) is not None:
                doc = node.body[0]
                docs.update(range(doc.lineno, doc.end_lineno + 1))
    code, comments = [], 0
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("#") or number in docs:
            comments += 1
        else:
            code.append(text)
    return code, comments, len(lines)


def tmp_share(source: str) -> tuple[int, int]:
    """(assignments binding tmpN names, all assignments) inside @triton.jit functions."""
    tmp = total = 0
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, ast.FunctionDef) and any(
            "jit" in ast.unparse(d) for d in fn.decorator_list
        ):
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            total += 1
                            tmp += bool(re.fullmatch(r"_?tmp\d+", target.id))
    return tmp, total


def repeated(codes: dict[str, list[str]], name: str) -> tuple[int, int]:
    """(single lines, lines in runs of RUN) of `name` that half the others hold."""
    others = [c for k, c in codes.items() if k != name]
    need = len(others) / 2
    single = sum(
        1
        for line in codes[name]
        if len(line) > SHORT and sum(line in set(o) for o in others) >= need
    )
    runs_of = [
        {tuple(o[i : i + RUN]) for i in range(len(o) - RUN + 1)} for o in others
    ]
    code, marked = codes[name], set()
    for i in range(len(code) - RUN + 1):
        window = tuple(code[i : i + RUN])
        if all(len(line) <= SHORT for line in window):
            continue
        if sum(window in r for r in runs_of) >= need:
            marked.update(range(i, i + RUN))
    return single, len(marked)


def measure(folder: Path) -> dict:
    cases, codes = {}, {}
    for path in sorted(folder.glob("*/kernel.py")):
        source = path.read_text()
        code, comments, lines = code_lines(source)
        tmp, assigned = tmp_share(source)
        codes[path.parent.name] = code
        cases[path.parent.name] = {
            "lines": lines,
            "code": len(code),
            "comments": comments,
            "tmp": tmp,
            "assigned": assigned,
        }
    for name in cases:
        cases[name]["repeated_lines"], cases[name]["repeated_runs"] = repeated(
            codes, name
        )
    all_lines = sum(c["lines"] for c in cases.values()) or 1
    assigned = sum(c["assigned"] for c in cases.values()) or 1
    return {
        "cases": cases,
        "median_code": statistics.median(c["code"] for c in cases.values()),
        "max_code": max(c["code"] for c in cases.values()),
        "comment_share": sum(c["comments"] for c in cases.values()) / all_lines,
        "tmp_share": sum(c["tmp"] for c in cases.values()) / assigned,
        "max_repeated_lines": max(c["repeated_lines"] for c in cases.values()),
        "max_repeated_runs": max(c["repeated_runs"] for c in cases.values()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", default="captured")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    folder = Path(args.folder)
    if not any(folder.glob("*/kernel.py")):
        print(f"scaffold_size: no */kernel.py under {folder}", file=sys.stderr)
        return 1
    figures = measure(folder)
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    print(f"{'case':24s} {'code':>5s} {'comments':>8s} {'tmpN':>7s} {'rep.lines':>9s} {'rep.runs':>8s}")
    for name, c in figures["cases"].items():
        share = c["comments"] / max(c["lines"], 1)
        print(
            f"{name:24s} {c['code']:5d} {share:8.0%} {c['tmp']:3d}/{c['assigned']:<3d} "
            f"{c['repeated_lines']:9d} {c['repeated_runs']:8d}"
        )
    print(
        f"median code lines {figures['median_code']}, max {figures['max_code']}; "
        f"comments {figures['comment_share']:.0%}; tmpN {figures['tmp_share']:.0%}; "
        f"repeated: {figures['max_repeated_lines']} single lines, "
        f"{figures['max_repeated_runs']} in runs of {RUN} (the most of any case)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
