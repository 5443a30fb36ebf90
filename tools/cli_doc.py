"""Write each command's --help into docs/cli.md, as porter prints it now.

    python3 tools/cli_doc.py          # rewrite the help blocks in place
    python3 tools/cli_doc.py --check  # exit 1 where a block differs

Each `### porter COMMAND` section's first code block is the help text; a
command with no section gets one before `### porter lint`'s. tests/test_docs.py
checks the file with the same function.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "cli.md"


def help_texts() -> dict[str, str]:
    """Each command's --help at 80 columns, by command name."""
    os.environ["COLUMNS"] = "80"
    from porter.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {name: p.format_help().rstrip() + "\n" for name, p in sub.choices.items()}


def rewritten(text: str, helps: dict[str, str]) -> str:
    """`text` with each command's help block replaced by `helps`' (sections
    added for commands it lacks)."""
    for name, body in helps.items():
        block = f"### porter {name}\n\n```\n{body}```\n"
        pattern = re.compile(rf"### porter {name}\n\n```\n.*?```\n", re.S)
        if pattern.search(text):
            text = pattern.sub(lambda _: block, text, count=1)
        else:
            anchor = text.find("### porter lint")
            at = anchor if anchor >= 0 else len(text)
            text = text[:at] + block + "\n" + text[at:]
    return text


def main() -> int:
    text = DOC.read_text()
    new = rewritten(text, help_texts())
    if "--check" in sys.argv:
        if new != text:
            print("tools/cli_doc.py: docs/cli.md's help blocks differ from porter --help")
            return 1
        return 0
    DOC.write_text(new)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
