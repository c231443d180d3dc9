# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernels the test guests boot: Debian's cloud kernels of the 6.1 and
6.12 lines, each from one version's packages, downloaded with ``apt-get
download`` and unpacked into the VM cache, never installed on the host (the
6.12 headers package depends on a 6.12 image: installing it would put a new
kernel into the host's boot menu).

A line's version is chosen once per cache: the pinned one (what the patch
series in ``$BTRFSX_KERNEL_PATCHES`` were ported to) when it is cached or the
archive serves it, otherwise the newest version whose image, headers, kbuild
and source the archive serves together. When no such set can be had the
line is unavailable and the reason says why (its tests skip).

A version's unpacked set (``$BTRFSX_VM_CACHE/kernel-<version>/``):

* ``boot/vmlinuz-<release>`` and ``lib/modules/<release>/`` (the image);
* ``usr/src/linux-headers-<release>/`` with its ``-common`` and kbuild trees
  (the headers' Makefile points at the cache's ``-common`` tree);
* ``source/`` with ``fs/btrfs`` and the uapi ``btrfs_tree.h`` of the
  matching ``linux-source-<line>`` (the 150 MB tarball is not kept).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

FLAVOUR = "cloud-amd64"
COMPLETE = ".complete"


@dataclass(frozen=True)
class Line:
    """A kernel line and how its Debian packages are named."""
    name: str           # "6.1"
    pinned: str         # the package version the series were ported to
    abi: str            # regular expression of the ABI part of the package names
    kbuild: str         # the kbuild package; {abi} is replaced

    def packages(self, abi: str) -> list[str]:
        return [f"linux-image-{abi}-{FLAVOUR}-unsigned", f"linux-headers-{abi}-{FLAVOUR}",
                f"linux-headers-{abi}-common", self.kbuild.format(abi=abi),
                f"linux-source-{self.name}"]


LINES = {
    "6.1": Line("6.1", "6.1.176-1", r"6\.1\.0-\d+", "linux-kbuild-6.1"),
    "6.12": Line("6.12", "6.12.117-1~deb12u1", r"6\.12\.\d+\+deb12", "linux-kbuild-{abi}"),
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


def served(line: Line) -> dict[str, str]:
    """version -> ABI of every image of @line the archive serves whose headers,
    kbuild and source of the same version it serves too."""
    names = [n for n in _apt("apt-cache", "pkgnames", "linux-").split()
             if re.fullmatch(rf"linux-(image-{line.abi}-{FLAVOUR}-unsigned|headers-{line.abi}-"
                             rf"({FLAVOUR}|common)|source-{re.escape(line.name)}|kbuild-.*)", n)]
    versions: dict[str, set[str]] = {}
    for row in _apt("apt-cache", "madison", *names).splitlines() if names else []:
        parts = [p.strip() for p in row.split("|")]
        if len(parts) >= 2:
            versions.setdefault(parts[0], set()).add(parts[1])
    out = {}
    for name in names:
        m = re.fullmatch(rf"linux-image-({line.abi})-{FLAVOUR}-unsigned", name)
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
    reasons = []
    try:
        offer = served(line)
    except KernelUnavailable as e:
        offer, reasons = {}, [str(e)]
    candidates = ([line.pinned] if line.pinned in offer else []) + \
        newest_first(v for v in set(offer) | set(have) if v != line.pinned)
    for version in candidates:
        if version in have:
            return have[version]
        try:
            return unpack(cache, line, version, offer[version])
        except KernelUnavailable as e:
            reasons.append(str(e))
    raise KernelUnavailable(
        f"Linux {line.name}: no version whose image, headers, kbuild and source the archive "
        f"serves together (pinned {line.pinned}; served: {sorted(offer) or 'none'})"
        + ("; " + "; ".join(reasons) if reasons else ""))


def unpack(cache: Path, line: Line, version: str, abi: str) -> Kernel:
    """Downloads @line's packages of @version and unpacks them into the cache."""
    root = cache / f"kernel-{version}"
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        debs, tree = Path(tmp) / "debs", Path(tmp) / "tree"
        debs.mkdir()
        _apt("apt-get", "download", *(f"{p}={version}" for p in line.packages(abi)), cwd=debs)
        for deb in sorted(debs.glob("*.deb")):
            _apt("dpkg-deb", "-x", str(deb), str(tree))
            deb.unlink()
        kernel = Kernel(line, version, abi, tree)
        _point_headers_at(kernel, root)
        _keep_btrfs_source(kernel, tree / "usr" / "src" / f"linux-source-{line.name}.tar.xz")
        shutil.rmtree(tree / "usr" / "share", ignore_errors=True)
        (tree / COMPLETE).write_text(f"{version} {abi}\n")
        shutil.rmtree(root, ignore_errors=True)
        os.rename(tree, root)
    return Kernel(line, version, abi, root)


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
