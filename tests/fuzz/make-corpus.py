#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Regenerates the fuzzing seed corpora in tests/fuzz/corpus/ and the base
images in tests/fuzz/images/ from real filesystems.

Needs root, loop devices, mkfs.btrfs and the btrfs kernel module. It makes two
sets of filesystems with mkfs.btrfs, mounts each and writes files through the
kernel, unmounts and detaches, then reads the images:

- BASE: every profile (single, dup, mixed, raid0, raid1, raid1c3, raid1c4,
  raid10, raid5, raid6) x every checksum (crc32c, xxhash, sha256, blake2),
  with small files of every kind (inline, regular, compressed, holes,
  preallocated, xattrs, links, extended refs, subvolumes, snapshots, quota on
  some) and varied features (16 KiB or 4 KiB nodes, no-holes off, skinny
  metadata off, v1 space cache). Each is kept, compacted, as
  images/<nn>-<profile>-<csum>.bxfi: the base images of fuzz_image,
  fuzz_item and mutate-images.py (format: bximage.py).
- RICH: a few larger filesystems (megabyte files, many names), for tree
  blocks of higher levels and fuller leaves.

From both it extracts:

  corpus/fuzz_superblock/       superblock copies (primary and the 64 MiB copy)
  corpus/fuzz_sys_chunk_array/  the system chunk arrays of those superblocks
  corpus/fuzz_tree_node/        tree blocks, chosen so that every
                                (tree, item type) pair and every node level
                                seen appears at least once, within a size budget
  corpus/fuzz_image/            one input per base image with every command on
                                and no patch (the unmodified image)

and, when the harnesses are built (--fuzz-build, default the build directory
of run-fuzzers.sh), corpus/fuzz_item/ from fuzz_item's seed writer (every
item of every base image, grouped by type), then minimises every corpus with
libFuzzer's -merge=1 (run-fuzzers.sh --merge).

Files are named by their SHA-1 (duplicates collapse); regress-* files stay.
Loop devices and mounts are always cleaned up, also on errors and Ctrl-C.

    tests/fuzz/make-corpus.py [--out DIR] [--images DIR] [--workdir DIR]
                              [--keep-images] [--budget-kib N]
                              [--fuzz-build DIR] [--no-merge]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from bximage import compact

MiB = 1024 * 1024
SB_OFFSETS = (0x10000, 64 * MiB)           # the copies that fit on our images
MAGIC = b"_BHRfS_M"

# (name, mkfs options, number of devices, device size, mount options, extras)
RICH_CONFIGS = [
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

# The base images: (profile, number of devices, mkfs profile options).
BASE_PROFILES = [
    ("single", 1, ["-m", "single", "-d", "single"]),
    ("dup", 1, ["-m", "dup", "-d", "dup"]),
    ("mixed", 1, ["-M", "-m", "dup", "-d", "dup"]),
    ("raid0", 2, ["-m", "raid0", "-d", "raid0"]),
    ("raid1", 2, ["-m", "raid1", "-d", "raid1"]),
    ("raid1c3", 3, ["-m", "raid1c3", "-d", "raid1c3"]),
    ("raid1c4", 4, ["-m", "raid1c4", "-d", "raid1c4"]),
    ("raid10", 4, ["-m", "raid10", "-d", "raid10"]),
    ("raid5", 3, ["-m", "raid5", "-d", "raid5"]),
    ("raid6", 4, ["-m", "raid6", "-d", "raid6"]),
]
BASE_CSUMS = ["crc32c", "xxhash", "sha256", "blake2"]
COMPRESSIONS = ["", "compress=zstd", "", "compress=lzo", "", "compress=zlib"]
BASE_DEV_MIB = 256

# Files of every base image that fuzz_image and fuzz_item read back with
# "inspect read-file" (their list in tests/fuzz/fuzz-image.c must match).
READ_FILE_PATHS = ["data/inline", "data/regular", "data/compressible", "data/sparse",
                   "data/prealloc", "data/dir/f3", "subvol/inside", "snap/changed"]


def base_configs():
    """(name, mkfs options, devices, size MiB, mount options, extras) of every
    profile x checksum, features varied over the combinations."""
    out = []
    for i, (profile, ndevs, popts) in enumerate(BASE_PROFILES):
        for j, csum in enumerate(BASE_CSUMS):
            n = i * len(BASE_CSUMS) + j
            opts = list(popts) + ["--csum", csum]
            if profile == "mixed" or csum in ("xxhash", "blake2"):
                opts += ["-n", "4096"]
            features = []
            if n % 4 == 1:
                features.append("^no-holes")
            if n % 4 == 2:
                features.append("^skinny-metadata")
            if features:
                opts += ["-O", ",".join(features)]
            if n % 5 == 3:
                opts += ["-R", "^free-space-tree"]
            extras = {"small"}
            if n % 3 == 0:
                extras.add("quota")
            if n % 4 == 3:
                extras.add("extref")
            out.append((f"{n:02d}-{profile}-{csum}", opts, ndevs, BASE_DEV_MIB,
                        COMPRESSIONS[n % len(COMPRESSIONS)], extras))
    return out


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


def text_bytes(n: int, tag: str) -> bytes:
    """@n bytes of numbered lines: unlike random bytes, they compress, which
    keeps the base images small; unlike a repeated byte, no two sectors are
    the same."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += f"{tag} line {i:06d} of the btrfsx fuzz base image\n".encode()
        i += 1
    return bytes(out[:n])


def populate_small(mnt: Path, extras: set[str]) -> None:
    """The base images: every kind of file and item, a few KiB of data."""
    data = mnt / "data"
    data.mkdir()
    (data / "inline").write_bytes(text_bytes(200, "inline"))
    (data / "regular").write_bytes(text_bytes(12 * 1024, "regular"))
    (data / "compressible").write_bytes(b"btrfsx fuzz base image " * 3000)
    with open(data / "sparse", "wb") as f:
        f.seek(1024 * 1024)
        f.write(text_bytes(4096, "sparse"))
    with open(data / "prealloc", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, 64 * 1024)
        f.write(b"partly written")
    sub = data / "dir"
    sub.mkdir()
    for i in range(8):
        (sub / f"f{i}").write_bytes(bytes([65 + i]) * (i * 700 + 10))
    (sub / "f3").write_bytes(text_bytes(5000, "f3"))
    os.symlink("dir/f1", data / "link")
    os.symlink("x" * 1000, data / "long-link")
    os.setxattr(data / "regular", "user.comment", b"a fuzz base")
    os.setxattr(sub, "user.long", b"v" * 1500)
    os.mkfifo(data / "fifo")
    (data / ("n" * 255)).write_bytes(b"long name")
    os.link(data / "regular", sub / "regular-link")
    if "extref" in extras:
        target = data / "many-links"
        target.write_bytes(b"linked")
        for i in range(40):
            os.link(target, data / f"{'l' * 200}-{i:02d}")
    os.unlink(sub / "f5")
    run("btrfs", "subvolume", "create", str(mnt / "subvol"))
    (mnt / "subvol" / "inside").write_bytes(text_bytes(6000, "inside"))
    run("btrfs", "subvolume", "snapshot", str(mnt / "subvol"), str(mnt / "snap"))
    run("btrfs", "subvolume", "snapshot", "-r", str(mnt / "subvol"), str(mnt / "snap-ro"))
    (mnt / "snap" / "changed").write_bytes(b"after the snapshot " * 300)
    if "quota" in extras:
        run("btrfs", "quota", "enable", str(mnt))
        run("btrfs", "qgroup", "create", "1/100", str(mnt), check=False)
        run("btrfs", "qgroup", "limit", "100M", str(mnt / "subvol"), check=False)
    run("sync")
    # Discard what the copy-on-write left behind (old copies of tree blocks):
    # the loop device punches holes, so the image keeps only what is live.
    run("fstrim", str(mnt), check=False)


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
            (populate_small if "small" in extras else populate)(Path(mnt), extras)
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


def pick_tree_blocks(candidates, budget: int) -> dict[str, bytes]:
    """Greedy cover: each pick adds the most (nodesize, owner, level, key type)
    facts not yet covered; ties go to fuller blocks. Then stop at the budget.
    The root, chunk and device trees differ with the profile and devices, so
    for them the filesystem is part of the fact."""
    def facts(c):
        fsname = c[0] if c[2] in (1, 3, 4) else None
        return {(c[1], c[2], c[3], t, fsname) for t in c[4]} | {(c[1], c[2], c[3], None, fsname)}

    covered: set = set()
    picked: dict[str, bytes] = {}
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
    return picked


def image_seeds(nr_images: int) -> dict[str, bytes]:
    """fuzz_image inputs: each base image unchanged with every command (text
    and JSON), and once with a data sector bad on every copy (uncorrectable:
    scrub then resolves the files), see tests/fuzz/fuzz_image.c."""
    seeds = {}
    for i in range(nr_images):
        for blob in (bytes([i, 0x07, 0x00]), bytes([i, 0x87, 0x09]),
                     bytes([i, 0x07, 0x02, 0x02 | 0x04 | 0x10, 0, 0, 0, 0, 3]) + b"\xff" * 4):
            seeds[sha1(blob)] = blob
    return seeds


def finish_with_harnesses(build: Path, out: Path) -> None:
    """corpus/fuzz_item from the harness's seed writer, then every corpus
    minimised (run-fuzzers.sh --merge). Skipped with a note when clang is
    missing."""
    here = Path(__file__).resolve().parent
    script = here / "run-fuzzers.sh"
    r = subprocess.run(["bash", str(script), "-B", str(build), "--build-only"])
    if r.returncode == 77:
        print("make-corpus: no clang/libFuzzer: corpus/fuzz_item not made, corpora not "
              "minimised", file=sys.stderr)
        return
    if r.returncode:
        raise SystemExit("make-corpus: building the harnesses failed")
    items = out / "fuzz_item"
    tmp = Path(tempfile.mkdtemp(prefix="btrfsx-item-seeds-"))
    try:
        env = dict(os.environ, BTRFSX_FUZZ_ITEM_SEEDS=str(tmp))
        subprocess.run([str(build / "obj" / "tests" / "fuzz" / "fuzz_item"), "-runs=0"],
                       env=env, check=True)
        write_corpus(items, {sha1(p.read_bytes()): p.read_bytes() for p in tmp.iterdir()})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["bash", str(script), "-B", str(build), "--no-build", "--merge"], check=True)


def main() -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=here / "corpus")
    ap.add_argument("--images", type=Path, default=here / "images")
    ap.add_argument("--workdir", type=Path, default=Path("/var/tmp"))
    ap.add_argument("--keep-images", action="store_true")
    ap.add_argument("--budget-kib", type=int, default=1400,
                    help="size budget of the tree block seeds before minimising (default 1400)")
    ap.add_argument("--fuzz-build", type=Path,
                    default=Path(os.environ.get("BTRFSX_FUZZ_BUILD", here.parent.parent / "build-fuzz")))
    ap.add_argument("--no-merge", action="store_true",
                    help="do not build the harnesses, write fuzz_item seeds and minimise")
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
    base_images: dict[str, bytes] = {}
    try:
        for name, opts, ndevs, size, mopts, extras in RICH_CONFIGS + base_configs():
            print(f"make-corpus: {name}", file=sys.stderr)
            images = make_fs(work, res, name, opts, ndevs, size, mopts, extras)
            if not images:
                raise SystemExit(f"make-corpus: {name}: mkfs failed")
            if "small" in extras:
                base_images[f"{name}.bxfi"] = compact(images)
            seen_blocks = set()
            for img in images:
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

    args.images.mkdir(parents=True, exist_ok=True)
    for old in args.images.glob("*.bxfi"):
        old.unlink()
    for fname, blob in base_images.items():
        (args.images / fname).write_bytes(blob)
    picked = pick_tree_blocks(candidates, args.budget_kib * 1024)
    n_sb = write_corpus(args.out / "fuzz_superblock", sbs)
    n_arr = write_corpus(args.out / "fuzz_sys_chunk_array", arrays)
    n_tree = write_corpus(args.out / "fuzz_tree_node", picked)
    n_img = write_corpus(args.out / "fuzz_image", image_seeds(len(base_images)))
    print(f"make-corpus: {len(base_images)} base images "
          f"({sum(len(b) for b in base_images.values())} bytes), {len(sbs)} superblocks "
          f"({n_sb} bytes), {len(arrays)} chunk arrays ({n_arr} bytes), {len(picked)} of "
          f"{len(candidates)} tree blocks ({n_tree} bytes), {n_img} bytes of image seeds",
          file=sys.stderr)
    if not args.no_merge:
        finish_with_harnesses(args.fuzz_build, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
