# SPDX-License-Identifier: GPL-2.0-or-later
"""An independent reading of which chunks break the allocation hints, for the
tests of `filesystem misplaced` and `balance misplaced` (host and guests).

The chunks come from btrfs-progs' dump of the chunk tree, the used bytes from
its dump of the block group items; the classes from the tier table alone:
forbidden when a stripe's device excludes the type, off-preference when the
best tiers present (as many devices as the chunk has stripes) would be
better for every stripe and strictly for one. That ignores free space, so
the layouts that use it keep room on every device.
"""

from __future__ import annotations

import re

from helpers import oracle

DATA, SYSTEM, METADATA = 1, 2, 4

# tier of each hint for data and for metadata/system chunks (None: excluded)
DATA_TIER = {"data_only": 1, "data_preferred": 2, "metadata_preferred": 3, "none": 4,
             "metadata_only": None}
META_TIER = {"metadata_only": 1, "metadata_preferred": 2, "data_preferred": 3, "none": 4,
             "data_only": None}


def chunk_tree(text: str) -> dict[int, tuple[int, list[int]]]:
    """logical -> (type flags, stripe devids) from `btrfs inspect-internal
    dump-tree -t chunk` output."""
    names = {"DATA": DATA, "SYSTEM": SYSTEM, "METADATA": METADATA}
    return {c["logical"]: (sum(names.get(k, 0) for k in c["type"].split("|")),
                           [s[0] for s in c["stripes"]]) for c in oracle.parse_chunks(text)}


def block_group_used(text: str) -> dict[int, int]:
    """logical -> used bytes from `dump-tree -t extent` (or the block group tree)."""
    return {int(m.group(1)): int(m.group(2)) for m in re.finditer(
        r"key \((\d+) BLOCK_GROUP_ITEM \d+\).*?\n.*?used (\d+)", text)}


def oracle_class(flags: int, devids: list[int], hints: list[str]) -> str | None:
    """"forbidden", "off-preference" or None for a chunk of @flags on
    @devids (1-based) under @hints (by devid)."""
    tiers = DATA_TIER if flags & DATA else META_TIER
    have = sorted(tiers[hints[d - 1]] or 0 for d in devids)
    if 0 in have:
        return "forbidden"
    best = sorted(t for t in (tiers[h] for h in hints) if t is not None)[:len(devids)]
    if all(b <= h for b, h in zip(best, have)) and best != have:
        return "off-preference"
    return None


def expected(chunks: dict[int, tuple[int, list[int]]], hints: list[str]) -> dict[int, str]:
    """logical -> class of every misplaced chunk."""
    return {logical: cls for logical, (flags, devids) in chunks.items()
            if (cls := oracle_class(flags, devids, hints))}
