# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfs-progs 6.19 as the oracle of today's filesystems (issue 32).

Filesystems its mkfs makes (block-group-tree by default, squota, the free
space tree, every profile and checksum), filled through the kernel: our
dump-tree has every key of every tree and every item value 6.19 prints, and
our dump-super every field of its. After every btrfsx write (an offline hint
set, a scrub repair, btrfsx mkfs and the kernel's writes on it) 6.19's
``btrfs check`` is clean.

Each profile is made once, the checksums in turn; BTRFSX_ORACLE_MATRIX=full
makes every profile with every checksum. 6.19 is built once per machine
(tests/helpers/progs_619.py); without its sources these tests skip and say where
they go.
"""
from __future__ import annotations

import os

import pytest

from helpers import fsutil
from helpers import item_values
from helpers import oracle
from helpers import progs_619
from helpers.fslayout import Layout, write_at

pytestmark = pytest.mark.root

PROFILES = ["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"]
CSUMS = ["crc32c", "xxhash", "sha256", "blake2"]
NDEVS = {"dup": 1, "raid1c4": 4, "raid6": 4}
TREES = ["root", "chunk", "dev", "extent", "csum", "fs", "block-group", "free-space", "uuid"]

# name -> (devices, mkfs.btrfs 6.19 options): each profile once, the
# checksums in turn (every pair with BTRFSX_ORACLE_MATRIX=full); squota; and
# the layouts without the block group tree.
FULL = os.environ.get("BTRFSX_ORACLE_MATRIX", "") == "full"
CASES = {f"{p}-{c}" if FULL else p: (NDEVS.get(p, 3), ["-d", p, "-m", p, "--csum", c])
         for i, p in enumerate(PROFILES)
         for c in (CSUMS if FULL else [CSUMS[i % len(CSUMS)]])}
CASES.update({
    "squota": (2, ["-d", "raid1", "-m", "raid1", "-O", "squota"]),
    "no-bgt": (1, ["-O", "^block-group-tree"]),
    "no-free-space-tree": (1, ["-O", "^free-space-tree"]),     # bgt goes too, with a warning
})


@pytest.fixture(scope="module")
def progs():
    return progs_619.bindir() / "btrfs"


def made_by_619(tmp_path, ndevs, args, size="512M"):
    """Images made by mkfs.btrfs 6.19 and filled through the kernel."""
    images = fsutil.make_images(tmp_path, [size] * ndevs)
    with fsutil.LoopDevices(images) as loops:
        progs_619.mkfs(loops.devs, *args)
        with fsutil.mounted(loops.devs) as mnt:
            fsutil.fill_files(mnt, big_files=2, small_files=24)
    return [str(i) for i in images]


def our_keys(btrfsx_json, devs, tree):
    doc = btrfsx_json("inspect", "dump-tree", "-t", tree, *devs)
    return [(i["key"]["objectid"], i["key"]["type"], i["key"]["offset"])
            for t in doc["trees"] for b in t["blocks"] for i in b.get("items", [])]


@pytest.mark.parametrize("name", sorted(CASES))
def test_dumps_equal_619(tmp_path, progs, btrfsx_json, name):
    ndevs, args = CASES[name]
    devs = made_by_619(tmp_path, ndevs, args)
    bgt = name not in ("no-bgt", "no-free-space-tree")
    absent = {"no-bgt": {"block-group"}, "no-free-space-tree": {"block-group", "free-space"}}
    with oracle.using_progs(progs):
        for tree in [t for t in TREES if t not in absent.get(name, ())]:
            theirs = oracle.progs_dump_tree_keys(devs, tree)
            assert our_keys(btrfsx_json, devs, tree) == theirs, f"{tree} tree differs"
        stats, failures = item_values.compare_dump(devs)
        assert not failures, (f"{len(failures)} item values differ from btrfs-progs 6.19:\n"
                              + "\n".join(failures[:40]))
        for dev in devs:
            compared, differ = oracle.super_fields_differ(
                btrfsx_json("inspect", "dump-super", dev)["superblock"],
                oracle.progs_dump_super(dev))
            assert not differ and compared >= 40, (dev, differ)
    assert stats["BLOCK_GROUP_ITEM"]
    sb = btrfsx_json("inspect", "dump-super", devs[0])["superblock"]
    assert bool(sb["compat_ro_flags"] & 8) == bgt      # BLOCK_GROUP_TREE
    if name == "squota":
        assert stats["QGROUP_STATUS"] and stats["inline EXTENT_OWNER_REF"], dict(stats)


@pytest.mark.parametrize("name", ["squota", "raid1" if not FULL else "raid1-xxhash"])
def test_check_619_clean_after_offline_hint_set_and_scrub_repair(tmp_path, progs, run_btrfsx,
                                                                 btrfsx_json, name):
    ndevs, args = CASES[name]
    images = made_by_619(tmp_path, ndevs, args)
    env = {"BTRFSX_STATE_DIR": str(tmp_path / "state")}
    with fsutil.LoopDevices(images) as loops:   # a member's device finds the others
        run_btrfsx("property", "set", loops.devs[0], "allocation_hint", "metadata_preferred")
    progs_619.check(images)
    # A data sector of one copy overwritten: the scrub rewrites it from the other.
    with oracle.using_progs(progs):
        lay = Layout(images, btrfsx_json)
    _, image, physical = lay.copies(lay.extent_of("big0.bin")[0])[0]
    write_at(image, physical, b"\xaa" * 4096)
    doc = btrfsx_json("scrub", "start", "--offline", "-B", *images, env=env)["scrub"]
    assert doc["total"]["corrected_errors"] == 1, doc["total"]
    progs_619.check(images)


@pytest.mark.parametrize("features", [[], ["-O", "squota"], ["-O", "^block-group-tree"]],
                         ids=["default", "squota", "no-bgt"])
def test_check_619_clean_after_btrfsx_mkfs_and_kernel_writes(loopdevs, run_btrfsx, btrfsx_json,
                                                            features):
    loops = loopdevs(2, size="512M")
    doc = btrfsx_json("mkfs", "-q", "-m", "raid1", "-d", "raid1", *features, *loops.devs)
    got = set(doc["filesystem"]["features"])
    assert ("block-group-tree" in got) == ("^block-group-tree" not in features), got
    assert ("squota" in got) == ("squota" in features), got
    progs_619.check(loops.devs)
    with fsutil.mounted(loops.devs) as mnt:
        fsutil.fill_files(mnt, big_files=2, small_files=24)
    out = progs_619.check(loops.devs)
    if "squota" in features:
        assert "checking quota groups\n" in out, out
