"""loop_repeated_launches (porter/port/finish/loops.py): one kernel launched
the same way for several tensors is launched from a loop over them (the
capture of q and k norms in test_unread_params.py shows it end to end)."""

from porter.port.finish import loops
from porter.port.launch.launcher import Launcher, LaunchStep
from porter.port.model import PortState


def _launch(x, out, setup=()):
    return LaunchStep(
        kind="launch",
        kernel="norm_kernel",
        grid="(triton.cdiv(n, BLOCK),)",
        args=[("x_ptr", x), ("out_ptr", out), ("n", "n")],
        setup=list(setup),
    )


def _launcher(steps, returns="a_out, b_out", epilogue=()):
    return Launcher(
        name="f",
        signature="(a, b)",
        checks=[],
        prelude=[],
        dims=[],
        allocs=[],
        steps=steps,
        returns=returns,
        epilogue=list(epilogue),
    )


def _folded(launcher):
    port = PortState(None, None, None, None, launcher=launcher)
    loops.loop_repeated_launches(port)
    return [s for s in launcher.steps if not s.folded]


def test_two_launches_that_differ_in_tensors_become_a_loop():
    setup = ["view = {x}.view(-1)", "BLOCK = block_for({x}.element_size())"]
    a = _launch("a", "a_out", [s.format(x="a") for s in setup])
    b = _launch("b", "b_out", [s.format(x="b") for s in setup])
    left = _folded(_launcher([a, b]))
    assert left == [a]
    assert a.each == "x, out in ((a, a_out), (b, b_out))"
    assert a.setup == ["view = x.view(-1)", "BLOCK = block_for(x.element_size())"]
    assert a.args == [("x_ptr", "x"), ("out_ptr", "out"), ("n", "n")]


def test_launches_that_differ_in_more_than_names_stay_apart():
    a = _launch("a", "a_out", ["BLOCK = block_for(a, 2)"])
    b = _launch("b", "b_out", ["BLOCK = block_for(b, 4)"])
    assert len(_folded(_launcher([a, b]))) == 2


def test_a_name_each_launch_binds_and_later_code_reads_keeps_them_apart():
    # after a loop a_view would not exist: the launches stay as written
    a = _launch("a_view", "a_out", ["a_view = a.view(-1)"])
    b = _launch("b_view", "b_out", ["b_view = b.view(-1)"])
    launcher = _launcher([a, b], returns="a_view, b_out")
    assert len(_folded(launcher)) == 2
    # a value the second launch takes that the first binds: the loop's
    # values are read before either runs
    a = _launch("a", "c", ["c = a.view(-1)"])
    b = _launch("c", "d", ["d = c.view(-1)"])
    assert len(_folded(_launcher([a, b], returns="a"))) == 2
