"""A three-way merge of text, line by line: an engineer's edited scaffold and
porter's regenerated one, against the scaffold porter wrote before.

Each side's changes to the base are hunks (difflib's opcodes). Hunks of one
side that touch no hunk of the other are taken as they are; overlapping hunks
that make the same change are taken once; overlapping hunks that differ are a
conflict, written between git-style markers.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass
class Merged:
    text: str
    conflicts: int


def _hunks(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """(start, end, replacement) over base, for each change other makes."""
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, other[j1:j2])
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _touch(a: tuple[int, int, list[str]], b: tuple[int, int, list[str]]) -> bool:
    """Whether two hunks over base overlap or meet (an insertion at the
    other's edge counts: their order would be a guess)."""
    (a1, a2, _), (b1, b2, _) = a, b
    return a1 <= b2 and b1 <= a2 if (a1 == a2 or b1 == b2) else a1 < b2 and b1 < a2


def merge3(
    base: str, ours: str, theirs: str, ours_name: str = "yours", theirs_name: str = "porter's"
) -> Merged:
    """Merge `ours` (the engineer's edit of base) and `theirs` (porter's new
    text) into one text; conflicts are marked and counted."""
    b = base.splitlines(keepends=True)
    o = ours.splitlines(keepends=True)
    t = theirs.splitlines(keepends=True)
    mine, new = _hunks(b, o), _hunks(b, t)
    out: list[str] = []
    conflicts = 0
    pos = 0
    i = j = 0
    while i < len(mine) or j < len(new):
        # The next group: hunks of both sides that chain by touching.
        if j >= len(new) or (i < len(mine) and mine[i][0] <= new[j][0]):
            group_m, group_n = [mine[i]], []
            i += 1
        else:
            group_m, group_n = [], [new[j]]
            j += 1
        grew = True
        while grew:
            grew = False
            lo = min(h[0] for h in group_m + group_n)
            hi = max(h[1] for h in group_m + group_n)
            span = (lo, hi, [])
            if i < len(mine) and _touch(span, mine[i]):
                group_m.append(mine[i])
                i += 1
                grew = True
            if j < len(new) and _touch(span, new[j]):
                group_n.append(new[j])
                j += 1
                grew = True
        lo = min(h[0] for h in group_m + group_n)
        hi = max(h[1] for h in group_m + group_n)
        out.extend(b[pos:lo])
        side_m = _apply(b, lo, hi, group_m)
        side_n = _apply(b, lo, hi, group_n)
        if not group_n or side_m == side_n:
            out.extend(side_m)
        elif not group_m:
            out.extend(side_n)
        else:
            conflicts += 1
            out.append(f"<<<<<<< {ours_name}\n")
            out.extend(_ended(side_m))
            out.append("=======\n")
            out.extend(_ended(side_n))
            out.append(f">>>>>>> {theirs_name}\n")
        pos = hi
    out.extend(b[pos:])
    return Merged("".join(out), conflicts)


def _apply(base: list[str], lo: int, hi: int, hunks) -> list[str]:
    """base[lo:hi] with one side's hunks (all inside it) applied."""
    out, pos = [], lo
    for start, end, lines in sorted(hunks, key=lambda h: (h[0], h[1])):
        out.extend(base[pos:start])
        out.extend(lines)
        pos = end
    out.extend(base[pos:hi])
    return out


def _ended(lines: list[str]) -> list[str]:
    if lines and not lines[-1].endswith("\n"):
        return lines[:-1] + [lines[-1] + "\n"]
    return lines
