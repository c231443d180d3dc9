# SPDX-License-Identifier: GPL-2.0-or-later
"""Crash campaigns for btrfsx's writers (property set offline, mkfs, scrub
repair), driven by the fault injection of the one write path
(disk/write-plan.h):

* ``BTRFSX_FAULT_AFTER_WRITES=N`` stops the machine after the N-th write;
* ``BTRFSX_FAULT_DROP_UNFLUSHED=all|k,...`` also loses writes issued since
  the last flush (the crash then comes right before that flush).

``sweep()`` tries every N until a run completes; at each N the writes left
unflushed are lost all together, and in every combination when there are few
of them; at the end of a batch with more, each one alone and all but each one
(of a large batch the first and the last). A callback checks the state each
crash point left."""
from __future__ import annotations

import itertools
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from helpers import fsutil

STOP = re.compile(r"fault injection after (\d+) writes")
UNFLUSHED = re.compile(r"fault injection after (\d+) writes \(writes (\d+)-(\d+) unflushed: "
                       r"(\d+) requests, (\d+) dropped\)")
SANITIZER = ("Sanitizer", "runtime error", "LeakSanitizer")


@dataclass
class Point:
    """One crash point: stop after write ``n``; ``drop`` None (nothing lost),
    "all", or the 1-based unflushed requests lost."""
    n: int
    drop: str | tuple[int, ...] | None = None
    unflushed: int = 0          # requests not yet flushed at the stop

    def env(self) -> dict[str, str]:
        env = {"BTRFSX_FAULT_AFTER_WRITES": str(self.n)}
        if self.drop == "all":
            env["BTRFSX_FAULT_DROP_UNFLUSHED"] = "all"
        elif self.drop:
            env["BTRFSX_FAULT_DROP_UNFLUSHED"] = ",".join(map(str, self.drop))
        return env

    def __str__(self):
        return f"stop after write {self.n}" + (f", lose {self.drop}" if self.drop else "")


@dataclass
class Tally:
    writes: int = 0             # writes of a complete run
    points: int = 0             # crash points tried (runs that stopped)
    dropping: int = 0           # ... of them losing unflushed writes
    max_unflushed: int = 0
    batches: list[tuple[int, int]] = field(default_factory=list)  # (first, last) write


def drop_sets(m: int, at_batch_end: bool, subsets_upto: int, singles_upto: int):
    """Which unflushed requests to lose besides "all": every non-empty proper
    subset of a few; at a batch end, each one and all but each one of up to
    @singles_upto, the first and the last of more."""
    if m <= subsets_upto:
        for size in range(1, m):
            yield from itertools.combinations(range(1, m + 1), size)
        return
    if not at_batch_end:
        return
    picks = range(1, m + 1) if m <= singles_upto else (1, m)
    for k in picks:
        yield (k,)
    for k in picks:
        if m <= 64:
            yield tuple(i for i in range(1, m + 1) if i != k)


def require_fault_injection() -> None:
    """Skips the calling test unless btrfsx was configured --enable-fault-injection
    (scripts/test.sh's build is): a release build ignores BTRFSX_FAULT_*."""
    import pytest

    out = subprocess.run([fsutil.btrfsx_path(), "--version"], capture_output=True,
                         text=True).stdout
    if "fault injection" not in out:
        pytest.skip("btrfsx built without --enable-fault-injection")


def sweep(reset, run, verify, *, crash_rc=1, subsets_upto=3, singles_upto=8,
          max_writes=200) -> Tally:
    """reset() puts the images back; run(env) -> (rc, stderr) runs the writer;
    verify(point) checks what a stopped run left. Stops after every write N
    until the run with N = the number of writes completes, each N also losing
    its unflushed writes; then the other combinations of losses."""
    require_fault_injection()
    tally = Tally()
    seen: dict[int, tuple[int, int]] = {}   # n -> (first unflushed write, requests)

    def attempt(point: Point) -> bool:
        reset()
        rc, err = run(point.env())
        assert not any(s in err for s in SANITIZER), err
        if rc == 0:
            return False
        assert rc == crash_rc, f"{point}: exit {rc}\n{err}"
        if point.drop:
            m = UNFLUSHED.search(err)
            assert m and int(m.group(1)) == point.n, f"{point}\n{err}"
            point.unflushed = int(m.group(4))
            seen.setdefault(point.n, (int(m.group(2)), point.unflushed))
            tally.dropping += 1
            tally.max_unflushed = max(tally.max_unflushed, point.unflushed)
        else:
            m = STOP.search(err)
            assert m and int(m.group(1)) == point.n, f"{point}\n{err}"
        tally.points += 1
        verify(point)
        return True

    n, stopped = 0, True
    while stopped:
        n += 1
        assert n < max_writes
        stopped = attempt(Point(n))
        # Right before the flush that follows write n: a stop even after the last one.
        assert attempt(Point(n, "all")), f"write {n} did not stop when losing writes"
    tally.writes = n
    for n, (first, m) in sorted(seen.items()):
        batch_end = n == tally.writes or seen.get(n + 1, (n + 1,))[0] == n + 1
        if batch_end:
            tally.batches.append((first, n))
        for drop in drop_sets(m, batch_end, subsets_upto, singles_upto):
            assert attempt(Point(n, drop))
    return tally


# --------------------------------------------------------------------------- images

def mixed_blocks(now, old, new, block=4096) -> list[int]:
    """Offsets of the @block-sized pieces of image @now that hold neither
    their content in @old nor in @new (all three the same size)."""
    ranges = sorted(fsutil.data_ranges(now) + fsutil.data_ranges(old) + fsutil.data_ranges(new))
    bad = []
    with open(now, "rb") as a, open(old, "rb") as b, open(new, "rb") as c:
        pos = 0
        for start, end in ranges:
            start = max(start - start % block, pos)
            while start < end:
                length = min(end - start, 1 << 20)
                length += -length % block
                a.seek(start), b.seek(start), c.seek(start)
                x, y, z = a.read(length), b.read(length), c.read(length)
                if x == y or x == z:
                    start += length
                    continue
                for off in range(0, len(x), block):
                    piece = x[off:off + block]
                    if piece != y[off:off + block] and piece != z[off:off + block]:
                        bad.append(start + off)
                start += length
            pos = max(pos, start)
    return bad


def primary_super(image, old_fsid) -> str:
    """What the primary superblock of @image is now, during a mkfs over an
    old filesystem: the old filesystem's, "wiped", mkfs's "unfinished" one (an
    incompat bit no kernel knows) or the "new" one."""
    with open(image, "rb") as f:
        f.seek(0x10000)
        sb = f.read(4096)
    if sb[0x40:0x48] != b"_BHRfS_M":
        return "wiped"
    if sb[0x20:0x30] == old_fsid:
        return "old"
    return "unfinished" if int.from_bytes(sb[0xbc:0xc4], "little") >> 63 else "new"


def try_mount(devs, options=None) -> bool:
    """Whether the kernel mounts @devs (and takes a write)."""
    try:
        with fsutil.mounted(devs, options=options) as mnt:
            (Path(mnt) / "probe").write_text("x")
        return True
    except RuntimeError:
        return False


def copy_sparse(src, dst) -> None:
    """``cp --sparse=always``: quick for large sparse images."""
    subprocess.run(["cp", "--sparse=always", str(src), str(dst)], check=True)


class Snapshot:
    """The content of sparse image files, kept in memory (their data ranges:
    a few MiB), to put them back quickly between runs."""

    def __init__(self, images):
        self.images = [str(i) for i in images]
        self.saved = []
        for img in self.images:
            with open(img, "rb") as f:
                ranges = []
                for start, stop in fsutil.data_ranges(img):
                    f.seek(start)
                    ranges.append((start, f.read(stop - start)))
            self.saved.append((os.stat(img).st_size, ranges))

    def restore(self):
        for img, (size, ranges) in zip(self.images, self.saved):
            with open(img, "r+b") as f:
                f.truncate(0)
                f.truncate(size)
                for start, data in ranges:
                    f.seek(start)
                    f.write(data)
