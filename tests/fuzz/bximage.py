# SPDX-License-Identifier: GPL-2.0-or-later
"""Base images of the fuzzing tools and btrfs checksums, in Python.

The .bxfi format (written by make-corpus.py, read by the harnesses in
fuzz-image.c, mutate-images.py and tests): the magic "BXFZIMG1", the size of
the payload (u32 LE), then the zlib-compressed payload: u32 number of member
devices; per member u64 size, u32 number of runs and per run u64 offset, u32
length; then the bytes of every run in that order. Runs are the member's
non-zero 4 KiB blocks, so the members are sparse files of their size.

Image also finds every tree block copy of a base filesystem and its leaf
items, so that tests and the mutator can change an item and recompute the
block's checksum.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from pathlib import Path

IMAGE_MAGIC = b"BXFZIMG1"
SB_OFFSETS = (0x10000, 64 * 1024 * 1024)
HEADER_SIZE = 101
ITEM_SIZE = 25
KEY_PTR_SIZE = 33

# ---- checksums (btrfs stores the digest zero-padded to 32 bytes) ----

_CRC32C_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_M64 = (1 << 64) - 1
_P1, _P2, _P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
_P4, _P5 = 9650029242287828579, 2870177450012600261


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _xxround(acc: int, value: int) -> int:
    return (_rotl((acc + value * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data: bytes, seed: int = 0) -> int:
    n, p = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed, (seed - _P1) & _M64]
        while p + 32 <= n:
            lanes = struct.unpack_from("<4Q", data, p)
            v = [_xxround(v[i], lanes[i]) for i in range(4)]
            p += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for lane in v:
            h = ((h ^ _xxround(0, lane)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while p + 8 <= n:
        h ^= _xxround(0, struct.unpack_from("<Q", data, p)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        p += 8
    if p + 4 <= n:
        h ^= (struct.unpack_from("<I", data, p)[0] * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        p += 4
    while p < n:
        h ^= (data[p] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        p += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    return h ^ (h >> 32)


def csum(csum_type: int, data: bytes) -> bytes | None:
    if csum_type == 0:
        digest = struct.pack("<I", crc32c(data))
    elif csum_type == 1:
        digest = struct.pack("<Q", xxh64(data))
    elif csum_type == 2:
        digest = hashlib.sha256(data).digest()
    elif csum_type == 3:
        digest = hashlib.blake2b(data, digest_size=32).digest()
    else:
        return None
    return digest.ljust(32, b"\0")


# ---- base images ----

def load_bxfi(path: Path) -> list[tuple[int, list[tuple[int, bytes]]]]:
    """[(device size, [(offset, bytes)...]) per member] of a .bxfi file."""
    blob = path.read_bytes()
    if blob[:8] != IMAGE_MAGIC:
        raise ValueError(f"{path}: not a base image")
    payload = zlib.decompress(blob[12:])
    ndev, = struct.unpack_from("<I", payload, 0)
    pos = 4
    heads = []
    for _ in range(ndev):
        size, nruns = struct.unpack_from("<QI", payload, pos)
        pos += 12
        runs = []
        for _ in range(nruns):
            runs.append(struct.unpack_from("<QI", payload, pos))
            pos += 12
        heads.append((size, runs))
    devs = []
    for size, runs in heads:
        data = []
        for off, length in runs:
            data.append((off, payload[pos:pos + length]))
            pos += length
        devs.append((size, data))
    return devs


def expand(path: Path, directory: Path) -> list[Path]:
    """Writes the members of a .bxfi file as sparse files; their paths."""
    out = []
    for i, (size, runs) in enumerate(load_bxfi(path)):
        member = directory / f"{path.stem}-{i}.img"
        with open(member, "wb") as f:
            f.truncate(size)
            for off, blob in runs:
                f.seek(off)
                f.write(blob)
        out.append(member)
    return out


def data_segments(path: Path):
    """(offset, bytes) of every allocated region of a sparse file."""
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        off = 0
        while off < size:
            try:
                start = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:
                return
            end = os.lseek(fd, start, os.SEEK_HOLE)
            yield start, os.pread(fd, end - start, start)
            off = end


def compact(members: list[Path]) -> bytes:
    """The .bxfi form of member files (the format of make-corpus.py)."""
    zero = bytes(4096)
    head = [struct.pack("<I", len(members))]
    body = []
    for path in members:
        runs = []
        for seg_off, seg in data_segments(path):
            start = None
            for rel in range(0, len(seg), 4096):
                if seg[rel:rel + 4096] != zero:
                    if start is None:
                        start = rel
                elif start is not None:
                    runs.append((seg_off + start, seg[start:rel]))
                    start = None
            if start is not None:
                runs.append((seg_off + start, seg[start:]))
        head.append(struct.pack("<QI", path.stat().st_size, len(runs)))
        for off, blob in runs:
            head.append(struct.pack("<QI", off, len(blob)))
            body.append(blob)
    payload = b"".join(head + body)
    return IMAGE_MAGIC + struct.pack("<I", len(payload)) + zlib.compress(payload, 6)


class Image:
    """One base filesystem: its members' non-zero runs and where its tree blocks are."""

    def __init__(self, path: Path):
        self.path = path
        loaded = load_bxfi(path)
        self.sizes = [size for size, _ in loaded]
        self.runs = [runs for _, runs in loaded]
        sb = self.read(0, SB_OFFSETS[0], 4096)
        self.csum_type = struct.unpack_from("<H", sb, 196)[0]
        self.nodesize = struct.unpack_from("<I", sb, 148)[0]
        incompat = struct.unpack_from("<Q", sb, 188)[0]
        self.uuid = bytes(sb[571:587] if incompat & (1 << 10) else sb[32:48])
        self.blocks = self._find_blocks()
        if not self.blocks:
            raise ValueError(f"{path}: no tree blocks found")

    def read(self, member: int, off: int, length: int) -> bytearray:
        out = bytearray(length)
        for run_off, blob in self.runs[member]:
            lo, hi = max(off, run_off), min(off + length, run_off + len(blob))
            if lo < hi:
                out[lo - off:hi - off] = blob[lo - run_off:hi - run_off]
        return out

    def _find_blocks(self) -> dict[int, list[tuple[int, int]]]:
        """bytenr -> [(member, offset)] of every tree block copy whose checksum
        verifies (live blocks and stale ones alike)."""
        blocks: dict[int, list[tuple[int, int]]] = {}
        for m, runs in enumerate(self.runs):
            for run_off, blob in runs:
                for rel in range(0, len(blob), 4096):
                    if blob[rel + 32:rel + 48] != self.uuid:
                        continue
                    blk = self.read(m, run_off + rel, self.nodesize)
                    if csum(self.csum_type, bytes(blk[32:])) != blk[:32]:
                        continue
                    bytenr, = struct.unpack_from("<Q", blk, 48)
                    blocks.setdefault(bytenr, []).append((m, run_off + rel))
        return blocks

    def write(self, patches: dict[tuple[int, int], bytes], directory: Path) -> list[Path]:
        """Member files in @directory: the base runs, then @patches over them."""
        out = []
        for m, size in enumerate(self.sizes):
            p = directory / f"m{m}.img"
            with open(p, "wb") as f:
                f.truncate(size)
                for off, blob in self.runs[m]:
                    f.seek(off)
                    f.write(blob)
                for (pm, off), blob in sorted(patches.items()):
                    if pm == m:
                        f.seek(off)
                        f.write(blob)
            out.append(p)
        return out


def leaf_items(blk: bytes):
    """(slot, objectid, type, offset, data offset in the block, size) of
    every item of a leaf, as far as the header's nritems fits in the block."""
    if blk[100] != 0:
        return
    nritems = struct.unpack_from("<I", blk, 96)[0]
    for slot in range(min(nritems, (len(blk) - HEADER_SIZE) // ITEM_SIZE)):
        base = HEADER_SIZE + slot * ITEM_SIZE
        objectid, type_, offset, off, size = struct.unpack_from("<QBQII", blk, base)
        yield slot, objectid, type_, offset, HEADER_SIZE + off, size


def patch_items(img: "Image", key_type: int, change) -> dict[tuple[int, int], bytes]:
    """Calls change(item bytes, objectid, offset) -> new bytes of the same
    size (or None to leave it) on every item of @key_type in every tree block
    copy of @img; returns the changed blocks, checksums recomputed, as
    {(member, physical offset): block} for Image.write."""
    patches = {}
    for copies in img.blocks.values():
        for m, off in copies:
            blk = bytearray(img.read(m, off, img.nodesize))
            changed = False
            for _, objectid, type_, koff, start, size in leaf_items(blk):
                if type_ != key_type or start + size > len(blk):
                    continue
                new = change(bytes(blk[start:start + size]), objectid, koff)
                if new is not None:
                    assert len(new) == size
                    blk[start:start + size] = new
                    changed = True
            if changed:
                blk[:32] = csum(img.csum_type, bytes(blk[32:]))
                patches[(m, off)] = bytes(blk)
    return patches


def rebuild_leaf(blk: bytes, slot: int, body: bytes) -> bytes:
    """@blk (a leaf) with item @slot's data replaced by @body, the items'
    data packed again from the end of the block in slot order; the checksum
    is left for the caller."""
    items = [(bytes(blk[HEADER_SIZE + s * ITEM_SIZE:HEADER_SIZE + s * ITEM_SIZE + 17]),
              body if s == slot else bytes(blk[start:start + size]))
             for s, _, _, _, start, size in leaf_items(blk)]
    out = bytearray(blk)
    end = len(blk) - HEADER_SIZE
    for s, (key, data) in enumerate(items):
        end -= len(data)
        if end < (s + 1) * ITEM_SIZE:
            raise ValueError("the items do not fit in the leaf")
        struct.pack_into("<17sII", out, HEADER_SIZE + s * ITEM_SIZE, key, end, len(data))
        out[HEADER_SIZE + end:HEADER_SIZE + end + len(data)] = data
    return bytes(out)


def replace_items(img: "Image", key_type: int, change) -> dict[tuple[int, int], bytes]:
    """Like patch_items, but change(item bytes, objectid, offset) may return
    a body of another size: the leaf is rebuilt around it."""
    patches = {}
    for copies in img.blocks.values():
        for m, off in copies:
            blk = bytes(img.read(m, off, img.nodesize))
            for slot, objectid, type_, koff, start, size in list(leaf_items(blk)):
                if type_ != key_type or start + size > len(blk):
                    continue
                new = change(blk[start:start + size], objectid, koff)
                if new is not None:
                    blk = rebuild_leaf(blk, slot, new)
            if (m, off) not in patches and blk != bytes(img.read(m, off, img.nodesize)):
                patches[(m, off)] = csum(img.csum_type, blk[32:]) + blk[32:]
    return patches


def item_bodies(img: "Image", key_type: int):
    """(objectid, offset, bytes) of every item of @key_type in the base
    image's tree blocks (each block once, whatever its number of copies)."""
    for copies in img.blocks.values():
        m, off = copies[0]
        blk = bytes(img.read(m, off, img.nodesize))
        for _, objectid, type_, koff, start, size in leaf_items(blk):
            if type_ == key_type and start + size <= len(blk):
                yield objectid, koff, blk[start:start + size]


def map_logical(img: "Image", logical: int) -> list[tuple[int, int]]:
    """(member, physical offset) of every copy of @logical in a single, dup
    or raid1* chunk (stripes are whole copies there), from the chunk items."""
    for _, chunk_start, body in item_bodies(img, 228):
        length, = struct.unpack_from("<Q", body, 0)
        num_stripes, = struct.unpack_from("<H", body, 44)
        if chunk_start <= logical < chunk_start + length:
            return [(struct.unpack_from("<Q", body, 48 + 32 * i)[0] - 1,
                     struct.unpack_from("<Q", body, 56 + 32 * i)[0] + logical - chunk_start)
                    for i in range(num_stripes)]
    raise KeyError(f"no chunk maps logical {logical}")
