# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfs-progs 6.19 as a second oracle beside Debian's 6.2 (tests/oracle.py).

6.19 is what current distributions run; its mkfs makes block-group-tree
filesystems by default and takes ``-O squota``. It is built once per machine
from ``$BTRFSX_ORACLES/btrfs-progs-v6.19.tar.xz`` (default ``../shared/oracles``
beside the checkout) into ``$BTRFSX_ORACLE_CACHE`` (default
/var/cache/btrfsx-oracle), outside the checkout, keyed by the tarball's
hash, under a lock so concurrent test runs build it once. Without the
tarball the tests that need it skip and say where it goes; with ``CI`` set
they fail instead.

``bindir()`` -> the directory holding ``btrfs``, ``mkfs.btrfs``,
``btrfstune`` ...; ``btrfs(*args)`` runs its ``btrfs``, ``mkfs(devs, *args)``
its mkfs, ``check(devs)`` its ``btrfs check`` (which must be clean).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from helpers import fsutil

REPO = Path(__file__).resolve().parent.parent.parent
TARBALL = "btrfs-progs-v6.19.tar.xz"
# What its ./configure needs besides the build tools (scripts/install-deps.sh).
BUILD_DEPS = "libzstd-dev liblzo2-dev zlib1g-dev uuid-dev libblkid-dev libudev-dev"
_BINDIR: Path | None = None


def oracles_dir() -> Path:
    return Path(os.environ.get("BTRFSX_ORACLES", REPO.parent / "shared" / "oracles"))


def cache_dir() -> Path:
    path = Path(os.environ.get("BTRFSX_ORACLE_CACHE", "/var/cache/btrfsx-oracle"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"btrfs-progs 6.19 oracle: {reason}")
    pytest.skip(f"btrfs-progs 6.19 oracle: {reason}")


#: the programs the tests run: only they are built (the whole tree takes twice as long)
PROGRAMS = ["btrfs", "mkfs.btrfs"]


def _build(tarball: Path, prefix: Path) -> None:
    """configure, make PROGRAMS, copied into @prefix/bin (about 2 minutes on 2 cores)."""
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        subprocess.run(["tar", "-xJf", str(tarball), "-C", tmp], check=True)
        (src,) = Path(tmp).iterdir()
        steps = [["./autogen.sh"],
                 ["./configure", "--disable-documentation", "--disable-python",
                  "--disable-convert", f"--prefix={prefix}"],
                 ["make", f"-j{os.cpu_count() or 1}", *PROGRAMS]]
        for step in steps:
            p = subprocess.run(step, cwd=src, capture_output=True, text=True)
            if p.returncode:
                raise RuntimeError(f"btrfs-progs 6.19: {' '.join(step)} failed "
                                   f"({p.returncode}; needs {BUILD_DEPS}):\n"
                                   f"{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
        (prefix / "bin").mkdir(parents=True)
        for program in PROGRAMS:
            shutil.copy2(src / program, prefix / "bin" / program)


def bindir() -> Path:
    """The 6.19 binaries, built the first time (skips when the sources are absent)."""
    global _BINDIR
    if _BINDIR:
        return _BINDIR
    tarball = oracles_dir() / TARBALL
    if not tarball.is_file():
        unavailable(f"no {TARBALL} in {oracles_dir()} (set BTRFSX_ORACLES to its directory)")
    key = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    prefix = cache_dir() / f"btrfs-progs-6.19-{key}"
    with open(cache_dir() / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (prefix / ".complete").exists():
            shutil.rmtree(prefix, ignore_errors=True)
            try:
                _build(tarball, prefix)
            except BaseException:
                shutil.rmtree(prefix, ignore_errors=True)
                raise
            (prefix / ".complete").touch()
    _BINDIR = prefix / "bin"
    return _BINDIR


def btrfs(*args, check: bool = True) -> subprocess.CompletedProcess:
    """``btrfs ARGS`` of 6.19. Its scan for the other members probes every
    block device afresh (BLKID_FILE=/dev/null): the shared blkid cache, which
    other test runs rewrite as their loop devices come and go, missed one."""
    p = subprocess.run([str(bindir() / "btrfs"), *map(str, args)], capture_output=True,
                       text=True, errors="surrogateescape",
                       env=dict(os.environ, BLKID_FILE="/dev/null"))
    if check and p.returncode:
        raise AssertionError(f"btrfs 6.19 {' '.join(map(str, args))}: exit {p.returncode}\n"
                             f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def mkfs(devs, *args) -> str:
    """mkfs.btrfs 6.19 -f -q ARGS on @devs (its defaults: block-group-tree,
    free-space-tree, no-holes ...)."""
    devs = [devs] if isinstance(devs, (str, os.PathLike)) else list(devs)
    p = subprocess.run([str(bindir() / "mkfs.btrfs"), "-f", "-q", "-K", *map(str, args),
                        *map(str, devs)], capture_output=True, text=True)
    if p.returncode:
        raise AssertionError(f"mkfs.btrfs 6.19 {' '.join(map(str, args))}: {p.stderr}")
    return p.stdout


def check(devs) -> str:
    """btrfs check 6.19, read-only: must be clean. It finds the other members
    among the block devices (image files are attached to loop devices for
    it); another test's loop device going away is none of ours."""
    devs = [devs] if isinstance(devs, (str, os.PathLike)) else list(devs)
    if not str(devs[0]).startswith("/dev/"):
        with fsutil.LoopDevices(devs) as loops:
            return check(loops.devs)
    p = btrfs("check", "--readonly", devs[0], check=False)
    errors = [line for line in p.stderr.splitlines()
              if "ERROR" in line and "cannot scan" not in line]
    assert p.returncode == 0 and not errors, p.stdout + p.stderr
    return p.stdout + p.stderr
