# SPDX-License-Identifier: GPL-2.0-or-later
"""Reading the aligned text tables of btrfsx and btrfs-progs (filesystem
usage -T, device usage -T) back into cells, for tests that compare them."""
from __future__ import annotations

import re


def parse_table(text: str, first: str = "Id") -> tuple[list[str], list[dict[str, str]]]:
    """The first table in @text whose first column is @first -> (column names, rows).

    Columns are the runs of dashes of the rule under the header; a column's
    name is its header cells joined ("Data RAID1", "Unallocated"); a row maps
    names to its stripped cells."""
    lines = text.splitlines()
    for r, rule in enumerate(lines):
        if r and re.fullmatch(r"-+( -+)*", rule.rstrip()) and lines[r - 1].startswith(first + " "):
            break
    else:
        raise AssertionError(f"no table in:\n{text}")
    spans = [m.span() for m in re.finditer(r"-+", rule)]

    def cells(line: str) -> list[str]:
        return [line[a:b].strip() if a < len(line) else "" for a, b in spans]

    header = [cells(lines[r - 2]) if r >= 2 and lines[r - 2].strip() else [""] * len(spans),
              cells(lines[r - 1])]
    names = [" ".join(p for p in (top, bottom) if p) for top, bottom in zip(*header)]
    rows = []
    for line in lines[r + 1:]:
        if not line.strip():
            break
        if re.fullmatch(r"[- ]+", line):
            continue
        rows.append(dict(zip(names, cells(line))))
    return names, rows
