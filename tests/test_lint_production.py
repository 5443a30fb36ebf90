"""`porter lint` on real production kernels: every finding judged, precision kept.

The corpus is named in tests/lint_production/manifest.toml and fetched from each
package's published wheel by tools/lint_corpus.py (the files are not ours, so they
are not in this repository); labels.json holds one verdict per finding."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from porter.testing.parity import import_kernel

ROOT = Path(__file__).resolve().parents[1]
corpus = import_kernel(ROOT / "tools" / "lint_corpus.py", "lint_corpus_tool")


def test_manifest_names_forty_files_each_with_a_checksum():
    files = [f"{p.folder}/{f}" for p in corpus.packages() for f in p.files]
    assert len(files) >= 40 and len(set(files)) == len(files)
    assert len({p.name for p in corpus.packages()}) >= 5
    labels = corpus.load_labels()
    assert sorted(labels["files"]) == sorted(files)


def test_every_label_is_a_verdict_with_a_reason():
    for f in corpus.load_labels()["findings"]:
        assert f["verdict"] in corpus.VERDICTS, f
        assert f["why"].strip(), f


def test_production_corpus_precision():
    try:
        root = corpus.fetch(quiet=True)
    except (subprocess.CalledProcessError, OSError) as err:
        pytest.skip(f"the production corpus could not be fetched: {err}")
    score = corpus.score(root)
    unjudged = [f"{f['file']}:{f['line']} {f['rule']}" for f in score.unjudged()]
    assert not unjudged, "findings nobody judged (python tools/lint_corpus.py label)"
    assert not score.lost(), "labelled true positives no longer reported"
    assert score.precision() >= 0.90, corpus.table(score)
    # docs/lint-rules.md shows today's table, not an older one.
    assert corpus.table(score) in (ROOT / "docs" / "lint-rules.md").read_text()


def test_labels_file_is_sorted_and_stable():
    text = corpus.LABELS.read_text()
    labels = json.loads(text)
    keys = [(f["file"], f["line"], f["col"], f["rule"]) for f in labels["findings"]]
    assert keys == sorted(keys)
    assert text == json.dumps(labels, indent=1) + "\n"
