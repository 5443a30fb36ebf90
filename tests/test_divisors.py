"""Before/after tests for refusing an int argument of 0 that a kernel divides
by (porter.port.finish.divisors)."""

import ast
import shutil
import textwrap
from pathlib import Path

import pytest

from porter.ast_tools import bindings
from porter.pipeline import port
from porter.port.finish.divisors import divisor_names
from porter.port.model import PortOptions, PortState
from porter.port.pipeline import run_pipeline
from porter.records import Capture
from porter.reference import case_reference
from porter.store import read_manifest
from porter.testing import check_parity, load_case
from porter.testing.parity import (
    ParityError,
    ReferenceRejects,
    ScaffoldRefuses,
    Scenario,
)

# ids // shard, ids % shard, ids + offset on int32 ids (shard, offset: ints)
CASE = Path(__file__).parent / "cases" / "token_id_shard_math"


def _checks(until):
    manifest = read_manifest(CASE)
    cap = Capture.from_dict(manifest)
    ref = case_reference(CASE, manifest).module
    state = run_pipeline(PortState(cap, None, ref, PortOptions()), until=until)
    return state.launcher.checks


def test_the_divisor_is_refused_at_zero_and_the_addend_is_not():
    before = _checks("refuse_short_views")
    check, *rest = _checks("refuse_zero_divisors")
    # first of all checks: another check may divide by it (`x.shape[1] % k`)
    assert rest == before
    assert check.startswith("if shard == 0:")
    assert "ZeroDivisionError" in check


def test_the_scaffold_refuses_where_eager_raises(tmp_path, porter_device):
    case = tmp_path / "token_id_shard_math"
    shutil.copytree(CASE, case)
    port(case, progress=lambda _: None)
    loaded = load_case(case)
    sizes = {"num_tokens": 5}
    # eager raises ZeroDivisionError; the kernel had returned zeros
    zero = Scenario("float32", sizes, args={1: 0}, optional=True)
    with pytest.raises(ReferenceRejects, match="so does the scaffold"):
        check_parity(loaded, zero, porter_device, 0)
    for shard in (-7, 3):  # floor division and a remainder of either sign
        check_parity(
            loaded, Scenario("float32", sizes, args={1: shard}), porter_device, 0
        )


def test_a_divisor_widened_for_int64_ids_is_followed():
    # `ids // m` on int64 ids: the port spells Inductor's widening of m as
    # tl.cast, which was not followed, and m = 0 returned zeros unrefused.
    fn = ast.parse(textwrap.dedent("""
            def k(ids, m):
                cast_m = tl.cast(m, tl.int64)
                safe = tl.where(cast_m == 0, 1, cast_m)
                val_2 = tl.where(safe < 0, 0 - safe, safe)
                out = ids // val_2
            """))
    bound = {n: v[0] for n, v in bindings(fn).items() if len(v) == 1}
    (div,) = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv)
    ]
    assert "m" in divisor_names(div.right, bound)


def test_an_int_argument_past_int32_is_refused_and_the_suite_tries_one(
    tmp_path, porter_device
):
    # eager wraps shard = 2**32 + 3 to an int32 id's dtype (ids // 3); the
    # kernel divided by the whole of it and gave zeros
    checks = _checks(None)
    assert any("shard must be within int32's range" in c for c in checks)
    case = tmp_path / "token_id_shard_math"
    shutil.copytree(CASE, case)
    port(case, progress=lambda _: None)
    loaded = load_case(case)
    wide = [sc for sc in loaded.scenarios() if sc.args.get(1) == 2**32 + 64]
    assert wide and wide[0].optional
    with pytest.raises(ScaffoldRefuses, match="int32's range"):
        check_parity(loaded, wide[0], porter_device, 0)
    # without the check the suite's scenario fails it
    kernel = case / "kernel.py"
    text = kernel.read_text()
    kernel.write_text(text.replace("if not -(2**31) <= shard < 2**31:", "if False:"))
    with pytest.raises(ParityError, match="exactly"):
        check_parity(load_case(case), wide[0], porter_device, 0)
