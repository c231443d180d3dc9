# SPDX-License-Identifier: GPL-2.0-or-later
"""Format features btrfsx does not know (issue 32): a filesystem with an
incompat feature it does not read (an unknown bit, or one it knows by name
but does not read, like Linux 7.0's remap tree) is refused by every command
that reads its trees, naming the bit; one with an unknown compat_ro feature
is read, but every command that would write to it refuses. What reads a
superblock only (dump-super, property get) still works, and nothing is
written.

Every superblock copy of every member gets the bit, with a valid checksum,
as a newer kernel would write it."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from helpers import fsutil

pytestmark = pytest.mark.root

SUPER_COPIES = (64 << 10, 64 << 20, 256 << 30)
COMPAT_RO_AT, INCOMPAT_AT = 180, 188      # byte offsets in struct btrfs_super_block
MAGIC = b"_BHRfS_M"

# Commands that read the trees of an unmounted filesystem ({I}: the images).
READERS = [
    ("filesystem", "usage", "{I}"),
    ("filesystem", "misplaced", "{I}"),
    ("filesystem", "plan", "{I}", "--add", "1G"),
    ("filesystem", "show", "{I}"),
    ("device", "usage", "{I}"),
    ("inspect", "dump-tree", "{I}"),
    ("inspect", "read-file", "f", "{I}"),
    ("scrub", "start", "--offline", "-B", "-r", "{I}"),
]
# Commands that read a superblock only: they still work.
SUPER_ONLY = [
    ("inspect", "dump-super", "{0}"),
    ("property", "get", "{0}", "allocation_hint"),
    ("property", "list", "{0}"),
]
# Commands that write to it.
WRITERS = [
    ("property", "set", "{0}", "allocation_hint", "metadata_only"),
    ("scrub", "start", "--offline", "-B", "{I}"),
]


def set_feature(images, offset: int, bit: int) -> None:
    """Sets @bit of the u64 at @offset in every superblock copy, checksummed again."""
    for image in images:
        with open(image, "r+b") as f:
            size = f.seek(0, 2)
            for at in SUPER_COPIES:
                if at + 4096 > size:
                    continue
                f.seek(at)
                sb = bytearray(f.read(4096))
                assert sb[64:72] == MAGIC
                flags = struct.unpack_from("<Q", sb, offset)[0] | (1 << bit)
                struct.pack_into("<Q", sb, offset, flags)
                struct.pack_into("<I", sb, 0, fsutil.crc32c(sb[32:]))
                f.seek(at)
                f.write(sb)


@pytest.fixture
def fs_images(tmp_path):
    """raid1 on two image files, with a file "f"."""
    images = fsutil.make_images(tmp_path, ["512M", "512M"])
    with fsutil.LoopDevices(images) as loops:
        fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
        with fsutil.mounted(loops.devs) as mnt:
            (mnt / "f").write_bytes(b"f" * 5000)
    return [str(i) for i in images]


def expand(command, images):
    out = []
    for word in command:
        if word == "{I}":
            out += images
        else:
            out.append(images[0] if word == "{0}" else word)
    return out


def contents(images):
    return [fsutil.sha256_file(i) for i in images]


@pytest.mark.parametrize("bit, named", [(40, "unknown incompat feature bit 40"),
                                        (17, "incompat feature remap-tree (bit 17)"),
                                        (63, "a btrfsx mkfs that did not finish")])
def test_unknown_incompat_refused_by_every_reader(fs_images, run_btrfsx, bit, named):
    set_feature(fs_images, INCOMPAT_AT, bit)
    before = contents(fs_images)
    for command in READERS + WRITERS:
        rc, out, err = run_btrfsx(*expand(command, fs_images), check=False,
                                  env={"BTRFSX_STATE_DIR": str(Path(fs_images[0]).parent)})
        assert rc == 1 and named in err and "does not read" in err, (command, rc, out, err)
    for command in SUPER_ONLY:
        run_btrfsx(*expand(command, fs_images))
    assert contents(fs_images) == before


def test_unknown_compat_ro_read_but_never_written(fs_images, run_btrfsx):
    set_feature(fs_images, COMPAT_RO_AT, 40)
    before = contents(fs_images)
    env = {"BTRFSX_STATE_DIR": str(Path(fs_images[0]).parent)}
    for command in READERS:
        rc, out, err = run_btrfsx(*expand(command, fs_images), check=False, env=env)
        assert rc in (0, 4) and "feature" not in err, (command, rc, out, err)
    for command in WRITERS:
        rc, out, err = run_btrfsx(*expand(command, fs_images), check=False, env=env)
        assert rc == 1, (command, rc, out, err)
        assert "unknown compat_ro feature bit 40 is not supported for writing" in err, err
    assert contents(fs_images) == before
