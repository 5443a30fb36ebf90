"""The rules, in id order. Add a rule: write `ptNNN_<name>.py` with RULE and check(), list it here."""

from __future__ import annotations

from porter.lint import (
    pt001_grid_limit,
    pt002_int32_offsets,
    pt003_specialized_flag,
    pt004_specialized_size,
    pt005_store_then_load,
    pt006_low_precision_math,
    pt007_fp64_math,
    pt008_float_to_int_cast,
    pt009_negative_div_mod,
    pt010_autotune_non_matmul,
    pt011_token_head_grid,
)
from porter.lint.findings import ERROR, Rule

CHECKS = [
    pt001_grid_limit,
    pt002_int32_offsets,
    pt003_specialized_flag,
    pt004_specialized_size,
    pt005_store_then_load,
    pt006_low_precision_math,
    pt007_fp64_math,
    pt008_float_to_int_cast,
    pt009_negative_div_mod,
    pt010_autotune_non_matmul,
    pt011_token_head_grid,
]

# Not a kernel rule: a file that does not parse cannot be checked, and saying so
# is better than reporting it clean.
SYNTAX = Rule(
    id="PT000",
    name="syntax-error",
    severity=ERROR,
    title="file does not parse",
    reason="The linter reads source with Python's parser; a file it cannot parse is unchecked.",
    fix="fix the syntax error (run `python -m py_compile FILE`)",
)

RULES: dict[str, Rule] = {SYNTAX.id: SYNTAX} | {m.RULE.id: m.RULE for m in CHECKS}
