"""Print the port pipeline's pass table, or write it into docs/port.md.

    python tools/pass_table.py            # print it
    python tools/pass_table.py --write    # replace the table in docs/port.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Run as a script from the repository root, with or without porter installed.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from porter.port.pipeline import TABLE_END, TABLE_START, pass_table  # noqa: E402

DOC = ROOT / "docs" / "port.md"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite docs/port.md's table")
    args = ap.parse_args()
    table = pass_table()
    if not args.write:
        print(table)
        return 0
    text = DOC.read_text()
    if TABLE_START not in text or TABLE_END not in text:
        print(f"pass_table: {DOC} has no table markers", file=sys.stderr)
        return 1
    head, rest = text.split(TABLE_START, 1)
    tail = rest.split(TABLE_END, 1)[1]
    DOC.write_text(head + table + tail)
    print(f"pass_table: wrote {len(table.splitlines()) - 4} passes into {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
