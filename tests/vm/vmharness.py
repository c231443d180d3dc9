# SPDX-License-Identifier: GPL-2.0-or-later
"""Test guests: Debian's Linux 6.1, 6.12 and 7.3 under qemu (TCG) with a
btrfs module that is stock or patched with a kernel series of
``$BTRFSX_KERNEL_PATCHES/<folder>`` (7.3: stock only).

``SERIES_TABLE`` names every series: its family (what the tests expect of
it: ``stock``, ``v12``, ``kakra``), its kernel line and its patch folder. A
series is named ``<family>-<line>`` (``v12-6.12``); the 6.1 ones are also
known by their family alone (``v12``), their names before 6.12 came.
``matrix()`` says which series a test runs on: the 6.1 ones, plus 6.12
where the test asks for it, or every line with ``BTRFSX_VM_MATRIX=full``.

The pieces, each built once and cached outside the checkout in
``$BTRFSX_VM_CACHE`` (default /var/cache/btrfsx-vm):

* each line's kernel image, headers and btrfs source (``kernels.py``:
  downloaded and unpacked, never installed);
* ``btrfs.ko`` per series, built out of tree from the line's source with
  the series applied, keyed by the kernel version and the patch files;
* a base initramfs per series: static busybox, the modules, btrfs-progs,
  a btrfsx build (no sanitizers, fault injection on) and every library ``ldd`` lists, the
  static helpers (``guest-fill``, ``guest-fsync``), and ``/init``.

``Guest(series).run(script, disks)`` appends the test's shell script to the
base initramfs as a second cpio archive, boots, and parses the console:

* ``@@R <name> <words...>``: a result line (``results[name]`` lists them);
* ``@@BEGIN <name>`` ... ``@@END <name> <rc>``: a command's output and exit
  code (``outputs[name] = (rc, text)``), for JSON the host parses.

A guest that does not power off within the timeout is killed; the caller
gets its console log in the failure message. A series whose kernel cannot be
had (or whose patches do not apply to it) raises ``VMUnavailable``: the
tests skip with its reason (tests/vm/conftest.py).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import kernels

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


@dataclass(frozen=True)
class Series:
    name: str
    family: str             # stock, v12, kakra: what the tests expect of it
    kernel: str             # a line of kernels.LINES
    patches: str | None     # its folder in $BTRFSX_KERNEL_PATCHES (None: the image's module)
    #: in the tests' matrices; False: booted only when asked for by name (a
    #: bisection point between two lines, e.g. stock-7.2)
    tested: bool = True


SERIES_TABLE = [
    Series("stock-6.1", "stock", "6.1", None),
    Series("v12-6.1", "v12", "6.1", "allocation-hints-v12"),
    Series("kakra-6.1", "kakra", "6.1", "allocation-hints-kakra"),
    Series("stock-6.12", "stock", "6.12", None),
    Series("v12-6.12", "v12", "6.12", "allocation-hints-v12-6.12"),
    Series("kakra-6.12", "kakra", "6.12", "allocation-hints-kakra-6.12"),
    # Debian's stock 7.3 (trixie-backports): what the model predicts of a
    # kernel newer than the host's, with its own btrfs module
    Series("stock-7.3", "stock", "7.3", None),
    # 7.2 (trixie-backports): where a behaviour 7.3 shows and 6.18 does not began
    Series("stock-7.2", "stock", "7.2", None, tested=False),
    # mainline's RAID1 read policies (6.14, with 6.15's size suffixes) on 6.1:
    # round-robin[:<bytes>], devid[:<devid>], the module parameter read_policy=.
    Series("readpolicy-6.1", "readpolicy", "6.1", "read-policy-mainline"),
]
# The allocation-hint series (and the stock controls) the hint tests run on.
SERIES = tuple(s.name for s in SERIES_TABLE if s.family != "readpolicy" and s.tested)
READ_POLICY_SERIES = "readpolicy"
# The line every test runs on; the others where a test asks (matrix()).
FIRST_LINE = "6.1"
# The newest line: its stock series runs the unhinted aged plans and fills
# by default (test_vm_plan.py, test_vm_space.py), the older stock series
# with the full matrix.
NEWEST_LINE = "7.3"
# Load order of the modules the guests need (dependencies first; a module's
# own dependencies, its modinfo "depends", go before it when they are not
# listed: 7.3's btrfs needs libblake2b); those a kernel has built in are
# skipped, and OPTIONAL_MODULES it may lack.
# crc32c-intel: the crc32c a Debian system loads (the kernel's own is generic
# C code), so the kernel's scrub in bench/hdd checksums as it would there.
# From 6.14 on the optimised crc32c is in lib/crc, built in: 7.3 has neither
# crc32c-intel nor libcrc32c.
MODULES = ["virtio", "virtio_ring", "virtio_blk", "virtio_pci_modern_dev",
           "virtio_pci_legacy_dev", "virtio_pci", "zstd_compress", "raid6_pq", "xor",
           "crc32c-intel", "libcrc32c", "blake2b_generic", "xxhash_generic", "btrfs", "loop",
           "dm-mod", "dm-delay", "dm-flakey", "dm-log-writes"]
OPTIONAL_MODULES = {"blake2b_generic", "xxhash_generic", "crc32c-intel", "libcrc32c"}
# dmsetup drives the device-mapper targets of the fault tests (tests/vm/dmpack.py).
GUEST_PROGRAMS = ["btrfs", "mkfs.btrfs", "dmsetup"]
_LOCK = threading.RLock()   # prepare() resolves kernels under it
STALE_AFTER_S = 24 * 3600
_PREPARED: dict[str, Path] = {}     # series -> its base initramfs, this session
_KERNELS: dict[str, kernels.Kernel] = {}    # line -> its kernel, this session


class VMUnavailable(Exception):
    """The harness cannot run here; the message says why (tests skip)."""


def series_info(name: str) -> Series:
    """The series called @name (or, for 6.1, by its family alone)."""
    for s in SERIES_TABLE:
        if name in (s.name, s.family if s.kernel == FIRST_LINE else None):
            return s
    raise KeyError(f"no VM series {name!r} (vmharness.SERIES_TABLE)")


def family(name: str) -> str:
    return series_info(name).family


def newer(name: str) -> bool:
    """Whether series @name runs on a line after FIRST_LINE (6.12)."""
    return series_info(name).kernel != FIRST_LINE


def full_matrix() -> bool:
    return os.environ.get("BTRFSX_VM_MATRIX", "") == "full"


def matrix(families, newer: bool = False) -> list[str]:
    """The series of @families a test runs on: on 6.1, on the newer lines too
    when @newer, on every line with BTRFSX_VM_MATRIX=full."""
    return [s.name for s in SERIES_TABLE if s.family in families and s.tested
            and (s.kernel == FIRST_LINE or newer or full_matrix())]


def stock_matrix() -> list[str]:
    """The stock series the unhinted aged plans and fills run on: the newest
    line's, every stock series with BTRFSX_VM_MATRIX=full."""
    return [s.name for s in SERIES_TABLE if s.family == "stock" and s.tested
            and (s.kernel == NEWEST_LINE or full_matrix())]


def cache_dir() -> Path:
    path = Path(os.environ.get("BTRFSX_VM_CACHE", "/var/cache/btrfsx-vm"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def patches_dir() -> Path:
    return Path(os.environ.get("BTRFSX_KERNEL_PATCHES", REPO.parent / "shared" / "kernel-patches"))


def unavailable_reason() -> str | None:
    """Why no guest can run here at all (a series may still lack its kernel:
    that is found out when it is prepared)."""
    if os.geteuid() != 0:
        return "the VM tests need root (apt, module build)"
    if not patches_dir().is_dir():
        return (f"no kernel patch series at {patches_dir()}: set BTRFSX_KERNEL_PATCHES to the "
                "directory holding allocation-hints-v12/ and allocation-hints-kakra/")
    for tool in ("qemu-system-x86_64", "busybox", "cpio", "apt-get", "patch", "xz"):
        if not shutil.which(tool):
            return f"{tool} is not installed (scripts/install-deps.sh --vm installs it)"
    return None


def series_missing(series: str) -> str | None:
    """Why @series cannot be built here (its patch folder is absent), or None."""
    folder = series_info(series).patches
    if folder is None or (patches_dir() / folder).is_dir():
        return None
    return f"no {folder}/ in {patches_dir()} (set BTRFSX_KERNEL_PATCHES)"


def run(cmd, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("check", True)
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    try:
        return subprocess.run([str(c) for c in cmd], **kw)
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({e.returncode}):\n"
                           f"{e.stdout}\n{e.stderr}") from None


# ----------------------------------------------------------------- kernel pieces

def kernel_of(name: str) -> kernels.Kernel:
    """The unpacked kernel of series @name's line, resolved once a session."""
    line = series_info(name).kernel
    with _LOCK:
        if line not in _KERNELS:
            try:
                _KERNELS[line] = kernels.resolve(cache_dir(), line)
            except kernels.KernelUnavailable as e:
                raise VMUnavailable(str(e)) from None
        return _KERNELS[line]


def series_patches(name: str) -> list[Path]:
    folder = series_info(name).patches
    if folder is None:
        return []
    patches = sorted((patches_dir() / folder).glob("*.patch"))
    if not patches:
        raise VMUnavailable(f"no patches in {patches_dir() / folder} (series {name})")
    return patches


# What the module build does; a change here rebuilds every module.
MODULE_RECIPE = "btf-off strip-debug uapi-both"


def module_key(name: str) -> str:
    h = hashlib.sha256(f"{kernel_of(name).version} {MODULE_RECIPE}".encode())
    for p in series_patches(name):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return f"{series_info(name).family}-{kernel_of(name).release}-{h.hexdigest()[:16]}"


def image_modules(kernel: kernels.Kernel) -> tuple[dict[str, Path], set[str]]:
    """The image's loadable modules (.ko or .ko.xz) by name, and the names of
    those it has built in (names with - for _)."""
    def key(path: str) -> str:
        return Path(path).name.split(".ko")[0].replace("_", "-")
    mods = {}
    for ko in sorted(kernel.modules.glob("kernel/**/*.ko*")):
        mods.setdefault(key(str(ko)), ko)
    builtin_list = kernel.modules / "modules.builtin"
    builtin = {key(line) for line in builtin_list.read_text().split()} \
        if builtin_list.exists() else set()
    return mods, builtin


def btrfs_module(name: str) -> Path:
    """btrfs.ko of series @name (stock: the image's own module)."""
    kernel = kernel_of(name)
    if series_info(name).patches is None:
        return image_modules(kernel)[0]["btrfs"]
    out = cache_dir() / f"btrfs-{module_key(name)}.ko"
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        work = Path(tmp)
        shutil.copytree(kernel.source / "fs", work / "fs")
        shutil.copytree(kernel.source / "include", work / "include")
        for patch in series_patches(name):
            p = subprocess.run(["patch", "-p1", "-s", "-d", work, "-i", patch],
                               capture_output=True, text=True)
            if p.returncode:
                raise VMUnavailable(f"{patch.name} does not apply to linux-source "
                                    f"{kernel.version} (series {name}, ported to "
                                    f"{kernel.line.pinned}): {p.stdout.strip()[-300:]}")
        mod = work / "mod"
        shutil.copytree(work / "fs" / "btrfs", mod)
        # The patched uapi header wins over the kernel's: 6.1's fs/btrfs
        # includes it as <linux/btrfs_tree.h>, 6.12's as <uapi/linux/...>.
        for inc in ("linux", "uapi/linux"):
            (mod / "inc" / inc).mkdir(parents=True)
            shutil.copy(work / "include" / "uapi" / "linux" / "btrfs_tree.h", mod / "inc" / inc)
        # No BTF (it needs pahole, and nothing reads it), no debug sections
        # (39 MB the guests would unpack at every boot).
        run(["make", "-s", "-C", kernel.headers, f"M={mod}", f"-j{os.cpu_count() or 1}",
             f"NOSTDINC_FLAGS=-nostdinc -I {mod}/inc", "CONFIG_DEBUG_INFO_BTF_MODULES=",
             "modules"])
        run(["strip", "--strip-debug", mod / "btrfs.ko"])
        shutil.copy(mod / "btrfs.ko", str(out) + ".tmp")
        os.rename(str(out) + ".tmp", out)
    return out


def module_bytes(ko: Path) -> bytes:
    """A module file's ELF (busybox's insmod takes no compressed module: 6.12's
    and 7.3's are .ko.xz)."""
    return lzma.decompress(ko.read_bytes()) if ko.suffix == ".xz" else ko.read_bytes()


def module_depends(ko: Path) -> list[str]:
    """The modules @ko needs loaded first: its modinfo "depends" (what depmod
    writes into modules.dep, which the image packages do not ship)."""
    m = re.search(rb"\0depends=([^\0]*)\0", b"\0" + module_bytes(ko))
    return [d for d in m.group(1).decode().split(",") if d] if m else []


def module_paths(name: str) -> list[tuple[str, Path]]:
    """(module, file) in load order for series @name: the image's modules (or
    the series' btrfs.ko), each after the modules it depends on, leaving out
    what its kernel has built in."""
    mods, builtin = image_modules(kernel_of(name))
    paths: list[tuple[str, Path]] = []

    def add(module: str, needed_by: str | None = None) -> None:
        key = module.replace("_", "-")
        if key in builtin or any(m.replace("_", "-") == key for m, _ in paths) or \
                (module in OPTIONAL_MODULES and key not in mods):
            return
        if key not in mods:
            raise VMUnavailable(f"{kernel_of(name).release} has no module {module}"
                                + (f" (needed by {needed_by})" if needed_by else ""))
        ko = btrfs_module(name) if module == "btrfs" else mods[key]
        for dep in module_depends(ko):
            add(dep, module)
        paths.append((module, ko))

    for module in MODULES:
        add(module)
    return paths


# ----------------------------------------------------------------- guest binaries

def guest_btrfsx() -> Path:
    """An optimised btrfsx build without sanitizers (slow under TCG), with
    fault injection: the failing-write tests pause writers before a chosen
    write (BTRFSX_FAULT_PAUSE_BEFORE_WRITE)."""
    build = Path(os.environ.get("BTRFSX_VM_BUILD", REPO / "build-vm"))
    status = build / "config.status"
    if status.exists() and "--enable-fault-injection" not in status.read_text(errors="replace"):
        status.unlink()     # configured before: configure again, with it
        (build / "Makefile").unlink(missing_ok=True)
    run(["bash", REPO / "scripts" / "build.sh", build, "--enable-fault-injection"])
    return build / "btrfsx"


def guest_replay() -> Path:
    """tests/helpers/usage_replay.c (the model replayed against the kernel's chunks)
    linked against the plain build's core library, as the host tests build it."""
    from helpers import usage_fill   # tests/: on the path under pytest

    build = guest_btrfsx().parent
    return usage_fill.build_replay(build, build)


def static_helper(name: str, src: Path | None = None, libs: tuple = ()) -> Path:
    """tests/vm/<name>.c (or @src) built static (the initramfs has no libc)
    into the cache."""
    out = cache_dir() / name
    src = src or HERE / f"{name}.c"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        tmp = Path(f"{out}.{os.getpid()}.{threading.get_ident()}")
        run(["gcc", "-static", "-O2", "-Wall", "-I", REPO, "-o", tmp, src, *libs])
        os.rename(tmp, out)
    return out


def guest_helpers() -> list[Path]:
    """The static helpers tests/vm/guest-*.c (guest-fill, guest-fsync) the
    guests run, bench/raw-read (bench/hdd's raw read) and bench/read-load
    (bench/readpolicy's readers)."""
    return [static_helper(src.stem) for src in sorted(HERE.glob("guest-*.c"))] + \
        [static_helper("raw-read", REPO / "bench" / "raw-read.c", ("-luring",)),
         static_helper("read-load", REPO / "bench" / "read-load.c")]


def logwrites_replay() -> Path:
    """The dm-log-writes replayer (tests/vm/logwrites-replay.c), run on the host."""
    return static_helper("logwrites-replay")


def shared_libraries(binary: Path) -> set[Path]:
    libs = set()
    for line in run(["ldd", binary], check=False).stdout.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            libs.add(Path(m.group(1)))
    return libs


# Loaded with dlopen, so ldd does not list them: glibc's pthread_cancel (which
# btrfs scrub calls) aborts without libgcc_s.
DLOPENED_LIBRARIES = ["libgcc_s.so.1"]


def dlopened_libraries(beside: Path) -> set[Path]:
    """DLOPENED_LIBRARIES as they will sit in the guest: in @beside's directory
    (libc's), where the loader looks."""
    return {beside.parent / name for name in DLOPENED_LIBRARIES}


INIT = r"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /mnt /run /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
dmesg -n 1
for m in $(cat /modules.order); do
	insmod /lib/modules/$m.ko || echo "@@R insmod_failed $m"
done
echo "@@R kernel $(uname -r)"
# Run a command, its output between markers: @@BEGIN name / @@END name rc.
capture() {
	name=$1; shift
	echo "@@BEGIN $name $*"
	"$@" 2>&1
	rc=$?
	echo ""
	echo "@@END $name $rc"
	return $rc
}
. /test.sh
echo "@@R guest_done"
sync
poweroff -f
"""


def _write_cpio(root: Path, out: Path, compress: bool) -> None:
    files = run(["find", ".", "-mindepth", "1"], cwd=root).stdout
    data = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root, input=files.encode(),
                          capture_output=True, check=True).stdout
    out.write_bytes(gzip.compress(data, 1) if compress else data)


def base_initramfs(series: str) -> Path:
    """The initramfs every guest of @series boots, rebuilt when an input changed."""
    modules = module_paths(series)
    btrfsx = guest_btrfsx()
    programs = [Path(shutil.which(p)) for p in GUEST_PROGRAMS] + [btrfsx, guest_replay()]
    inputs = [ko for _, ko in modules] + programs + guest_helpers() + \
        [Path(shutil.which("busybox"))]
    h = hashlib.sha256(INIT.encode() + " ".join(DLOPENED_LIBRARIES).encode())
    for p in inputs:
        h.update(str(p).encode() + str(p.stat().st_mtime_ns).encode())
    out = cache_dir() / f"initramfs-{series}-{h.hexdigest()[:16]}.cpio.gz"
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        root = Path(tmp)
        for d in ("bin", "lib/modules", "usr/bin"):
            (root / d).mkdir(parents=True)
        shutil.copy(shutil.which("busybox"), root / "bin" / "busybox")
        for name, ko in modules:
            (root / "lib" / "modules" / f"{name}.ko").write_bytes(module_bytes(ko))
        (root / "modules.order").write_text("".join(f"{name}\n" for name, _ in modules))
        libs = set()
        for prog in programs:
            shutil.copy(prog, root / "usr" / "bin" / prog.name)
            libs |= shared_libraries(prog)
        libc = next(lib for lib in libs if lib.name.startswith("libc.so"))
        for lib in libs | dlopened_libraries(libc):
            dest = root / lib.relative_to("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(lib, dest)
        for helper in guest_helpers():
            shutil.copy(helper, root / "usr" / "bin" / helper.name)
        (root / "init").write_text(INIT)
        (root / "init").chmod(0o755)
        staged = Path(tmp + ".cpio.gz")     # unique: the temporary directory's name
        _write_cpio(root, staged, compress=True)
        os.rename(staged, out)
    # Another checkout's test run may be booting an older image right now:
    # only images untouched for a day are stale.
    for stale in cache_dir().glob(f"initramfs-{series}-*.cpio.gz"):
        try:
            if stale != out and time.time() - stale.stat().st_mtime > STALE_AFTER_S:
                stale.unlink()
        except FileNotFoundError:
            pass    # another run removed it first
    return out


def prepare(series: str) -> Path:
    """Builds (or finds in the cache) everything a guest of @series needs, once
    per test session: guests boot in parallel threads, and rebuilding while
    another thread reads would race on the build tree and the cache."""
    name = series_info(series).name
    with _LOCK:
        if name not in _PREPARED:
            _PREPARED[name] = base_initramfs(name)
        return _PREPARED[name]


# ----------------------------------------------------------------- guests

@dataclass
class GuestResult:
    console: str
    results: dict = field(default_factory=dict)     # name -> [list of words, ...]
    outputs: dict = field(default_factory=dict)     # name -> (rc, text)
    commands: dict = field(default_factory=dict)    # name -> the captured command's words

    def first(self, name: str) -> list[str]:
        assert name in self.results, f"no {name} result; console:\n{self.console[-6000:]}"
        return self.results[name][0]

    def output(self, name: str) -> tuple[int, str]:
        assert name in self.outputs, f"no output {name}; console:\n{self.console[-6000:]}"
        return self.outputs[name]

    def json(self, name: str) -> tuple[int, dict | None, str]:
        """A captured btrfsx --format json run: exit code, the document (None
        when there is none), and the whole output (messages on stderr
        interleave with it)."""
        rc, text = self.output(name)
        start = text.find('{"__header"')
        doc = json.JSONDecoder().raw_decode(text, start)[0] if start >= 0 else None
        words = self.commands.get(name, [])
        if doc is not None and words[:1] == ["btrfsx"]:
            from helpers import json_schemas     # tests/: on the path under pytest
            json_schemas.validate(words[1:], doc)   # the guests' documents follow the schemas too
        return rc, doc, text


def parse_console(text: str) -> GuestResult:
    res = GuestResult(text)
    block, lines = None, []
    for line in text.replace("\r", "").splitlines():
        if block is not None:
            m = re.match(r"@@END (\S+) (\d+)$", line)
            if m and m.group(1) == block:
                res.outputs[block] = (int(m.group(2)), "\n".join(lines).rstrip("\n"))
                block = None
            else:
                lines.append(line)
            continue
        if line.startswith("@@BEGIN "):
            words = line.split()[1:]
            block, lines = words[0], []
            res.commands[block] = words[1:]
        elif line.startswith("@@R "):
            words = line.split()[1:]
            if words:
                res.results.setdefault(words[0], []).append(words[1:])
    return res


class GuestError(AssertionError):
    pass


class Guest:
    """Boots a guest of @series: ``run(script, disks)`` -> GuestResult."""

    def __init__(self, series: str, memory_mb: int = 1024):
        self.series = series
        self.memory_mb = memory_mb

    def run(self, script: str, disks: list, timeout: float = 300,
            drive_options: str = "") -> GuestResult:
        """@disks: image files, or qemu's URIs of disks (bench/hdd's
        "nbd+unix:///?socket=..."), or (disk, options) pairs whose options
        apply to that disk alone; @drive_options: more of qemu's -drive
        options for every disk (",throttling.bps-read=..." for bench/hdd's
        disks)."""
        base = prepare(self.series)
        vmlinuz = kernel_of(self.series).vmlinuz
        with tempfile.TemporaryDirectory() as tmp:
            extra = Path(tmp) / "extra"
            extra.mkdir()
            (extra / "test.sh").write_text(script)
            initrd = Path(tmp) / "initrd"
            _write_cpio(extra, Path(tmp) / "extra.cpio", compress=True)
            initrd.write_bytes(base.read_bytes() + (Path(tmp) / "extra.cpio").read_bytes())
            # no_timer_check: under TCG on a loaded host the kernel's check
            # that the timer reaches the IO-APIC can miss, and it panics.
            cmd = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m",
                   str(self.memory_mb), "-smp", "1", "-nographic", "-no-reboot",
                   "-kernel", str(vmlinuz), "-initrd", str(initrd),
                   "-append", "console=ttyS0 quiet panic=-1 oops=panic no_timer_check"]
            for d in disks:
                d, own = d if isinstance(d, tuple) else (d, "")
                cmd += ["-drive",
                        f"file={d},format=raw,if=virtio,cache=unsafe{drive_options}{own}"]
            try:
                p = subprocess.run(cmd, capture_output=True, timeout=timeout,
                                   stdin=subprocess.DEVNULL)
                console = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
            except subprocess.TimeoutExpired as e:
                out = (e.stdout or b"").decode(errors="replace")
                raise GuestError(f"{self.series} guest killed after {timeout:.0f} s; "
                                 f"console:\n{out[-8000:]}") from None
        res = parse_console(console)
        if "guest_done" not in res.results:
            raise GuestError(f"{self.series} guest did not finish its script; "
                             f"console:\n{console[-8000:]}")
        if "insmod_failed" in res.results:
            raise GuestError(f"{self.series}: modules failed to load: "
                             f"{res.results['insmod_failed']}")
        return res


def run_guests(series: str, jobs: list[tuple[str, list[Path]]], timeout: float) -> GuestResult:
    """One guest of @series per (script, disks), as many at once as there are
    cores; their results merged into one (names must not collide)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        parts = list(pool.map(lambda job: Guest(series).run(*job, timeout=timeout), jobs))
    merged = GuestResult("".join(p.console for p in parts))
    for part in parts:
        for name, lines in part.results.items():
            merged.results.setdefault(name, []).extend(lines)
        merged.outputs.update(part.outputs)
    return merged


class PerSeries(dict):
    """series -> what a function returned for it; a series it failed for
    raises that error when asked for, so a kernel that cannot be had skips
    only the tests that need it."""

    def __getitem__(self, name):
        value = super().__getitem__(series_info(name).name)
        if isinstance(value, Exception):
            raise value
        return value


def per_series(names: list[str], fn) -> PerSeries:
    """fn(series) for each of @names, as many at once as there are cores."""
    def one(name):
        try:
            return fn(name)
        except Exception as e:     # noqa: BLE001 - raised again where it is asked for
            return e
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return PerSeries(zip((series_info(n).name for n in names), pool.map(one, names)))


def make_disks(directory: Path, sizes: list[int]) -> list[Path]:
    """Sparse raw images of @sizes bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, size in enumerate(sizes):
        path = directory / f"disk{i}.img"
        with open(path, "wb") as f:
            f.truncate(size)
        paths.append(path)
    return paths


def remove_disks(paths) -> None:
    """Deletes images a guest filled once its results are parsed: a suite's
    guests write gigabytes, and pytest keeps its last three runs' files."""
    for path in paths:
        Path(path).unlink(missing_ok=True)


def mkfs_images(paths, data="raid1", metadata="raid1", extra=()):
    """mkfs.btrfs (btrfs-progs, the host's) straight onto image files."""
    run(["mkfs.btrfs", "-q", "-f", "-d", data, "-m", metadata, *extra, *paths])


def guest_dev(index: int) -> str:
    """The guest's name of the index-th disk (/dev/vda, /dev/vdb ...)."""
    return "/dev/vd" + "abcdefghijklmnopqrstuvwxyz"[index]
