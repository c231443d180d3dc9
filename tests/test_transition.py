# SPDX-License-Identifier: GPL-2.0-or-later
"""Filesystems in transition (issue 30): what usage, plan and the read-only
commands say about a filesystem in the middle of a change.

- A conversion paused or interrupted: while its balance item exists the
  kernel gives every new chunk of a kind it converts the target profile
  (not the most redundant profile in use); usage, plan and misplaced model
  the same, mounted (BTRFS_IOC_BALANCE_PROGRESS) and unmounted (the balance
  item), and the kernel's next chunks prove it; a plan refuses what the
  kernel's exclusive operation refuses meanwhile.
- One guard-rail rule for --hint and --convert.
- Seed and sprout: both named, or the sprout alone (the seed found by its
  fsid); the seed's space is read-only and never counts: free_estimated
  equals what a fill really writes.
- Degraded: the read-only commands work wherever a copy is left, with one
  warning, and show what btrfs-progs shows; image sets find their unnamed
  members beside the named ones, and a plan refuses a set with one missing,
  naming it.
- Unmounted views say whether the running kernel honours the stored hints.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time

import pytest

from helpers import fsutil
from helpers import oracle
from helpers.fsutil import MiB

pytestmark = pytest.mark.root


def balance_status(mnt) -> str:
    return subprocess.run(["btrfs", "balance", "status", str(mnt)], capture_output=True,
                          text=True).stdout


def pause_a_conversion(mnt, *filters) -> None:
    """Starts `btrfs balance start -f FILTERS` and pauses it once it runs. A
    balance that finished first (its chunks moved before the pause came) is
    converted back and tried again."""
    for _ in range(3):
        p = subprocess.Popen(["btrfs", "balance", "start", "-f", *filters, str(mnt)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None and "running" not in balance_status(mnt):
            time.sleep(0.01)
        paused = subprocess.run(["btrfs", "balance", "pause", str(mnt)],
                                capture_output=True).returncode == 0
        p.wait(timeout=300)
        if paused and "paused" in balance_status(mnt):
            return
        fsutil.run(["btrfs", "balance", "start", "-f", "-dconvert=raid1", "-mconvert=raid1",
                    str(mnt)])
    pytest.fail("the conversion finished before it could be paused, three times")


def chunk_profiles(devs) -> dict[int, str]:
    """logical -> 'TYPE|PROFILE' of every chunk (btrfs-progs)."""
    subprocess.run(["sync"], check=True)
    return {c["logical"]: c["type"] for c in
            oracle.parse_chunks(oracle.progs_dump_tree_text(devs, "chunk"))}


def model_of(btrfsx_json, *paths) -> tuple[dict, list]:
    doc = btrfsx_json("filesystem", "usage", *paths)
    return doc["model"], doc.get("warnings", [])


def test_a_paused_conversion_gives_new_chunks_its_target(loopdevs, btrfsx_json):
    """Issue 30: raid1 -> single / dup paused (mounted), then unmounted
    (interrupted: the item on disk) and mounted with skip_balance: the model
    says new data is single and new metadata dup, as the kernel then
    allocates them; cancelled, raid1 again."""
    loops = loopdevs(3, size="1G")
    devs = loops.devs
    fsutil.mkfs(devs, data="raid1", metadata="raid1")
    with fsutil.mounted(devs) as mnt:
        for i in range(14):
            with open(mnt / f"f{i}", "wb") as f:
                os.posix_fallocate(f.fileno(), 0, 32 * MiB)
        os.sync()
        before, _ = model_of(btrfsx_json, mnt)
        assert (before["data_profile"], before["balance"]) == ("raid1", None)
        pause_a_conversion(mnt, "-dconvert=single", "-mconvert=dup")
        model, warnings = model_of(btrfsx_json, mnt)
        assert (model["data_profile"], model["metadata_profile"]) == ("single", "dup")
        assert model["balance"] == "paused"
        assert any("paused balance converts data to single, metadata to dup" in w
                   for w in warnings), warnings
        # both profiles are in use: without the balance raid1 would be the answer
        spaces = btrfsx_json("filesystem", "usage", mnt)["spaces"]
        assert {(s["type"], s["profile"]) for s in spaces} >= {("data", "raid1"),
                                                                 ("data", "single")}
        plan = btrfsx_json("filesystem", "plan", mnt, "--add", "1G")
        assert (plan["before"]["data_profile"], plan["after"]["data_profile"]) == ("single",) * 2
        # the paused balance holds the kernel's exclusive operation: a remove is refused
        plan = btrfsx_json("filesystem", "plan", mnt, "--remove", "3", check=5)
        assert plan["possible"] is False
        assert "paused balance holds the kernel's exclusive operation, which refuses a " \
            "device remove" in plan["changes"][0]["reason"], plan["changes"]
        p = subprocess.run(["btrfs", "device", "remove", "3", str(mnt)], capture_output=True,
                           text=True)
        assert p.returncode != 0 and "in progress" in p.stderr, p.stderr
    model, warnings = model_of(btrfsx_json, *devs)
    assert (model["data_profile"], model["metadata_profile"], model["balance"]) == \
        ("single", "dup", "interrupted")
    assert any("interrupted balance converts" in w for w in warnings), warnings
    with fsutil.mounted(devs, options="skip_balance") as mnt:
        assert "paused" in balance_status(mnt)
        assert model_of(btrfsx_json, mnt)[0]["data_profile"] == "single"
        old = chunk_profiles(devs)
        with open(mnt / "new", "wb") as f:
            os.posix_fallocate(f.fileno(), 0, 300 * MiB)
        new = {lg: t for lg, t in chunk_profiles(devs).items() if lg not in old}
        assert new and set(new.values()) == {"DATA|single"}, new
        fsutil.run(["btrfs", "balance", "cancel", str(mnt)])
        model, warnings = model_of(btrfsx_json, mnt)
        assert (model["data_profile"], model["balance"]) == ("raid1", None)
        assert not any("balance converts" in w for w in warnings)
    oracle.run_progs(["check", "--readonly", devs[0]])


def test_one_guard_rail_rule_for_hints_and_converts(images, run_btrfsx, btrfsx_json):
    """Issue 30's two cases: a hint that leaves raid1 metadata one device and
    a convert to raid1c3 over two metadata_only devices and a data_only one
    break the same rule (every profile in use keeps its minimum device
    count among the devices its type may use), and the plan says so for
    both, in the same words; a convert the devices can hold stays possible."""
    two = images(["512M"] * 2, prefix="two")
    fsutil.mkfs([str(p) for p in two], data="raid1", metadata="raid1")
    plan = btrfsx_json("filesystem", "plan", two[0], two[1], "--hint", "1=data_only", check=5)
    reason = plan["changes"][0]["reason"]
    assert "guard rails refuse the hint: after this change 1 device would allow metadata, " \
        "but raid1 metadata needs 2" in reason, reason
    rc, _, err = run_btrfsx("property", "set", two[0], "allocation_hint", "data_only", check=1)
    assert "after this change 1 device would allow metadata, but raid1" in err, err

    three = [str(p) for p in images(["512M"] * 3, prefix="three")]
    fsutil.mkfs(three, data="single", metadata="raid1")
    for dev, hint in zip(three, ["metadata_only", "metadata_only", "data_only"]):
        run_btrfsx("property", "set", dev, "allocation_hint", hint)
    plan = btrfsx_json("filesystem", "plan", *three, "--convert", "metadata=raid1c3", check=5)
    step = plan["changes"][0]
    assert step["status"] == "impossible" and plan["possible"] is False
    assert "guard rails refuse the convert: after this change 2 devices would allow metadata, "\
        "but raid1c3 metadata needs 3" in step["reason"], step
    assert plan["moved"] == [] and plan["after"]["metadata_profile"] == "raid1"
    plan = btrfsx_json("filesystem", "plan", *three, "--convert", "metadata=dup")
    assert plan["possible"] is True


def make_sprout(loopdevs):
    """A 512 MiB seed (single data, dup metadata, 100 MiB written, btrfstune
    -S 1) and a 512 MiB sprout added to it, 50 MiB written on it. Returns
    (seed, sprout) loop devices, unmounted."""
    loops = loopdevs(2, size="512M")
    seed, sprout = loops.devs
    fsutil.mkfs([seed], data="single", metadata="dup")
    with fsutil.mounted([seed]) as mnt:
        (mnt / "a").write_bytes(os.urandom(100 * MiB))
    fsutil.run(["btrfstune", "-S", "1", seed])
    with fsutil.mounted([seed]) as mnt:        # a seed mounts read-only
        fsutil.run(["btrfs", "device", "add", sprout, str(mnt)])
        fsutil.run(["mount", "-o", "remount,rw", str(mnt)])
        (mnt / "b").write_bytes(os.urandom(50 * MiB))
    return seed, sprout


def fill_with_data(mnt) -> int:
    """Bytes of data written until ENOSPC (one file, 1 MiB writes, synced)."""
    written, block = 0, bytes(MiB)
    with open(mnt / "fill", "wb") as f:
        try:
            while True:
                written += f.write(block)
                if written % (64 * MiB) == 0:
                    os.fsync(f.fileno())
        except OSError:
            pass
    with contextlib.suppress(OSError):
        os.sync()
    return written


def test_seed_and_sprout(loopdevs, btrfsx_json, run_btrfsx):
    """Issue 30: usage counted the read-only seed's unallocated space (free
    1.10 GB, df 0.57, on 1 GiB each); naming both devices was refused, the sprout alone
    called the seed missing. Now: both named or the sprout alone give the
    same report, the seed device read-only (`seed`), and free_estimated is
    what a fill really writes, mounted and not."""
    seed, sprout = make_sprout(loopdevs)
    alone = btrfsx_json("filesystem", "usage", sprout)
    both = btrfsx_json("filesystem", "usage", seed, sprout)
    assert "warnings" not in alone, alone["warnings"]
    assert [(d["devid"], d["seed"], d["missing"]) for d in alone["devices"]] == \
        [(1, True, False), (2, False, False)]
    for key in ("free_estimated", "free_strict", "metadata_room"):
        assert alone[key] == both[key], key
    seed_dev = alone["devices"][0]
    assert seed_dev["unallocated"] > 0 and seed_dev["data_allocatable"] == 0
    # the read-only commands and the planner take the pair too, in either order
    dump = btrfsx_json("inspect", "dump-tree", "-t", "root", sprout, seed)
    assert dump["trees"]
    plan = btrfsx_json("filesystem", "plan", sprout, "--add", "1G")
    assert plan["possible"] is True
    scrub = btrfsx_json("scrub", "start", "--offline", "-r", "-B", sprout)["scrub"]
    assert scrub["status"] == "finished" and not scrub["has_uncorrectable"], scrub
    # both the seed's 100 MiB and the sprout's 50 MiB, every copy checked
    assert scrub["total"]["data_bytes_scrubbed"] == 150 * MiB, scrub["total"]
    assert scrub["total"]["csum_errors"] == scrub["total"]["super_errors"] == 0, scrub
    with fsutil.mounted([sprout], options=f"device={seed}") as mnt:
        mounted = btrfsx_json("filesystem", "usage", mnt)
        assert [d["seed"] for d in mounted["devices"]] == [True, False]
        assert mounted["free_estimated"] == alone["free_estimated"]
        written = fill_with_data(mnt)
    assert abs(written - alone["free_estimated"]) <= 0.01 * written, (written, alone)
    oracle.run_progs(["check", "--readonly", sprout])
    # a seed of another filesystem is refused, naming both
    other = loopdevs(1, size="512M").devs[0]
    fsutil.mkfs([other])
    fsutil.run(["btrfstune", "-S", "1", other])
    rc, _, err = run_btrfsx("filesystem", "usage", sprout, other, check=1)
    assert "belongs to seed filesystem" in err and "which is not a seed of" in err, err


def test_degraded_read_only_commands(tmp_path, run_btrfsx, btrfsx_json, loopdevs):
    """Issue 30: a raid1 with one member gone. dump-tree (even -t root) was
    refused though every tree has a copy left. Now each read-only command
    works with one warning, and dump-tree shows the trees btrfs-progs shows."""
    loops = loopdevs(2, size="512M")
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    with fsutil.mounted(loops.devs) as mnt:
        manifest = fsutil.fill_files(mnt, big_files=2, big_size=4 * MiB, small_files=40)
    images = loops.images
    loops.detach()
    gone = tmp_path / "elsewhere"
    gone.mkdir()
    os.rename(images[1], gone / "member2.img")
    warning = "filesystem is degraded: devid 2 missing"
    for args in (["inspect", "dump-tree", "-t", "root"], ["inspect", "dump-tree"],
                 ["filesystem", "usage"], ["filesystem", "misplaced"],
                 ["scrub", "start", "--offline", "-r", "-B"]):
        rc, out, err = run_btrfsx(*args, images[0], check=False)
        assert rc == 0 and out, (args, rc, err)
        lines = [w for w in err.splitlines() if "warning" in w]
        assert lines and warning in lines[0], (args, err)
        # one warning: scrub says besides which copies it could not check
        assert len(lines) == (2 if args[0] == "scrub" else 1), (args, err)
    ours = btrfsx_json("inspect", "dump-tree", "-t", "root", images[0])
    progs = oracle.progs_dump_tree_keys([str(images[0])], "root")
    assert {(i["key"]["objectid"], i["key"]["type"], i["key"]["offset"])
            for b in ours["trees"][0]["blocks"] for i in b["items"]} == set(progs)
    name, meta = next((n, m) for n, m in manifest.items() if m.get("size", 0) >= MiB)
    data = subprocess.run([fsutil.btrfsx_path(), "inspect", "read-file", name, str(images[0])],
                          capture_output=True, check=True).stdout
    assert hashlib.sha256(data).hexdigest() == meta["sha256"]
    # an image set finds its member beside the named one; a plan refuses without it
    rc, _, err = run_btrfsx("filesystem", "plan", images[0], "--add", "300M", "--remove", "2",
                            check=1)
    assert "devid 2 is missing (not named, and not found" in err and "name it" in err, err
    os.rename(gone / "member2.img", images[1])
    doc = btrfsx_json("filesystem", "usage", images[0])
    assert "warnings" not in doc and not any(d["missing"] for d in doc["devices"])
    plan = btrfsx_json("filesystem", "plan", images[0], "--add", "300M", "--remove", "2")
    assert plan["possible"] is True and plan["before"]["data_profile"] == "raid1"


def test_unmounted_views_say_whether_the_kernel_honours_hints(images, run_btrfsx, btrfsx_json,
                                                               tmp_path):
    """Unmounted, the model honours the stored hints (the kernel that mounts
    it next is assumed to): usage and misplaced now also say whether the
    running one does, from a mounted btrfs's devinfo files or the kernel's
    symbols (the host's ignores them); a fake sysfs with hint files says yes."""
    imgs = [str(p) for p in images(["512M"] * 2)]
    fsutil.mkfs(imgs, data="raid1", metadata="raid1")
    doc = btrfsx_json("filesystem", "usage", *imgs)
    assert doc["model"]["kernel_honours_hints"] is None      # no hint set: not asked
    run_btrfsx("property", "set", imgs[0], "allocation_hint", "metadata_preferred")
    doc = btrfsx_json("filesystem", "usage", *imgs)
    assert doc["model"]["hints_honoured"] is True
    assert doc["model"]["kernel_honours_hints"] is False
    rc, out, _ = run_btrfsx("filesystem", "usage", *imgs)
    assert "hints honoured, which the running kernel does not)" in out, out
    report = btrfsx_json("filesystem", "misplaced", *imgs, check=False)["misplaced"]
    assert (report["hints_effective"], report["kernel_honours_hints"]) == (True, False)
    fake = tmp_path / "sys" / "fs" / "btrfs" / "0a" / "devinfo" / "1"
    fake.mkdir(parents=True)
    (fake / "allocation_hint").write_text("DATA_PREFERRED\n")
    doc = btrfsx_json("filesystem", "usage", *imgs,
                      env={"BTRFSX_SYSFS_ROOT": str(tmp_path / "sys")})
    assert doc["model"]["kernel_honours_hints"] is True
