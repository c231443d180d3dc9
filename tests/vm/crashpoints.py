# SPDX-License-Identifier: GPL-2.0-or-later
"""Every crash point of a writer, from a dm-log-writes log (the tests of
tests/vm/test_vm_writes.py, tests/vm/test_vm_relocate_crash.py and
tests/vm/test_vm_maintain_crash.py).

A writer's members are slices of one ``log-writes`` device in the guest, so
one log holds every member's writes in the order they became durable; the
writer runs between two marks, ``start`` and ``end``. On the host
tests/vm/logwrites-replay.c lists the log and applies any range of it to
image files: ``LogReplay`` replays it onto copies of the base images up to
each chosen entry and hands over each state not seen before.

``BTRFSX_VM_CRASH_POINTS`` bounds the entries checked (each test has its
default); ``all`` checks every one.

Where the writer is the kernel's relocation (``balance misplaced``,
``maintain run``), ``relocation_script`` records it and the checks of a
state are below it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest

import dmpack
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


# ------------------------------------------------------------------ the kernel's relocation

PAD = dmpack.ALIGN        # the log-writes device must not begin with member 0's superblock
# btrfs-progs' name of the balance item: the kernel resumes that balance at a read-write mount
BALANCE_ITEM = "BALANCE TEMPORARY_ITEM"

# A run stuck in the kernel shows where (the blocked tasks) before the guest is killed.
WATCHDOG = """(sleep 240; echo '@@R stuck'; echo w > /proc/sysrq-trigger; dmesg | tail -150) &
watchdog=$!
"""


def relocation_script(pack: dmpack.Pack, logs: dmpack.Pack, members, log, run: str,
                      observe: str) -> str:
    """Mounted from slices of one log-writes device (the pack's members
    after a blank of PAD); the btrfsx command @run captured as "relocate"
    between the marks, @observe (a btrfsx command) captured as "before" and
    "after" it; then unmounted and checked ("check")."""
    base = members[0].offset - PAD
    size = members[-1].offset + members[-1].size - base
    lines = [dmpack.DM_FUNCTIONS, "export BTRFSX_STATE_DIR=/tmp/state\n", logs.create(log),
             f"dm_create rc_base <<'TABLE'\n0 {size // dmpack.SECTOR} linear {pack.disk} "
             f"{base // dmpack.SECTOR}\nTABLE\n",
             f"dm_create rc_lw <<'TABLE'\n0 {size // dmpack.SECTOR} log-writes "
             f"/dev/mapper/rc_base {log.dev}\nTABLE\n"]
    for m in members:
        lines.append(f"dm_create {m.name} <<'TABLE'\n0 {m.size // dmpack.SECTOR} linear "
                     f"/dev/mapper/rc_lw {(m.offset - base) // dmpack.SECTOR}\nTABLE\n")
    others = "".join(f",device={m.dev}" for m in members[1:])
    lines.append(f"mount -o rw{others} {members[0].dev} /mnt || echo '@@R mount_failed'\n")
    lines.append(f"sync\ncapture before {observe} /mnt\n")
    lines.append("dmsetup message rc_lw 0 mark start\n")
    lines.append(WATCHDOG)
    lines.append(f"capture relocate {run} /mnt\n")
    lines.append("kill $watchdog\n")
    lines.append("dmsetup message rc_lw 0 mark end\n")
    lines.append(f"capture after {observe} /mnt\n")
    lines.append("umount /mnt\ncapture check btrfs check --readonly " + members[0].dev + "\n")
    lines += [f"dm_remove {m.name}\n" for m in members]
    lines += ["dm_remove rc_lw\n", "dm_remove rc_base\n", f"dm_remove {log.name}\n"]
    return "".join(lines)


def balance_item_on_disk(dev: str) -> bool:
    p = fsutil.run(["btrfs", "inspect-internal", "dump-tree", "-t", "root", dev])
    return BALANCE_ITEM in p.stdout


def wait_for_kernel_balance(mnt) -> None:
    """Until the balance the kernel resumed at mount has ended, as a sysadmin
    would wait (btrfsx refuses to relocate beside it); a guard against a
    hang, not a timing."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status = fsutil.run(["btrfs", "balance", "status", str(mnt)], check=False).stdout
        if "No balance found" in status:
            return
        assert "is running" in status, status
        time.sleep(0.1)
    pytest.fail("the balance the kernel resumed did not end within 300 s")


def check_clean(dev: str) -> None:
    p = subprocess.run(["btrfs", "check", "--readonly", dev], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


@dataclass
class Recorded:
    """A guest's run of a relocating command (relocation_script) and what
    it started from."""
    res: vmharness.GuestResult
    images: list             # the base images
    manifest: dict
    pack: dmpack.Pack
    logs: dmpack.Pack
    members: list
    log: dmpack.Member
    directory: Path
    extra: dict = field(default_factory=dict)


@contextlib.contextmanager
def recorded_relocation(directory: Path, images: list, manifest: dict, run: str,
                        observe: str, log_size: int, what: str,
                        series: str = "v12", timeout: float = 600) -> Iterator[Recorded]:
    """@images packed as slices of one log-writes device in a @series guest
    that runs @run (relocation_script); the guest's disks removed after
    (@images are the caller's)."""
    pack = dmpack.Pack(directory / "pack.img")
    logs = dmpack.Pack(directory / "logs.img", "/dev/vdb")
    try:
        pack.add_blank("rc_pad", PAD)
        members = [pack.add(f"rc_m{i}", img) for i, img in enumerate(images)]
        log = logs.add_blank("rc_log", log_size)
        started = time.monotonic()
        res = vmharness.Guest(series).run(
            relocation_script(pack, logs, members, log, run, observe),
            [pack.path, logs.path], timeout=timeout)
        print(f"\n{what} crash guest: {time.monotonic() - started:.0f} s")
        yield Recorded(res, images, manifest, pack, logs, members, log, directory)
    finally:
        vmharness.remove_disks([pack.path, logs.path])


def replay_relocation(rec: Recorded, tmp_path: Path, default_points: int,
                      check: Callable[[list], object]) -> tuple[list, list[Entry], list[int], int]:
    """Every distinct state of @rec's log at the crash points, each checked
    by @check(images) on copies; the whole log replayed must give what the
    members held after the guest. Returns the checks' results, the log's
    entries, the points replayed and how many there were."""
    log_file = rec.logs.extract(rec.log, rec.directory / "relocate.log")
    work = [rec.directory / f"replay{i}.img" for i in range(len(rec.images))]
    copies = [tmp_path / f"check{i}.img" for i in range(len(rec.images))]
    recorded_images = [rec.directory / f"{m.name}.img" for m in rec.members]
    try:
        entries = log_entries(log_file)
        points, total = crash_points(entries, point_cap(default_points))
        base = rec.members[0].offset - PAD
        replay = LogReplay(log_file, rec.images, work,
                           [(m.offset - base, m.size) for m in rec.members])
        states = [check(copies) for _ in replay.states(points, copies)]
        replay.to(len(entries))
        for m, path in zip(rec.members, recorded_images):
            rec.pack.extract(m, path)
        assert fsutil.images_state(work) == fsutil.images_state(recorded_images)
    finally:
        vmharness.remove_disks([*work, *copies, *recorded_images, log_file])
    return states, entries, points, total


@contextlib.contextmanager
def checked_state(images: list, manifest: dict) -> Iterator[tuple[Path, bool]]:
    """What every crash state of a relocation must be, around the next run
    (inside the block, on the read-write mount): `btrfs check` clean; a
    read-only mount with every file intact; a read-write mount, where the
    kernel resumes the balance whose item is on disk, waited for; after the
    next run, every file intact, no balance item, `btrfs check` clean.
    Yields the mount point and whether a balance item was on disk."""
    with fsutil.LoopDevices(images) as loops:
        devs = loops.devs
        check_clean(devs[0])
        resumed = balance_item_on_disk(devs[0])
        with fsutil.mounted(devs, options="ro") as mnt:
            assert not fsutil.verify_manifest(mnt, manifest)
        with fsutil.mounted(devs) as mnt:
            wait_for_kernel_balance(mnt)
            yield mnt, resumed
            assert not fsutil.verify_manifest(mnt, manifest)
        assert not balance_item_on_disk(devs[0])
        check_clean(devs[0])
