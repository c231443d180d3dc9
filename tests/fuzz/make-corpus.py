#!/usr/bin/env python3
"""Regenerates the fuzzing seed corpora in tests/fuzz/corpus/ from real
filesystems.

Needs root, loop devices, mkfs.btrfs and the btrfs kernel module. For each
configuration below (profiles, checksum types, node sizes, features) it makes
sparse images, attaches them with losetup, runs mkfs.btrfs, mounts the
filesystem and writes a mix of files (inline and regular extents, holes,
preallocation, compression, xattrs, symlinks, hard links up to extended refs,
subvolumes, snapshots, quotas), unmounts and detaches, then reads the images:

  corpus/fuzz_superblock/       superblock copies (primary and the 64 MiB copy)
  corpus/fuzz_sys_chunk_array/  the system chunk arrays of those superblocks
  corpus/fuzz_tree_node/        tree blocks, chosen so that every
                                (tree, item type) pair and every node level
                                seen appears at least once, within a size budget

Files are named by their SHA-1 (duplicates collapse). Loop devices and mounts
are always cleaned up, also on errors and Ctrl-C.

    tests/fuzz/make-corpus.py [--out DIR] [--workdir DIR] [--keep-images]
                              [--budget-kib N]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

MiB = 1024 * 1024
SB_OFFSETS = (0x10000, 64 * MiB)           # the copies that fit on our images
MAGIC = b"_BHRfS_M"

# (name, mkfs options, number of devices, device size, mount options, extras)
CONFIGS = [
    ("dup-crc32c-zstd", ["-m", "dup", "-d", "single", "--csum", "crc32c"], 1, 256,
     "compress=zstd", {"quota", "extref"}),
    ("dup-xxhash-4k", ["-m", "dup", "-d", "single", "--csum", "xxhash", "-n", "4096"], 1, 256,
     "", {"extref"}),
    ("raid1-sha256", ["-m", "raid1", "-d", "raid1", "--csum", "sha256"], 2, 256, "", set()),
    ("raid5-blake2", ["-m", "raid5", "-d", "raid5", "--csum", "blake2"], 3, 256, "", set()),
    ("raid10-crc32c", ["-m", "raid10", "-d", "raid10", "--csum", "crc32c"], 4, 256,
     "compress=lzo", set()),
    ("raid1c3-raid0-xxhash", ["-m", "raid1c3", "-d", "raid0", "--csum", "xxhash",
                                  "-R", "free-space-tree"], 3, 256, "", {"quota"}),
    ("raid6-blake2", ["-m", "raid6", "-d", "raid6", "--csum", "blake2"], 4, 256, "", set()),
    ("mixed-sha256", ["-M", "--csum", "sha256"], 1, 256, "", set()),
]


def run(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, **kw)


class Resources:
    """Loop devices and mounts we made, undone in reverse order."""

    def __init__(self) -> None:
        self.loops: list[str] = []
        self.mounts: list[str] = []

    def attach(self, image: Path) -> str:
        dev = run("losetup", "--find", "--show", "--direct-io=off", str(image)).stdout.strip()
        self.loops.append(dev)
        return dev

    def detach(self, dev: str) -> None:
        run("losetup", "-d", dev, check=False)
        if dev in self.loops:
            self.loops.remove(dev)

    def mount(self, dev: str, mnt: str, opts: str) -> None:
        args = ["mount", "-t", "btrfs"]
        if opts:
            args += ["-o", opts]
        run(*args, dev, mnt)
        self.mounts.append(mnt)

    def umount(self, mnt: str) -> None:
        run("umount", mnt, check=False)
        if mnt in self.mounts:
            self.mounts.remove(mnt)

    def cleanup(self) -> None:
        for mnt in reversed(list(self.mounts)):
            if run("umount", mnt, check=False).returncode:
                run("umount", "-l", mnt, check=False)
            self.mounts.remove(mnt)
        for dev in reversed(list(self.loops)):
            self.detach(dev)


def populate(mnt: Path, extras: set[str]) -> None:
    """A bit of everything dump-tree has a decoder for."""
    data = mnt / "data"
    data.mkdir()
    for d in range(6):
        sub = data / f"dir{d}"
        sub.mkdir()
        for i in range(40):
            (sub / f"small-{i}").write_bytes(bytes([i % 251]) * (i * 37 % 1500 + 1))
        (sub / f"medium-{d}").write_bytes(os.urandom(20000 + d * 4096))
    (data / "big").write_bytes(os.urandom(3 * MiB))
    (data / "compressible").write_bytes(b"btrfsx fuzz corpus " * 60000)
    with open(data / "sparse", "wb") as f:
        f.seek(5 * MiB)
        f.write(b"after a hole")
    with open(data / "prealloc", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, 2 * MiB)
        f.write(b"partly written")
    os.symlink("dir0/small-1", data / "link")
    os.symlink("x" * 1000, data / "long-link")
    os.setxattr(data / "big", "user.comment", b"a fuzz seed")
    os.setxattr(data / "dir0", "user.long", b"v" * 3000)
    os.mkfifo(data / "fifo")
    (data / ("n" * 255)).write_bytes(b"long name")
    os.link(data / "big", data / "dir1" / "big-link")
    if "extref" in extras:
        # Enough long names of one inode in one directory to overflow the
        # INODE_REF item into INODE_EXTREF items.
        target = data / "many-links"
        target.write_bytes(b"linked")
        for i in range(120):
            os.link(target, data / f"{'l' * 200}-{i:04d}")
    for i in range(0, 40, 3):
        os.unlink(data / "dir2" / f"small-{i}")
    run("btrfs", "subvolume", "create", str(mnt / "subvol"))
    (mnt / "subvol" / "inside").write_bytes(b"in a subvolume" * 100)
    run("btrfs", "subvolume", "snapshot", str(mnt / "subvol"), str(mnt / "snap"))
    run("btrfs", "subvolume", "snapshot", "-r", str(mnt / "subvol"), str(mnt / "snap-ro"))
    (mnt / "snap" / "changed").write_bytes(b"after the snapshot")
    if "quota" in extras:
        run("btrfs", "quota", "enable", str(mnt))
        run("btrfs", "qgroup", "create", "1/100", str(mnt), check=False)
        run("btrfs", "qgroup", "limit", "100M", str(mnt / "subvol"), check=False)
    run("sync")


def make_fs(work: Path, res: Resources, name: str, mkfs_opts: list[str], ndevs: int,
            size_mib: int, mount_opts: str, extras: set[str]) -> list[Path]:
    images = []
    for i in range(ndevs):
        img = work / f"{name}-{i}.img"
        with open(img, "wb") as f:
            f.truncate(size_mib * MiB)
        images.append(img)
    devs = [res.attach(img) for img in images]
    try:
        r = run("mkfs.btrfs", "-f", "-q", *mkfs_opts, *devs, check=False)
        if r.returncode:
            print(f"  {name}: mkfs.btrfs failed: {r.stderr.strip()}", file=sys.stderr)
            return []
        run("btrfs", "device", "scan", *devs, check=False)
        mnt = tempfile.mkdtemp(prefix=f"btrfsx-corpus-{name}-", dir=str(work))
        res.mount(devs[0], mnt, mount_opts)
        try:
            populate(Path(mnt), extras)
        finally:
            res.umount(mnt)
            os.rmdir(mnt)
    finally:
        for dev in devs:
            res.detach(dev)
    return images


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def superblocks(image: Path) -> list[bytes]:
    out = []
    with open(image, "rb") as f:
        for off in SB_OFFSETS:
            f.seek(off)
            sb = f.read(4096)
            if len(sb) == 4096 and sb[64:72] == MAGIC:
                out.append(sb)
    return out


def sys_chunk_array(sb: bytes) -> bytes:
    size = struct.unpack_from("<I", sb, 160)[0]
    return sb[811:811 + min(size, 2048)]


def tree_blocks(image: Path, sb: bytes):
    """(block bytes, owner, level, set of key types) of every tree block in
    the image: any nodesize run at a 4 KiB boundary whose header carries the
    filesystem's metadata uuid. Old copies (COWed away) count too."""
    nodesize = struct.unpack_from("<I", sb, 148)[0]
    incompat = struct.unpack_from("<Q", sb, 188)[0]
    uuid = sb[571:587] if incompat & (1 << 10) else sb[32:48]
    with open(image, "rb") as f:
        raw = f.read()
    for off in range(0, len(raw) - nodesize + 1, 4096):
        if raw[off + 32:off + 48] != uuid:
            continue
        blk = raw[off:off + nodesize]
        bytenr, = struct.unpack_from("<Q", blk, 48)
        owner, = struct.unpack_from("<Q", blk, 88)
        nritems, = struct.unpack_from("<I", blk, 96)
        level = blk[100]
        if bytenr % 4096 or level >= 8 or nritems > nodesize // 25:
            continue
        stride = 25 if level == 0 else 33
        types = frozenset(blk[101 + i * stride + 8] for i in range(nritems))
        yield blk, owner, level, types


def write_corpus(dirpath: Path, blobs: dict[str, bytes]) -> int:
    dirpath.mkdir(parents=True, exist_ok=True)
    for old in dirpath.iterdir():
        if not old.name.startswith("regress-"):   # hand-made regression inputs stay
            old.unlink()
    for digest, blob in sorted(blobs.items()):
        (dirpath / digest).write_bytes(blob)
    return sum(len(b) for b in blobs.values())


def main() -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=here / "corpus")
    ap.add_argument("--workdir", type=Path, default=Path("/var/tmp"))
    ap.add_argument("--keep-images", action="store_true")
    ap.add_argument("--budget-kib", type=int, default=1400,
                    help="size budget of the tree block seeds (default 1400)")
    args = ap.parse_args()
    if os.geteuid():
        print("make-corpus: needs root (loop devices, mount)", file=sys.stderr)
        return 1

    # SIGTERM and SIGHUP unwind like Ctrl-C, so the cleanup below runs.
    def _stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)

    work = Path(tempfile.mkdtemp(prefix="btrfsx-corpus-", dir=str(args.workdir)))
    res = Resources()
    sbs: dict[str, bytes] = {}
    arrays: dict[str, bytes] = {}
    candidates = []   # (fs name, nodesize, owner, level, types, block)
    try:
        for name, opts, ndevs, size, mopts, extras in CONFIGS:
            print(f"make-corpus: {name}", file=sys.stderr)
            images = make_fs(work, res, name, opts, ndevs, size, mopts, extras)
            seen_blocks = set()
            for idx, img in enumerate(images):
                copies = superblocks(img)
                for sb in copies:
                    sbs[sha1(sb)] = sb
                    arr = sys_chunk_array(sb)
                    arrays[sha1(arr)] = arr
                if not copies:
                    continue
                for blk, owner, level, types in tree_blocks(img, copies[0]):
                    h = sha1(blk)
                    if h in seen_blocks:   # mirrors of the same block
                        continue
                    seen_blocks.add(h)
                    candidates.append((name, len(blk), owner, level, types, blk))
                if not args.keep_images:
                    img.unlink()
    finally:
        res.cleanup()
        if not args.keep_images:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"make-corpus: images kept in {work}", file=sys.stderr)

    # Greedy cover: each pick adds the most (nodesize, owner, level, key type)
    # facts not yet covered; ties go to fuller blocks. Then stop at the budget.
    # The root, chunk and device trees differ with the profile and devices, so
    # for them the filesystem is part of the fact.
    def facts(c):
        fsname = c[0] if c[2] in (1, 3, 4) else None
        return {(c[1], c[2], c[3], t, fsname) for t in c[4]} | {(c[1], c[2], c[3], None, fsname)}

    covered: set = set()
    picked: dict[str, bytes] = {}
    budget = args.budget_kib * 1024
    used = 0
    pool = list(candidates)
    while pool:
        def gain(c):
            return len(facts(c) - covered), len(c[4]), len(c[5])
        best = max(pool, key=gain)
        if gain(best)[0] == 0 or used + len(best[5]) > budget:
            break
        pool.remove(best)
        covered |= facts(best)
        digest = sha1(best[5])
        if digest not in picked:
            picked[digest] = best[5]
            used += len(best[5])

    n_sb = write_corpus(args.out / "fuzz_superblock", sbs)
    n_arr = write_corpus(args.out / "fuzz_sys_chunk_array", arrays)
    n_tree = write_corpus(args.out / "fuzz_tree_node", picked)
    print(f"make-corpus: {len(sbs)} superblocks ({n_sb} bytes), {len(arrays)} chunk arrays "
          f"({n_arr} bytes), {len(picked)} of {len(candidates)} tree blocks ({n_tree} bytes)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
