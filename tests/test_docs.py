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


def _message_templates() -> list[str]:
    """Every string porter's code can print, with \\0 where it formats a value."""
    import ast

    out = []
    for path in (ROOT / "porter").rglob("*.py"):
        tree = ast.parse(path.read_text())
        # module-level string constants (MANIFEST = "manifest.json"), as printed
        constants = {
            t.id: n.value.value
            for n in tree.body
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                out.append(
                    "".join(
                        v.value
                        if isinstance(v, ast.Constant)
                        else constants.get(ast.unparse(v.value), "\0")
                        for v in node.values
                    )
                )
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append(node.value)
    return out


def test_troubleshooting_quotes_messages_porter_prints():
    import re

    text = (ROOT / "docs" / "troubleshooting.md").read_text()
    quoted = [
        re.match(r"\| `([^`]+)`", line).group(1)
        for line in text.splitlines()
        if line.startswith("| `")
    ]
    # porter's own lines about edited files (the scaffold's messages further
    # down are quoted with example values)
    edits = text[text.index("What happened to files") : text.index("Warnings, on stderr")]
    quoted += re.findall(r"^- `([^`]+)`", edits, re.M)
    assert len(quoted) > 30
    templates = _message_templates()
    missing = []
    for message in quoted:
        # placeholders: FILE, CASE, N, X, `...`, (...), <time>
        message = " ".join(message.split())
        for fragment in re.split(r"\.\.\.|<time>|\b[A-Z][A-Z_0-9]*\b", message):
            fragment = fragment.strip(" ()[]'")
            if len(fragment) >= 8 and not any(fragment in t for t in templates):
                missing.append(fragment)
    assert not missing, f"troubleshooting.md quotes what porter no longer prints: {missing}"
