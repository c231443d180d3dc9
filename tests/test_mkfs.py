# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx mkfs on real loop devices: every profile and checksum that
mkfs.btrfs accepts on the same devices (btrfs check 6.19, kernel mount,
files written and read back, check again), chunk placement by allocation
hints as btrfs-progs reads it, the trees and item types mkfs.btrfs 6.19
writes (its defaults: block-group-tree), RAID5/6
parity, refusals that write nothing, and a crash after every single write."""
from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from helpers import crashutil
from helpers import fsutil
from helpers import oracle
from helpers import progs_619

pytestmark = pytest.mark.root

MiB = fsutil.MiB
SIZE = "256M"
PROFILES = ["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5",
            "raid6"]
CSUMS = ["crc32c", "xxhash", "sha256", "blake2"]
METADATA_ALLOWED = {"data_preferred", "metadata_preferred", "metadata_only", "none"}
DATA_ALLOWED = {"data_preferred", "metadata_preferred", "data_only", "none"}


# ---------------------------------------------------------------- helpers

def btrfsx_mkfs(run_btrfsx, *args, check=True, env=None):
    return run_btrfsx("mkfs", *args, check=check, env=env)


def mkfs_json(btrfsx_json, *args, env=None):
    return btrfsx_json("mkfs", *args, env=env)


def progs_accepts(devs, data, metadata, csum) -> bool:
    p = subprocess.run(["mkfs.btrfs", "-f", "-q", "-K", "-d", data, "-m", metadata,
                        "--csum", csum, *devs], capture_output=True, text=True)
    return p.returncode == 0


def progs_check(devs):
    return progs_619.check(devs)


def old_fs_check(devs):
    """btrfs check of an old filesystem mkfs.btrfs 6.2 made: its own (6.2's).
    6.19's flags every such filesystem: 6.2's mkfs leaves the free space tree
    entries of the temporary chunks it removed ("Space key logical 1048576
    length 4194304 has no corresponding block group")."""
    p = subprocess.run(["btrfs", "check", "--readonly", devs[0]], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def forget(devs):
    for d in devs:
        subprocess.run(["btrfs", "device", "scan", "--forget", d], capture_output=True)


def mount_write_read(devs, scrub=False):
    """Mount, (scrub), write files, unmount, mount again and read them back."""
    with fsutil.mounted(devs) as mnt:
        if scrub:
            p = subprocess.run(["btrfs", "scrub", "start", "-B", str(mnt)],
                               capture_output=True, text=True)
            assert p.returncode == 0 and "no errors found" in p.stdout, p.stdout + p.stderr
        manifest = fsutil.fill_files(mnt, big_files=1, big_size=2 * MiB, small_files=8,
                                     nodatasum_size=256 * 1024)
    with fsutil.mounted(devs) as mnt:
        assert fsutil.verify_manifest(mnt, manifest) == []


def types_by_tree(devs) -> dict[int, set[int]]:
    return {tree: {k[1] for k in keys}
            for tree, keys in oracle.progs_dump_tree_sections(devs).items()}


def super_fields(dev, names):
    sb = oracle.progs_dump_super(dev)
    return {n: sb[n] for n in names}


# ---------------------------------------------------------------- profiles x checksums

MATRIX = [(p, c) for p in PROFILES for c in CSUMS]


@pytest.mark.parametrize("profile,csum", MATRIX, ids=[f"{p}-{c}" for p, c in MATRIX])
def test_profile_and_checksum(loopdevs, run_btrfsx, btrfsx_json, profile, csum):
    ndevs = fsutil.PROFILE_NICE_DEVS[profile]
    loops = loopdevs(ndevs, size=SIZE)
    devs = loops.devs
    if not progs_accepts(devs, profile, profile, csum):
        pytest.skip(f"mkfs.btrfs refuses {profile}/{csum} on {ndevs} devices")
    doc = mkfs_json(btrfsx_json, "-f", "-q", "-d", profile, "-m", profile, "--csum", csum,
                    *devs)
    assert [bg["profile"] for bg in doc["block_groups"]] == [profile] * 3
    assert doc["filesystem"]["checksum"] == {"xxhash": "xxhash64", "blake2": "blake2b"}.get(
        csum, csum)
    sb = oracle.progs_dump_super(devs[0])
    assert int(sb["csum_type"].split()[0]) == CSUMS.index(csum)
    assert int(sb["num_devices"]) == ndevs
    progs_check(devs)
    # The kernel: every profile with crc32c, the other checksums on a rotating subset.
    if csum == "crc32c" or PROFILES.index(profile) % 3 == CSUMS.index(csum) - 1:
        mount_write_read(devs, scrub=profile in ("raid5", "raid6"))
        progs_check(devs)


def gf_mul2_table():
    return bytes(((x << 1) ^ (0x1d if x & 0x80 else 0)) & 0xff for x in range(256))


def xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).to_bytes(len(a), "little")


@pytest.mark.parametrize("profile,ndevs", [("raid5", 3), ("raid6", 4), ("raid6", 3)])
def test_raid56_parity(loopdevs, btrfsx_json, profile, ndevs):
    """The rows holding tree blocks carry P (and Q) of their data stripes."""
    loops = loopdevs(ndevs, size=SIZE)
    doc = mkfs_json(btrfsx_json, "-q", "-d", profile, "-m", profile, *loops.devs)
    mul2 = gf_mul2_table()
    stripe = 64 * 1024
    nparity = 1 if profile == "raid5" else 2
    for bg in doc["block_groups"][:2]:
        st = bg["stripes"]
        n = len(st)
        nd = n - nparity
        rows = bg["used"] // (stripe * nd) + 1
        for r in range(rows):
            def read(i):
                with open(loops.devs[st[(r + i) % n]["devid"] - 1], "rb") as f:
                    f.seek(st[(r + i) % n]["physical"] + r * stripe)
                    return f.read(stripe)
            data = [read(i) for i in range(nd)]
            if r == 0:
                assert any(data), "no tree blocks in row 0"
            p = bytes(stripe)
            q = bytes(stripe)
            for d in reversed(data):
                p = xor(p, d)
                q = xor(q.translate(mul2), d)
            assert read(nd) == p, (bg["type"], r, "P")
            if nparity == 2:
                assert read(nd + 1) == q, (bg["type"], r, "Q")


# ---------------------------------------------------------------- what is written

OPTION_SETS = {
    # name: (ndevs, btrfsx options, mkfs.btrfs 6.19 options)
    "default": (1, [], []),
    "no-bgt": (1, ["-O", "^block-group-tree"], ["-O", "^block-group-tree"]),
    "raid1-two": (2, ["-m", "raid1", "-d", "raid1"], ["-m", "raid1", "-d", "raid1"]),
    "old-format": (1, ["-O", "^skinny-metadata,^no-holes,^free-space-tree"],
                   ["-O", "^skinny-metadata,^no-holes,^free-space-tree"]),
    "quota": (1, ["-O", "quota"], ["-O", "quota"]),
    "squota": (1, ["-O", "squota"], ["-O", "squota"]),
    "raid1c3-sha256": (3, ["-m", "raid1c3", "-d", "raid10", "--csum", "sha256"],
                       ["-m", "raid1c3", "-d", "raid10", "--csum", "sha256"]),
}
SB_FIELDS = ["incompat_flags", "compat_ro_flags", "compat_flags", "csum_type", "nodesize",
             "sectorsize", "stripesize", "num_devices", "root_dir", "flags", "cache_generation"]


@pytest.mark.parametrize("name", sorted(OPTION_SETS))
def test_trees_and_items_like_mkfs_btrfs(loopdevs, run_btrfsx, name):
    ndevs, ours, theirs = OPTION_SETS[name]
    loops = loopdevs(ndevs, size=SIZE)
    devs = loops.devs
    progs_619.mkfs(devs, *theirs)
    with oracle.using_progs(progs_619.bindir() / "btrfs"):
        progs_types = types_by_tree(devs)
        progs_sb = super_fields(devs[0], SB_FIELDS)
        btrfsx_mkfs(run_btrfsx, "-f", "-q", *ours, *devs)
        assert types_by_tree(devs) == progs_types
        assert super_fields(devs[0], SB_FIELDS) == progs_sb
    out = progs_check(devs)
    if "quota" in name:
        assert "checking quota groups\n" in out and "not enabled" not in out
    mount_write_read(devs)
    progs_check(devs)


@pytest.mark.parametrize("options, want, warning", [
    ([], {"block-group-tree", "free-space-tree", "no-holes"}, None),
    (["-O", "^bgt"], {"free-space-tree", "no-holes"}, None),
    (["-O", "^no-holes"], {"free-space-tree"}, "block-group-tree is off"),
    (["-R", "^free-space-tree"], {"no-holes"}, "block-group-tree is off"),
    (["-O", "quota,squota"], {"block-group-tree", "squota"}, None),
])
def test_feature_defaults_as_mkfs_btrfs_6_19(run_btrfsx, btrfsx_json, tmp_path, options, want,
                                             warning):
    """block-group-tree by default; it needs no-holes and the free space tree,
    and goes (with a warning) when one of them is turned off; squota is the
    quota tree in simple mode."""
    image = tmp_path / "fs.img"
    doc = btrfsx_json("mkfs", "-q", "-b", "256M", *options, image)
    got = set(doc["filesystem"]["features"])
    assert want <= got and not ({"block-group-tree", "squota", "quota"} - want) & got, got
    assert (warning is None) == ("warnings" not in doc), doc.get("warnings")
    if warning:
        assert any(warning in w for w in doc["warnings"]), doc["warnings"]
    sb = btrfsx_json("inspect", "dump-super", image)["superblock"]
    assert bool(sb["compat_ro_flags"] & 8) == ("block-group-tree" in want)
    assert bool(sb["incompat_flags"] & (1 << 16)) == ("squota" in want)


def test_block_group_tree_refused_without_what_it_needs(run_btrfsx, tmp_path):
    image = tmp_path / "fs.img"
    _, out, err = run_btrfsx("mkfs", "-b", "256M", "-O", "bgt,^free-space-tree", image, check=2)
    assert "block-group-tree needs no-holes and free-space-tree" in err
    assert not image.exists()


def test_block_group_and_device_accounting(loopdevs, btrfsx_json):
    """Block group items, device extents and device items agree with what was placed."""
    loops = loopdevs(3, size=SIZE)
    doc = mkfs_json(btrfsx_json, "-q", "-m", "raid1", "-d", "raid0", *loops.devs)
    chunks = {c["logical"]: c for c in oracle.progs_chunks(loops.devs)}
    assert sorted(chunks) == [bg["logical"] for bg in doc["block_groups"]]
    for bg in doc["block_groups"]:
        c = chunks[bg["logical"]]
        assert c["length"] == bg["size"]
        assert [(s[0], s[1]) for s in c["stripes"]] == \
            [(s["devid"], s["physical"]) for s in bg["stripes"]]
    items = oracle.progs_dev_items(loops.devs)
    for d in doc["devices"]:
        assert items[d["devid"]]["bytes_used"] == d["allocated"] == \
            sum(c["length"] for c in d["chunks"])
        assert items[d["devid"]]["total_bytes"] == d["size"]
    tree_blocks = sum(t["blocks"] for t in doc["trees"]) * doc["filesystem"]["nodesize"]
    assert int(oracle.progs_dump_super(loops.devs[0])["bytes_used"]) == tree_blocks


def test_multi_level_trees(loopdevs, btrfsx_json):
    """4 KiB nodes and 18 devices: the chunk tree needs more than one leaf."""
    loops = loopdevs(18, size="48M")
    doc = mkfs_json(btrfsx_json, "-q", "-n", "4096", "-d", "raid0", "-m", "raid0",
                    "-O", "^skinny-metadata", *loops.devs)
    levels = {t["name"]: t["level"] for t in doc["trees"]}
    assert levels["chunk"] >= 1
    progs_check(loops.devs)
    mount_write_read(loops.devs)
    progs_check(loops.devs)


@pytest.mark.parametrize("extra", [["-n", "4096"], ["-n", "65536", "-O", "quota"],
                                   ["-n", "8k", "-s", "4k", "-L", "a label"]],
                         ids=["4k-nodes", "64k-nodes-quota", "8k-label"])
def test_node_sizes_and_label(loopdevs, btrfsx_json, extra):
    loops = loopdevs(1, size=SIZE)
    doc = mkfs_json(btrfsx_json, "-q", *extra, loops.devs[0])
    sb = oracle.progs_dump_super(loops.devs[0])
    assert int(sb["nodesize"]) == doc["filesystem"]["nodesize"]
    if "-L" in extra:
        assert sb["label"] == "a label" == doc["filesystem"]["label"]
    progs_check(loops.devs)
    mount_write_read(loops.devs)
    progs_check(loops.devs)


# ---------------------------------------------------------------- hints

def hint_of(doc, devid):
    return next(d["hint"] for d in doc["devices"] if d["devid"] == devid)


@pytest.mark.parametrize("layout,meta,data", [
    (["monly", "monly", "donly", "donly"], "raid1", "raid1"),
    (["metadata_only", "data_only", "data_only"], "dup", "raid0"),
    (["m", "d", "donly", "none"], "raid1", "single"),
    (["METADATA_ONLY", "donly", "donly", "donly"], "dup", "raid5"),
    (["none", "monly", "", "m"], "raid1c3", "raid10"),
], ids=["ssd-pair", "one-ssd-dup", "preferred", "raid5-data", "mixed-raid1c3"])
def test_hints_place_chunks(loopdevs, btrfsx_json, layout, meta, data):
    loops = loopdevs(len(layout), size=SIZE)
    args = [d + (f":{h}" if h else "") for d, h in zip(loops.devs, layout)]
    doc = mkfs_json(btrfsx_json, "-q", "-m", meta, "-d", data, *args)
    hints = {d["devid"]: d["hint"] for d in doc["devices"]}
    # As btrfs-progs reads the chunk tree: metadata and system stripes only on
    # devices that allow metadata, data only on devices that allow data.
    for c in oracle.progs_chunks(loops.devs):
        kinds = c["type"].split("|")[0]
        allowed = DATA_ALLOWED if kinds == "DATA" else METADATA_ALLOWED
        for devid, _, _ in c["stripes"]:
            assert hints[devid] in allowed, (c["type"], devid, hints[devid])
        # The first tier first: a *_only device of the chunk's kind is always used.
        only = "data_only" if kinds == "DATA" else "metadata_only"
        if only in hints.values():
            assert any(hints[s[0]] == only for s in c["stripes"]), (c["type"], c["stripes"])
    # The device items (chunk tree) and every superblock copy carry the hints.
    names = ["data_preferred", "metadata_preferred", "metadata_only", "data_only", "none"]
    items = oracle.progs_dev_items(loops.devs)
    for devid, name in hints.items():
        assert items[devid]["type"] == names.index(name)
        copies = oracle.progs_dump_super(loops.devs[devid - 1], all=True)
        assert {int(c["dev_item.type"]) for c in copies.values()} == {names.index(name)}
    progs_check(loops.devs)
    mount_write_read(loops.devs)
    progs_check(loops.devs)


def test_hints_text_output(loopdevs, run_btrfsx):
    loops = loopdevs(3, size=SIZE)
    rc, out, err = btrfsx_mkfs(run_btrfsx, "-m", "dup", f"{loops.devs[0]}:monly",
                               f"{loops.devs[1]}:donly", f"{loops.devs[2]}:donly")
    assert f"path {loops.devs[0]} allocation_hint metadata_only" in out
    assert f"path {loops.devs[1]} allocation_hint data_only" in out
    dev0 = out.split(f"path {loops.devs[0]}")[1].split("devid 2")[0]
    assert "chunk system profile dup" in dev0 and "chunk metadata profile dup" in dev0
    assert "chunk data" not in dev0
    assert "type data profile single" in out and "number_of_devices" in out
    # Default metadata with one device that takes it: dup, not raid1.
    rc, out, err = btrfsx_mkfs(run_btrfsx, "-f", f"{loops.devs[0]}:monly",
                               f"{loops.devs[1]}:donly")
    assert "type metadata profile dup" in out


def test_fallback_warning_says_what_happens(images, btrfsx_json):
    """Issue 39, defect 3: two small metadata_only devices and three larger
    data_preferred ones, raid1c3 metadata: the allocator takes whole tiers until
    it has three devices, then picks by free space, so no metadata or system
    stripe lands on a metadata_only device. The warning says so, and why."""
    imgs = images(["512M", "512M", "1G", "1G", "1G"])
    doc = mkfs_json(btrfsx_json, "-q", "-m", "raid1c3", "-d", "raid1",
                    f"{imgs[0]}:monly", f"{imgs[1]}:monly", *map(str, imgs[2:]))
    for bg in doc["block_groups"]:
        if bg["type"] in ("system", "metadata"):
            assert bg["fallback"] is True
            assert {s["devid"] for s in bg["stripes"]} == {3, 4, 5}, bg
    warnings = [w for w in doc["warnings"] if "raid1c3" in w]
    assert len(warnings) == 2, doc["warnings"]
    for kind, warning in zip(("system", "metadata"), warnings):
        assert warning.startswith(f"the raid1c3 {kind} chunk uses none of the 2 "
                                  "metadata_only devices: they are 2 and raid1c3 needs 3 "
                                  "devices;"), warning
        assert "whole preference tiers" in warning and "3 data_preferred devices" in warning
        assert "by free space alone" in warning
    page = (Path(__file__).resolve().parent.parent / "Documentation" /
            "btrfsx-mkfs.adoc").read_text()
    assert "none of the metadata_only devices" in " ".join(page.split())


def test_no_hints_default_profiles(loopdevs, btrfsx_json):
    loops = loopdevs(2, size=SIZE)
    doc = mkfs_json(btrfsx_json, "-q", *loops.devs)
    assert [bg["profile"] for bg in doc["block_groups"]] == ["raid1", "raid1", "single"]
    assert all(d["hint"] == "data_preferred" for d in doc["devices"])
    assert not any(bg["fallback"] for bg in doc["block_groups"])


# ---------------------------------------------------------------- refusals

def refused(run_btrfsx, images, *args, msg, rc=1):
    before = fsutil.images_state(images)
    _, out, err = btrfsx_mkfs(run_btrfsx, *args, check=rc)
    assert msg in err, err
    assert fsutil.images_state(images) == before
    return err


def test_refuse_existing_filesystem(loopdevs, run_btrfsx):
    loops = loopdevs(2, size=SIZE)
    fsutil.mkfs(loops.devs[1:], data="single", metadata="dup")
    refused(run_btrfsx, loops.images, *loops.devs, msg="holds a btrfs signature; use -f")
    run_btrfsx("mkfs", "-q", "-f", *loops.devs)
    progs_check(loops.devs)


def test_refuse_mounted_and_busy(loopdevs, run_btrfsx):
    loops = loopdevs(3, size=SIZE)
    fsutil.mkfs(loops.devs[:2], data="single", metadata="raid1")
    with fsutil.mounted(loops.devs[:2]) as mnt:
        # mountinfo names one member; the kernel holds both exclusively.
        # "May I write" asks the real kernel: a test's sysfs tree cannot hide the mount.
        fake = {"BTRFSX_SYSFS_ROOT": "/nonexistent"}
        for member, env in ((loops.devs[0], None), (loops.devs[1], None), (loops.devs[1], fake)):
            before = fsutil.images_state(loops.images[2:])
            _, out, err = btrfsx_mkfs(run_btrfsx, "-f", loops.devs[2], member, check=1, env=env)
            assert f"is mounted at {mnt}" in err or f"member of the filesystem mounted at {mnt}" \
                in err, err
            assert fsutil.images_state(loops.images[2:]) == before
    fd = os.open(loops.devs[2], os.O_RDONLY | os.O_EXCL)
    try:
        refused(run_btrfsx, loops.images, "-f", loops.devs[0], loops.devs[2],
                msg=f"is in use by pid {os.getpid()} (")
    finally:
        os.close(fd)


def test_refuse_bad_input(loopdevs, run_btrfsx, tmp_path):
    loops = loopdevs(3, size=SIZE)
    d = loops.devs
    imgs = loops.images
    err = refused(run_btrfsx, imgs, f"{d[0]}:fast", d[1], msg="unknown allocation hint 'fast'", rc=2)
    assert "metadata_only" in err and "monly" in err
    refused(run_btrfsx, imgs, "-O", "bogus", d[0], msg="unknown feature 'bogus'", rc=2)
    refused(run_btrfsx, imgs, "-O", "mixed-bg", d[0], msg="'mixed-bg' is not supported", rc=2)
    refused(run_btrfsx, imgs, "-d", "raid7", d[0], msg="unknown profile 'raid7'", rc=2)
    refused(run_btrfsx, imgs, "--csum", "md5", d[0], msg="unknown checksum 'md5'", rc=2)
    refused(run_btrfsx, imgs, "-n", "12k", d[0], msg="invalid node size 12288", rc=2)
    refused(run_btrfsx, imgs, "-s", "8k", "-n", "4k", d[0], msg="invalid node size 4096", rc=2)
    refused(run_btrfsx, imgs, "-s", "2k", d[0], msg="invalid sector size 2048", rc=2)
    refused(run_btrfsx, imgs, d[0], d[1], d[0], msg="named twice")
    alias = tmp_path / "alias"
    alias.symlink_to(d[0])
    refused(run_btrfsx, imgs, f"{d[0]}:m", alias, msg="named twice")
    refused(run_btrfsx, imgs, "-m", "raid1", d[0], msg="raid1 metadata needs at least 2 devices",
            rc=2)
    refused(run_btrfsx, imgs, "--bogus", d[0], msg="unknown option '--bogus'", rc=2)
    refused(run_btrfsx, imgs, msg="no device given", rc=2)
    # An image file attached to a loop device is written through the loop device only.
    refused(run_btrfsx, imgs, str(imgs[0]), msg=f"attached to {d[0]}")


def test_refuse_unsatisfiable_hints(loopdevs, run_btrfsx):
    loops = loopdevs(3, size=SIZE)
    d = loops.devs
    err = refused(run_btrfsx, loops.images, "-m", "raid1", f"{d[0]}:monly", f"{d[1]}:donly",
                  f"{d[2]}:donly", msg="raid1 metadata needs 2 devices that allow metadata",
                  rc=2)
    assert "leave 1" in err
    refused(run_btrfsx, loops.images, "-d", "raid1", f"{d[0]}:monly", f"{d[1]}:monly",
            f"{d[2]}:donly", msg="raid1 data needs 2 devices that allow data", rc=2)
    refused(run_btrfsx, loops.images, "-m", "dup", "-d", "single", f"{d[0]}:monly",
            f"{d[1]}:monly", msg="single data needs 1 device that allows data", rc=2)


def test_profile_too_few_devices_is_a_usage_error(run_btrfsx, tmp_path):
    """Issue 39, defect 8: a profile the number of devices (or their hints) cannot hold is
    refused from the arguments alone, so it is a usage error (exit 2, btrfsx(8)'s rule),
    before any device is looked at: the image named is not even created."""
    one = tmp_path / "one.img"
    _, _, err = btrfsx_mkfs(run_btrfsx, "-d", "raid5", "-b", "1G", one, check=2)
    assert "raid5 data needs at least 2 devices, 1 given" in err, err
    assert not one.exists()


def test_refuse_too_small(loopdevs, run_btrfsx, tmp_path):
    loops = loopdevs(2, sizes=["256M", "17M"])
    # The 17 MiB device takes the raid1 system chunk and has no room for metadata.
    refused(run_btrfsx, loops.images, "-m", "raid1", *loops.devs, msg="too small for the profile")
    small = tmp_path / "small.img"
    small.write_bytes(bytes(8 * MiB))
    refused(run_btrfsx, [small], str(small), msg="too small")
    refused(run_btrfsx, loops.images, "-b", "1G", loops.devs[0], msg="larger than the device")


def test_refuse_duplicate_uuid(loopdevs, run_btrfsx):
    loops = loopdevs(2, size=SIZE)
    fsid = fsutil.mkfs(loops.devs[:1], data="single", metadata="dup")
    refused(run_btrfsx, loops.images[1:], "-U", fsid, loops.devs[1], msg="already used by")
    refused(run_btrfsx, loops.images[1:], "-U", "not-a-uuid", loops.devs[1],
            msg="invalid UUID", rc=2)
    uuid = "0b5e0b5e-1234-4321-8888-0123456789ab"
    run_btrfsx("mkfs", "-q", "-U", uuid, loops.devs[1])
    assert fsutil.read_fsid(loops.devs[1]) == uuid


def test_image_files_and_byte_count(run_btrfsx, btrfsx_json, tmp_path):
    new = tmp_path / "new.img"
    doc = mkfs_json(btrfsx_json, "-q", "-b", "300M", f"{new}:m")
    assert new.stat().st_size == 300 * MiB
    assert doc["devices"][0]["hint"] == "metadata_preferred"
    assert doc["devices"][0]["size"] == 300 * MiB
    progs_check([str(new)])
    big = tmp_path / "big.img"
    with open(big, "wb") as f:
        f.truncate(1024 * MiB)
    doc = mkfs_json(btrfsx_json, "-q", "-b", "200M", big)
    assert doc["devices"][0]["size"] == 200 * MiB and big.stat().st_size == 1024 * MiB
    assert int(oracle.progs_dump_super(str(big))["total_bytes"]) == 200 * MiB
    # A refusal removes the file it created.
    other = tmp_path / "other.img"
    _, out, err = btrfsx_mkfs(run_btrfsx, "-b", "300M", other, tmp_path, check=1)
    assert "is a directory" in err and not other.exists()


# ---------------------------------------------------------------- crash safety

@pytest.mark.parametrize("ndevs,profile", [(1, "dup"), (3, "raid1"), (3, "raid5")])
def test_crash_at_every_write(loopdevs, run_btrfsx, ndevs, profile):
    """Over an old filesystem, stop after the N-th write for every N, also
    losing the writes not yet flushed (crashutil.sweep). Every state is the
    old filesystem whole (mounts, files intact, btrfs check clean) or no
    filesystem the kernel mounts (not even degraded): the new one appears
    only complete, with the run that does every write, though btrfs check
    passes on a member whose final superblock is written (its trees are all
    there). The kernel reads only primary superblocks to mount, so
    it is asked once for each combination of them."""
    loops = loopdevs(ndevs, size=SIZE)
    devs, images = loops.devs, loops.images
    old_fsid = uuid.UUID(fsutil.mkfs(devs, data="single",
                                     metadata="dup" if ndevs == 1 else "raid1")).bytes
    with fsutil.mounted(devs) as mnt:
        manifest = fsutil.fill_files(mnt, big_files=1, big_size=256 * 1024, small_files=4,
                                     nodatasum_size=4096)
    pristine = crashutil.Snapshot(images)
    kernel_asked: dict[tuple, bool] = {}
    old_states = set()

    def reset():
        forget(devs)
        pristine.restore()

    def run(env):
        rc, out, err = btrfsx_mkfs(run_btrfsx, "-f", "-q", "-m", profile, "-d", profile, *devs,
                                   check=False, env=env)
        return rc, err

    def verify(point):
        supers = tuple(crashutil.primary_super(img, old_fsid) for img in images)
        assert "new" not in supers or "unfinished" in supers, (point, supers)
        if supers == ("old",) * ndevs:
            state = tuple(fsutil.images_state(images))
            if state not in old_states:
                old_states.add(state)
                old_fs_check(devs)
                with fsutil.mounted(devs) as mnt:
                    assert not fsutil.verify_manifest(mnt, manifest), point
            return
        # The trees are complete before the first superblock is written: btrfs
        # check of a finished member passes; of an old one it may (the old
        # filesystem less its wiped members); of any other member it fails.
        p = subprocess.run(["btrfs", "check", "--readonly", devs[0]], capture_output=True)
        assert p.returncode != 0 or supers[0] in ("old", "new"), (point, supers)
        if supers not in kernel_asked:
            fsutil.device_scan(devs)
            kernel_asked[supers] = crashutil.try_mount(devs) or (
                "old" not in supers and crashutil.try_mount(devs, "degraded"))
        assert not kernel_asked[supers], (point, supers)

    tally = crashutil.sweep(reset, run, verify)
    reset()
    assert run({})[0] == 0
    fsutil.device_scan(devs)
    progs_check(devs)
    mount_write_read(devs)
    progs_check(devs)
    # Wipes, tree blocks, then three rounds of superblocks, each its own batch.
    assert len(tally.batches) == 5 and tally.writes <= 8 * ndevs + 8
    assert tally.max_unflushed > ndevs
    print(f"mkfs {ndevs} {profile}: {tally}")


# ---------------------------------------------------------------- the command line

def test_help_and_synopsis(run_btrfsx):
    rc, out, err = run_btrfsx("mkfs", "--help")
    synopsis = out.splitlines()[0].removeprefix("usage: ")
    page = Path(__file__).resolve().parent.parent / "Documentation" / "btrfsx-mkfs.adoc"
    text = page.read_text().replace("*", "").replace("_", "")
    assert synopsis in text
    rc, top, err = run_btrfsx("--help")
    assert "mkfs" in top
