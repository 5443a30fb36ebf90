"""tools/engine_layer.py on the CPU (tiny sizes, interpreter) and its section of
`porter report`."""

import importlib.util
import json
import sys
from pathlib import Path

from porter.layer_report import layer_section

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location(
        "engine_layer", ROOT / "tools/engine_layer.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine_layer"] = module
    spec.loader.exec_module(module)
    return module


def test_the_layer_with_porters_ops_compiles_whole_and_matches(tmp_path):
    assert _tool().main(["--smoke", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "layer.json").read_text())["rows"]
    assert {r["form"] for r in rows} == {"first", "middle"}
    for r in rows:
        assert r["pure_graph_breaks"] == r["porter_graph_breaks"] == 0
        # the op compiled is the same kernels as the op called
        assert r["porter_compiled_err"] == r["porter_eager_err"]
        # bf16 at hidden 64: a few ulps of the largest output, where a wrong
        # kernel is off by the output itself
        assert r["porter_eager_err"] < 0.05 and r["pure_eager_err"] < 0.05


def test_the_report_section_says_what_the_committed_rows_show():
    folder = ROOT / "docs/benchmarks"
    data = json.loads((folder / "engine/layer.json").read_text())
    text = "\n".join(layer_section(folder))
    table = [
        line
        for line in text.splitlines()
        if line.startswith("| ") and line[2].isdigit()
    ]
    assert len(table) == len(data["rows"])
    faster = all(r["porter_graph_ms"] <= r["pure_graph_ms"] for r in data["rows"])
    assert ("at least as fast at every token count measured" in text) == faster
    assert data["gpu"] in text and data["date"] in text
    assert layer_section(ROOT / "tests") == []  # no layer.json: no section
