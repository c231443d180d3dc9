# SPDX-License-Identifier: GPL-2.0-or-later
"""Power loss during `btrfsx balance misplaced`, at every crash point of one
run (issue 30).

The writer here is the kernel: `balance misplaced` moves each misplaced
chunk with a kernel balance of that chunk alone, so what a crash leaves is
what the kernel's relocation and its transactions leave, and what btrfsx must
cope with is a filesystem in the middle of that. The base images are made on
the host: raid1 on 256 + 256 + 768 + 768 MiB, made on devids 1 and 2 with
files, devids 3 and 4 added empty, hints set offline (1, 2 metadata_only;
3, 4 data_only): every data chunk sits on devids 1, 2, where the hints
forbid it. One guest with the v12 series (a kernel that honours hints)
mounts them with every member a slice of one `log-writes` device
(tests/vm/crashpoints.py) and runs `btrfsx balance misplaced` between two
marks: the data moves to devids 3, 4.

On the host the log is replayed onto fresh copies of the base images up to
each crash point (each write and each flush after the start mark; the
mount's own writes before it are in every prefix). Every distinct state
must:

* pass `btrfs check`, and mount read-only with every file intact;
* mount read-write, where the kernel resumes the balance whose item is on
  disk (the chunk being moved at the crash); once that has ended, the next
  `btrfsx balance misplaced` must move exactly the chunks still misplaced,
  finish, and leave nothing misplaced, every file intact and `btrfs check`
  clean. The host kernel ignores hints, so that run is forced; the layout is
  one where placing by free space puts data where the hints want it too
  (devids 3, 4 have the most room), so a forced run finishes.

The whole log replayed must give what the members held after the guest.
``BTRFSX_VM_CRASH_POINTS`` (default 8 here) bounds the states checked:
every commit is a flush point, so the flush points are spread over the run
first, then the first and the last write (crashpoints.crash_points);
``all`` checks every one.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

import dmpack
import vmharness
from crashpoints import LogReplay, counts, crash_points, log_entries, point_cap
from helpers import fsutil

MiB = 1 << 20
SIZES = [256 * MiB, 256 * MiB, 768 * MiB, 768 * MiB]
HINTS = ["metadata_only", "metadata_only", "data_only", "data_only"]
LOG_SIZE = 512 * MiB
PAD = dmpack.ALIGN        # the log-writes device must not begin with member 0's superblock
DEFAULT_POINTS = 8
# btrfs-progs' name of the balance item: the kernel resumes that balance at a read-write mount
BALANCE_ITEM = "BALANCE TEMPORARY_ITEM"


def make_base(directory: Path) -> tuple[list[Path], dict]:
    """The images before the run, and the files' manifest."""
    images = vmharness.make_disks(directory / "base", SIZES)
    with fsutil.LoopDevices(images) as loops:
        fsutil.mkfs(loops.devs[:2], data="raid1", metadata="raid1")
        with fsutil.mounted(loops.devs[:2]) as mnt:
            manifest = fsutil.fill_files(mnt, big_files=3, big_size=8 * MiB, small_files=40)
            fsutil.run(["btrfs", "device", "add", "-K", *loops.devs[2:], str(mnt)])
        for dev, hint in zip(loops.devs, HINTS):
            fsutil.run_btrfsx("property", "set", dev, "allocation_hint", hint)
    return images, manifest


# A run stuck in the kernel shows where (the blocked tasks) before the guest is killed.
WATCHDOG = """(sleep 240; echo '@@R stuck'; echo w > /proc/sysrq-trigger; dmesg | tail -150) &
watchdog=$!
"""


def recording_script(pack: dmpack.Pack, logs: dmpack.Pack, members, log) -> str:
    """Mounted from slices of one log-writes device; the run between the marks."""
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
    others = ",".join(f"device={m.dev}" for m in members[1:])
    lines.append(f"mount -o {others} {members[0].dev} /mnt || echo '@@R mount_failed'\n")
    lines.append("sync\ncapture before btrfsx --format json filesystem misplaced /mnt\n")
    lines.append("dmsetup message rc_lw 0 mark start\n")
    lines.append(WATCHDOG)
    lines.append("capture relocate btrfsx --format json balance misplaced --no-progress /mnt\n")
    lines.append("kill $watchdog\n")
    lines.append("dmsetup message rc_lw 0 mark end\n")
    lines.append("capture after btrfsx --format json filesystem misplaced /mnt\n")
    lines.append("umount /mnt\ncapture check btrfs check --readonly " + members[0].dev + "\n")
    lines += [f"dm_remove {m.name}\n" for m in members]
    lines += ["dm_remove rc_lw\n", "dm_remove rc_base\n", f"dm_remove {log.name}\n"]
    return "".join(lines)


@dataclass
class Recorded:
    res: vmharness.GuestResult
    images: list             # the base images
    manifest: dict
    pack: dmpack.Pack
    logs: dmpack.Pack
    members: list
    log: dmpack.Member
    directory: Path


@pytest.fixture(scope="module")
def recorded(vm_ready, tmp_path_factory):
    directory = tmp_path_factory.mktemp("reloc-crash")
    pack = dmpack.Pack(directory / "pack.img")
    logs = dmpack.Pack(directory / "logs.img", "/dev/vdb")
    try:
        images, manifest = make_base(directory)
        pack.add_blank("rc_pad", PAD)
        members = [pack.add(f"rc_m{i}", img) for i, img in enumerate(images)]
        log = logs.add_blank("rc_log", LOG_SIZE)
        started = time.monotonic()
        res = vmharness.Guest("v12").run(recording_script(pack, logs, members, log),
                                         [pack.path, logs.path], timeout=600)
        print(f"\nrelocation crash guest: {time.monotonic() - started:.0f} s")
        yield Recorded(res, images, manifest, pack, logs, members, log, directory)
    finally:
        vmharness.remove_disks([pack.path, logs.path, *(directory / "base").glob("*.img")])


# ------------------------------------------------------------------ what a state must be

def balance_item_on_disk(dev: str) -> bool:
    p = fsutil.run(["btrfs", "inspect-internal", "dump-tree", "-t", "root", dev])
    return BALANCE_ITEM in p.stdout


def wait_for_kernel_balance(mnt) -> None:
    """Until the balance the kernel resumed at mount has ended, as a sysadmin
    would wait (`balance misplaced` refuses to run beside it); a guard
    against a hang, not a timing."""
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


@dataclass(frozen=True)
class State:
    resumed: bool            # a balance item on disk: the kernel went on with its chunk
    moved: int               # by the next run: what was still misplaced once that ended


def check_state(images, manifest, env) -> State:
    """The checks of one crash state (module docstring)."""
    with fsutil.LoopDevices(images) as loops:
        devs = loops.devs
        check_clean(devs[0])
        resumed = balance_item_on_disk(devs[0])
        with fsutil.mounted(devs, options="ro") as mnt:
            assert not fsutil.verify_manifest(mnt, manifest)
        with fsutil.mounted(devs) as mnt:
            wait_for_kernel_balance(mnt)
            before = fsutil.btrfsx_json("filesystem", "misplaced", mnt, check=False,
                                        env=env)["misplaced"]["chunks"]
            rc, out, err = fsutil.run_btrfsx("balance", "misplaced", "--force", "--no-progress",
                                             mnt, fmt="json", check=False, env=env)
            run = json.loads(out)["balance"]
            assert rc == 0 and run["status"] == "finished", (run, err)
            assert {m["logical"] for m in run["moved"]} == {c["logical"] for c in before}, run
            after = fsutil.btrfsx_json("filesystem", "misplaced", mnt, env=env)
            assert after["misplaced"]["chunks"] == [], after
            assert not fsutil.verify_manifest(mnt, manifest)
        assert not balance_item_on_disk(devs[0])
        check_clean(devs[0])
    return State(resumed, len(run["moved"]))


# ------------------------------------------------------------------ tests

def test_the_recorded_run_moves_every_misplaced_chunk(recorded):
    res = recorded.res
    assert "mount_failed" not in res.results and "stuck" not in res.results, res.console[-12000:]
    rc, doc, text = res.json("before")
    assert rc == 4, text
    planned = {c["logical"] for c in doc["misplaced"]["chunks"]}
    assert planned and {c["class"] for c in doc["misplaced"]["chunks"]} == {"forbidden"}
    rc, doc, text = res.json("relocate")
    assert rc == 0 and doc["balance"]["status"] == "finished", text
    assert {m["logical"] for m in doc["balance"]["moved"]} == planned
    assert all(n["as_modelled"] and n["improves"] for m in doc["balance"]["moved"]
               for n in m["new_chunks"]), doc
    assert res.json("after")[1]["misplaced"]["chunks"] == []
    assert res.output("check")[0] == 0, res.output("check")[1]


def test_power_loss_during_balance_misplaced(recorded, tmp_path):
    rec = recorded
    rc, text = rec.res.output("relocate")
    assert rc == 0, text          # (the test above says more)
    directory = rec.directory
    log_file = rec.logs.extract(rec.log, directory / "relocate.log")
    work = [directory / f"replay{i}.img" for i in range(len(rec.images))]
    check = [tmp_path / f"check{i}.img" for i in range(len(rec.images))]
    recorded_images = [directory / f"{m.name}.img" for m in rec.members]
    try:
        entries = log_entries(log_file)
        points, total = crash_points(entries, point_cap(DEFAULT_POINTS))
        base = rec.members[0].offset - PAD
        replay = LogReplay(log_file, rec.images, work,
                           [(m.offset - base, m.size) for m in rec.members])
        env = {"BTRFSX_STATE_DIR": str(tmp_path / "state")}
        states = [check_state(check, rec.manifest, env) for _ in replay.states(points, check)]
        # the whole log replayed gives what the members held after the guest
        replay.to(len(entries))
        for m, path in zip(rec.members, recorded_images):
            rec.pack.extract(m, path)
        assert fsutil.images_state(work) == fsutil.images_state(recorded_images)
    finally:
        vmharness.remove_disks([*work, *check, *recorded_images, log_file])
    writes, flushes = counts(entries)
    resumed = [s for s in states if s.resumed]
    print(f"balance misplaced: log of {len(entries)} entries ({writes} writes, {flushes} "
          f"flushes); {len(points)} of {total} crash points replayed, {len(states)} distinct "
          f"states; the kernel resumed its balance in {len(resumed)}; states by chunks the "
          f"next run moved: {dict(sorted(Counter(s.moved for s in states).items()))}")
    # the crash points fell inside the kernel's balance too, not only between chunks
    assert resumed, states

