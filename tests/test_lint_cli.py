"""`porter lint`'s user-facing options: --min-severity, --explain, --format sarif, and
the pre-commit hook definition. Static analysis only: nothing here imports triton."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from porter.lint import RULES, Finding, command, engine
from porter.lint.findings import ERROR, INFO, WARNING, Hit
from porter.lint.sarif import artifact_uri, to_sarif

REPO = Path(__file__).parent.parent
CASES = Path(__file__).parent / "lint_cases"

WARN = Finding(
    "PT004", WARNING, "ops/add.py", 8, 39, "`n_elements` is specialized", "add it"
)
NOTE = Finding(
    "PT009", INFO, "ops/sub dir/rel.py", 12, 5, "cannot tell the sign", "check it"
)
ERR = Finding("PT001", ERROR, "ops/rope.py", 19, 29, "grid[1] grows", "swap it")


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="porter lint")
    command.add_arguments(parser)
    return command.run(parser.parse_args(argv))


def _with(monkeypatch, findings: list[Finding]) -> None:
    """Make the command lint to `findings`, whatever the paths."""
    monkeypatch.setattr(command, "lint_paths", lambda paths: list(findings))


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "porter.lint", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


# -- --min-severity ------------------------------------------------------------------


def test_info_hidden_by_default_and_counted_in_the_note(monkeypatch, capsys):
    _with(monkeypatch, [WARN, NOTE])
    assert _run(["x.py"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        WARN.format_text(),
        "1 finding(s): 0 error(s), 1 warning(s); "
        "1 info finding(s) hidden (--min-severity info shows them)",
    ]


def test_min_severity_info_shows_and_counts_info(monkeypatch, capsys):
    _with(monkeypatch, [WARN, NOTE])
    assert _run(["x.py", "--min-severity", "info"]) == 0  # info never fails a run
    out = capsys.readouterr().out.splitlines()
    assert out == [
        WARN.format_text(),
        NOTE.format_text(),
        "2 finding(s): 0 error(s), 1 warning(s), 1 info",
    ]


def test_min_severity_error_hides_warnings_but_not_the_exit_code(monkeypatch, capsys):
    _with(monkeypatch, [ERR, WARN, NOTE])
    assert _run(["x.py", "--min-severity", "error"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        ERR.format_text(),
        "1 finding(s): 1 error(s); 1 warning(s) and 1 info finding(s) hidden "
        "(--min-severity info shows them)",
    ]


def test_no_hidden_note_when_nothing_is_hidden(monkeypatch, capsys):
    _with(monkeypatch, [ERR, WARN])
    assert _run(["x.py"]) == 1
    assert (
        capsys.readouterr().out.splitlines()[-1]
        == "2 finding(s): 1 error(s), 1 warning(s)"
    )


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_min_severity_filters_json_and_sarif(monkeypatch, capsys, fmt):
    _with(monkeypatch, [WARN, NOTE])

    def rules(argv):
        assert _run(["x.py", "--format", fmt, *argv]) == 0
        data = json.loads(capsys.readouterr().out)
        items = data if fmt == "json" else data["runs"][0]["results"]
        return [d["rule" if fmt == "json" else "ruleId"] for d in items]

    assert rules([]) == ["PT004"]
    assert rules(["--min-severity", "info"]) == ["PT004", "PT009"]
    assert rules(["--min-severity", "error"]) == []


def test_min_severity_rejects_unknown_levels(capsys):
    with pytest.raises(SystemExit) as exc:
        _run(["x.py", "--min-severity", "note"])
    assert exc.value.code == 2


def test_a_rule_reporting_at_info_through_the_engine(monkeypatch, tmp_path, capsys):
    """A Hit's own severity overrides the rule's, and the CLI filters on it."""
    fake = SimpleNamespace(
        RULE=RULES["PT009"],  # a warning rule
        check=lambda ctx: [
            Hit(2, 4, "cannot decide"),
            Hit(3, 0, "unsure", severity=INFO),
        ],
    )
    monkeypatch.setattr(engine, "CHECKS", [fake])
    src = tmp_path / "k.py"
    src.write_text("x = 1\ny = 2\nz = 3\n")
    assert _run([str(src)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{src}:2:5: PT009 cannot decide (fix: {RULES['PT009'].fix})",
        "1 finding(s): 0 error(s), 1 warning(s); "
        "1 info finding(s) hidden (--min-severity info shows them)",
    ]
    assert _run([str(src), "--min-severity", "info", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(d["severity"], d["line"], d["col"]) for d in data] == [
        ("warning", 2, 5),
        ("info", 3, 1),
    ]


# -- --explain -----------------------------------------------------------------------


def _explained(rule_id: str) -> subprocess.CompletedProcess:
    return _cli("--explain", rule_id)


def test_explain_a_known_rule():
    r = _explained("PT002")
    rule = RULES["PT002"]
    assert (r.returncode, r.stderr) == (0, "")
    lines = r.stdout.splitlines()
    assert lines[0] == f"PT002 int32-offset: {rule.title}"
    assert "severity: error" in lines
    assert f"why: {rule.reason}" in lines
    assert f"fix: {rule.fix}" in lines
    assert "suppress on a line: # porter: ignore[PT002]" in lines
    assert "docs: docs/lint-rules.md#pt002-int32-offset" in lines


def test_explain_accepts_lowercase_ids():
    assert _explained("pt004").stdout == _explained("PT004").stdout
    assert "severity: warning" in _explained("pt004").stdout


def test_explain_an_unknown_rule_is_a_usage_error():
    r = _explained("PT099")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "PT099" in r.stderr and all(rule_id in r.stderr for rule_id in RULES)


def test_neither_paths_nor_explain_is_a_usage_error():
    r = _cli()
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.count("\n") == 1 and "--explain" in r.stderr


def test_paths_and_explain_together_is_a_usage_error(capsys):
    assert _run([str(CASES / "pt001_bad.py"), "--explain", "PT001"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1


def test_every_explain_link_names_a_section_of_the_doc():
    """Markdown heading anchors: lowercased, punctuation but `-` dropped, spaces to `-`
    (headings only, not `# comments` in code blocks)."""
    doc = (REPO / "docs" / "lint-rules.md").read_text()
    anchors = {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(
            r"^#+ (.+)$", re.sub(r"```.*?```", "", doc, flags=re.S), re.M
        )
    }
    for rule in RULES.values():
        path, anchor = command.doc_link(rule).split("#")
        assert path == "docs/lint-rules.md" and (REPO / path).is_file()
        assert anchor in anchors, rule.id


# -- --format sarif ------------------------------------------------------------------


def test_sarif_log_field_by_field():
    log = to_sarif([WARN, NOTE], RULES)
    assert log["version"] == "2.1.0"
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "porter lint"
    # SARIF wants an absolute URI there, and porter names no hosting site.
    assert "informationUri" not in driver

    descriptors = driver["rules"]
    assert [d["id"] for d in descriptors] == list(RULES)
    pt004 = descriptors[list(RULES).index("PT004")]
    rule = RULES["PT004"]
    assert pt004 == {
        "id": "PT004",
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.reason},
        "help": {"text": rule.fix},
        "defaultConfiguration": {"level": "warning"},
    }
    assert descriptors[list(RULES).index("PT001")]["defaultConfiguration"] == {
        "level": "error"
    }

    warn, note = run["results"]
    assert warn["ruleId"] == "PT004" and warn["level"] == "warning"
    assert descriptors[warn["ruleIndex"]]["id"] == "PT004"
    assert warn["message"] == {"text": "`n_elements` is specialized (fix: add it)"}
    (loc,) = warn["locations"]
    assert loc["physicalLocation"]["artifactLocation"] == {"uri": "ops/add.py"}
    assert loc["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 39}

    assert note["ruleId"] == "PT009" and note["level"] == "note"  # SARIF has no "info"
    assert note["message"]["text"] == "cannot tell the sign (fix: check it)"
    phys = note["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == "ops/sub%20dir/rel.py"
    assert phys["region"] == {"startLine": 12, "startColumn": 5}
    json.dumps(log)  # serializable as it stands


def test_sarif_error_level_and_empty_results():
    (result,) = to_sarif([ERR], RULES)["runs"][0]["results"]
    assert result["level"] == "error"
    assert to_sarif([], RULES)["runs"][0]["results"] == []


def test_artifact_uri_relative_stays_relative_absolute_is_a_file_uri(tmp_path):
    assert artifact_uri("ops/rope.py") == "ops/rope.py"
    assert artifact_uri(str(tmp_path / "k.py")) == (tmp_path / "k.py").as_uri()
    assert artifact_uri(str(tmp_path / "k.py")).startswith("file:///")


def test_sarif_from_the_command_line_with_a_relative_path():
    r = _cli("tests/lint_cases/pt004_bad.py", "--format", "sarif")
    assert r.returncode == 0 and r.stderr == ""  # warnings only
    results = json.loads(r.stdout)["runs"][0]["results"]
    assert [x["ruleId"] for x in results] == ["PT004"] * 3
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == "tests/lint_cases/pt004_bad.py"
    assert first["region"] == {"startLine": 8, "startColumn": 39}


def test_sarif_exit_code_follows_errors():
    r = _cli("tests/lint_cases/pt001_bad.py", "--format", "sarif")
    assert r.returncode == 1
    assert {x["level"] for x in json.loads(r.stdout)["runs"][0]["results"]} == {"error"}


# -- pre-commit ----------------------------------------------------------------------


def _hooks(text: str) -> list[dict[str, str]]:
    """The `- key: value` list of mappings .pre-commit-hooks.yaml is (flat values only)."""
    hooks: list[dict[str, str]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.match(r"^(- |  )(\w+): (.+)$", line)
        assert m, f"not a flat `key: value` line: {line!r}"
        if m[1] == "- ":
            hooks.append({})
        hooks[-1][m[2]] = m[3].strip()
    return hooks


def test_pre_commit_hook_definition():
    (hook,) = _hooks((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "porter-lint"
    assert hook["entry"] == "porter lint"
    assert hook["language"] == "python"
    assert hook["types"] == "[python]"
    assert hook["require_serial"] == "true"
    assert hook["name"]


def test_pre_commit_usage_is_documented():
    doc = (REPO / "docs" / "lint-rules.md").read_text()
    assert "id: porter-lint" in doc and ".pre-commit-config.yaml" in doc
