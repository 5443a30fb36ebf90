"""The performance corpus (tools/perf_corpus.py) and its report section."""

import ast
import json
from pathlib import Path

from porter.bench.corpus import corpus_section
from porter.testing.parity import import_kernel

ROOT = Path(__file__).resolve().parents[1]
perf_corpus = import_kernel(ROOT / "tools" / "perf_corpus.py", "perf_corpus_tool")


def _dims(reference: Path) -> set[str]:
    tree = ast.parse(reference.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "DIMS":
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"{reference} has no DIMS")


def test_every_plan_line_names_a_reference_and_only_its_model_dims():
    lines = perf_corpus.plan_lines()
    assert len(perf_corpus.CORPUS) >= 20
    for line in lines:
        name, rest = line.split(" ", 1)
        reference = perf_corpus.ENGINE / f"{name}.py"
        assert reference.is_file(), name
        words = rest.split("--dims ")[1].split(" --")[0].split()
        named = {w.split("=")[0] for w in words}
        # every dim of the reference but num_tokens is given, and no other
        assert named == _dims(reference) - {"num_tokens"}, (name, named)


def _row(case, tokens, ported, dynamic, static, bw=95.0, copy_pct=100.0):
    return {
        "case": case,
        "dtype": "bfloat16",
        "num_tokens": tokens,
        "shape": f"num_tokens={tokens}xhidden=1000",
        "ported_graph_us": ported,
        "inductor_graph_us": dynamic,
        "inductor_static_graph_us": static,
        "pct_copy_bw": bw,
        # the copy of the same bytes reached bw * 100 / pct_size_copy
        "pct_size_copy": copy_pct,
        "gpu": "TEST GPU",
        "torch": "t",
        "triton": "tr",
        "date": "2026-01-01",
    }


def test_the_section_counts_each_bar_and_names_the_worst_points(tmp_path):
    rows = [
        _row("ln", 1, 10.0, 10.0, 10.0),
        _row("ln", 4096, 13.0, 12.0, 10.0, bw=71.0, copy_pct=75.0),  # slow, short
        _row("ln", 16384, 10.5, 11.0, 10.0, bw=92.0),  # within 1.10, not 1.03
        # a copy of these bytes reaches only 60%: not held to the bandwidth bar
        _row("quant", 4096, 5.0, 6.0, 5.0, bw=50.0, copy_pct=83.0),
    ]
    (tmp_path / "ln.json").write_text(json.dumps(rows))
    text = "\n".join(corpus_section(tmp_path))
    assert "4 points" in text and "TEST GPU" in text
    assert "slower than the dynamic compile at 1 of 4 points: ln" in text
    assert "within 1.03x of the static compile at 2 of 4 points (50%" in text
    assert "over 1.1x of the static compile at 1 points: ln" in text
    assert "(2 points), the ported kernel is short of 90% at 1: ln" in text


def test_no_rows_no_section(tmp_path):
    assert corpus_section(tmp_path) == []


def test_shape_labels_of_dims_named_with_an_x_split_between_sizes():
    # num_experts and max_position once split at their own x
    from porter.bench.points import model_label, shape_label, sizes_of

    sizes = {"num_tokens": 4, "num_experts": 64, "max_position": 8192}
    label = shape_label(sizes)
    assert sizes_of(label) == sizes
    assert model_label(label) == "num_experts=64xmax_position=8192"
    assert model_label("num_tokens=4") == "-"
