"""Docs that show what porter prints stay what it prints."""

from pathlib import Path

from porter.testing.parity import _import

ROOT = Path(__file__).resolve().parents[1]
cli_doc = _import(ROOT / "tools" / "cli_doc.py", "cli_doc_tool")


def test_cli_md_holds_every_commands_help_as_printed():
    text = (ROOT / "docs" / "cli.md").read_text()
    assert cli_doc.rewritten(text, cli_doc.help_texts()) == text, (
        "docs/cli.md differs from porter --help: run python3 tools/cli_doc.py"
    )
