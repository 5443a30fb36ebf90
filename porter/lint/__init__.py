"""`porter lint`: the kernel-writing rules as static checks on Triton kernels.

Nothing is imported or run: files are parsed with `ast`.

Layout:
    findings.py   Rule and Finding dataclasses
    names.py      the name heuristics (what looks like num_tokens, a pointer, a flag)
    source.py     parsing: kernels, their parameters, launch sites
    dataflow.py   per-kernel abstract interpretation that rules read
    grids.py      launcher-side grid reasoning
    ptNNN_*.py    one rule each (RULE + check)
    registry.py   the rule list and RULES
    engine.py     lint_source / lint_paths, suppression comments
    command.py    CLI glue (`porter lint`, `python -m porter.lint`)
"""

from porter.lint.engine import lint_paths, lint_source
from porter.lint.findings import Finding, Rule
from porter.lint.registry import RULES

__all__ = ["Finding", "Rule", "RULES", "lint_paths", "lint_source"]
