# SPDX-License-Identifier: GPL-2.0-or-later
"""Real-kernel fills for the allocator model: shared by
tests/test_allocator_kernel.py and bench/usage.

``build_replay(tmpdir)`` compiles tests/helpers/usage_replay.c against the built
libbtrfsx_core; ``fill_run(...)`` makes a filesystem on loop devices, records
every free-space prediction (ours, btrfs-progs', df), fills it with data until
ENOSPC and replays the kernel's chunks through the model.  Loop devices and
mounts are released by fsutil (context managers) whatever happens.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from helpers import fsutil

MiB = fsutil.MiB
GiB = fsutil.GiB

#: fallocate sizes, largest first: each is tried until ENOSPC, then the next
FILL_STEPS = [1 * GiB, 256 * MiB, 64 * MiB, 16 * MiB, 4 * MiB, 1 * MiB, 256 * 1024, 64 * 1024,
              16 * 1024, 4096]


def build_dir() -> Path:
    """BTRFSX_BUILD_DIR, else the binary's directory when it is a build tree
    (a private copy of the binary is not), else the source tree."""
    if os.environ.get("BTRFSX_BUILD_DIR"):
        return Path(os.environ["BTRFSX_BUILD_DIR"])
    parent = Path(fsutil.btrfsx_path()).parent
    return parent if (parent / "Makefile").exists() else fsutil.REPO


def _make_var(makefile: Path, name: str) -> str:
    m = re.search(rf"^{name} = (.*)$", makefile.read_text(), re.M)
    return m.group(1).strip() if m else ""


def build_replay(outdir: Path, build: Path | None = None) -> Path | None:
    """Compile the replay helper against @build (default: build_dir()); None
    when the build tree has no core library."""
    build = build or build_dir()
    lib = build / ".libs" / "libbtrfsx_core.a"
    makefile = build / "Makefile"
    if not lib.exists() or not makefile.exists():
        return None
    cc = shlex.split(_make_var(makefile, "CC") or "cc")
    flags = shlex.split(_make_var(makefile, "SANITIZER_CFLAGS"))
    libs = []
    for var in ("BLKID_LIBS", "UUID_LIBS", "UDEV_LIBS", "JSONC_LIBS", "ISAL_LIBS", "XXHASH_LIBS",
                "CRYPTO_LIBS", "BLAKE2_LIBS", "URING_LIBS", "BTRFSUTIL_LIBS"):
        libs += shlex.split(_make_var(makefile, var))
    exe = Path(outdir) / "usage_replay"
    fsutil.run(cc + flags + ["-std=gnu11", "-D_GNU_SOURCE", f"-I{fsutil.REPO}", f"-I{build}",
                             "-o", str(exe), str(Path(__file__).resolve().parent / "usage_replay.c"), str(lib)]
               + libs + ["-lpthread"])
    return exe


def fill_until_enospc(mnt: Path) -> int:
    """Preallocate files (no data written: the images stay sparse) until not
    even 4 KiB fits; returns the bytes allocated."""
    total, i = 0, 0
    for size in FILL_STEPS:
        while True:
            path = Path(mnt) / f"fill{i}"
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError:
                os.close(fd)
                os.unlink(path)
                break
            os.close(fd)
            total += size
            i += 1
    return total


def progs_usage(mnt: Path) -> dict[str, str]:
    """``btrfs filesystem usage -b`` Overall section: label -> value text."""
    out = fsutil.run(["btrfs", "filesystem", "usage", "-b", str(mnt)]).stdout
    fields = {}
    for line in out.split("\n\n", 1)[0].splitlines()[1:]:
        label, _, value = line.strip().partition(":")
        fields[label.strip()] = " ".join(value.split())
    return fields


def progs_free_estimated(fields: dict[str, str]) -> int:
    return int(fields["Free (estimated)"].split()[0])


@dataclass
class FillResult:
    data: str
    metadata: str
    sizes: list
    written: int = 0
    ours: int = 0               # btrfsx free_estimated before the fill
    ours_strict: int = 0
    progs: int = 0              # btrfs-progs Free (estimated)
    progs_min: int = 0
    df: int = 0                 # statfs f_bavail * f_bsize
    replay: str = ""            # the helper's summary line
    replay_ok: bool = False
    replay_out: str = ""
    usage_json: dict = field(default_factory=dict)

    def error(self, figure: int) -> float:
        return (figure - self.written) / self.written if self.written else 0.0


def fill_run(workdir: Path, btrfsx: str, replay_exe: Path | None, data: str, metadata: str,
             sizes=("1G", "2G", "3G", "6G")) -> FillResult:
    res = FillResult(data, metadata, list(sizes))
    images = fsutil.make_images(Path(workdir) / f"fill-{data}-{metadata}", list(sizes))
    with fsutil.LoopDevices(images) as loops:
        fsutil.mkfs(loops.devs, data=data, metadata=metadata)
        before = Path(workdir) / f"{data}-before.txt"
        after = Path(workdir) / f"{data}-after.txt"
        if replay_exe:
            before.write_text(fsutil.run([str(replay_exe), "dump", *loops.devs]).stdout)
        with fsutil.mounted(loops.devs) as mnt:
            doc = fsutil.btrfsx_json("filesystem", "usage", str(mnt), binary=btrfsx)
            res.usage_json = doc
            res.ours = doc["free_estimated"]
            res.ours_strict = doc["free_strict"]
            res.df = doc["free_statfs"]
            fields = progs_usage(mnt)
            res.progs = progs_free_estimated(fields)
            res.progs_min = int(fields["Free (estimated)"].split("min:")[1].strip(" )"))
            res.written = fill_until_enospc(mnt)
            fsutil.run(["sync"])
        if replay_exe:
            after.write_text(fsutil.run([str(replay_exe), "dump", *loops.devs]).stdout)
            p = fsutil.run([str(replay_exe), "replay", str(before), str(after)], check=False)
            res.replay_out = p.stdout + p.stderr
            lines = p.stdout.strip().splitlines()
            res.replay = lines[-1] if lines else p.stderr.strip()
            res.replay_ok = p.returncode == 0
    return res


def result_json(res: FillResult) -> str:
    d = {k: getattr(res, k) for k in ("data", "metadata", "sizes", "written", "ours",
                                       "ours_strict", "progs", "progs_min", "df", "replay",
                                       "replay_ok")}
    return json.dumps(d)
