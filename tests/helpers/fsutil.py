# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for tests on real btrfs filesystems: sparse images, loop devices,
mkfs, mount, deterministic file content, and running btrfsx.

Everything that attaches or mounts registers itself in this module, and
``emergency_cleanup()`` (called by conftest at the end of the session and at
exit) unmounts and detaches whatever is still there, so a failing test never
leaves a loop device or a mount behind.

conftest.py exposes these as fixtures; tests may also import them directly
(``from helpers.fsutil import mkfs, mounted``): pytest puts tests/ on sys.path.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from helpers import json_schemas

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO = TESTS_DIR.parent

DEFAULT_IMAGE_SIZE = 512 * MiB

#: minimum number of devices mkfs.btrfs accepts for each profile
PROFILE_MIN_DEVS = {
    "single": 1, "dup": 1, "raid0": 1, "raid1": 2, "raid1c3": 3, "raid1c4": 4,
    "raid10": 2, "raid5": 2, "raid6": 3,
}
#: number of devices that gives each profile its "natural" layout (used by the
#: session cache when ndevs is not given): raid5 on 3, raid6 and raid10 on 4.
PROFILE_NICE_DEVS = {
    "single": 1, "dup": 1, "raid0": 2, "raid1": 2, "raid1c3": 3, "raid1c4": 4,
    "raid10": 4, "raid5": 3, "raid6": 4,
}

# what is attached / mounted right now (for emergency cleanup)
_LOOPS: set[str] = set()
_MOUNTS: list[str] = []
_MADE_DIRS: set[str] = set()     # mount points we created (removed on umount)


# ---------------------------------------------------------------------------
# small utilities
# ---------------------------------------------------------------------------

def is_root() -> bool:
    return os.geteuid() == 0


def have_btrfs_kernel() -> bool:
    try:
        if "btrfs" in Path("/proc/filesystems").read_text():
            return True
    except OSError:
        pass
    # module may be loadable
    return subprocess.run(["modprobe", "-q", "btrfs"], capture_output=True).returncode == 0 \
        if shutil.which("modprobe") else False


def can_use_loop() -> tuple[bool, str]:
    """(ok, reason): root, loop control, losetup and mkfs.btrfs available."""
    if not is_root():
        return False, "needs root"
    if not os.path.exists("/dev/loop-control"):
        return False, "no /dev/loop-control"
    for tool in ("losetup", "mkfs.btrfs", "btrfs", "mount", "umount"):
        if not shutil.which(tool):
            return False, f"{tool} not installed"
    return True, ""


def run(cmd: Sequence[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    """subprocess.run with text output captured; raises with stderr on failure."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       errors="surrogateescape", **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed (rc={p.returncode}):\n"
                           f"{p.stdout}{p.stderr}")
    return p


def parse_size(size: int | str) -> int:
    """512M, 1G, 300MiB, 4096 -> bytes."""
    if isinstance(size, int):
        return size
    s = size.strip().upper().replace("IB", "").rstrip("B")
    mult = {"K": KiB, "M": MiB, "G": GiB, "T": 1024 * GiB}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def data_ranges(path: str | os.PathLike) -> list[tuple[int, int]]:
    """(start, end) of the data extents of a (sparse) file, from SEEK_DATA/SEEK_HOLE."""
    out = []
    with open(path, "rb") as f:
        fd, end, pos = f.fileno(), os.fstat(f.fileno()).st_size, 0
        while pos < end:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            stop = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, stop))
            pos = stop
    return out


def images_state(images: Iterable[str | os.PathLike], block: int = 4096) -> list[str]:
    """A fingerprint of each (sparse) image file's content: its size and every
    non-zero @block with its offset, so a hole and written zeroes are the same
    (quick for large images that hold little; any write that changes a byte
    shows)."""
    zero = bytes(block)
    out = []
    for img in images:
        h = hashlib.sha256(str(os.stat(img).st_size).encode())
        with open(img, "rb") as f:
            for start, stop in data_ranges(img):    # block-aligned on every Linux fs
                f.seek(start)
                while start < stop:
                    piece = f.read(min(stop - start, 1 << 22))
                    if not piece:
                        break
                    if piece.count(0) != len(piece):
                        for off in range(0, len(piece), block):
                            b = piece[off:off + block]
                            if b != zero[:len(b)]:
                                h.update(f"{start + off}:".encode())
                                h.update(b)
                    start += len(piece)
        out.append(h.hexdigest())
    return out


def read_fsid(dev: str | os.PathLike) -> str:
    """fsid (uuid string) from the primary superblock of a device or image."""
    import uuid
    with open(dev, "rb") as f:
        f.seek(0x10000)
        sb = f.read(4096)
    if sb[0x40:0x48] != b"_BHRfS_M":
        raise ValueError(f"{dev}: no btrfs superblock")
    return str(uuid.UUID(bytes=sb[0x20:0x30]))


# ---------------------------------------------------------------------------
# images and loop devices
# ---------------------------------------------------------------------------

def make_images(directory: str | os.PathLike, sizes: Iterable[int | str] | int | str,
                prefix: str = "img") -> list[Path]:
    """Create sparse image files ``<directory>/<prefix><i>.raw`` of the given
    sizes (one per entry; a single size makes one image).  Returns the paths."""
    if isinstance(sizes, (int, str)):
        sizes = [sizes]
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for i, size in enumerate(sizes):
        p = d / f"{prefix}{i}.raw"
        with open(p, "wb") as f:
            f.truncate(parse_size(size))
        out.append(p)
    return out


def attach_loop(image: str | os.PathLike, read_only: bool = False) -> str:
    cmd = ["losetup", "-f", "--show"]
    if read_only:
        cmd.append("-r")
    cmd.append(str(image))
    last = None
    for _ in range(5):
        p = run(cmd, check=False)
        if p.returncode == 0:
            dev = p.stdout.strip()
            _LOOPS.add(dev)
            if not read_only:
                # BLKROSET (blockdev --setro) sticks to /dev/loopN across
                # attachments: clear a flag a previous user may have left
                run(["blockdev", "--setrw", dev], check=False)
            return dev
        last = p
        time.sleep(0.2)          # racing another losetup -f
    raise RuntimeError(f"losetup failed: {last.stderr if last else ''}")


def detach_loop(dev: str) -> None:
    """Forget the device in the kernel's btrfs registry and detach it (after
    clearing a read-only flag set with blockdev, which would otherwise stay on
    /dev/loopN and make the next user's writes fail with EIO)."""
    run(["btrfs", "device", "scan", "--forget", dev], check=False)
    run(["blockdev", "--setrw", dev], check=False)
    for i in range(20):
        p = run(["losetup", "-d", dev], check=False)
        if p.returncode == 0 or "No such device" in p.stderr or "No such file" in p.stderr:
            break
        time.sleep(0.1 * (i + 1))
    else:
        raise RuntimeError(f"losetup -d {dev} failed: {p.stderr.strip()}")
    _LOOPS.discard(dev)


class LoopDevices:
    """Loop devices over image files; a context manager and a list of paths.

    ``with LoopDevices(images) as devs: ... devs[0] ...`` — detached on exit
    (after unmounting anything mounted from them).  ``.images`` holds the
    backing files."""

    def __init__(self, images: Sequence[str | os.PathLike], read_only: bool = False):
        self.images = [Path(i) for i in images]
        self.read_only = read_only
        self.devs: list[str] = []

    def attach(self) -> "LoopDevices":
        try:
            for img in self.images:
                self.devs.append(attach_loop(img, self.read_only))
        except BaseException:
            self.detach()
            raise
        return self

    def detach(self) -> None:
        umount_devices(self.devs)
        errs = []
        for dev in reversed(self.devs):
            try:
                detach_loop(dev)
            except Exception as e:   # keep going, report at the end
                errs.append(str(e))
        self.devs = []
        if errs:
            raise RuntimeError("; ".join(errs))

    def set_read_only(self, ro: bool = True) -> None:
        for d in self.devs:
            run(["blockdev", "--setro" if ro else "--setrw", d])

    def __enter__(self) -> "LoopDevices":
        return self.attach() if not self.devs else self

    def __exit__(self, *exc) -> None:
        self.detach()

    # list-like
    def __iter__(self):
        return iter(self.devs)

    def __len__(self):
        return len(self.devs)

    def __getitem__(self, i):
        return self.devs[i]

    def __repr__(self):
        return f"LoopDevices({self.devs})"


# ---------------------------------------------------------------------------
# mkfs / mount
# ---------------------------------------------------------------------------

def mkfs(devs: Sequence[str] | str, data: str = "single", metadata: str = "dup",
         csum: str = "crc32c", extra: Sequence[str] = (), label: str | None = None,
         nodiscard: bool = True) -> str:
    """``mkfs.btrfs -f -q [-K] -d DATA -m METADATA --csum CSUM [-L label] EXTRA devs``.
    Returns the new fsid."""
    devs = [devs] if isinstance(devs, (str, os.PathLike)) else list(devs)
    cmd = ["mkfs.btrfs", "-f", "-q"]
    if nodiscard:
        cmd.append("-K")
    if data:
        cmd += ["-d", data]
    if metadata:
        cmd += ["-m", metadata]
    if csum:
        cmd += ["--csum", csum]
    if label is not None:
        cmd += ["-L", label]
    cmd += list(extra)
    cmd += [str(d) for d in devs]
    run(cmd)
    return read_fsid(devs[0])


def device_scan(devs: Sequence[str]) -> None:
    if devs:
        run(["btrfs", "device", "scan", *map(str, devs)], check=False)


def _findmnt_targets(source: str) -> list[str]:
    p = run(["findmnt", "-n", "-o", "TARGET", "-S", source], check=False)
    return [l for l in p.stdout.splitlines() if l.strip()]


def umount(mnt: str | os.PathLike) -> None:
    mnt = str(mnt)
    for i in range(10):
        p = run(["umount", mnt], check=False)
        if p.returncode == 0 or "not mounted" in p.stderr:
            break
        time.sleep(0.1 * (i + 1))
    else:
        run(["umount", "-l", mnt], check=False)
    if mnt in _MOUNTS:
        _MOUNTS.remove(mnt)
    if mnt in _MADE_DIRS:
        with contextlib.suppress(OSError):
            os.rmdir(mnt)
            _MADE_DIRS.discard(mnt)


def umount_devices(devs: Iterable[str]) -> None:
    """Unmount every mount whose source is one of devs (safety net)."""
    for d in devs:
        for t in _findmnt_targets(d):
            umount(t)


def mount(devs: Sequence[str] | str, mountpoint: str | os.PathLike | None = None,
          options: str | Sequence[str] | None = None, fstype: str = "btrfs") -> Path:
    """Mount (registering for cleanup) and return the mount point; prefer the
    ``mounted()`` context manager."""
    devs = [devs] if isinstance(devs, (str, os.PathLike)) else list(devs)
    devs = [str(d) for d in devs]
    if len(devs) > 1:
        device_scan(devs)
    opts: list[str] = []
    if isinstance(options, str):
        opts.append(options)
    elif options:
        opts.extend(options)
    if len(devs) > 1:
        opts += [f"device={d}" for d in devs]
    made = mountpoint is None
    mnt = Path(tempfile.mkdtemp(prefix="btrfsx-mnt-")) if made else Path(mountpoint)
    mnt.mkdir(parents=True, exist_ok=True)
    cmd = ["mount", "-t", fstype]
    if opts:
        cmd += ["-o", ",".join(opts)]
    cmd += [devs[0], str(mnt)]
    try:
        run(cmd)
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                mnt.rmdir()
        raise
    _MOUNTS.append(str(mnt))
    if made:
        _MADE_DIRS.add(str(mnt))
    return mnt


@contextlib.contextmanager
def mounted(devs: Sequence[str] | str, options: str | Sequence[str] | None = None,
            mountpoint: str | os.PathLike | None = None,
            fstype: str = "btrfs") -> Iterator[Path]:
    """Mount a btrfs (one device or all members; for several devices they are
    scanned and passed as device= options), or a filesystem of @fstype, on a
    fresh /tmp directory; yields the mount point; unmounts and removes the
    directory in ``finally``."""
    mnt = mount(devs, mountpoint, options, fstype)
    try:
        yield mnt
    finally:
        umount(mnt)


# ---------------------------------------------------------------------------
# file content
# ---------------------------------------------------------------------------

def fill_then_thin(mnt: str | os.PathLike, size: int, name: str = "big") -> None:
    """Files of @size bytes (written a MiB at a time) until the filesystem is
    full, then every other one deleted: data chunks that hold the device
    space, half used."""
    mnt, block, n = Path(mnt), b"\xab" * MiB, 0
    try:
        while True:
            with open(mnt / f"{name}{n}", "wb") as f:
                for _ in range(size // MiB):
                    f.write(block)
            n += 1
    except OSError:
        (mnt / f"{name}{n}").unlink(missing_ok=True)
    for i in range(0, n, 2):
        (mnt / f"{name}{i}").unlink()
    run(["btrfs", "filesystem", "sync", str(mnt)])


def fill_files(mnt: str | os.PathLike, seed: int = 0, big_files: int = 3,
               big_size: int = 3 * MiB, small_files: int = 48,
               nodatasum_size: int = 2 * MiB, do_sync: bool = True) -> dict[str, dict]:
    """Write a deterministic mix of files under ``mnt`` and sync.

    * ``big/big<i>.bin``: ``big_files`` files of random bytes (seeded RNG),
      sizes big_size, big_size+1 MiB, ... and the last one not sector aligned;
    * ``small/s<i>``: ``small_files`` files; every other one < 2 KiB (so it is
      stored inline), the rest 4 KiB .. 64 KiB (regular extents);
    * ``dir/sub/deep.txt``: text in a subdirectory;
    * ``sparse.bin``: 4 MiB with 64 KiB of data at 1 MiB and a hole elsewhere;
    * ``nodatasum.bin``: created empty, ``chattr +C`` (NODATACOW, so no
      checksums), then ``nodatasum_size`` random bytes;
    * ``empty``: an empty file.

    Returns the manifest {relative path: {"size", "sha256", "kind"}} with kind
    one of big, inline, small, deep, sparse, nodatasum, empty."""
    mnt = Path(mnt)
    rng = random.Random(seed)
    manifest: dict[str, dict] = {}

    def put(rel: str, data: bytes, kind: str) -> None:
        p = mnt / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "ab" if kind == "nodatasum" else "wb") as f:
            f.write(data)
        manifest[rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                         "kind": kind}

    for i in range(big_files):
        size = big_size + i * MiB
        if i == big_files - 1:
            size += 1234
        put(f"big/big{i}.bin", rng.randbytes(size), "big")
    for i in range(small_files):
        if i % 2 == 0:
            size = rng.randint(1, 2000)
            kind = "inline"
        else:
            size = rng.randint(4 * KiB, 64 * KiB)
            kind = "small"
        put(f"small/s{i:04d}", rng.randbytes(size), kind)
    deep = "".join(f"line {i} seed {seed}\n" for i in range(2000)).encode()
    put("dir/sub/deep.txt", deep, "deep")

    sp = mnt / "sparse.bin"
    chunk = rng.randbytes(64 * KiB)
    with open(sp, "wb") as f:
        f.truncate(4 * MiB)
        f.seek(1 * MiB)
        f.write(chunk)
    full = bytearray(4 * MiB)
    full[MiB:MiB + len(chunk)] = chunk
    manifest["sparse.bin"] = {"size": 4 * MiB, "sha256": hashlib.sha256(full).hexdigest(),
                              "kind": "sparse"}

    nd = mnt / "nodatasum.bin"
    nd.touch()
    run(["chattr", "+C", str(nd)])
    put("nodatasum.bin", rng.randbytes(nodatasum_size), "nodatasum")

    (mnt / "empty").touch()
    manifest["empty"] = {"size": 0, "sha256": hashlib.sha256(b"").hexdigest(), "kind": "empty"}

    if do_sync:
        run(["sync"])
    return manifest


def verify_manifest(mnt: str | os.PathLike, manifest: dict[str, dict]) -> list[str]:
    """Paths whose content differs from the manifest (empty list: all good)."""
    bad = []
    for rel, m in manifest.items():
        p = Path(mnt) / rel
        try:
            if p.stat().st_size != m["size"] or sha256_file(p) != m["sha256"]:
                bad.append(rel)
        except OSError:
            bad.append(rel)
    return bad


# ---------------------------------------------------------------------------
# running btrfsx
# ---------------------------------------------------------------------------

def btrfsx_path() -> str:
    return os.environ.get("BTRFSX") or str(REPO / "btrfsx")


def run_btrfsx(*args, fmt: str | None = None, check: bool | int = True,
               rc: int | None = None, binary: str | None = None,
               input: str | None = None, env: dict | None = None,
               timeout: float = 300) -> tuple[int, str, str]:
    """Run ``btrfsx [--format FMT] ARGS...`` -> (rc, stdout, stderr).

    ``check=True`` asserts rc == 0, ``check=<int>`` (or ``rc=<int>``) asserts
    that exit code, ``check=False`` asserts nothing.  ``env`` entries are added
    to the current environment."""
    cmd = [binary or btrfsx_path()]
    if fmt is not None:
        cmd += ["--format", fmt]
    cmd += [str(a) for a in args]
    e = None
    if env:
        e = dict(os.environ)
        e.update({k: str(v) for k, v in env.items()})
    p = subprocess.run(cmd, capture_output=True, text=True, errors="surrogateescape",
                       input=input, env=e, timeout=timeout)
    want = rc
    if want is None and check is not False:
        want = 0 if check is True else int(check)
    if want is not None:
        assert p.returncode == want, (
            f"{' '.join(cmd)}: exit {p.returncode}, expected {want}\n"
            f"--- stdout ---\n{p.stdout}\n--- stderr ---\n{p.stderr}")
    check_json_schema(cmd[1:], p.stdout)
    return p.returncode, p.stdout, p.stderr


def check_json_schema(args: Sequence[str], stdout: str) -> None:
    """Every JSON document the suite sees follows its command's schema
    (Documentation/json/, tests/helpers/json_schemas.py); one that does not parse, or
    has no __header (not btrfsx's: the helper's own tests run a fake), is left
    to the test that asked for it."""
    if not any(a == "--format=json" or (a == "json" and i and args[i - 1] == "--format")
               for i, a in enumerate(args)):
        return
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError:
        return
    if isinstance(doc, dict) and "__header" in doc:
        json_schemas.validate(args, doc)


def btrfsx_json(*args, check: bool | int = True, **kw):
    """``btrfsx --format json ARGS...`` -> parsed JSON (stdout must be one JSON
    document)."""
    _, out, err = run_btrfsx(*args, fmt="json", check=check, **kw)
    try:
        return json.loads(out)
    except json.JSONDecodeError as e:
        raise AssertionError(f"btrfsx {' '.join(map(str, args))}: stdout is not JSON ({e})\n"
                             f"--- stdout ---\n{out}\n--- stderr ---\n{err}") from None


# ---------------------------------------------------------------------------
# session cache of filled filesystems
# ---------------------------------------------------------------------------

class CachedFs:
    """A filled, unmounted filesystem kept for the whole session.

    ``devs`` are loop devices attached read-only (``losetup -r``): only read
    from them.  ``images`` are the backing files.  The cache may detach a
    filesystem that has not been used for a while and attach it again on the
    next ``FsCache.get()``, so take ``devs`` from a fresh ``get()`` in each test
    rather than keeping it across tests."""

    def __init__(self, data, metadata, csum, images, fsid, manifest, mkfs_extra=()):
        self.data = data
        self.metadata = metadata
        self.csum = csum
        self.images: list[Path] = list(images)
        self.fsid: str = fsid
        self.manifest: dict[str, dict] = manifest
        self.mkfs_extra: tuple[str, ...] = tuple(mkfs_extra)
        self._loops = LoopDevices(self.images, read_only=True)

    @property
    def devs(self) -> list[str]:
        return list(self._loops.devs)

    @property
    def dev(self) -> str:
        return self._loops.devs[0]

    @property
    def attached(self) -> bool:
        return bool(self._loops.devs)

    def _attach(self) -> None:
        if not self._loops.devs:
            self._loops.attach()

    def _detach(self) -> None:
        self._loops.detach()

    def copy_images(self, dest: str | os.PathLike) -> list[Path]:
        """Sparse copies of the images in ``dest``, e.g. to corrupt one and run
        an offline command on the image files.  They have the same fsid and
        device uuids as the cached filesystem: use them as image files and do
        not attach or mount them while the cache is attached (the kernel and
        btrfs-progs' device scan could mix the two up)."""
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        out = []
        for img in self.images:
            t = dest / img.name
            run(["cp", "--sparse=always", str(img), str(t)])
            out.append(t)
        return out

    def __repr__(self):
        return (f"CachedFs({self.data}/{self.metadata}/{self.csum}, devs={self.devs}, "
                f"fsid={self.fsid})")


class FsCache:
    """Builds each (data, metadata, csum, ndevs, size, mkfs_extra, seed,
    mount_options) filesystem once per session: mkfs.btrfs on fresh loop
    devices, mount, fill_files(seed), unmount, re-attach read-only.

    At most ``max_attached`` filesystems keep their loop devices attached
    (env BTRFSX_TEST_MAX_ATTACHED, default 12); the least recently used one is
    detached (its images stay) and re-attached when asked for again."""

    def __init__(self, workdir: str | os.PathLike, max_attached: int | None = None):
        self.workdir = Path(workdir)
        if max_attached is None:
            max_attached = int(os.environ.get("BTRFSX_TEST_MAX_ATTACHED", "12"))
        self.max_attached = max(1, max_attached)
        self._fs: dict[tuple, CachedFs] = {}
        self._lru: list[tuple] = []

    def _touch(self, key: tuple) -> None:
        if key in self._lru:
            self._lru.remove(key)
        self._lru.append(key)
        attached = [k for k in self._lru if self._fs[k].attached and k != key]
        while len(attached) >= self.max_attached:
            self._fs[attached.pop(0)]._detach()

    def get(self, data: str = "single", metadata: str = "dup", csum: str = "crc32c",
            ndevs: int | None = None, size: int | str = DEFAULT_IMAGE_SIZE,
            mkfs_extra: Sequence[str] = (), seed: int = 0,
            mount_options: str | None = None) -> CachedFs:
        if ndevs is None:
            ndevs = max(PROFILE_NICE_DEVS.get(data, 1), PROFILE_NICE_DEVS.get(metadata, 1))
        key = (data, metadata, csum, ndevs, parse_size(size), tuple(mkfs_extra), seed,
               mount_options)
        fs = self._fs.get(key)
        if fs is not None:
            self._touch(key)
            fs._attach()
            return fs
        name = f"{data}-{metadata}-{csum}-{ndevs}-{len(self._fs)}"
        images = make_images(self.workdir / name, [size] * ndevs)
        with LoopDevices(images) as loops:
            fsid = mkfs(loops.devs, data=data, metadata=metadata, csum=csum, extra=mkfs_extra)
            with mounted(loops.devs, options=mount_options) as mnt:
                manifest = fill_files(mnt, seed=seed)
        fs = CachedFs(data, metadata, csum, images, fsid, manifest, mkfs_extra)
        self._fs[key] = fs
        self._touch(key)
        fs._attach()
        return fs

    def close(self) -> None:
        errs = []
        for fs in self._fs.values():
            try:
                fs._detach()
            except Exception as e:
                errs.append(str(e))
        self._fs.clear()
        self._lru.clear()
        if errs:
            raise RuntimeError("; ".join(errs))


# ---------------------------------------------------------------------------
# safety net
# ---------------------------------------------------------------------------

def emergency_cleanup() -> list[str]:
    """Unmount everything this process mounted and detach every loop device it
    attached.  Returns what had to be cleaned up (empty when tests were tidy)."""
    leftovers = []
    for mnt in list(reversed(_MOUNTS)):
        leftovers.append(f"mount {mnt}")
        umount(mnt)
    for dev in list(_LOOPS):
        leftovers.append(f"loop {dev}")
        umount_devices([dev])
        with contextlib.suppress(Exception):
            detach_loop(dev)
    return leftovers


atexit.register(emergency_cleanup)


# ---------------------------------------------------------------------------
# checksums
# ---------------------------------------------------------------------------

def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    """The btrfs crc32c (Castagnoli) of @data, as its checksum fields hold it."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
