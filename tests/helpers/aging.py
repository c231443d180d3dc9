# SPDX-License-Identifier: GPL-2.0-or-later
"""Filesystems with a past: the aging harness of the suite (issue 30).

A young filesystem, filled once, is not what sysadmins run. ``AgedSpec``
describes a filesystem and a past, all from one seed: profiles (every data
and metadata profile comes up in turn), two to five small sparse devices of
uneven sizes, hints or none, and a workload that writes many small files and
a few large ones to a level, snapshots them, deletes a random subset,
rewrites files in place (copy-on-write fragmentation), clones some
(reflinks), writes again, runs a partial balance (``-dusage=``/``-musage=``),
adds a device and removes another mid-life, deletes the snapshot, and
deletes some more. ``script()`` is that past as shell lines that run the same
way on the host (bash) and in the test guests (busybox sh): the file work is
``tests/vm/guest-age.c``, the rest btrfs-progs and btrfsx.

How a test asks for an aged filesystem
--------------------------------------

Use the session fixture ``aged`` (tests/conftest.py; ``from helpers import
aging`` for the rest); it needs root and loop
devices (it skips otherwise)::

    def test_something(aged, tmp_path):
        for seed in aging.seeds():          # BTRFSX_AGED seeds (default 24)
            fs = aged.get(seed)             # made on first use, then cached
            images = fs.copy(tmp_path / f"s{seed}")   # your own copy to change
            ...                             # fs.spec: what it is; fs.devids
            aging.remove_images(images)

``aged.get(seed)`` ages the filesystem on loop devices the first time it is
asked for (a few seconds), unmounts it and keeps its image files, unattached,
until the end of the session, when they are deleted, or until
``BTRFSX_AGED_KEEP`` (default 4) others have been asked for since. Never attach or mount
the cached images themselves: take a copy (``fs.copy()``; sparse, the
filesystem's fsid and device UUIDs unchanged, so attach only one copy of an
aged filesystem at a time, and delete it when done). ``aged.get(seed,
hinted=True)`` or ``hinted=False`` forces hints on or off, ``small=True``
keeps it under 1.25 GiB of devices and 320 MiB of data; ``aging.seeds()``
honours ``BTRFSX_AGED`` (``BTRFSX_AGED=500`` for the big run) and
``BTRFSX_AGED_SEED`` (the first seed). The images of one filesystem hold up
to about 1.5 GiB of written data; ask for a filesystem when you need it and
copies are deleted as you go.

In the guests (tests/vm) the same images are attached as disks (copies,
``vmharness.make_disks`` is not needed): ``fs.copy()`` and pass the paths to
``Guest.run()``; members are /dev/vd* in ``fs.devids`` order.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from helpers import fsutil

sys.path.insert(0, str(fsutil.TESTS_DIR / "vm"))
import vmharness  # noqa: E402  (parse_console: the @@R lines)

MiB = 1 << 20
GiB = 1 << 30

DATA_PROFILES = ["single", "raid1", "raid0", "raid10", "dup", "raid1c3", "raid5", "raid6"]
META_PROFILES = ["raid1", "dup", "single", "raid1c3", "raid10"]
PROFILE_MIN = {"single": 1, "dup": 1, "raid0": 2, "raid1": 2, "raid10": 2, "raid1c3": 3,
               "raid1c4": 4, "raid5": 2, "raid6": 3}
#: usable share of the raw space per profile, for the fill levels (an estimate)
SHARE = {"single": 1.0, "dup": 0.5, "raid0": 1.0, "raid1": 0.5, "raid10": 0.5,
         "raid1c3": 1 / 3, "raid5": 0.66, "raid6": 0.5}
SIZES = [256 * MiB, 320 * MiB, 384 * MiB, 512 * MiB, 768 * MiB, 1024 * MiB]
MAX_TOTAL = 2 * GiB                     # device bytes of one filesystem
MAX_DATA = 1024 * MiB                   # the capacity the workload is scaled to
SMALL_TOTAL = 1280 * MiB                # the same for make_spec(small=True)
SMALL_DATA = 320 * MiB
#: what the kernel does at a time of its own choosing stays out (see script())
MOUNT_OPTIONS = "nodiscard,commit=300"
HINT_NAMES = ["data_preferred", "metadata_preferred", "metadata_only", "data_only", "none"]


def seeds() -> range:
    """The seeds of this run: BTRFSX_AGED of them (default 24) from BTRFSX_AGED_SEED (0)."""
    first = int(os.environ.get("BTRFSX_AGED_SEED", "0"))
    return range(first, first + int(os.environ.get("BTRFSX_AGED", "24")))


def _allows(hint: int, data: bool) -> bool:
    return hint != (2 if data else 3)


@dataclass
class AgedSpec:
    """A filesystem and its past, from a seed."""
    seed: int
    data: str
    metadata: str
    sizes: list[int]                    # bytes of devids 1..n
    hints: list[int]                    # hint values, stored (set offline before the mount)
    steps: list[tuple] = field(default_factory=list)    # the workload, see script()
    spare: int = 0                      # a device added mid-life (0: none)
    removed: int = 0                    # the devid removed mid-life (0: none)
    small: str = ""                     # "s": made small (make_spec(small=True))

    @property
    def hinted(self) -> bool:
        return any(self.hints)

    def describe(self) -> str:
        sizes = "/".join(str(s // MiB) for s in self.sizes)
        past = ", ".join(" ".join(str(w) for w in step) for step in self.steps)
        hints = f" hints {self.hints}" if self.hinted else ""
        spare = f" spare {self.spare // MiB}" if self.spare else ""
        return f"aged {self.seed}: {self.data}/{self.metadata} {sizes} MiB{hints}{spare}: {past}"


def make_spec(seed: int, hinted: bool | None = None, small: bool = False) -> AgedSpec:
    """The filesystem and past of @seed; @hinted forces hints on or off
    (default: every third seed is hinted); @small keeps it within
    SMALL_TOTAL device bytes and SMALL_DATA of data (for the guests, whose
    relocations run under TCG)."""
    rng = random.Random(f"aged-{seed}")
    data = DATA_PROFILES[seed % len(DATA_PROFILES)]
    meta = META_PROFILES[(seed + seed // len(DATA_PROFILES)) % len(META_PROFILES)]
    need = max(PROFILE_MIN[data], PROFILE_MIN[meta])
    n = rng.randint(max(need, 2 if data != "dup" else 1), max(need, 2) + 2)
    if data == "dup":
        n = 1 if meta in ("dup", "single") else need
    sizes = [rng.choice(SIZES) for _ in range(n)]
    total = SMALL_TOTAL if small else MAX_TOTAL
    while sum(sizes) > total:           # small images: two dozen fit the suite's time
        sizes[sizes.index(max(sizes))] = max(256 * MiB, sizes[sizes.index(max(sizes))] // 2)
        if all(size == 256 * MiB for size in sizes):
            break
    if hinted is None:
        hinted = seed % 3 == 2
    hints = [0] * n
    while hinted:
        hints = [rng.choice([0, 0, 1, 2, 3]) for _ in range(n)]
        if (any(hints) and sum(_allows(h, True) for h in hints) >= PROFILE_MIN[data] and
                sum(_allows(h, False) for h in hints) >= PROFILE_MIN[meta]):
            break
    spec = AgedSpec(seed, data, meta, sizes, hints, small="s" if small else "")
    capacity = min(int(sum(sizes) * SHARE[data]), SMALL_DATA if small else MAX_DATA)
    largest = max(4 * MiB, min(128 * MiB, capacity // 8)) // MiB * MiB
    level = rng.uniform(0.35, 0.85)
    steps: list[tuple] = [("small", rng.choice([500, 2000, 5000])),
                          ("write", int(capacity * level) // 4096 * 4096, largest)]
    if rng.random() < 0.5:
        steps.append(("snapshot",))
    steps.append(("delete", rng.randint(200, 600)))
    steps.append(("overwrite", int(capacity * rng.uniform(0.02, 0.08)) // 4096 * 4096))
    if rng.random() < 0.6:
        steps.append(("reflink", rng.randint(20, 150)))
    # Writing back a share of what is left: full filesystems come up, not every time.
    steps.append(("write", int(capacity * (1 - level) * rng.uniform(0.1, 0.8)) // 4096 * 4096,
                  largest))
    if rng.random() < 0.5:
        steps.append(("balance", rng.choice([10, 30, 50, 75]), rng.choice([20, 50, 80])))
    if n > need and rng.random() < 0.35:
        spec.spare = rng.choice(SIZES)
        spec.removed = rng.randint(1, n)
        steps.append(("add",))
        steps.append(("remove", spec.removed))
    if ("snapshot",) in steps and rng.random() < 0.6:
        steps.append(("delsnap",))
    steps.append(("delete", rng.randint(50, 300)))
    spec.steps = steps
    return spec


def script(spec: AgedSpec, disks: list[str], spare: str | None, mnt: str) -> str:
    """Shell lines that make and age @spec on @disks (devids 1..n in order;
    @spare for a mid-life add) mounted at @mnt, and unmount it. Results come
    back as ``@@R age_*`` lines (tests/vm/vmharness.parse_console reads them);
    mkfs or the mount failing prints ``@@R age_failed <seed> <what>``, a step
    that fails (a balance or remove a full filesystem refuses, anything after
    a transaction abort) ``@@R age_enospc <seed> <step> <op>``: the filesystem
    is then what its last commit left; one that left it read-only (the kernel
    aborted a transaction) also ``@@R age_readonly <seed> <step> <op>``.
    After every step the filesystem settles (``guest-age settle``: committed,
    and the empty block groups the kernel's cleaner deletes deleted), so the
    next step starts from the same state every run. The mount keeps the
    kernel's timers out: no asynchronous discard (nodiscard: with it, the
    kernel deletes empty block groups once a delayed discard of them ends,
    seconds later) and a commit interval beyond any step (commit=300: its
    timer also wakes the cleaner), so only those commits happen."""
    s = spec.seed
    vol = f"{mnt}/vol"
    lines = [f"mkfs.btrfs -q -f -K -d {spec.data} -m {spec.metadata} {' '.join(disks)} "
             f">/tmp/age.$$ 2>&1 || {{ echo '@@R age_failed {s} mkfs'; cat /tmp/age.$$; }}"]
    for dev, hint in zip(disks, spec.hints):
        if hint:
            lines.append(f"btrfsx property set -f {dev} allocation_hint {HINT_NAMES[hint]} "
                         ">/dev/null")
    opts = ",".join(f"device={d}" for d in disks)
    lines.append(f"mount -o {MOUNT_OPTIONS},{opts} {disks[0]} {mnt} || "
                 f"echo '@@R age_failed {s} mount'")
    # Every block group read in (FITRIM waits for each): allocations never
    # depend on how far the kernel's caching threads got.
    lines.append(f"fstrim {mnt}")
    lines.append(f"btrfs -q subvolume create {vol} >/dev/null")
    for i, step in enumerate(spec.steps):
        op, args = step[0], step[1:]
        seed = s * 16 + i
        if op in ("write", "small", "overwrite", "delete", "reflink"):
            cmd = f"guest-age {op} {vol} {seed} " + " ".join(str(a) for a in args)
        elif op == "snapshot":
            cmd = f"btrfs -q subvolume snapshot {vol} {mnt}/snap"
        elif op == "delsnap":
            cmd = (f"btrfs -q subvolume delete -c {mnt}/snap && btrfs -q filesystem sync {mnt} "
                   f"&& btrfs -q subvolume sync {mnt}")
        elif op == "balance":
            cmd = f"btrfs -q balance start -dusage={args[0]} -musage={args[1]} {mnt}"
        elif op == "add":
            cmd = f"btrfs -q device add -f {spare} {mnt}"
        elif op == "remove":
            cmd = f"btrfs -q device remove {args[0]} {mnt}"
        else:
            raise ValueError(op)
        # A full filesystem may refuse a balance or a remove, or even abort a
        # transaction and go read-only (seen on raid6 and on a remove): that
        # is part of its past, but for the abort (see AgedCache._make).
        lines.append(f"{cmd} >/tmp/age.$$ 2>&1 || {{ echo '@@R age_enospc {s} {i} {op}'; "
                     f"grep -q ' {mnt} btrfs ro[ ,]' /proc/mounts && "
                     f"echo '@@R age_readonly {s} {i} {op}'; }}; "
                     f"grep '^@@R' /tmp/age.$$; rm -f /tmp/age.$$")
        lines.append(f"guest-age settle {mnt}")
    lines.append(f"umount {mnt}")
    return "\n".join(lines) + "\n"


def without_step(spec: AgedSpec, index: int) -> AgedSpec:
    """@spec without its step @index (and a device added for a remove
    without the remove, a remove without the device added before it)."""
    op = spec.steps[index][0]
    drop = {index}
    if op == "add":
        drop |= {i for i, st in enumerate(spec.steps) if st[0] == "remove"}
    steps = [st for i, st in enumerate(spec.steps) if i not in drop]
    out = dataclasses.replace(spec, steps=steps)
    if op in ("add", "remove"):
        out.removed = 0
    if op == "add":
        out.spare = 0
    return out


def build_tools(bindir: Path, btrfsx: str) -> str:
    """A PATH with btrfsx and the helpers tests/vm/guest-age.c and
    guest-fill.c built into @bindir."""
    bindir.mkdir(parents=True, exist_ok=True)
    for name in ("guest-age", "guest-fill"):
        if not (bindir / name).exists():
            fsutil.run(["gcc", "-O2", "-I", str(fsutil.REPO), "-o", str(bindir / name),
                        str(fsutil.TESTS_DIR / "vm" / f"{name}.c")])
    if not (bindir / "btrfsx").exists():
        (bindir / "btrfsx").symlink_to(btrfsx)
    return f"{bindir}:{os.environ['PATH']}"


def remove_images(paths) -> None:
    for path in paths:
        Path(path).unlink(missing_ok=True)


def settle(mnt, path_env: str) -> None:
    """The filesystem at @mnt at rest: committed, and the empty block groups
    the kernel's cleaner deletes deleted (``guest-age settle``), as a plan
    describes it after a change."""
    fsutil.run(["guest-age", "settle", str(mnt)], env=dict(os.environ, PATH=path_env))


class SetupFailed(AssertionError):
    """mkfs.btrfs failed on the fresh loop devices (its output says why)."""


@dataclass
class AgedFs:
    """An aged filesystem of the cache: its members' image files (devids in
    ``devids`` order), unattached. Copy them to use them."""
    spec: AgedSpec
    images: list[Path]
    devids: list[int]                   # of the members, as the past left them
    fsid: str
    log: str                            # the workload's output (@@R age_* lines)

    def copy(self, dest: Path) -> list[Path]:
        """Sparse copies of the members in @dest (made if needed), in devid order."""
        dest.mkdir(parents=True, exist_ok=True)
        out = []
        for img in self.images:
            target = dest / img.name
            fsutil.run(["cp", "--sparse=always", str(img), str(target)])
            out.append(target)
        return out


class AgedCache:
    """Aged filesystems of one session, made on first use (see the module's
    text). At most ``BTRFSX_AGED_KEEP`` (default 4) are kept: asking for
    another deletes the images of the one asked for least recently, which is
    made again (the same seed, the same past) if it is asked for later. 30
    aged filesystems kept at once held 31 GiB of the machine's disk."""

    def __init__(self, workdir: Path, path_env: str):
        self.workdir = workdir
        self.path_env = path_env
        self.keep = max(1, int(os.environ.get("BTRFSX_AGED_KEEP", "4")))
        self._fs: dict[tuple, AgedFs] = {}      # least recently asked for first

    def get(self, seed: int, hinted: bool | None = None, small: bool = False) -> AgedFs:
        key = (seed, hinted, small)
        if key in self._fs:
            self._fs[key] = self._fs.pop(key)
            return self._fs[key]
        while len(self._fs) >= self.keep:
            oldest = next(iter(self._fs))
            remove_images(self._fs.pop(oldest).images)
        try:
            self._fs[key] = self._make(make_spec(seed, hinted, small))
        except SetupFailed:
            # Seen once in a loaded run: mkfs failed on fresh loop devices.
            self._fs[key] = self._make(make_spec(seed, hinted, small))
        return self._fs[key]

    def _make(self, spec: AgedSpec) -> AgedFs:
        """Ages @spec; a past that aborted a transaction (the filesystem went
        read-only, its images no longer what one commit left: a remove
        aborted after it wiped the device's superblocks) is aged again
        without that step."""
        for _ in range(len(spec.steps)):
            fs, aborted = self._age(spec)
            if aborted is None:
                return fs
            remove_images(fs.images)
            spec = without_step(spec, aborted)
        raise AssertionError(f"{spec.describe()}: every past aborted")

    def _age(self, spec: AgedSpec) -> tuple[AgedFs, int | None]:
        where = self.workdir / f"aged{spec.seed}{'h' if spec.hinted else ''}{spec.small}"
        shutil.rmtree(where, ignore_errors=True)
        sizes = spec.sizes + ([spec.spare] if spec.spare else [])
        images = fsutil.make_images(where, sizes, prefix="dev")
        mnt = where / "mnt"
        mnt.mkdir()
        with fsutil.LoopDevices(images) as loops:
            disks = loops.devs[:len(spec.sizes)]
            spare = loops.devs[len(spec.sizes)] if spec.spare else None
            text = script(spec, disks, spare, str(mnt))
            try:
                p = subprocess.run(["bash", "-c", text], capture_output=True, text=True,
                                   env=dict(os.environ, PATH=self.path_env), timeout=900)
            finally:
                fsutil.umount_devices(loops.devs)
        mnt.rmdir()
        res = vmharness.parse_console(p.stdout + p.stderr)
        failed = res.results.get("age_failed", [])
        if failed:
            remove_images(images)
            raise (SetupFailed if failed[0][1] == "mkfs" else AssertionError)(
                f"{spec.describe()}: aging failed at {failed}:\n"
                f"{p.stdout[-3000:]}{p.stderr[-3000:]}")
        readonly = res.results.get("age_readonly", [])
        refused = {w[2] for w in res.results.get("age_enospc", [])}
        removed = 0 if "remove" in refused else spec.removed
        devids = [i + 1 for i in range(len(spec.sizes)) if i + 1 != removed]
        members = [img for i, img in enumerate(images[:len(spec.sizes)]) if i + 1 != removed]
        if spec.spare and "add" not in refused:
            devids.append(len(spec.sizes) + 1)
            members.append(images[-1])
        remove_images(set(images) - set(members))
        if readonly:
            return AgedFs(spec, members, devids, "", p.stdout + p.stderr), int(readonly[0][1])
        return AgedFs(spec, members, devids, fsutil.read_fsid(members[0]),
                      p.stdout + p.stderr), None

    def close(self) -> None:
        self._fs.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)
