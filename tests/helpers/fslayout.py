# SPDX-License-Identifier: GPL-2.0-or-later
"""Where things are in a btrfs kept as image files (btrfs-progs' dump-tree
as the oracle): chunks, file extents, the copies of a logical address in
every profile, RAID5/6 rows; and byte helpers for damaging them."""
from __future__ import annotations

import re

from helpers import oracle

SECTOR = 4096
STRIPE = 65536


class Layout:
    """Where things are in a filesystem kept as image files: devid -> image,
    chunks, file extents, tree roots (from btrfs-progs' dump-tree)."""

    def __init__(self, images, btrfsx_json):
        self.images = [str(i) for i in images]
        self.chunks = oracle.progs_chunks(self.images)
        self.image_of = {}
        for img in self.images:
            sb = btrfsx_json("inspect", "dump-super", img)["superblock"]
            self.image_of[sb["dev_item"]["devid"]] = img
        self.super = btrfsx_json("inspect", "dump-super", self.images[0])["superblock"]
        names, self.extents = {}, {}
        for it in oracle.progs_dump_tree_items(self.images, "fs"):
            if it.type == oracle.KEY_TYPES["INODE_REF"]:
                names[it.objectid] = " ".join(it.body).split("name: ", 1)[1].strip()
            elif it.type == oracle.KEY_TYPES["EXTENT_DATA"]:
                m = re.search(r"disk byte (\d+) nr (\d+)", " ".join(it.body))
                if m and int(m.group(1)):
                    self.extents.setdefault(it.objectid, []).append(
                        (int(m.group(1)), int(m.group(2))))
        self.inode = {name: ino for ino, name in names.items()}
        trees = btrfsx_json("inspect", "dump-tree", "-t", "fs", *self.images)["trees"]
        self.fs_root = trees[0]["root"]

    def extent_of(self, name):
        return self.extents[self.inode[name]][0]

    def chunk(self, logical):
        for c in self.chunks:
            if c["logical"] <= logical < c["logical"] + c["length"]:
                return c
        raise AssertionError(f"no chunk for {logical}")

    def copies(self, logical):
        """[(devid, image, physical)] of every copy (mirrored and striped
        profiles; RAID5/6 have raid56_sector)."""
        c = self.chunk(logical)
        assert not re.search("RAID5|RAID6", c["type"]), c["type"]
        off = logical - c["logical"]
        per_copy = 1
        if "RAID10" in c["type"]:
            per_copy = c["sub_stripes"]
        elif "RAID0" not in c["type"]:
            per_copy = c["num_stripes"]
        groups = c["num_stripes"] // per_copy
        row, group = divmod(off // STRIPE, groups)
        stripes = c["stripes"][group * per_copy:(group + 1) * per_copy]
        if groups == 1:
            row, in_stripe = 0, off
        else:
            in_stripe = off % STRIPE
        return [(devid, self.image_of[devid], phys + row * STRIPE + in_stripe)
                for devid, phys, _ in stripes]

    def raid56_row(self, logical):
        """RAID5/6: (chunk stripe index of each logical stripe in the row:
        data..., P[, Q]), row, data stripe of @logical, its offset in the stripe."""
        c = self.chunk(logical)
        n = c["num_stripes"]
        nd = n - (2 if "RAID6" in c["type"] else 1)
        off = logical - c["logical"]
        row, in_row = divmod(off, nd * 65536)
        return [(row + j) % n for j in range(n)], row, in_row // 65536, in_row % 65536

    def stripe_phys(self, logical, stripe_index, row, in_stripe):
        c = self.chunk(logical)
        devid, phys, _ = c["stripes"][stripe_index]
        return devid, self.image_of[devid], phys + row * 65536 + in_stripe

    def raid56_sector(self, logical):
        """RAID5/6: ((image, physical) of the data sector at @logical,
        [(image, physical) of P, Q in its column], its data stripe)."""
        c = self.chunk(logical)
        idx, row, j, off = self.raid56_row(logical)
        nd = len(idx) - (2 if "RAID6" in c["type"] else 1)
        data = self.stripe_phys(logical, idx[j], row, off)[1:]
        parity = [self.stripe_phys(logical, idx[k], row, off)[1:] for k in range(nd, len(idx))]
        return data, parity, j

    def read_raid56(self, logical, length):
        return b"".join(read_at(*self.raid56_sector(pos)[0], SECTOR)
                        for pos in range(logical, logical + length, SECTOR))

    def write_raid56(self, logical, data):
        """Writes @data at @logical of a RAID5/6 chunk and updates P (and Q)
        by the difference, as a read-modify-write does."""
        for k in range(0, len(data), SECTOR):
            (img, phys), parity, j = self.raid56_sector(logical + k)
            new = data[k:k + SECTOR]
            delta = xor_bytes(read_at(img, phys, SECTOR), new)
            write_at(img, phys, new)
            for which, (pimg, pphys) in enumerate(parity):
                d = delta.translate(gf_mul_table(GF_EXP[j])) if which else delta
                write_at(pimg, pphys, xor_bytes(read_at(pimg, pphys, SECTOR), d))


def read_at(path, offset, length):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


def write_at(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def xor_bytes(a, b):
    return (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).to_bytes(len(a), "little")


# GF(2^8) of Linux RAID6 (polynomial 0x11d, generator 2), for Q updates.
GF_EXP, GF_LOG = [0] * 510, [0] * 256
_x = 1
for _i in range(255):
    GF_EXP[_i] = GF_EXP[_i + 255] = _x
    GF_LOG[_x] = _i
    _x = (_x << 1) ^ (0x11d if _x & 0x80 else 0)


def gf_mul_table(c):
    """bytes.translate table multiplying by @c (non-zero)."""
    return bytes([0] + [GF_EXP[GF_LOG[c] + GF_LOG[b]] for b in range(1, 256)])
