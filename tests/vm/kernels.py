# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernels the test guests boot: Debian's cloud kernels of the 6.1,
6.12 and 7.3 lines, each from one version's packages, downloaded with
``apt-get download`` and unpacked into the VM cache, never installed on the
host (the 6.12 headers package depends on a 6.12 image: installing it would
put a new kernel into the host's boot menu).

A line's version is chosen once per cache: the pinned one (what the patch
series in ``$BTRFSX_KERNEL_PATCHES`` were ported to) when it is cached or the
archive serves it, otherwise the newest version whose packages the archive
serves together. When no such set can be had the line is unavailable and
the reason says why (its tests skip).

The lines whose modules are built (6.1, 6.12) take the image, headers,
kbuild and source; a stock line (7.3: the image's own btrfs module, no
patch) takes the image (``linux-binary-``), its modules and its base files
alone. 6.1 and 6.12 come from the host's own archive (bookworm). 7.3 comes
from trixie-backports, which the host's sources do not list: kernels.py
reads that suite through an apt configuration of its own,
``$BTRFSX_VM_CACHE/apt-<suite>/`` (its sources list, package lists and
download cache, passed as ``-o Dir::...`` options to ``apt-cache`` and
``apt-get download`` only). The host's apt never sees it, so nothing from
that suite can be installed or upgraded on the host.

A version's unpacked set (``$BTRFSX_VM_CACHE/kernel-<version>/``):

* ``boot/vmlinuz-<release>`` and ``lib/modules/<release>/`` (the image; a
  merged-/usr package's ``usr/lib/modules`` is moved there);
* for a built line, ``usr/src/linux-headers-<release>/`` with its
  ``-common`` and kbuild trees (the headers' Makefile points at the cache's
  ``-common`` tree), and ``source/`` with ``fs/btrfs`` and the uapi
  ``btrfs_tree.h`` of the matching ``linux-source-<line>`` (the 150 MB
  tarball is not kept).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

FLAVOUR = "cloud-amd64"
COMPLETE = ".complete"
#: the packages of a line whose btrfs module is built: image, headers, kbuild, source
BUILT = (f"linux-image-{{abi}}-{FLAVOUR}-unsigned", f"linux-headers-{{abi}}-{FLAVOUR}",
         "linux-headers-{abi}-common", "{kbuild}", "linux-source-{line}")
#: the packages of a stock line (trixie's split image): kernel, modules, base
#: files (modules.builtin)
STOCK = (f"linux-binary-{{abi}}-{FLAVOUR}", f"linux-modules-{{abi}}-{FLAVOUR}",
         f"linux-base-{{abi}}-{FLAVOUR}")
#: the archive of the suites the host's sources do not list (see private_apt())
MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
LISTS_STALE_S = 24 * 3600


@dataclass(frozen=True)
class Line:
    """A kernel line and how its Debian packages are named."""
    name: str           # "6.1"
    pinned: str         # the package version the series were ported to
    abi: str            # regular expression of the ABI part of the package names
    kbuild: str = ""    # the kbuild package of a built line; {abi} is replaced
    names: tuple = BUILT    # the packages of a version; the image first
    suite: str = ""     # a suite the host's sources lack ("trixie-backports"), or ""

    def packages(self, abi: str) -> list[str]:
        return [n.format(abi=abi, kbuild=self.kbuild.format(abi=abi), line=self.name)
                for n in self.names]

    @property
    def stock(self) -> bool:
        """Whether only the image's own modules are used (no headers, no source)."""
        return self.names == STOCK


LINES = {
    "6.1": Line("6.1", "6.1.176-1", r"6\.1\.0-\d+", "linux-kbuild-6.1"),
    "6.12": Line("6.12", "6.12.117-1~deb12u1", r"6\.12\.\d+\+deb12", "linux-kbuild-{abi}"),
    # Debian's stock 7.3 (trixie-backports; sid served 7.2.13 when this was
    # written, trixie-backports 7.2.6 to 7.2.12 besides 7.3.4)
    "7.3": Line("7.3", "7.3.4-1~bpo13+1", r"7\.3\.\d+\+deb13", names=STOCK,
                suite="trixie-backports"),
    # a bisection point (vmharness: stock-7.2, in no test's matrix)
    "7.2": Line("7.2", "7.2.12-1~bpo13+1", r"7\.2\.\d+\+deb13", names=STOCK,
                suite="trixie-backports"),
}


class KernelUnavailable(Exception):
    """No complete set of a line's packages can be had; the message says why."""


@dataclass(frozen=True)
class Kernel:
    """One unpacked version of a line."""
    line: Line
    version: str        # the Debian package version, e.g. 6.1.176-1
    abi: str            # e.g. 6.1.0-50
    root: Path

    @property
    def release(self) -> str:
        """uname -r of the guests."""
        return f"{self.abi}-{FLAVOUR}"

    @property
    def vmlinuz(self) -> Path:
        return self.root / "boot" / f"vmlinuz-{self.release}"

    @property
    def modules(self) -> Path:
        return self.root / "lib" / "modules" / self.release

    @property
    def headers(self) -> Path:
        return self.root / "usr" / "src" / f"linux-headers-{self.release}"

    @property
    def source(self) -> Path:
        """fs/btrfs and include/uapi/linux/btrfs_tree.h of the matching source."""
        return self.root / "source"


def _apt(*args: str, cwd=None) -> str:
    p = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd)
    if p.returncode:
        raise KernelUnavailable(f"{' '.join(args)} failed ({p.returncode}): "
                                f"{p.stderr.strip()[-500:]}")
    return p.stdout


def private_apt(cache: Path, suite: str) -> list[str]:
    """apt options that read @suite alone, from a configuration of its own in
    @cache (``apt-<suite>/``: sources list, lists, download cache, an empty
    dpkg status), its package lists fetched when missing or a day old. Only
    ``apt-cache`` and ``apt-get download`` are given these options: the
    host's apt configuration never names the suite, so the host can neither
    install nor upgrade anything from it."""
    root = cache / f"apt-{suite}"
    for d in ("sources.list.d", "preferences.d", "lists/partial", "archives/partial"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "sources.list").write_text(f"deb [signed-by={KEYRING}] {MIRROR} {suite} main\n")
    (root / "status").touch()
    options = [f"-oDir::Etc::SourceList={root}/sources.list",
               f"-oDir::Etc::SourceParts={root}/sources.list.d",
               f"-oDir::Etc::Preferences={root}/preferences",
               f"-oDir::Etc::PreferencesParts={root}/preferences.d",
               f"-oDir::State::Lists={root}/lists", f"-oDir::State::status={root}/status",
               f"-oDir::Cache={root}", f"-oDir::Cache::Archives={root}/archives"]
    # One update at a time (guests of several checkouts share the cache).
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fetched = list((root / "lists").glob("*_Packages*"))
        if not fetched or time.time() - min(f.stat().st_mtime for f in fetched) > LISTS_STALE_S:
            _apt("apt-get", *options, "-q", "update")
    return options


def apt_options(cache: Path, line: Line) -> list[str]:
    """The options of @line's apt commands: none for the host's own archive."""
    return private_apt(cache, line.suite) if line.suite else []


def served(line: Line, options: list[str] = ()) -> dict[str, str]:
    """version -> ABI of every image of @line the archive serves whose other
    packages (headers, kbuild and source; or modules and base files) of the
    same version it serves too."""
    def pattern(template: str) -> str:
        """The package names @template matches, the ABI as group 1."""
        tokens = {"{abi}": f"({line.abi})", "{kbuild}": r"linux-kbuild-.*",
                  "{line}": re.escape(line.name)}
        return "".join(tokens.get(part, re.escape(part))
                       for part in re.split(r"(\{\w+\})", template))
    wanted = [pattern(t) for t in line.names]
    names = [n for n in _apt("apt-cache", *options, "pkgnames", "linux-").split()
             if any(re.fullmatch(w, n) for w in wanted)]
    versions: dict[str, set[str]] = {}
    for row in _apt("apt-cache", *options, "madison", *names).splitlines() if names else []:
        parts = [p.strip() for p in row.split("|")]
        if len(parts) >= 2:
            versions.setdefault(parts[0], set()).add(parts[1])
    out = {}
    for name in names:
        m = re.fullmatch(wanted[0], name)
        if not m:
            continue
        for version in versions.get(name, ()):
            if all(version in versions.get(p, ()) for p in line.packages(m.group(1))):
                out[version] = m.group(1)
    return out


def newest_first(versions) -> list[str]:
    """Debian versions, newest first (dpkg's order)."""
    from functools import cmp_to_key

    def cmp(a: str, b: str) -> int:
        if a == b:
            return 0
        gt = subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0
        return -1 if gt else 1
    return sorted(versions, key=cmp_to_key(cmp))


def cached(cache: Path, line: Line) -> dict[str, Kernel]:
    """The complete unpacked sets of @line in @cache, by version."""
    out = {}
    for marker in cache.glob("kernel-*/" + COMPLETE):
        version, abi = marker.read_text().split()
        if version.startswith(line.name + "."):
            out[version] = Kernel(line, version, abi, marker.parent)
    return out


def resolve(cache: Path, name: str) -> Kernel:
    """The kernel of line @name: the pinned version (cached or served), else the
    newest set cached or served; downloaded and unpacked when not cached."""
    line = LINES[name]
    have = cached(cache, line)
    if line.pinned in have:
        return have[line.pinned]
    reasons, options = [], []
    try:
        options = apt_options(cache, line)
        offer = served(line, options)
    except KernelUnavailable as e:
        offer, reasons = {}, [str(e)]
    candidates = ([line.pinned] if line.pinned in offer else []) + \
        newest_first(v for v in set(offer) | set(have) if v != line.pinned)
    for version in candidates:
        if version in have:
            return have[version]
        try:
            return unpack(cache, line, version, offer[version], options)
        except KernelUnavailable as e:
            reasons.append(str(e))
    raise KernelUnavailable(
        f"Linux {line.name}: no version whose packages ({', '.join(line.names)}) the "
        f"archive{' (' + line.suite + ')' if line.suite else ''} serves together (pinned "
        f"{line.pinned}; served: {sorted(offer) or 'none'})"
        + ("; " + "; ".join(reasons) if reasons else ""))


def unpack(cache: Path, line: Line, version: str, abi: str, options: list[str] = ()) -> Kernel:
    """Downloads @line's packages of @version and unpacks them into the cache."""
    root = cache / f"kernel-{version}"
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        debs, tree = Path(tmp) / "debs", Path(tmp) / "tree"
        debs.mkdir()
        _apt("apt-get", *options, "download",
             *(f"{p}={version}" for p in line.packages(abi)), cwd=debs)
        for deb in sorted(debs.glob("*.deb")):
            _apt("dpkg-deb", "-x", str(deb), str(tree))
            deb.unlink()
        kernel = Kernel(line, version, abi, tree)
        _move_out_of_usr(kernel)
        if not line.stock:
            _point_headers_at(kernel, root)
            _keep_btrfs_source(kernel, tree / "usr" / "src" / f"linux-source-{line.name}.tar.xz")
        shutil.rmtree(tree / "usr" / "share", ignore_errors=True)
        (tree / COMPLETE).write_text(f"{version} {abi}\n")
        shutil.rmtree(root, ignore_errors=True)
        os.rename(tree, root)
    return Kernel(line, version, abi, root)


def _move_out_of_usr(kernel: Kernel) -> None:
    """A merged-/usr image (trixie's) has usr/lib/modules/<release>/ with the
    vmlinuz in it: moved where the other lines' are."""
    merged = kernel.root / "usr" / "lib" / "modules" / kernel.release
    if not merged.is_dir() or kernel.modules.exists():
        return
    kernel.modules.parent.mkdir(parents=True)
    os.rename(merged, kernel.modules)
    if (kernel.modules / "vmlinuz").exists():
        kernel.vmlinuz.parent.mkdir(exist_ok=True)
        os.rename(kernel.modules / "vmlinuz", kernel.vmlinuz)


def _point_headers_at(kernel: Kernel, final: Path) -> None:
    """The headers' Makefile includes /usr/src/...-common/Makefile: the one that
    will be under @final instead. (The packages' links are relative.)"""
    makefile = kernel.headers / "Makefile"
    makefile.write_text(re.sub(r"^include /usr/src/", f"include {final}/usr/src/",
                               makefile.read_text(), flags=re.M))


def _keep_btrfs_source(kernel: Kernel, tarball: Path) -> None:
    top = f"linux-source-{kernel.line.name}"
    kernel.source.mkdir()
    _apt("tar", "-xJf", str(tarball), "-C", str(kernel.source), "--strip-components=1",
         f"{top}/fs/btrfs", f"{top}/include/uapi/linux/btrfs_tree.h")
    tarball.unlink()
