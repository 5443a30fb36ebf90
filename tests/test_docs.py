"""Docs that show what porter prints stay what it prints."""

from pathlib import Path

from porter.testing.parity import import_kernel

ROOT = Path(__file__).resolve().parents[1]
cli_doc = import_kernel(ROOT / "tools" / "cli_doc.py", "cli_doc_tool")


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


def test_port_md_holds_the_pass_table_the_pipeline_generates():
    from porter.port.pipeline import TABLE_END, TABLE_START, pass_table

    doc = (ROOT / "docs" / "port.md").read_text()
    held = doc[doc.index(TABLE_START) : doc.index(TABLE_END) + len(TABLE_END)]
    assert held == pass_table(), "run: python tools/pass_table.py --write"


def test_port_md_details_only_passes_of_the_pipeline_in_its_order():
    from porter.port.pipeline import PIPELINE

    doc = (ROOT / "docs" / "port.md").read_text()
    part = doc[doc.index("### The cleanup, binding and speed passes in detail") :]
    table = part[: part.index("\n\n", part.index("| pass |"))]
    named = [
        line.split("`")[1] for line in table.splitlines() if line.startswith("| `")
    ]
    order = [p.name for p in PIPELINE]
    assert len(named) >= 10 and all(n in order for n in named), named
    assert [order.index(n) for n in named] == sorted(order.index(n) for n in named)


def test_port_md_adding_a_pass_quotes_the_code_it_names():
    import re

    doc = (ROOT / "docs" / "port.md").read_text()
    part = doc[doc.index("### Adding a pass") :]
    code = re.search(r"```python\n(.*?)```", part, re.S).group(1)
    assert code in (ROOT / "porter" / "port" / "finish" / "fastexp.py").read_text()
