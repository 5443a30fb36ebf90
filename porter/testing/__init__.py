"""porter's public testing API, used by every generated test_parity.py.

    from porter.testing import load_case, check_parity
    case = load_case(__file__)
    for scenario in case.scenarios():
        check_parity(case, scenario, device="cpu")

`enable_interpreter_fidelity()` makes Triton's CPU interpreter compute bf16,
fp16, fp8 and libdevice like a GPU (the pytest plugin calls it under
TRITON_INTERPRET=1).
"""

from porter.testing.custom_op import CustomOpUnavailable, check_custom_op
from porter.testing.fidelity import InterpreterUnsupported
from porter.testing.parity import (
    FACTOR,
    FLOOR,
    Case,
    ParityError,
    ReferenceRejects,
    Scenario,
    ScaffoldRefuses,
    check_parity,
    load_case,
    new_seed,
    poisoned_allocations,
)


def enable_interpreter_fidelity() -> bool:
    from porter.testing.fidelity import enable_interpreter_fidelity as enable

    return enable()


__all__ = [
    "FACTOR",
    "FLOOR",
    "Case",
    "CustomOpUnavailable",
    "InterpreterUnsupported",
    "check_custom_op",
    "ParityError",
    "ReferenceRejects",
    "Scenario",
    "ScaffoldRefuses",
    "check_parity",
    "enable_interpreter_fidelity",
    "load_case",
    "new_seed",
    "poisoned_allocations",
]
