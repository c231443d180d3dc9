# SPDX-License-Identifier: GPL-2.0-or-later
"""Every crash point of a writer, from a dm-log-writes log (the tests of
tests/vm/test_vm_writes.py and tests/vm/test_vm_relocate_crash.py).

A writer's members are slices of one ``log-writes`` device in the guest, so
one log holds every member's writes in the order they became durable; the
writer runs between two marks, ``start`` and ``end``. On the host
tests/vm/logwrites-replay.c lists the log and applies any range of it to
image files: ``LogReplay`` replays it onto copies of the base images up to
each chosen entry and hands over each state not seen before.

``BTRFSX_VM_CRASH_POINTS`` bounds the entries checked (each test has its
default); ``all`` checks every one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import vmharness
from helpers import crashutil
from helpers import fsutil


@dataclass
class Entry:
    index: int
    flags: str
    sectors: int
    mark: str


def log_entries(log: Path) -> list[Entry]:
    out = vmharness.run([vmharness.logwrites_replay(), "list", log]).stdout.splitlines()
    entries = []
    for line in out[1:]:
        words = line.split()
        entries.append(Entry(int(words[0]), words[1], int(words[3]),
                             words[4] if len(words) > 4 else ""))
    return entries


def mark_index(entries: list[Entry], mark: str) -> int:
    return next(e.index for e in entries if e.mark == mark)


def spread(items: list[int], n: int) -> list[int]:
    """@n of @items evenly spread, the first and the last among them (all when
    there are no more than @n)."""
    if len(items) <= n:
        return list(items)
    if n < 2:
        return items[:n]
    return [items[i * (len(items) - 1) // (n - 1)] for i in range(n)]


def crash_points(entries: list[Entry], cap: int | None) -> tuple[list[int], int]:
    """The entries between the marks after which the machine may stop (every
    write and every flush) and, when there are more than @cap, the ones
    checked: every flush point (when there are more than @cap, @cap - 2 of
    them evenly spread), the first and the last, writes evenly between."""
    start, end = mark_index(entries, "start"), mark_index(entries, "end")
    points = [e.index for e in entries[start + 1:end] if "M" not in e.flags]
    if cap is None or len(points) <= cap:
        return points, len(points)
    flushes = [e.index for e in entries[start + 1:end] if "F" in e.flags or "U" in e.flags]
    keep = set(flushes if len(flushes) <= cap else spread(flushes, max(cap - 2, 0)))
    keep |= {points[0], points[-1]}
    others = [p for p in points if p not in keep]
    room = cap - len(keep)
    if room > 0 and others:
        keep |= {others[i * len(others) // room] for i in range(min(room, len(others)))}
    return sorted(keep), len(points)


def point_cap(default: int) -> int | None:
    value = os.environ.get("BTRFSX_VM_CRASH_POINTS", str(default))
    return None if value == "all" else int(value)


def counts(entries: list[Entry]) -> tuple[int, int]:
    """The log's writes and flushes."""
    writes = sum(1 for e in entries if e.flags == "W" or (e.sectors and "M" not in e.flags))
    flushes = sum(1 for e in entries if "F" in e.flags)
    return writes, flushes


class LogReplay:
    """@log replayed onto the images @work, fresh copies of @base; member i
    is the slice @slices[i] = (offset, size) of the logged device."""

    def __init__(self, log: Path, base: list, work: list, slices: list[tuple[int, int]]):
        self.log = log
        self.work = work
        self.targets = [f"{w}:{offset}:{size}" for w, (offset, size) in zip(work, slices)]
        self.applied = 0
        self.seen: set[tuple] = set()
        for src, dst in zip(base, work):
            crashutil.copy_sparse(src, dst)

    def to(self, end: int) -> None:
        """Applies the entries up to @end (not included)."""
        vmharness.run([vmharness.logwrites_replay(), "apply", self.log, self.applied, end,
                       *self.targets])
        self.applied = end

    def states(self, points: list[int], check: list) -> Iterator[int]:
        """For each of @points whose state differs from every one before (a
        flush, or a write of bytes already there, changes nothing): that
        point, its state copied onto the images @check, where the checks may
        write (the replay goes on from its own images)."""
        for point in points:
            self.to(point + 1)
            fingerprint = tuple(fsutil.images_state(self.work))
            if fingerprint in self.seen:
                continue
            self.seen.add(fingerprint)
            for src, dst in zip(self.work, check):
                crashutil.copy_sparse(src, dst)
            yield point
