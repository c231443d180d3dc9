# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx on btrfs-progs' own test images (tests/progs-images/README.md):
superblocks btrfs-progs refuses, a bad tree root, a partially dropped
snapshot; btrfs-progs 6.2 is the oracle where it reads the image."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from helpers import fsutil
from helpers import oracle
from helpers.base_images import bximage  # the fuzzing tools' checksums

IMAGES = Path(__file__).resolve().parent / "progs-images"


def image(name: str, tmp_path: Path) -> Path:
    """The image uncompressed (or restored from a btrfs-image dump) in tmp_path."""
    src = IMAGES / name
    out = tmp_path / src.name.removesuffix(".xz").removesuffix(".img")
    if src.name.endswith(".xz"):
        # sparse: some are 2 GiB of mostly zeros
        subprocess.run(f"xz -dc '{src}' | dd of='{out}' bs=1M conv=sparse status=none",
                       shell=True, check=True)
    else:
        fsutil.run(["btrfs-image", "-r", str(src), str(out)])
    return out


@pytest.mark.parametrize("name, message", [
    ("superblock-stripsize-bogus.raw.xz", "invalid stripe size 593920"),
    ("superblock-total-bytes-0.raw.xz", "invalid total_bytes 0"),
    ("sys-array-num-stripes-0.raw.xz", "system chunk at logical 0 has no stripes"),
])
def test_superblocks_btrfs_progs_refuses(run_btrfsx, tmp_path, name, message):
    """Every reader refuses them, naming the image and the reason."""
    img = image(name, tmp_path)
    for args in (["filesystem", "show"], ["filesystem", "usage"], ["inspect", "dump-tree"]):
        rc, out, err = run_btrfsx(*args, img, check=1)
        assert f"{img}: {message}" in err, (args, err)


def test_num_devices_must_match_the_device_items(run_btrfsx, tmp_path):
    """num_devices 8 in the superblock, one DEV_ITEM: refused like the kernel does."""
    img = tmp_path / "one.img"
    with open(img, "wb") as f:
        f.truncate(300 << 20)
    fsutil.run(["mkfs.btrfs", "-q", str(img)])
    data = bytearray(img.read_bytes()[0x10000:0x11000])
    struct.pack_into("<Q", data, 0x88, 8)                   # num_devices
    data[:32] = bximage.csum(0, bytes(data[32:]))
    with open(img, "r+b") as f:
        f.seek(0x10000)
        f.write(data)
    rc, out, err = run_btrfsx("filesystem", "show", img, check=1)
    assert "the superblock counts 8 devices, the chunk tree has 1 device items" in err


def test_dump_super_all_lists_invalid_copies(run_btrfsx, tmp_path):
    """No valid copy: every copy is still listed with its status, and exit 1."""
    img = image("bad-superblock-1.raw.xz", tmp_path)
    rc, out, err = run_btrfsx("--format", "json", "inspect", "dump-super", "-a", img, check=1)
    doc = json.loads(out)
    assert [c["status"] for c in doc["superblocks"]] == \
        ["checksum mismatch", "beyond the end of the device", "beyond the end of the device"]
    assert doc["superblocks"][0]["bytenr"] == 65536
    assert "no valid superblock copy" in doc["error"]["message"]


def test_dump_tree_goes_on_after_a_bad_root(run_btrfsx, btrfsx_json, tmp_path):
    """bko-155551: the extent tree's root is bad; the other trees are printed, as
    btrfs-progs prints them."""
    img = image("bko-155551-unaligned-tree-block.raw.xz", tmp_path)
    doc = btrfsx_json("inspect", "dump-tree", img, check=1)
    trees = {t["tree"]: t for t in doc["trees"]}
    assert trees["extent"]["blocks"] == [{"bad_block": trees["extent"]["root"],
                                          "error": trees["extent"]["blocks"][0]["error"]}]
    progs = subprocess.run(["btrfs", "inspect-internal", "dump-tree", str(img)],
                           capture_output=True, text=True).stdout
    for name, heading in (("dev", "device tree"), ("fs", "fs tree"), ("csum", "checksum tree"),
                          ("data-reloc", "data reloc tree")):
        assert heading in progs and trees[name]["blocks"], name


def test_dump_tree_of_a_partially_dropped_snapshot(run_btrfsx, btrfsx_json, tmp_path):
    """fsck-tests 021 (valid, btrfs check passes): the blocks left of drop_progress
    were freed by the deletion; they are listed as dropped, not read as bad."""
    img = image("fsck-021-dropped-snapshot.img", tmp_path)
    oracle.run_progs(["check", "--readonly", str(img)])
    doc = btrfsx_json("inspect", "dump-tree", img)
    snap = next(t for t in doc["trees"] if t["objectid"] == 258)
    dropped = [b["dropped_block"] for b in snap["blocks"] if "dropped_block" in b]
    assert dropped == [29917184]
    assert not any("bad_block" in b for t in doc["trees"] for b in t["blocks"])


def test_usage_messages_name_the_image_and_the_tree(run_btrfsx, tmp_path):
    img = image("bko-155551-unaligned-tree-block.raw.xz", tmp_path)
    rc, out, err = run_btrfsx("filesystem", "usage", img, check=1)
    assert err.startswith(f"btrfsx: {img}: ") and "the extent tree (2)" in err, err


@pytest.mark.parametrize("pair", [(5, 6), (8, 7)])
def test_interrupted_metadata_uuid_change(run_btrfsx, btrfsx_json, tmp_path, pair):
    """misc-tests 034: a member still flagged CHANGING_FSID_V2 carries the old fsid
    but the same metadata identity; it belongs to the filesystem, whose fsid is
    the newest superblock's (btrfs-progs' dump-super says which)."""
    imgs = [image(f"misc-034-disk{i}.raw.xz", tmp_path) for i in pair]
    supers = [oracle.progs_dump_super(img) for img in imgs]
    newest = max(supers, key=lambda sb: int(sb["generation"]))
    fs, = btrfsx_json("filesystem", "show", *imgs)["filesystems"]
    assert fs["fsid"] == newest["fsid"] and fs["num_devices"] == 2
    assert sorted(d["device"] for d in fs["devices"]) == sorted(map(str, imgs))
    run_btrfsx("inspect", "dump-tree", *imgs)
