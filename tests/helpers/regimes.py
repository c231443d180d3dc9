# SPDX-License-Identifier: GPL-2.0-or-later
"""Maintenance regimes side by side (issue 37): the harness of bench/maintain
and tests/test_maintain_regimes.py.

Two workloads, both on loop devices, both with their file work in
bench/maintain-load.c (built by ``build_load``):

- ``trap()``: the metadata ENOSPC trap as the issue states it: one device,
  data single, metadata dup; 32 MiB files until full, every other one
  deleted; then 1,800-byte files (inline: metadata only) in batches until
  ENOSPC, a regime's checkpoint after each batch.
- ``churn()`` on a copy of ``make_start()``'s image: simulated days of a
  mail and file server (small mail files kept for a while, documents, a
  weekly media import that users then thin out, a database rewritten in
  place, a snapshot a day kept a week), each day followed by the regime's
  timer slot and an idle slot, with the workload's fsync probe running
  throughout.

The regimes (``REGIMES``): ``nothing``; ``btrfsmaintenance`` (Debian's
package 0.5, its own /usr/share/btrfsmaintenance/btrfs-balance.sh with its
defaults, run at the times of its timer, as its systemd unit runs it:
idle I/O and CPU class); ``reclaim`` (the kernel's dynamic and periodic
reclaim of data block groups, switched on when the regime starts;
``reclaim-dynamic`` the dynamic threshold alone, which then acts as a block
group's usage falls below it; in the trap ``reclaim-late``, both switched on
after the data fill, before the deletions); ``crude``
(the trap only: ``btrfs balance start -dusage=60 -dlimit=2`` whenever
unallocated falls below 600 MiB); ``btrfsx`` (``btrfsx maintain run <mnt>``
on its timer, daily; skipped while btrfsx has no maintain command).

What is measured comes from the kernel, the same way for every regime:
relocations from the kernel log ("relocating block group <start> flags
<type>", its progress lines close the window), their sizes and used bytes
from the block group items read just before (bench/maintain-load.c bgs: a
tree search), the reclaim's own counters (sysfs reclaim_bytes and
reclaim_count), ENOSPC from the workload's refused operations, classified by
what ``btrfs filesystem usage`` shows at the time.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from helpers import fsutil

KiB = 1024
MiB = 1 << 20
GiB = 1 << 30

GIVE_UP = 5                             # refusals in a row that end a step (maintain-load.c)
LOAD_SOURCE = fsutil.REPO / "bench" / "maintain-load.c"
BTRFSMAINTENANCE = Path("/usr/share/btrfsmaintenance")
BTRFSMAINTENANCE_CONFIG = Path("/etc/default/btrfsmaintenance")

RELOCATING = re.compile(r"relocating block group (\d+) flags (\S+)")
PROGRESS = re.compile(r"found (\d+) extents, stage: (.+)")
FORCED_RO = re.compile(r"forced readonly|Transaction aborted")


def build_load(bindir: Path) -> Path:
    """bench/maintain-load.c built into @bindir (once)."""
    binary = bindir / "maintain-load"
    if not binary.exists() or binary.stat().st_mtime < LOAD_SOURCE.stat().st_mtime:
        bindir.mkdir(parents=True, exist_ok=True)
        fsutil.run(["gcc", "-O2", "-Wall", "-I", str(fsutil.REPO), "-o", str(binary),
                    str(LOAD_SOURCE), "-lm"])
    return binary


def results(text: str) -> dict[str, list[list[str]]]:
    """The "@@R name values..." lines of @text, by name."""
    out: dict[str, list[list[str]]] = {}
    for line in text.splitlines():
        if line.startswith("@@R "):
            name, *values = line[4:].split()
            out.setdefault(name, []).append(values)
    return out


# ---------------------------------------------------------------------------
# what the kernel says
# ---------------------------------------------------------------------------

class Kmsg:
    """The kernel log's records about one device from now on, with their
    times on CLOCK_MONOTONIC (seconds, as time.monotonic()). The log's own
    clock is calibrated against it with a token written to /dev/kmsg."""

    def __init__(self, device: str):
        self.tag = f"(device {os.path.basename(device)})"
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)
        self.pending: list[tuple[float, str]] = []
        self.offset = 0.0
        self.lost = 0
        self._calibrate()

    def _drain(self) -> None:
        while True:
            try:
                record = os.read(self.fd, 8192)
            except BlockingIOError:
                return
            except BrokenPipeError:         # overwritten before we read it
                self.lost += 1
                continue
            head, _, text = record.decode(errors="replace").partition(";")
            fields = head.split(",")
            if len(fields) >= 3:
                self.pending.append((int(fields[2]) / 1e6, text.split("\n", 1)[0]))

    def _calibrate(self) -> None:
        token = f"btrfsx-regimes {os.getpid()} {time.monotonic_ns()}"
        before = time.monotonic()
        with open("/dev/kmsg", "w") as f:
            f.write(token + "\n")
        after = time.monotonic()
        self._drain()
        for stamp, text in self.pending:
            if token in text:
                self.offset = (before + after) / 2 - stamp
        self.pending = [(s, t) for s, t in self.pending if token not in t]

    def read(self) -> list[tuple[float, str]]:
        """The records about the device since the last read: (time, text)."""
        self._drain()
        out = [(s + self.offset, t) for s, t in self.pending if self.tag in t]
        self.pending = []
        return out

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class Relocation:
    """A block group the kernel relocated (by balance or by its reclaim)."""
    start: int
    flags: str
    t0: float
    t1: float
    length: int = 0                     # from the last listing before it (0: unknown)
    used: int = 0
    by: str = ""                        # what was running: the regime's command, or "kernel"


@dataclass
class Events:
    """What the kernel log said, in order."""
    relocations: list[Relocation] = field(default_factory=list)
    balance_enospc: int = 0             # "N enospc errors during balance"
    readonly: list[str] = field(default_factory=list)

    def feed(self, records: list[tuple[float, str]], bgs: dict[int, tuple[int, int, int]],
             by: str) -> None:
        for stamp, text in records:
            m = RELOCATING.search(text)
            if m:
                start = int(m.group(1))
                length, _, used = bgs.get(start, (0, 0, 0))
                self.relocations.append(Relocation(start, m.group(2), stamp, stamp, length,
                                                   used, by))
                continue
            if PROGRESS.search(text) and self.relocations:
                self.relocations[-1].t1 = stamp
                continue
            m = re.search(r"(\d+) enospc errors during balance", text)
            if m:
                self.balance_enospc += int(m.group(1))
            elif FORCED_RO.search(text):
                self.readonly.append(text)


# ---------------------------------------------------------------------------
# one filesystem on a loop device
# ---------------------------------------------------------------------------

class LoopFs:
    """A filesystem image attached and mounted (default mount options, what
    users get); the sysfs knobs it changes are put back before the unmount."""

    def __init__(self, image: Path, mnt: Path, load: Path):
        self.image = image
        self.mnt = mnt
        self.load = load
        self.dev = ""
        self.fsid = ""
        self.kmsg: Kmsg | None = None
        self.knobs: dict[str, str] = {}
        self.events = Events()
        self.bgs_now: dict[int, tuple[int, int, int]] = {}

    def __enter__(self) -> "LoopFs":
        self.dev = fsutil.attach_loop(self.image)
        try:
            self.mnt.mkdir(parents=True, exist_ok=True)
            self.kmsg = Kmsg(self.dev)
            fsutil.mount(self.dev, self.mnt)
            self.fsid = fsutil.run(["findmnt", "-n", "-o", "UUID", str(self.mnt)]).stdout.strip()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for name, value in self.knobs.items():
            path = self.sysfs(name)
            if path.exists():
                path.write_text(value)
        self.knobs = {}
        if self.dev:
            fsutil.umount(self.mnt)
            fsutil.detach_loop(self.dev)
            self.dev = ""
        if self.kmsg:
            self.kmsg.close()
            self.kmsg = None

    def sysfs(self, name: str) -> Path:
        return Path("/sys/fs/btrfs") / self.fsid / name

    def set_knob(self, name: str, value: str) -> None:
        path = self.sysfs(name)
        self.knobs.setdefault(name, path.read_text().strip())
        path.write_text(value)

    def readonly(self) -> bool:
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) > 3 and parts[1] == str(self.mnt):
                return "ro" in parts[3].split(",")
        return False

    def usage(self) -> dict[str, int]:
        """`btrfs filesystem usage -b`: device size, unallocated, each type's
        size and used; statfs's available bytes as `avail`."""
        text = fsutil.run(["btrfs", "filesystem", "usage", "-b", str(self.mnt)]).stdout
        out = {}
        for key, label in (("size", "Device size:"), ("unallocated", "Device unallocated:")):
            m = re.search(re.escape(label) + r"\s+(\d+)", text)
            out[key] = int(m.group(1)) if m else 0
        for kind in ("Data", "Metadata", "System"):
            m = re.search(rf"^{kind},\S+: Size:(\d+), Used:(\d+)", text, re.M)
            out[f"{kind.lower()}_size"] = int(m.group(1)) if m else 0
            out[f"{kind.lower()}_used"] = int(m.group(2)) if m else 0
        st = os.statvfs(self.mnt)
        out["avail"] = st.f_bavail * st.f_frsize
        return out

    def bgs(self) -> dict[int, tuple[int, int, int]]:
        """Every block group now: start -> (length, flags, used)."""
        text = fsutil.run([str(self.load), "bgs", str(self.mnt)]).stdout
        out = {}
        for line in text.splitlines():
            _, start, length, flags, used = line.split()
            out[int(start)] = (int(length), int(flags), int(used))
        self.bgs_now = out
        return out

    def collect(self, by: str) -> None:
        """The kernel log since the last call into self.events; relocations
        get their sizes from the last block group listing."""
        assert self.kmsg
        self.events.feed(self.kmsg.read(), self.bgs_now, by)

    def commit(self) -> None:
        """A commit (syncfs) that does not wake the cleaner: the block group
        items show what was deleted, and nothing is reclaimed yet."""
        fsutil.run(["sync", "-f", str(self.mnt)])

    def sync(self) -> None:
        """A commit that wakes the kernel's cleaner (BTRFS_IOC_SYNC): what it
        deletes, and its reclaim sweep, happen now, not at a timer's whim."""
        fsutil.run(["btrfs", "filesystem", "sync", str(self.mnt)], check=False)

    def quiet(self, timeout: float = 300) -> None:
        """Waits until no exclusive operation runs (the kernel's reclaim takes
        the balance one while it relocates)."""
        path = self.sysfs("exclusive_operation")
        deadline = time.monotonic() + timeout
        calm = 0
        while time.monotonic() < deadline and calm < 3:
            time.sleep(0.2)
            state = path.read_text().strip() if path.exists() else "none"
            calm = calm + 1 if state == "none" else 0

    def load_cmd(self, *args) -> dict[str, list[list[str]]]:
        p = fsutil.run([str(self.load), *map(str, args)], check=False)
        return results(p.stdout)


# ---------------------------------------------------------------------------
# the regimes
# ---------------------------------------------------------------------------

@dataclass
class Action:
    """One run of a regime's command."""
    what: str
    t0: float
    t1: float
    rc: int
    output: str
    report: dict | None = None          # btrfsx's JSON, when it printed one

    def summary(self) -> list[str]:
        """What btrfs balance said it did, and its errors."""
        return [line.strip() for line in self.output.splitlines()
                if "had to relocate" in line or "ERROR" in line or "error" in line]


def btrfsx_binary() -> str:
    return os.environ.get("BTRFSX") or str(fsutil.REPO / "btrfsx")


def btrfsx_maintain_missing(btrfsx: str | None = None) -> str:
    """Why the btrfsx regime cannot run ("" when it can)."""
    binary = btrfsx or btrfsx_binary()
    if not os.access(binary, os.X_OK):
        return f"{binary}: not built"
    p = subprocess.run([binary, "maintain", "--help"], capture_output=True, text=True)
    if p.returncode != 0:
        return ("btrfsx maintain does not exist yet (issue 37: the engine comes after the "
                "relocation model and the chunk-selection policy move below the engines)")
    return ""


def timed(fs: LoopFs, what: str, cmd: list[str], **kw) -> Action:
    """Runs @cmd (a regime's maintenance) with the block group listing just
    before it, so the relocations it makes get their sizes."""
    fs.collect("kernel")
    fs.bgs()
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", **kw)
    t1 = time.monotonic()
    fs.collect(what)
    return Action(what, t0, t1, p.returncode, p.stdout + p.stderr)


def run_btrfsmaintenance(fs: LoopFs, workdir: Path) -> Action:
    """btrfsmaintenance's own btrfs-balance.sh with the package's defaults,
    on this filesystem: the installed /etc/default/btrfsmaintenance with
    BTRFS_BALANCE_MOUNTPOINTS set to the mount point, bound over the
    original in a private mount namespace (the script reads that path), at
    the idle I/O and CPU class its systemd unit gives it."""
    config = workdir / "btrfsmaintenance.conf"
    text = BTRFSMAINTENANCE_CONFIG.read_text()
    text = re.sub(r'^BTRFS_BALANCE_MOUNTPOINTS=.*$', f'BTRFS_BALANCE_MOUNTPOINTS="{fs.mnt}"',
                  text, flags=re.M)
    config.write_text(text)
    script = (f"mount --bind {config} {BTRFSMAINTENANCE_CONFIG} && "
              f"exec ionice -c 3 chrt --idle 0 {BTRFSMAINTENANCE}/btrfs-balance.sh")
    action = timed(fs, "btrfsmaintenance", ["unshare", "-m", "sh", "-c", script])
    # its flock leaves /run/btrfs-maintenance-running.<fsid> behind: ours to remove
    Path(f"/run/btrfs-maintenance-running.{fs.fsid}").unlink(missing_ok=True)
    return action


def run_crude(fs: LoopFs) -> Action:
    return timed(fs, "crude", ["btrfs", "balance", "start", "-dusage=60", "-dlimit=2",
                               str(fs.mnt)])


def run_btrfsx(fs: LoopFs, workdir: Path, btrfsx: str, extra: list[str]) -> Action:
    """The engine's regime: ``btrfsx --format json maintain run [extra] <mnt>``
    with its defaults (no policy file), its state (the copy rate it learns)
    kept in @workdir from one run to the next; its JSON report is kept
    beside what the kernel says it did."""
    env = dict(os.environ, BTRFSX_STATE_DIR=str(workdir / "btrfsx-state"),
               BTRFSX_CONFIG_DIR=str(workdir / "btrfsx-etc"))
    (workdir / "btrfsx-etc").mkdir(parents=True, exist_ok=True)
    action = timed(fs, "btrfsx", [btrfsx, "--format", "json", "maintain", "run", *extra,
                                  str(fs.mnt)], env=env)
    try:
        action.report = json.JSONDecoder().raw_decode(action.output.lstrip())[0]
    except (json.JSONDecodeError, IndexError):
        action.report = None
    return action


REGIMES = ("nothing", "btrfsmaintenance", "reclaim", "reclaim-dynamic", "btrfsx")
TRAP_REGIMES = ("nothing", "btrfsmaintenance", "reclaim", "reclaim-late", "reclaim-dynamic",
                "crude", "btrfsx")


@dataclass
class Regime:
    """A regime and its schedule: ``due(day)`` says whether its timer fires
    at the end of @day (0-based, from the regime's start)."""
    name: str
    period_days: int = 1
    btrfsx: str = ""
    btrfsx_args: list[str] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)

    def start(self, fs: LoopFs) -> None:
        if self.name.startswith("reclaim"):
            fs.set_knob("allocation/data/dynamic_reclaim", "1")
        if self.name in ("reclaim", "reclaim-late"):
            fs.set_knob("allocation/data/periodic_reclaim", "1")

    def due(self, day: int) -> bool:
        """@day counts from the regime's start: the timer fires first at the
        end of the first day, then every period_days."""
        return day % self.period_days == 0

    def act(self, fs: LoopFs, workdir: Path, unallocated_below: int = 0) -> Action | None:
        if self.name == "btrfsmaintenance":
            action = run_btrfsmaintenance(fs, workdir)
        elif self.name == "btrfsx":
            action = run_btrfsx(fs, workdir, self.btrfsx, self.btrfsx_args)
        elif self.name == "crude" and fs.usage()["unallocated"] < unallocated_below:
            action = run_crude(fs)
        else:
            return None
        self.actions.append(action)
        return action


def relocation_summary(fs: LoopFs, reclaim_before: dict[str, int]) -> dict:
    """The relocations of a run, from the kernel: how many block groups, their
    sizes, the bytes copied (``used``), by type; the reclaim's own counters."""
    rel = fs.events.relocations
    out = {"block_groups": len(rel), "length": sum(r.length for r in rel),
           "listed_used": sum(r.used for r in rel),
           "data_block_groups": sum(1 for r in rel if "data" in r.flags),
           "unknown": sum(1 for r in rel if not r.length),
           "balance_enospc": fs.events.balance_enospc}
    now = reclaim_counters(fs)
    for name in now:
        out[name] = now[name] - reclaim_before.get(name, 0)
    # what a command relocated was listed just before it ran; the kernel's
    # reclaim relocates when its worker gets to it: its own count is exact
    # where it keeps one (6.18 counted 3 reclaims and 0 bytes in the small
    # churn): else what the last listing before each showed
    by_kernel = sum(r.used for r in rel if r.by == "kernel")
    out["used"] = (sum(r.used for r in rel if r.by != "kernel") +
                   (out["reclaim_bytes"] or by_kernel))
    return out


def reclaim_counters(fs: LoopFs) -> dict[str, int]:
    out = {}
    for name in ("reclaim_bytes", "reclaim_count"):
        path = fs.sysfs(f"allocation/data/{name}")
        out[name] = int(path.read_text()) if path.exists() else 0
    return out


def enospc_kind(usage: dict[str, int]) -> str:
    """"metadata" when data still had room (in its chunks or unallocated, at
    least 5 % of the device) as writes were refused: the trap; "full"
    otherwise."""
    data_room = usage["data_size"] - usage["data_used"] + usage["unallocated"]
    return "metadata" if data_room >= usage["size"] // 20 else "full"


# ---------------------------------------------------------------------------
# the trap
# ---------------------------------------------------------------------------

def new_image(image: Path, size: int) -> Path:
    """A fresh filesystem of the trap's shape in @image: one device, data
    single, metadata dup (what mkfs.btrfs gives a single disk)."""
    image.parent.mkdir(parents=True, exist_ok=True)
    image.unlink(missing_ok=True)
    with open(image, "wb") as f:
        f.truncate(size)
    fsutil.run(["mkfs.btrfs", "-q", "-f", "-d", "single", "-m", "dup", str(image)])
    return image


@dataclass
class TrapSpec:
    size: int = 3 * GiB
    large: int = 32 * MiB
    small: int = 1800
    batch: int = 20000
    crude_below: int = 600 * MiB
    limit: int = 2_000_000              # files: a stop for a regime that never meets ENOSPC


def trap(spec: TrapSpec, regime: Regime, workdir: Path, load: Path,
         log: Callable[[str], None] = print) -> dict:
    """The trap under @regime; returns files made, what statfs and `btrfs
    filesystem usage` showed at ENOSPC, the checkpoints, the relocations."""
    image = new_image(workdir / "trap.img", spec.size)
    t_start = time.monotonic()
    out: dict = {"regime": regime.name, "checkpoints": []}
    try:
        with LoopFs(image, workdir / "mnt", load) as fs:
            if regime.name != "reclaim-late":
                regime.start(fs)
            counters = reclaim_counters(fs)
            (fs.mnt / "large").mkdir()
            (fs.mnt / "small").mkdir()
            large = fs.load_cmd("large", fs.mnt / "large", spec.large)["large"][0]
            if regime.name == "reclaim-late":
                regime.start(fs)
            thin = fs.load_cmd("thin", fs.mnt / "large")["thin"][0]
            out["large_files"], out["thinned"] = int(large[0]), int(thin[0])
            # what the deletions left, and what the kernel did about it
            u = fs.usage()
            fs.commit()
            fs.bgs()
            fs.sync()
            fs.quiet()
            fs.collect("kernel")
            out["checkpoints"].append({"files": 0, "after": "deletions", **u,
                                       "relocated": [(r.used, r.length, r.by)
                                                     for r in fs.events.relocations],
                                       "unallocated_after": fs.usage()["unallocated"]})
            files, err = 0, 0
            while not err and files < spec.limit:
                u = fs.usage()
                point = {"files": files, **u}
                out["checkpoints"].append(point)
                log(f"trap {regime.name}: {files} files, unallocated "
                    f"{u['unallocated'] / MiB:.0f} MiB, metadata {u['metadata_used'] / MiB:.0f}"
                    f"/{u['metadata_size'] / MiB:.0f} MiB, df {u['avail'] / MiB:.0f} MiB")
                seen = len(fs.events.relocations)
                action = regime.act(fs, workdir, spec.crude_below)
                if action:
                    fs.quiet()
                    fs.collect(regime.name)
                    point["action"] = {"what": action.what, "rc": action.rc,
                                       "seconds": round(action.t1 - action.t0, 2),
                                       "said": action.summary()}
                point["relocated"] = [(r.used, r.length, r.by)
                                      for r in fs.events.relocations[seen:]]
                point["unallocated_after"] = fs.usage()["unallocated"]
                res = fs.load_cmd("small", fs.mnt / "small", spec.small, spec.batch,
                                  files)["small"][0]
                files += int(res[0])
                err = int(res[1])
                fs.bgs()
                fs.sync()
                fs.quiet()
                fs.collect("kernel")
            u = fs.usage()
            out.update(files=files, errno=err, at_enospc=u,
                       kind=enospc_kind(u) if err == 28 else "none",
                       readonly=fs.readonly() or bool(fs.events.readonly),
                       relocations=[r.__dict__ for r in fs.events.relocations],
                       relocated=relocation_summary(fs, counters))
    finally:
        image.unlink(missing_ok=True)
    out["seconds"] = round(time.monotonic() - t_start, 1)
    return out


# ---------------------------------------------------------------------------
# the churn
# ---------------------------------------------------------------------------

@dataclass
class ChurnSpec:
    """A mail and file server's life, from a seed, scaled to @size (shares
    are of the device size). The plan is fixed in advance, day by day, the
    same for every regime: seasons of CYCLE days, first growth (a media
    import every day), then a clean-up (users delete media at random, so
    the chunks that held it are left partly used), then quiet; mail all
    along (kept mail_days, then most of it expunged), documents, a database
    rewritten in place, a snapshot a day kept snapshots_kept days."""
    seed: int = 1
    size: int = 3 * GiB
    days: int = 42
    cycle: int = 21                     # days of a season: growth, clean-up, quiet
    growth_days: int = 10
    cleanup_days: int = 5
    start_mail: int = 120000            # mail files of the start image
    start_media: float = 0.25           # media of the start image
    mail_per_day: int = 6000            # new mail files a day (200 B .. 12 KiB)
    mail_kept: int = 350                # of each day's mail, permille kept after mail_days
    mail_days: int = 10
    docs_per_day: int = 24              # documents a day (16 KiB .. 4 MiB)
    import_share: float = 0.02          # media imported a growth day
    media_files: tuple[int, int] = (4 * MiB, 48 * MiB)     # media file sizes
    import_headroom: float = 0.12       # an import stops short of this much left
    cleanup_permille: int = 180         # of all media, removed a clean-up day
    quiet_permille: int = 20            # the same on other days
    db_share: float = 0.06              # the database (4 files), rewritten in place
    db_rewrite: float = 0.012           # rewritten a day
    snapshots_kept: int = 3             # a snapshot a day, kept this many days
    probe_ms: int = 20                  # the workload's fsync every ... ms
    idle_seconds: float = 2.0           # the idle slot of each day
    stop_after: int = 0                 # end a run after this many days with metadata ENOSPC
    bm_period: int = 7                  # btrfsmaintenance's timer, in days (upstream: weekly)
    start_days: int = 0                 # days run into the start image, with no maintenance

    @classmethod
    def small(cls, seed: int = 1) -> "ChurnSpec":
        """The suite's scale: a season in 7 days, its growth fast-forwarded
        into the start image (the regimes start where the data chunks have
        taken the device), so that a regime's run is days 3 to 6. Its clock
        is compressed: btrfsmaintenance's weekly timer fires every third
        day, the first and the last of the run."""
        return cls(seed=seed, size=1 * GiB, days=6, cycle=6, growth_days=3,
                   cleanup_days=2, start_days=3, start_mail=25000, start_media=0.34,
                   mail_per_day=3000,
                   docs_per_day=20, import_share=0.08, import_headroom=0.14,
                   media_files=(2 * MiB, 16 * MiB), snapshots_kept=1, idle_seconds=0.5,
                   bm_period=3)

    def season(self, day: int) -> str:
        d = day % self.cycle
        if d < self.growth_days:
            return "growth"
        return "cleanup" if d < self.growth_days + self.cleanup_days else "quiet"


def _load(fs: LoopFs, op: str, path: Path, *args) -> list[str]:
    res = fs.load_cmd(op, path, *args)
    return res.get(op, [["0"] * 4])[0]


def make_start(spec: ChurnSpec, workdir: Path, load: Path,
               log: Callable[[str], None] = print) -> Path:
    """The start image: mkfs (data single, metadata dup, one device), a
    subvolume with a mail archive, media and the database, then the plan's
    first start_days days with no maintenance; unmounted."""
    image = new_image(workdir / "start.img", spec.size)
    with LoopFs(image, workdir / "mnt", load) as fs:
        vol = fs.mnt / "vol"
        fsutil.run(["btrfs", "-q", "subvolume", "create", str(vol)])
        for d in ("mail", "docs", "media", "db"):
            (vol / d).mkdir()
        (fs.mnt / "probe").mkdir()
        seed = spec.seed * 1000
        for i in range(0, spec.start_mail, 10000):
            d = vol / "mail" / f"a{i // 10000:02}"
            d.mkdir()
            _load(fs, "write", d, seed + i, min(10000, spec.start_mail - i), 200, 12 * KiB)
        media = vol / "media" / "start"
        media.mkdir()
        lo, hi = spec.media_files
        count = int(spec.size * spec.start_media / ((hi - lo) / math.log(hi / lo)))
        _load(fs, "write", media, seed + 1, count, lo, hi)
        db_file = int(spec.size * spec.db_share / 4) // MiB
        _load(fs, "write", vol / "db", seed + 2, 4, db_file * MiB, db_file * MiB)
        # the fast-forward: the first days with nothing done, for every regime
        ahead = Churn(spec, Regime("nothing"), fs, workdir, log)
        for day in range(spec.start_days):
            ahead.day(day)
            fs.sync()
        if ahead.enospc:
            raise RuntimeError(f"the start image met ENOSPC: {ahead.enospc}")
        fs.sync()
        u = fs.usage()
        log(f"start image ({spec.start_days} days in): data {u['data_used'] / MiB:.0f}/{u['data_size'] / MiB:.0f} MiB, "
            f"metadata {u['metadata_used'] / MiB:.0f}/{u['metadata_size'] / MiB:.0f} MiB, "
            f"unallocated {u['unallocated'] / MiB:.0f} MiB")
    return image


@dataclass
class Window:
    kind: str                           # "churn" or "maint"
    t0: float
    t1: float


class Probe:
    """The workload's fsync (bench/maintain-load.c probe), running all along."""

    def __init__(self, fs: LoopFs, workdir: Path, interval_ms: int):
        self.stop = workdir / "probe.stop"
        self.out = workdir / "probe.out"
        self.stop.unlink(missing_ok=True)
        self.proc = subprocess.Popen([str(fs.load), "probe", str(fs.mnt / "probe"),
                                      str(interval_ms), str(self.stop), str(self.out)])

    def samples(self) -> list[tuple[float, float, int]]:
        """(start on CLOCK_MONOTONIC s, latency ms, errno) each."""
        self.stop.touch()
        self.proc.wait(timeout=120)
        out = []
        for line in self.out.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                out.append((int(parts[0]) / 1e9, int(parts[1]) / 1e6, int(parts[2])))
        self.stop.unlink(missing_ok=True)
        self.out.unlink(missing_ok=True)
        return out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.stop.touch()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def fsync_summary(samples: list[tuple[float, float, int]], windows: list[Window]) -> dict:
    """The probe's latencies by what else ran: idle (neither the churn nor
    a relocation), maint (a relocation or a regime's command, not the
    churn), churn."""
    spans = sorted((w.t0, w.t1, w.kind) for w in windows)
    classes: dict[str, list[float]] = {"idle": [], "maint": [], "churn": [], "all": []}
    errors = 0
    for t, lat, err in samples:
        if err:
            errors += 1
            continue
        end = t + lat / 1000
        kinds = {k for a, b, k in spans if a < end and b > t}
        cls = "churn" if "churn" in kinds else "maint" if "maint" in kinds else "idle"
        classes[cls].append(lat)
        classes["all"].append(lat)
    out = {"errors": errors}
    for cls, lats in classes.items():
        out[cls] = {"n": len(lats), "p50": round(percentile(lats, 50), 2),
                    "p99": round(percentile(lats, 99), 2), "max": round(max(lats, default=0), 2)}
    return out


class Churn:
    """One regime's run of the churn on its copy of the start image."""

    def __init__(self, spec: ChurnSpec, regime: Regime, fs: LoopFs, workdir: Path,
                 log: Callable[[str], None]):
        self.spec, self.regime, self.fs, self.workdir, self.log = spec, regime, fs, workdir, log
        self.vol = fs.mnt / "vol"
        self.windows: list[Window] = []
        self.enospc: list[dict] = []
        self.days: list[dict] = []
        self.timing: dict[str, float] = {}
        self.gave_up = False
        # the run ends with this day: its further work would only add the
        # kernel's slow ENOSPC flushing (spec.stop_after)
        self.stopping = False

    def refused(self, day: int, what: str, count: int) -> None:
        if count:
            u = self.fs.usage()
            self.enospc.append({"day": day, "what": what, "refused": count,
                                "kind": enospc_kind(u), **u})
            self.stopping = self.stopping or bool(self.spec.stop_after and len(
                self.trapped_days()) >= self.spec.stop_after)

    def trapped_days(self) -> set[int]:
        return {e["day"] for e in self.enospc if e["kind"] == "metadata"}

    def snapshot_rotation(self, day: int) -> None:
        snaps = self.fs.mnt / "snap"
        snaps.mkdir(exist_ok=True)
        p = fsutil.run(["btrfs", "-q", "subvolume", "snapshot", "-r", str(self.vol),
                        str(snaps / f"d{day:03}")], check=False)
        if p.returncode:
            self.refused(day, "snapshot", 1)
        old = snaps / f"d{day - self.spec.snapshots_kept:03}"
        if old.exists():
            p = fsutil.run(["btrfs", "-q", "subvolume", "delete", str(old)], check=False)
            if p.returncode:
                self.refused(day, "snapshot delete", 1)

    def step(self, day: int, what: str, op: str, path: Path, *args) -> None:
        """One piece of the day's work; its refusals count as an ENOSPC event.
        A write refused GIVE_UP times ends the day's writing (users told the
        disk is full stop for the day); deletions still happen."""
        if self.stopping or (self.gave_up and op != "delete"):
            return
        t = time.monotonic()
        if not path.exists():
            try:
                path.mkdir()
            except OSError as e:
                self.refused(day, what, 1)
                self.gave_up = self.gave_up or e.errno == 28
                return
        r = _load(self.fs, op, path, *args)
        refused = int(r[1] if op == "overwrite" else r[2])
        self.refused(day, what, refused)
        self.gave_up = self.gave_up or refused >= GIVE_UP
        self.timing[what] = self.timing.get(what, 0.0) + time.monotonic() - t

    def day(self, day: int) -> None:
        s, vol, fs = self.spec, self.vol, self.fs
        seed = s.seed * 100000 + day * 100
        season = s.season(day)
        self.gave_up = False
        mail = vol / "mail" / f"d{day:03}"
        docs = vol / "docs" / f"d{day:03}"
        media = vol / "media" / f"d{day:03}"
        if season == "growth":
            # what users import depends on what they keep, not on how the
            # regime arranged it: the same every regime (until it refuses)
            u = fs.usage()
            room = (int(s.size * (1 - s.import_headroom)) - u["data_used"] -
                    2 * u["metadata_used"])
            want = min(int(s.size * s.import_share), max(room, 0))
            lo, hi = s.media_files
            count = int(want / ((hi - lo) / math.log(hi / lo)))
            self.step(day, "media import", "write", media, seed + 1, count, lo, hi)
        # mail arrives in four rounds, documents between them
        for part in range(4):
            self.step(day, "mail", "write", mail, seed + 10 + part, s.mail_per_day // 4, 200,
                      12 * KiB)
            self.step(day, "documents", "write", docs, seed + 20 + part, s.docs_per_day // 4,
                      16 * KiB, 4 * MiB)
        self.step(day, "database", "overwrite", vol / "db", seed + 3,
                  int(s.size * s.db_rewrite))
        # expunged mail; media and documents thinned out by their users
        old_mail = vol / "mail" / f"d{day - s.mail_days:03}"
        if old_mail.exists():
            self.step(day, "delete", "delete", old_mail, seed + 4, 1000 - s.mail_kept)
        old_docs = vol / "docs" / f"d{day - 3:03}"
        if old_docs.exists():
            self.step(day, "delete", "delete", old_docs, seed + 5, 150)
        permille = s.cleanup_permille if season == "cleanup" else s.quiet_permille
        for i, d in enumerate(sorted((vol / "media").iterdir())):
            if d.name != media.name:
                self.step(day, "delete", "delete", d, seed + 30 + i, permille)
        if self.stopping:
            return
        t = time.monotonic()
        self.snapshot_rotation(day)
        self.timing["snapshots"] = self.timing.get("snapshots", 0.0) + time.monotonic() - t

    def run(self) -> dict:
        s, fs = self.spec, self.fs
        counters = reclaim_counters(fs)
        self.regime.start(fs)
        probe = Probe(fs, self.workdir, s.probe_ms)
        try:
            for day in range(s.start_days, s.days):
                fs.collect("kernel")
                fs.bgs()
                t0 = time.monotonic()
                self.day(day)
                self.windows.append(Window("churn", t0, time.monotonic()))
                fs.collect("kernel")
                if fs.readonly() or fs.events.readonly:
                    self.log(f"{self.regime.name} day {day}: the filesystem went read-only")
                    break
                # the timer slot: the cleaner woken twice (the reclaim's sweeps
                # need two), then the regime's command if its timer fires
                fs.bgs()
                fs.sync()
                time.sleep(0.2)
                fs.sync()
                if self.regime.due(day - s.start_days):
                    action = self.regime.act(fs, self.workdir)
                    if action:
                        self.windows.append(Window("maint", action.t0, action.t1))
                fs.quiet()
                fs.collect("kernel")
                time.sleep(s.idle_seconds)
                u = fs.usage()
                chunks = [(length, used) for length, flags, used in fs.bgs().values()
                          if flags & 1]
                threshold = fs.sysfs("allocation/data/bg_reclaim_threshold")
                self.days.append({"day": day, "t0": t0, "t1": time.monotonic(),
                                  "data_chunks": chunks, **u,
                                  "reclaim_threshold": int(threshold.read_text())})
                self.log(f"{self.regime.name} day {day} ({s.season(day)}, "
                         f"{time.monotonic() - t0:.1f} s): data {u['data_used'] / MiB:.0f}/"
                         f"{u['data_size'] / MiB:.0f} MiB, metadata "
                         f"{u['metadata_used'] / MiB:.0f}/{u['metadata_size'] / MiB:.0f} MiB, "
                         f"unallocated {u['unallocated'] / MiB:.0f} MiB, enospc "
                         f"{sum(e['refused'] for e in self.enospc)}, relocated "
                         f"{len(fs.events.relocations)}")
                if self.stopping:
                    self.log(f"{self.regime.name}: stopped after {len(self.trapped_days())} "
                             "days with metadata ENOSPC")
                    break
        finally:
            samples = probe.samples() if probe.proc.poll() is None else []
            probe.kill()
        fs.collect("kernel")
        for r in fs.events.relocations:
            self.windows.append(Window("maint", r.t0, max(r.t1, r.t0 + 0.001)))
        self.probe_refusals(samples)
        return self.summary(samples, counters)

    def probe_refusals(self, samples: list[tuple[float, float, int]]) -> None:
        """The probe's fsyncs refused with ENOSPC, an event for each day they
        were (classified by that day's closing usage)."""
        for d in self.days:
            refused = sum(1 for t, _, err in samples if err == 28 and d["t0"] <= t < d["t1"])
            if refused:
                u = {k: v for k, v in d.items()
                     if k not in ("day", "t0", "t1", "data_chunks", "reclaim_threshold")}
                self.enospc.append({"day": d["day"], "what": "fsync probe", "refused": refused,
                                    "kind": enospc_kind(u), **u})
        self.enospc.sort(key=lambda e: e["day"])

    def summary(self, samples, counters) -> dict:
        kinds: dict[str, int] = {}
        for e in self.enospc:
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
        return {"regime": self.regime.name, "days": len(self.days),
                "enospc_events": len(self.enospc), "enospc_by_kind": kinds,
                "enospc_refused": sum(e["refused"] for e in self.enospc),
                "first_enospc_day": self.enospc[0]["day"] if self.enospc else None,
                "readonly": bool(self.fs.events.readonly) or self.fs.readonly(),
                "relocated": relocation_summary(self.fs, counters),
                "relocations": [r.__dict__ for r in self.fs.events.relocations],
                "actions": [{"what": a.what, "t0": a.t0, "seconds": round(a.t1 - a.t0, 2),
                             "rc": a.rc, "said": a.summary(), "report": a.report}
                            for a in self.regime.actions],
                "fsync": fsync_summary(samples, self.windows),
                "timing": {k: round(v, 1) for k, v in self.timing.items()},
                "enospc": self.enospc, "per_day": self.days}


def churn(spec: ChurnSpec, start: Path, regime: Regime, workdir: Path, load: Path,
          log: Callable[[str], None] = print) -> dict:
    """@regime over @spec's days on a fresh copy of @start (removed after)."""
    workdir.mkdir(parents=True, exist_ok=True)
    image = workdir / "run.img"
    fsutil.run(["cp", "--sparse=always", str(start), str(image)])
    t0 = time.monotonic()
    try:
        with LoopFs(image, workdir / "mnt", load) as fs:
            out = Churn(spec, regime, fs, workdir, log).run()
    finally:
        image.unlink(missing_ok=True)
    out["seconds"] = round(time.monotonic() - t0, 1)
    return out


def greedy_frees(chunks: list[tuple[int, int]], want: int) -> list[dict]:
    """What relocating the emptiest data chunks first would move to free
    @want bytes of device space, given (length, used) of every data chunk:
    a chunk frees its length when the others' free space can take its used
    bytes. A bound for the engine's default policy (bench/maintain's
    analysis), not the engine: the kernel may allocate while it relocates."""
    steps, moved, freed = [], 0, 0
    order = sorted(chunks, key=lambda c: c[1] / c[0] if c[0] else 1)
    for i, (length, used) in enumerate(order):
        if freed >= want:
            break
        if moved + used > sum(l - u for l, u in order[i + 1:]):
            break
        moved += used
        freed += length
        steps.append({"length": length, "used": used, "moved": moved, "freed": freed})
    return steps


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def scratch_dir(base: str | None = None) -> Path:
    """A directory for the images: @base, else /dev/shm when it has room
    (loop devices over memory: the shared disk's noise stays out of the
    fsync figures), else the system's temporary directory."""
    if base:
        return Path(tempfile.mkdtemp(prefix="btrfsx-regimes-", dir=base))
    shm = Path("/dev/shm")
    if shm.is_dir() and shutil.disk_usage(shm).free > 12 * GiB:
        return Path(tempfile.mkdtemp(prefix="btrfsx-regimes-", dir=shm))
    return Path(tempfile.mkdtemp(prefix="btrfsx-regimes-"))
