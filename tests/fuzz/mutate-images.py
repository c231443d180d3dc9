#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Structure-aware mutation of real images, then the btrfsx command line on them.

Takes the base images of tests/fuzz/images (every profile x checksum, see
make-corpus.py), and for each round expands one into sparse member files,
damages its tree blocks the way a bad disk or a bug would but with their
checksums recomputed, so that btrfsx's content checks (not the checksum
check) are what sees the damage:

  - random bit flips anywhere in a block after the checksum;
  - bit flips or "interesting" integers (0, 1, -1, 2^31, 2^63, the node
    size ...) inside one item's data, key or item header (offset, size);
  - the same in the key pointers of an internal node (block pointer,
    generation) and in header fields (level, nritems, owner, bytenr);
  - now and then a superblock field, its checksum recomputed too.

Usually every copy of a block gets the same change (so no mirror is left to
fall back to), sometimes one copy only. Then it runs the read-only commands
of the btrfsx given (the sanitizer build of the suite):

  inspect dump-super -a -f, inspect dump-tree (text and JSON), inspect
  read-file (two of the base files), filesystem usage, device property get,
  scrub start --offline -r -B -d

and expects each to exit 0, 1 or 3 (scrub: errors left), with a message on
stderr when not 0, within the timeout, without a sanitizer report, and the
member files unchanged afterwards (all of these are read-only). A failure
keeps the mutated image (compact, .bxfi), the command and its output in
--failures; `--expand FILE.bxfi DIR` turns one back into member files.

    tests/fuzz/mutate-images.py [--btrfsx PATH] [--rounds N] [--seed S]
                                [--timeout SEC] [--failures DIR] [--quiet]
    tests/fuzz/mutate-images.py --expand FILE.bxfi DIR

Exit status: 0 no failure, 1 a failure, 2 usage.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bximage import HEADER_SIZE, ITEM_SIZE, KEY_PTR_SIZE, SB_OFFSETS, Image, compact, csum, \
    data_segments, expand

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BTRFS_MAGIC = b"_BHRfS_M"
READ_FILE_PATHS = ["data/inline", "data/regular", "data/compressible", "data/sparse",
                   "data/prealloc", "data/dir/f3", "subvol/inside", "snap/changed"]
READ_FILE_LIMIT = 8 * 1024 * 1024
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "UndefinedBehaviorSanitizer", "AddressSanitizer:DEADLYSIGNAL")
INTERESTING = [0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x1000, 0x4000, 0x7fff, 0x8000, 0xffff,
               0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 1 << 32, 1 << 40, (1 << 63) - 1,
               1 << 63, (1 << 64) - 1, (1 << 64) - 4096]

# ---- mutations ----

class Mutator:
    def __init__(self, image: Image, rnd: random.Random):
        self.img = image
        self.rnd = rnd
        self.patches: dict[tuple[int, int], bytes] = {}
        self.log: list[str] = []

    def _get(self, member: int, off: int, length: int) -> bytearray:
        blob = self.patches.get((member, off))
        return bytearray(blob) if blob is not None else self.img.read(member, off, length)

    def _interesting(self, width: int) -> int:
        v = self.rnd.choice(INTERESTING) if self.rnd.random() < 0.8 else self.rnd.getrandbits(64)
        if self.rnd.random() < 0.3:
            v = (v + self.rnd.choice((-1, 1))) & ((1 << 64) - 1)
        return v & ((1 << (8 * width)) - 1)

    def _poke(self, blk: bytearray, off: int, width: int) -> str:
        if off + width > len(blk):
            return ""
        if self.rnd.random() < 0.5:
            bit = self.rnd.randrange(8 * width)
            blk[off + bit // 8] ^= 1 << (bit % 8)
            return f"flip bit {bit} at {off}"
        value = self._interesting(width)
        blk[off:off + width] = value.to_bytes(width, "little")
        return f"u{8 * width}={value:#x} at {off}"

    def mutate_block(self, blk: bytearray) -> str:
        nodesize = len(blk)
        level = blk[100]
        nritems = struct.unpack_from("<I", blk, 96)[0]
        stride = KEY_PTR_SIZE if level else ITEM_SIZE
        nr = min(nritems, (nodesize - HEADER_SIZE) // stride)
        what = self.rnd.random()
        if what < 0.25 or nr == 0:
            flips = self.rnd.randint(1, 4)
            for _ in range(flips):
                bit = self.rnd.randrange(32 * 8, nodesize * 8)
                blk[bit // 8] ^= 1 << (bit % 8)
            return f"{flips} random bit flip(s)"
        if what < 0.35:
            field = self.rnd.choice([(48, 8, "bytenr"), (80, 8, "generation"), (88, 8, "owner"),
                                     (96, 4, "nritems"), (100, 1, "level"), (56, 8, "flags")])
            return f"header {field[2]}: " + self._poke(blk, field[0], field[1])
        slot = self.rnd.randrange(nr)
        base = HEADER_SIZE + slot * stride
        if level:
            field = self.rnd.choice([(0, 8, "key objectid"), (8, 1, "key type"),
                                     (9, 8, "key offset"), (17, 8, "blockptr"),
                                     (25, 8, "generation")])
            return f"node slot {slot} {field[2]}: " + self._poke(blk, base + field[0], field[1])
        if what < 0.55:
            field = self.rnd.choice([(0, 8, "key objectid"), (8, 1, "key type"),
                                     (9, 8, "key offset"), (17, 4, "item offset"),
                                     (21, 4, "item size")])
            if field[2].startswith("item") and self.rnd.random() < 0.5:
                old = struct.unpack_from("<I", blk, base + field[0])[0]
                new = (old + self.rnd.choice((-8, -4, -1, 1, 4, 8, 100))) & 0xFFFFFFFF
                struct.pack_into("<I", blk, base + field[0], new)
                return f"leaf slot {slot} {field[2]} {old} -> {new}"
            return f"leaf slot {slot} {field[2]}: " + self._poke(blk, base + field[0], field[1])
        off, size = struct.unpack_from("<II", blk, base + 17)
        start = HEADER_SIZE + off
        if size == 0 or start + size > nodesize:
            return f"leaf slot {slot}: empty item, " + self._poke(blk, base + 21, 4)
        if self.rnd.random() < 0.4:
            bit = self.rnd.randrange(size * 8)
            blk[start + bit // 8] ^= 1 << (bit % 8)
            return f"leaf slot {slot} data: flip bit {bit}"
        width = self.rnd.choice((1, 2, 4, 8))
        rel = self.rnd.randrange(max(1, size - width + 1))
        return f"leaf slot {slot} data: " + self._poke(blk, start + rel, width)

    def mutate_tree_block(self) -> None:
        bytenr = self.rnd.choice(sorted(self.img.blocks))
        copies = self.img.blocks[bytenr]
        blk = self._get(*copies[0], self.img.nodesize)
        what = self.mutate_block(blk)
        fixed = csum(self.img.csum_type, bytes(blk[32:]))
        if fixed:
            blk[:32] = fixed
        targets = copies if self.rnd.random() < 0.75 else [self.rnd.choice(copies)]
        for m, off in targets:
            self.patches[(m, off)] = bytes(blk)
        self.log.append(f"tree block {bytenr} ({len(targets)} of {len(copies)} copies): {what}")

    def mutate_super(self) -> None:
        m = self.rnd.randrange(len(self.img.sizes))
        where = self.rnd.choice(SB_OFFSETS)
        sb = self._get(m, where, 4096)
        if sb[64:72] != BTRFS_MAGIC:
            return
        field = self.rnd.choice([(48, 8, "bytenr"), (72, 8, "generation"), (80, 8, "root"),
                                 (88, 8, "chunk_root"), (96, 8, "log_root"),
                                 (136, 8, "num_devices"), (144, 4, "sectorsize"),
                                 (148, 4, "nodesize"), (160, 4, "sys_chunk_array_size"),
                                 (188, 8, "incompat_flags"), (198, 1, "root_level"),
                                 (199, 1, "chunk_root_level"), (200, 1, "log_root_level"),
                                 (201 + 72, 8, "dev_item.devid"),
                                 (811 + self.rnd.randrange(2048), 1, "sys_chunk_array")])
        what = self._poke(sb, field[0], field[1])
        fixed = csum(struct.unpack_from("<H", sb, 196)[0], bytes(sb[32:]))
        if fixed:
            sb[:32] = fixed
        self.patches[(m, where)] = bytes(sb)
        self.log.append(f"member {m} superblock at {where} {field[2]}: {what}")

    def run(self, changes: int) -> None:
        for _ in range(changes):
            if self.rnd.random() < 0.1:
                self.mutate_super()
            else:
                self.mutate_tree_block()


# ---- running the command line ----

def _limit_output():
    # read-file of a file whose size was fuzzed to 2^63 fails with EFBIG.
    resource.setrlimit(resource.RLIMIT_FSIZE, (READ_FILE_LIMIT, READ_FILE_LIMIT))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def commands(devs: list[str], out: str, rnd: random.Random) -> list[tuple[str, list[str]]]:
    files = rnd.sample(READ_FILE_PATHS, 2)
    return [
        ("dump-super", ["inspect", "dump-super", "-a", "-f", devs[0]]),
        ("dump-tree", ["inspect", "dump-tree", *devs]),
        ("dump-tree-json", ["--format", "json", "inspect", "dump-tree", *devs]),
        *[(f"read-file {f}", ["inspect", "read-file", "-o", out, f, *devs]) for f in files],
        ("usage", ["filesystem", "usage", *devs]),
        ("property-get", ["device", "property", "get", devs[rnd.randrange(len(devs))]]),
        ("scrub", ["scrub", "start", "--offline", "-r", "-B", "-d", *devs]),
    ]


def check_run(proc: subprocess.CompletedProcess | None, timeout: float) -> str | None:
    """Why a command's run is a failure, or None."""
    if proc is None:
        return f"no exit within {timeout:g} s (hang)"
    err = proc.stderr
    for mark in SANITIZER_MARKS:
        if mark in err:
            return f"sanitizer report ({mark})"
    if proc.returncode < 0:
        return f"killed by signal {-proc.returncode}"
    if proc.returncode not in (0, 1, 3):
        return f"exit status {proc.returncode}"
    if proc.returncode and "btrfsx" not in err and not proc.stdout.strip():
        return f"exit status {proc.returncode} without a message"
    return None


def digest_files(paths: list[Path]) -> str:
    """A hash of the member files' allocated bytes (a write anywhere allocates)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.stat().st_size).encode())
        for off, blob in data_segments(p):
            h.update(struct.pack("<Q", off))
            h.update(blob)
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--btrfsx", default=os.environ.get("BTRFSX", str(REPO / "build-test" / "btrfsx")))
    ap.add_argument("--images", type=Path, default=HERE / "images")
    ap.add_argument("--rounds", type=int, default=20, help="mutated images to make (default 20)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    ap.add_argument("--changes", type=int, default=0,
                    help="changes per image (default: 1 to 4 at random)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per command")
    ap.add_argument("--failures", type=Path, default=Path("mutate-failures"))
    ap.add_argument("--workdir", type=Path, default=Path("/dev/shm") if Path("/dev/shm").is_dir()
                    else Path(tempfile.gettempdir()))
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--expand", nargs=2, metavar=("BXFI", "DIR"),
                    help="write the members of BXFI into DIR and exit")
    args = ap.parse_args()

    if args.expand:
        for p in expand(Path(args.expand[0]), Path(args.expand[1])):
            print(p)
        return 0
    if not os.access(args.btrfsx, os.X_OK):
        print(f"mutate-images: {args.btrfsx} is not executable (build it or pass --btrfsx)",
              file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int(time.time())
    rnd = random.Random(seed)
    bases = sorted(args.images.glob("*.bxfi"))
    if not bases:
        print(f"mutate-images: no base images in {args.images}", file=sys.stderr)
        return 2
    loaded: dict[Path, Image] = {}
    env = dict(os.environ,
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=86",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87",
               LC_ALL="C")
    runs = failures = 0
    started = time.time()
    work = Path(tempfile.mkdtemp(prefix="btrfsx-mutate-", dir=str(args.workdir)))
    env["BTRFSX_STATE_DIR"] = str(work / "state")
    try:
        for rnd_no in range(args.rounds):
            base = bases[rnd_no % len(bases)]
            if base not in loaded:
                loaded[base] = Image(base)
            mut = Mutator(loaded[base], rnd)
            mut.run(args.changes or rnd.randint(1, 4))
            members = mut.img.write(mut.patches, work)
            before = digest_files(members)
            out = str(work / "read-file.out")
            for name, argv in commands([str(p) for p in members], out, rnd):
                try:
                    proc = subprocess.run([args.btrfsx, *argv], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, errors="replace",
                                          env=env, timeout=args.timeout,
                                          preexec_fn=_limit_output)
                except subprocess.TimeoutExpired:
                    proc = None
                runs += 1
                why = check_run(proc, args.timeout)
                if why is None and digest_files(members) != before:
                    why = "a read-only command changed the image"
                if why:
                    failures += 1
                    keep = args.failures / f"{base.stem}-seed{seed}-round{rnd_no}"
                    keep.mkdir(parents=True, exist_ok=True)
                    (keep / "image.bxfi").write_bytes(compact(members))
                    (keep / "report.txt").write_text(
                        f"{why}\ncommand: btrfsx {' '.join(argv)}\nbase: {base.name}\n"
                        f"changes:\n  " + "\n  ".join(mut.log) + "\n\nstdout:\n" +
                        (proc.stdout[-4000:] if proc else "") + "\nstderr:\n" +
                        (proc.stderr[-20000:] if proc else ""))
                    print(f"mutate-images: FAIL round {rnd_no} ({base.name}) {name}: {why}; "
                          f"kept in {keep}", file=sys.stderr)
                    before = digest_files(members)
            if not args.quiet:
                print(f"mutate-images: round {rnd_no} {base.name}: " + "; ".join(mut.log),
                      file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"mutate-images: seed {seed}: {args.rounds} mutated images, {runs} command runs, "
          f"{failures} failures, {time.time() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
