# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernel's automatic block group reclaim (fsops/reclaim.h) in
filesystem usage and filesystem plan, on the host's kernel with reclaim
switched on through sysfs (/sys/fs/btrfs/<FSID>/allocation/data/):

* usage and plan read the settings of a mounted filesystem and say so in
  JSON (`reclaim`, null unmounted) and, when on, in text; BTRFSX_SYSFS_ROOT
  is where they read them;
* a dynamic threshold as btrfsx computes it is the kernel's (the sysfs file
  shows the kernel's value of now) at several fill levels, and the one plan
  computes for after an add is what the kernel shows once the device is
  added;
* a deletion that takes a block group below a set threshold makes the
  kernel relocate it (the rule the text gives), and no other;
* writing alone never starts it: with dynamic and periodic reclaim on, a
  fill to ENOSPC gets free_estimated within 1 %, nothing reclaimed.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers import aging, fsutil
from helpers.fsutil import GiB, MiB

pytestmark = pytest.mark.root

FILE_SIZE = 75 * MiB


@pytest.fixture(scope="module")
def tools(tmp_path_factory, btrfsx):
    """A PATH with guest-fill and guest-age (tests/vm/guest-*.c) and btrfsx."""
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    return aging.build_tools(tmp_path_factory.mktemp("reclaim-bin"), btrfsx)


@pytest.fixture
def fs(loopdevs):
    """A 2 GiB filesystem, single data, mounted as the aged tests mount (the
    kernel's timers out); yields (mount point, its sysfs allocation folder,
    the loop devices)."""
    loops = loopdevs(2, size="2G")
    fsutil.mkfs(loops.devs[0], data="single", metadata="dup")
    with fsutil.mounted(loops.devs[0], options=aging.MOUNT_OPTIONS) as mnt:
        fsid = fsutil.run(["findmnt", "-no", "UUID", str(mnt)]).stdout.strip()
        yield mnt, Path(f"/sys/fs/btrfs/{fsid}/allocation"), loops.devs


def write_files(mnt: Path, count: int, prefix: str = "f") -> None:
    """@count files of FILE_SIZE, each written back at once (the data chunks
    fill one after the other)."""
    block = os.urandom(MiB)
    for i in range(count):
        with open(mnt / f"{prefix}{i}", "wb") as f:
            for _ in range(FILE_SIZE // MiB):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())


def settle(mnt: Path, path_env: str) -> None:
    aging.settle(mnt, path_env)


def reclaim_of(btrfsx_json, *args, **kw) -> dict:
    return btrfsx_json(*args, **kw)["reclaim"]


def sysfs(folder: Path, name: str) -> int:
    return int((folder / name).read_text())


def data_block_groups(mnt: Path) -> dict[int, tuple[int, int]]:
    """logical -> (length, used) of the data block groups (btrfs-progs' dump)."""
    dev = fsutil.run(["findmnt", "-no", "SOURCE", str(mnt)]).stdout.strip()
    out = fsutil.run(["btrfs", "inspect-internal", "dump-tree", "-t", "extent", dev]).stdout
    groups = {}
    for m in re.finditer(r"key \((\d+) BLOCK_GROUP_ITEM (\d+)\).*\n.*used (\d+).*flags (\S+)",
                         out):
        if m.group(4).startswith("DATA"):
            groups[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return groups


def extents_of(path: Path) -> list[tuple[int, int]]:
    """(logical, length) of a file's extents (filefrag: btrfs reports logical addresses)."""
    out = fsutil.run(["filefrag", "-v", "-b1", str(path)]).stdout
    return [(int(m.group(1)), int(m.group(2)))
            for m in re.finditer(r"^\s*\d+:\s+\d+\.\.\s*\d+:\s+(\d+)\.\.\s*\d+:\s+(\d+):", out, re.M)]


def test_off_and_unmounted(fs, btrfsx_json, run_btrfsx, loopdevs):
    mnt, folder, devs = fs
    rec = reclaim_of(btrfsx_json, "filesystem", "usage", str(mnt))
    assert rec["data"]["on"] is False and rec["data"]["threshold"] == 0, rec
    assert set(rec) >= {"data", "metadata", "system"}, rec
    _, out, _ = run_btrfsx("filesystem", "usage", str(mnt))
    assert "Kernel reclaim" not in out
    fsutil.umount_devices(devs)
    assert reclaim_of(btrfsx_json, "filesystem", "usage", devs[0]) is None
    assert reclaim_of(btrfsx_json, "filesystem", "plan", devs[0], "--add", "1G") is None


def test_settings_and_text(fs, btrfsx_json, run_btrfsx):
    mnt, folder, _ = fs
    write_files(mnt, 4)
    (folder / "data" / "bg_reclaim_threshold").write_text("60\n")
    (folder / "data" / "periodic_reclaim").write_text("1\n")
    rec = reclaim_of(btrfsx_json, "filesystem", "usage", str(mnt))
    data = rec["data"]
    assert data["on"] and data["periodic"] and not data["dynamic"], data
    assert data["threshold"] == 60 and rec["metadata"]["on"] is False, rec
    assert rec["data_chunk_size"] == 2 * GiB // 10, rec
    below = {lg: g for lg, g in data_block_groups(mnt).items() if g[1] < g[0] * 60 // 100}
    assert data["below_threshold"]["block_groups"] == len(below), (data, below)
    assert data["below_threshold"]["used"] == sum(g[1] for g in below.values()), (data, below)
    _, out, _ = run_btrfsx("filesystem", "usage", str(mnt))
    assert "Kernel reclaim (not in the figures above):" in out, out
    assert re.search(r"Data: +below 60 % used, at the cleaner's sweeps \(periodic\)", out), out
    assert re.search(r"Metadata: +off", out), out
    _, out, _ = run_btrfsx("filesystem", "plan", str(mnt), "--add", "1G")
    assert "Kernel reclaim after the plan" in out, out
    plan = btrfsx_json("filesystem", "plan", str(mnt), "--add", "1G")
    assert plan["reclaim"]["data"]["threshold"] == 60, plan["reclaim"]


def test_sysfs_root_is_where_the_settings_come_from(fs, btrfsx_json, tmp_path):
    """BTRFSX_SYSFS_ROOT: a copy of the filesystem's allocation folder, changed."""
    mnt, folder, _ = fs
    fsid = folder.parent.name
    fake = tmp_path / "sys"
    for kind in ("data", "metadata", "system"):
        dest = fake / "fs" / "btrfs" / fsid / "allocation" / kind
        dest.mkdir(parents=True)
        for name in ("bg_reclaim_threshold", "dynamic_reclaim", "periodic_reclaim",
                     "reclaim_count", "reclaim_bytes", "reclaim_errors", "chunk_size"):
            if (folder / kind / name).exists():
                shutil.copy(folder / kind / name, dest / name)
    (fake / "fs" / "btrfs" / fsid / "allocation" / "metadata" / "bg_reclaim_threshold") \
        .write_text("40\n")
    (fake / "fs" / "btrfs" / fsid / "allocation" / "metadata" / "reclaim_count").write_text("7\n")
    rec = reclaim_of(btrfsx_json, "filesystem", "usage", str(mnt),
                     env={"BTRFSX_SYSFS_ROOT": str(fake)})
    assert rec["metadata"]["on"] and rec["metadata"]["threshold"] == 40, rec
    assert rec["metadata"]["reclaimed"]["block_groups"] == 7, rec
    assert rec["data"]["on"] is False, rec
    planned = reclaim_of(btrfsx_json, "filesystem", "plan", str(mnt), "--add", "1G",
                         env={"BTRFSX_SYSFS_ROOT": str(fake)})
    usage, plan_before, plan_after = library_reclaim(mnt, fake)
    assert usage == rec == plan_before, (usage, rec, plan_before)
    assert plan_after == planned, (plan_after, planned)


def library_reclaim(mnt: Path, sysfs_root: Path) -> list[dict]:
    """The reclaim of btrfsx.usage() and of btrfsx.plan()'s two sides (an
    added 1 GiB device), in the command line's JSON shape."""
    import test_python as tp
    env = dict(os.environ, PYTHONPATH=str(tp.build_dir() / "libbtrfsx" / "python"),
               PYTHONDONTWRITEBYTECODE="1", ASAN_OPTIONS="detect_leaks=0")
    runtime = tp.sanitizer_runtime()
    if runtime:
        env["LD_PRELOAD"] = runtime
    code = """
import json, sys, btrfsx
mnt, root = sys.argv[1:3]
def cli(r):
    if r is None:
        return None
    doc = {"data_chunk_size": r.data_chunk_size,
           "device_bytes_below_threshold": r.device_bytes_below_threshold}
    for name in ("data", "metadata", "system"):
        k = getattr(r, name)
        if k is not None:
            doc[name] = {"on": k.on, "dynamic": k.dynamic, "periodic": k.periodic,
                         "threshold": k.threshold,
                         "below_threshold": {"block_groups": k.below_block_groups,
                                             "used": k.below_used, "size": k.below_size,
                                             "device_bytes": k.below_device_bytes},
                         "reclaimed": {"block_groups": k.reclaimed_block_groups,
                                       "bytes": k.reclaimed_bytes, "errors": k.reclaim_errors}}
    return doc
plan = btrfsx.plan(mnt, [("add", "1G")], sysfs_root=root)
print(json.dumps([cli(btrfsx.usage(mnt, sysfs_root=root).reclaim), cli(plan.before.reclaim),
                  cli(plan.after.reclaim)]))
"""
    p = subprocess.run([tp.make_variable("PYTHON") or "python3", "-c", code, str(mnt),
                        str(sysfs_root)], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_dynamic_threshold_is_the_kernels(fs, btrfsx_json):
    """At each fill level the threshold btrfsx computes is the one the kernel
    shows; and the one plan gives for after an add is the kernel's once the
    device is added."""
    mnt, folder, devs = fs
    (folder / "data" / "dynamic_reclaim").write_text("1\n")
    seen = set()
    for step in range(5):
        write_files(mnt, 4, prefix=f"s{step}-")
        os.sync()
        rec = reclaim_of(btrfsx_json, "filesystem", "usage", str(mnt))
        assert rec["data"]["dynamic"], rec
        kernel = sysfs(folder / "data", "bg_reclaim_threshold")
        assert rec["data"]["threshold"] == kernel, (step, rec["data"], kernel)
        seen.add(kernel)
    assert len(seen) > 2, seen     # the levels gave several thresholds
    # Some room unused in the data block groups: half of the files go.
    for i, path in enumerate(sorted(mnt.glob("s*"))):
        if i % 2:
            path.unlink()
    os.sync()
    planned = reclaim_of(btrfsx_json, "filesystem", "plan", str(mnt), "--add", "2G")
    fsutil.run(["btrfs", "device", "add", "-f", devs[1], str(mnt)])
    os.sync()
    kernel = sysfs(folder / "data", "bg_reclaim_threshold")
    assert planned["data"]["threshold"] == kernel > 0, (planned, kernel)


def test_a_deletion_below_the_threshold_is_reclaimed(fs, btrfsx_json, tools):
    """A set threshold between a block group's use before and after deleting
    one file that lies in it alone: the kernel relocates that block group,
    and no other."""
    mnt, folder, _ = fs
    write_files(mnt, 12)
    settle(mnt, tools)
    groups = data_block_groups(mnt)
    chosen = None
    for path in sorted(mnt.glob("f*")):
        extents = extents_of(path)
        starts = {lg for lg, (length, _) in groups.items()
                  if any(lg <= e < lg + length for e, _ in extents)}
        if len(starts) != 1:
            continue
        (lg,) = starts
        length, used = groups[lg]
        before, after = used * 100 // length, (used - FILE_SIZE) * 100 // length
        if used > FILE_SIZE and after + 1 <= before:
            chosen = (path, lg, after + 1)
            break
    assert chosen, groups
    path, lg, threshold = chosen
    (folder / "data" / "bg_reclaim_threshold").write_text(f"{threshold}\n")
    # The others that hold data stay (an empty one may go: the cleaner's).
    others = {g for g, (length, used) in groups.items() if g != lg and used}
    path.unlink()
    settle(mnt, tools)
    deadline = time.monotonic() + 120
    while sysfs(folder / "data", "reclaim_count") < 1 and time.monotonic() < deadline:
        fsutil.run(["btrfs", "filesystem", "sync", str(mnt)])
        time.sleep(1)
    settle(mnt, tools)
    after = data_block_groups(mnt)
    assert lg not in after, (lg, threshold, after)
    assert others <= set(after), (others, after)
    rec = reclaim_of(btrfsx_json, "filesystem", "usage", str(mnt))
    assert rec["data"]["reclaimed"]["block_groups"] == 1, rec
    assert rec["data"]["reclaimed"]["bytes"] == groups[lg][1] - FILE_SIZE, (rec, groups[lg])


def test_a_fill_does_not_start_it(fs, btrfsx_json, tools):
    """Dynamic and periodic reclaim on: a fill to ENOSPC writes what
    free_estimated says, and the kernel reclaims nothing."""
    mnt, folder, _ = fs
    write_files(mnt, 6)
    for name in ("dynamic_reclaim", "periodic_reclaim"):
        (folder / "data" / name).write_text("1\n")
    settle(mnt, tools)
    usage = btrfsx_json("filesystem", "usage", str(mnt))
    assert usage["reclaim"]["data"]["on"], usage["reclaim"]
    p = subprocess.run(["guest-fill", "data", str(mnt)], capture_output=True, text=True,
                       env=dict(os.environ, PATH=tools), check=True)
    written = int(p.stdout.split()[2])
    assert abs(usage["free_estimated"] - written) <= written // 100, (usage["free_estimated"],
                                                                      written)
    settle(mnt, tools)
    assert sysfs(folder / "data", "reclaim_count") == 0
