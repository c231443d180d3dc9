# SPDX-License-Identifier: GPL-2.0-or-later
"""Failing writes and every crash point, from a real block layer (issue 22).

The writers: the offline hint set (``btrfsx property set`` on an unmounted
filesystem: dup on one device, raid1c3 metadata on three), ``btrfsx mkfs``
over an old filesystem (dup on one device, raid1 on three) and the offline
scrub's repair (raid1: a bad data copy, a bad tree block copy, a bad backup
superblock). Their base images are made on the host and laid in a pack disk
(tests/vm/dmpack.py); everything below runs in one stock 6.1 guest, and the
host then reads the members back and checks them.

**Failing writes.** For k from 1 to the writer's number of writes, the
writer is paused before its k-th write (``BTRFSX_FAULT_PAUSE_BEFORE_WRITE``,
only the timing: the fault is the block layer's), one member is switched to
``flakey`` with ``error_writes`` (every write fails) or ``drop_writes`` (every
write is acknowledged and lost), and the writer goes on. The command must
report the failure (or succeed, when that member gets no later write), and
the state must be the old or the new one as the crash campaigns define it
(tests/RELIABILITY.md): ``btrfs check`` passes and the kernel mounts it with
every file intact, or, for mkfs, it is the old filesystem, the new one
complete, or nothing the kernel mounts.

**Every crash point.** Each writer runs once more with all its members
sliced out of one ``log-writes`` device (so one log holds every member's
writes in the order they became durable), between two marks. On the host,
tests/vm/logwrites-replay.c replays the log onto fresh copies of the base
images up to every write and every flush between the marks, and each prefix
must pass the same checks. This is independent of btrfsx's own fault
injection: where the two disagree, the block layer is right.

**How much.** ``BTRFSX_VM_CRASH_POINTS`` (default 16) bounds the prefixes
checked per writer: every flush point, the first and the last write, and
writes evenly spread between; and half as many values of k (the first, the
last, evenly spread). ``BTRFSX_VM_CRASH_POINTS=all`` checks every prefix
and every k. Two guests run at once, each with half the failing-write runs.
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import crashutil
import dmpack
from crashpoints import LogReplay, counts, crash_points, log_entries, mark_index, point_cap
from helpers import fsutil
from helpers import oracle
import vmharness
from helpers.fslayout import Layout

MiB = 1 << 20
MEMBER = 256 * MiB
LOG_SIZE = 256 * MiB
# Before the members in the device they are sliced from: without it, that
# device would begin with member 0's superblock, and scans would find a
# second copy of member 0.
PAD = dmpack.ALIGN
SECTOR = dmpack.SECTOR
OLD_HINT, NEW_HINT = 0, 1          # data_preferred -> metadata_preferred
WRITE_FAILED = re.compile(r"Input/output error|did not reach the device")
DEFAULT_POINTS = 16                # BTRFSX_VM_CRASH_POINTS


@dataclass
class Writer:
    name: str
    kind: str                      # hint | mkfs | scrub
    ndev: int
    data: str
    metadata: str
    args: str                      # btrfsx arguments; {devs}, {dev0}, {dev1} ...
    base: list = field(default_factory=list)      # the images before (host)
    new: list = field(default_factory=list)       # after a complete run (hint, scrub)
    manifest: dict = field(default_factory=dict)
    old_fsid: bytes = b""
    writes: int = 0                # of a complete run

    def command(self, members) -> str:
        names = {f"dev{i}": m.dev for i, m in enumerate(members)}
        return "btrfsx " + self.args.format(devs=" ".join(m.dev for m in members), **names)


WRITERS = [
    Writer("hint_dup", "hint", 1, "single", "dup",
           "property set {dev0} allocation_hint metadata_preferred"),
    Writer("hint_raid1c3", "hint", 3, "single", "raid1c3",
           "property set {dev1} allocation_hint metadata_preferred"),
    Writer("mkfs_dup", "mkfs", 1, "single", "dup", "mkfs -f -q -d single -m dup {devs}"),
    Writer("mkfs_raid1", "mkfs", 3, "raid1", "raid1", "mkfs -f -q -d raid1 -m raid1 {devs}"),
    Writer("scrub_raid1", "scrub", 2, "raid1", "raid1", "scrub start --offline -B {devs}"),
]
MODES = ["error_writes", "drop_writes"]


def hint_devid(writer: Writer) -> int:
    return 2 if writer.ndev > 1 else 1


# ------------------------------------------------------------------ the base images (host)

def damage(images) -> None:
    """Bad copies for the scrub's repair: a data sector on devid 1, a tree
    block on devid 2, the backup superblock of devid 1."""
    lay = Layout(images, fsutil.btrfsx_json)
    data = lay.extent_of("big0.bin")[0] + 4096
    for img, phys in ((lay.copies(data)[0][1], lay.copies(data)[0][2]),
                      (lay.copies(lay.fs_root)[1][1], lay.copies(lay.fs_root)[1][2] + 512),
                      (lay.image_of[1], (64 << 20) + 0x200)):
        with open(img, "r+b") as f:
            f.seek(phys)
            old = f.read(16)
            f.seek(phys)
            f.write(bytes(b ^ 0xff for b in old))


def run_writer(writer: Writer, devs, env=None) -> tuple[int, str]:
    args = writer.args.format(devs=" ".join(devs), **{f"dev{i}": d for i, d in enumerate(devs)})
    rc, _, err = fsutil.run_btrfsx(*args.split(), check=False, env=env)
    return rc, err


def prepare(writer: Writer, directory: Path) -> None:
    """The base images, what a complete run makes of them, and the number of
    writes of a complete run (stopping after write N until a run completes)."""
    base = directory / writer.name / "base"
    writer.base = vmharness.make_disks(base, [MEMBER] * writer.ndev)
    with fsutil.LoopDevices(writer.base) as loops:
        writer.old_fsid = uuid.UUID(fsutil.mkfs(loops.devs, data=writer.data,
                                                metadata=writer.metadata)).bytes
        with fsutil.mounted(loops.devs) as mnt:
            writer.manifest = fsutil.fill_files(mnt, big_files=1, big_size=MiB, small_files=4,
                                                nodatasum_size=16384)
    good = directory / writer.name / "good"
    good.mkdir()
    if writer.kind == "scrub":
        writer.new = [good / p.name for p in writer.base]
        for src, dst in zip(writer.base, writer.new):
            crashutil.copy_sparse(src, dst)
        damage(writer.base)
    work = [good.parent / f"work{i}.img" for i in range(writer.ndev)]
    for src, dst in zip(writer.base, work):
        crashutil.copy_sparse(src, dst)
    pristine = crashutil.Snapshot(work)
    with fsutil.LoopDevices(work) as loops:
        n, rc = 0, 1
        while rc:
            n += 1
            assert n < 64, f"{writer.name}: no complete run"
            pristine.restore()
            rc, err = run_writer(writer, loops.devs, {"BTRFSX_FAULT_AFTER_WRITES": n})
            assert rc == 0 or "fault injection" in err, err
        writer.writes = n
    if writer.kind == "hint":
        writer.new = [good / p.name for p in writer.base]
        for src, dst in zip(work, writer.new):
            crashutil.copy_sparse(src, dst)


# ------------------------------------------------------------------ what a state must be

def check_and_mount(writer: Writer, devs) -> None:
    p = subprocess.run(["btrfs", "check", "--readonly", devs[0]], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    with fsutil.mounted(devs) as mnt:
        assert not fsutil.verify_manifest(mnt, writer.manifest)


def verify_state(writer: Writer, images, complete: bool) -> str:
    """Checks what @images hold after the writer stopped, or completed when
    @complete (a stopped writer may have done everything but a flush); returns
    a name for the state."""
    if writer.kind in ("hint", "scrub"):
        for img, old, new in zip(images, writer.base, writer.new):
            bad = crashutil.mixed_blocks(img, old, new)
            assert not bad, f"{img}: neither old nor new at {bad[:8]}"
        if complete:
            assert fsutil.images_state(images) == fsutil.images_state(writer.new)
    with fsutil.LoopDevices(images) as loops:
        devs = loops.devs
        if writer.kind == "hint":
            devid = hint_devid(writer)
            hint = int(oracle.progs_dev_items(devs)[devid]["type"])
            supers = {int(c["dev_item.type"])
                      for c in oracle.progs_dump_super(devs[devid - 1], all=True).values()}
            assert hint in (OLD_HINT, NEW_HINT) and supers <= {OLD_HINT, NEW_HINT}, (hint, supers)
            check_and_mount(writer, devs)
            return f"hint {hint} supers {sorted(supers)}"
        if writer.kind == "scrub":
            check_and_mount(writer, devs)
            return "scrub"
        supers = tuple(crashutil.primary_super(img, writer.old_fsid) for img in images)
        assert supers == ("new",) * writer.ndev or not complete, supers
        if supers == ("new",) * writer.ndev:
            p = subprocess.run(["btrfs", "check", "--readonly", devs[0]], capture_output=True,
                               text=True)
            assert p.returncode == 0, p.stdout + p.stderr
            assert crashutil.try_mount(devs)
        elif supers == ("old",) * writer.ndev:
            check_and_mount(writer, devs)
        else:
            # The new filesystem exists only complete; nothing else mounts.
            assert "new" not in supers or "unfinished" in supers, supers
            fsutil.device_scan(devs)
            assert not crashutil.try_mount(devs), supers
            assert "old" in supers or not crashutil.try_mount(devs, "degraded"), supers
        return f"mkfs {supers}"


# ------------------------------------------------------------------ the guest script

@dataclass
class FailingRun:
    writer: Writer
    k: int
    mode: str
    member: int                    # which member goes flakey
    pack: dmpack.Pack | None = None
    members: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.writer.name}_{self.k}_{self.mode}"


GUEST_FUNCTIONS = r"""
# paused <pid>: waits until the process has stopped itself (0) or exited (1)
paused() {
	while kill -0 $1 2>/dev/null; do
		grep -q '^State:.*stopped' /proc/$1/status && return 0
		usleep 20000
	done
	return 1
}
"""


def failing_script(run: FailingRun) -> str:
    pack = run.pack
    lines = [pack.create(m) for m in run.members]
    flakey = dmpack.Fault(0, run.members[run.member].size,
                          f"flakey {{disk}} {{sector}} 0 3600 1 {run.mode}")
    lines.append(f"BTRFSX_FAULT_PAUSE_BEFORE_WRITE={run.k} {run.writer.command(run.members)} "
                 f">/tmp/out 2>/tmp/err &\npid=$!\n")
    lines.append(f"if paused $pid; then\n{pack.reload(run.members[run.member], [flakey])}"
                 f"kill -CONT $pid\nfi\n")
    lines.append(f"wait $pid\nrc=$?\necho \"@@R failing {run.name} $rc\"\n")
    lines.append(f"capture {run.name} cat /tmp/err\n")
    lines += [f"dm_remove {m.name}\n" for m in run.members]
    lines.append(f'echo "@@R done {run.name} $(now)"\n')
    return "".join(lines)


@dataclass
class Recording:
    writer: Writer
    members: list = field(default_factory=list)
    log: dmpack.Member | None = None

    @property
    def base_offset(self) -> int:
        return self.members[0].offset - PAD


def recording_script(rec: Recording, pack: dmpack.Pack, logs: dmpack.Pack) -> str:
    """The writer over one log-writes device that every member is a slice of."""
    name = rec.writer.name
    size = rec.members[-1].offset + rec.members[-1].size - rec.base_offset
    lines = [logs.create(rec.log),
             f"dm_create {name}_base <<'TABLE'\n0 {size // SECTOR} linear {pack.disk} "
             f"{rec.base_offset // SECTOR}\nTABLE\n",
             f"dm_create {name}_lw <<'TABLE'\n0 {size // SECTOR} log-writes "
             f"/dev/mapper/{name}_base {rec.log.dev}\nTABLE\n"]
    for m in rec.members:
        lines.append(f"dm_create {m.name} <<'TABLE'\n0 {m.size // SECTOR} linear "
                     f"/dev/mapper/{name}_lw {(m.offset - rec.base_offset) // SECTOR}\nTABLE\n")
    lines.append(f"dmsetup message {name}_lw 0 mark start\n")
    lines.append(f"capture {name}.recorded {rec.writer.command(rec.members)}\n")
    lines.append(f"dmsetup message {name}_lw 0 mark end\n")
    lines += [f"dm_remove {m.name}\n" for m in rec.members]
    lines += [f"dm_remove {name}_lw\n", f"dm_remove {name}_base\n", f"dm_remove {rec.log.name}\n"]
    return "".join(lines)


def failing_ks(writer: Writer) -> list[int]:
    """Before which writes the failure starts: every one, or in CI at most
    half the crash point budget, the first and the last among them."""
    cap = point_cap(DEFAULT_POINTS)
    n = writer.writes
    if cap is None or n <= max(cap // 2, 2):
        return list(range(1, n + 1))
    picks = max(cap // 2, 2)
    return sorted({1 + i * (n - 1) // (picks - 1) for i in range(picks)})


def guest_job(part: dict) -> tuple[str, list[Path]]:
    script = dmpack.DM_FUNCTIONS + GUEST_FUNCTIONS + "export BTRFSX_STATE_DIR=/tmp/state\n"
    script += "".join(recording_script(r, part["pack"], part["logs"]) for r in part["recordings"])
    script += "".join(failing_script(r) for r in part["runs"])
    return script, [part["pack"].path] + ([part["logs"].path] if part["logs"] else [])


@pytest.fixture(scope="module")
def guest_run(vm_ready, tmp_path_factory):
    """Two guests at once: the recordings and half the failing-write runs, the other half."""
    directory = tmp_path_factory.mktemp("writes")
    parts = [{"pack": dmpack.Pack(directory / f"pack{i}.img"), "logs": None, "recordings": [],
              "runs": []} for i in range(2)]
    parts[0]["logs"] = dmpack.Pack(directory / "logs.img", "/dev/vdb")
    runs = []
    for writer in WRITERS:
        prepare(writer, directory)
        pack = parts[0]["pack"]
        pack.add_blank(f"{writer.name}_pad", PAD)
        parts[0]["recordings"].append(Recording(
            writer, [pack.add(f"{writer.name}_rec{i}", img) for i, img in enumerate(writer.base)],
            parts[0]["logs"].add_blank(f"{writer.name}_log", LOG_SIZE)))
        for k in failing_ks(writer):
            for mode in MODES:
                part = parts[len(runs) % 2]
                run = FailingRun(writer, k, mode, (k - 1) % writer.ndev, part["pack"])
                run.members = [run.pack.add(f"{run.name}_{i}", img)
                               for i, img in enumerate(writer.base)]
                part["runs"].append(run)
                runs.append(run)
    started = time.monotonic()
    res = vmharness.run_guests("stock", [guest_job(p) for p in parts], timeout=1200)
    print(f"\nwrites guests: {len(runs)} failing-write runs, {len(WRITERS)} recordings, "
          f"{time.monotonic() - started:.0f} s")
    return res, parts[0], runs, directory


# ------------------------------------------------------------------ failing writes

@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_failing_writes(guest_run, writer):
    res, _, runs, directory = guest_run
    rcs = {w[0]: int(w[1]) for w in res.results.get("failing", [])}
    mine = [r for r in runs if r.writer is writer]
    states, seen, failed = set(), set(), 0
    for run in mine:
        assert run.name in rcs, f"{run.name}: no result"
        rc, err = rcs[run.name], res.output(run.name)[1]
        images = [run.pack.extract(m, directory / f"{m.name}.img") for m in run.members]
        if rc:
            # Reported: the failed or lost write, not a crash or a hang.
            assert rc == (3 if writer.kind == "scrub" else 1), (run.name, rc, err)
            assert WRITE_FAILED.search(err), (run.name, err)
            failed += 1
        fingerprint = (rc == 0, tuple(fsutil.images_state(images)))
        if fingerprint not in seen:
            seen.add(fingerprint)
            states.add(verify_state(writer, images, complete=rc == 0))
        for img in images:
            img.unlink()
    print(f"{writer.name}: {writer.writes} writes, {len(mine)} runs, {failed} reported a "
          f"failed write, {len(seen)} distinct states; {sorted(states)}")
    assert failed, "no run met a failing write"


# ------------------------------------------------------------------ crash points

@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_every_crash_point(guest_run, writer):
    res, part, _, directory = guest_run
    rec = next(r for r in part["recordings"] if r.writer is writer)
    rc, text = res.output(f"{writer.name}.recorded")
    assert rc == 0, text
    log = part["logs"].extract(rec.log, directory / f"{writer.name}.log")
    entries = log_entries(log)
    points, total = crash_points(entries, point_cap(DEFAULT_POINTS))
    work = [directory / f"{writer.name}_replay{i}.img" for i in range(writer.ndev)]
    check = [directory / f"{writer.name}_check{i}.img" for i in range(writer.ndev)]
    replay = LogReplay(log, writer.base, work,
                       [(m.offset - rec.base_offset, m.size) for m in rec.members])
    states = {verify_state(writer, check, complete=point == points[-1])
              for point in replay.states(points, check)}
    # The whole log replayed gives what the devices hold after the run: the
    # replayer reads the log right.
    replay.to(mark_index(entries, "end"))
    recorded = [part["pack"].extract(m, directory / f"{m.name}.img") for m in rec.members]
    assert fsutil.images_state(work) == fsutil.images_state(recorded)
    writes, flushes = counts(entries)
    print(f"{writer.name}: log of {len(entries)} entries ({writes} writes, {flushes} flushes); "
          f"{len(points)} of {total} crash points replayed, {len(replay.seen)} distinct states; "
          f"{sorted(states)}")
