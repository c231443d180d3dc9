# SPDX-License-Identifier: GPL-2.0-or-later
"""The Debian packages (debian/): `dpkg-buildpackage -us -uc -b` on the
release tree (`make distdir` of the suite's build, as a tarball unpacks:
configure and the man pages are there, nothing is regenerated) makes btrfsx,
libbtrfsx0, libbtrfsx-dev and python3-btrfsx; lintian finds no error in
them; installed on this machine they work from their Debian places
(`btrfsx --version`, the man pages, the timer unit, `import btrfsx`, a C
program through pkg-config, the rules through promtool), and purging them
leaves nothing.

The build is made once for the module with DEB_BUILD_OPTIONS="nocheck
parallel=2 noddebs noopt": the unit tests ran already (make check), no
debug symbol packages are wanted, and -O0 compiles in two thirds of the
time what is tested here, the packaging (the suite's and the tarball's
builds test the optimized code). Installing changes the machine for a few
seconds: a lock keeps two runs of this test apart, and the test refuses to
run over a btrfsx installed by other means.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_install import build_dir, make_vars

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("btrfsx", "libbtrfsx0", "libbtrfsx-dev", "python3-btrfsx", "cockpit-btrfsx")
ARCH_ALL = ("cockpit-btrfsx",)
LOCK = "/run/lock/btrfsx-debian-test.lock"
BUILD_TIMEOUT = 900


def run(argv, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run([str(a) for a in argv], **kw)


def need(*tools: str):
    for t in tools:
        if not shutil.which(t):
            pytest.skip(f"{t} is not installed (scripts/install-deps.sh installs debhelper, "
                        "dh-python and lintian)")


@pytest.fixture(scope="module")
def debs(tmp_path_factory) -> dict[str, Path]:
    """The four .deb files (and 'changes'), built once."""
    need("dpkg-buildpackage", "dh", "lintian")
    build = build_dir()
    version = make_vars(build, ["PACKAGE_VERSION"])["PACKAGE_VERSION"]
    top = tmp_path_factory.mktemp("debian")
    tree = top / f"btrfsx-{version}"
    p = run(["make", "-s", "-C", build, "distdir", f"distdir={tree}"])
    assert p.returncode == 0, p.stderr
    try:
        env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=2 noddebs noopt")
        p = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree, env=env,
                timeout=BUILD_TIMEOUT)
        assert p.returncode == 0, (p.stdout + p.stderr)[-6000:]
    finally:
        shutil.rmtree(tree)
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    found = {name: top / f"{name}_{version}_{'all' if name in ARCH_ALL else arch}.deb"
             for name in PACKAGES}
    found["changes"] = top / f"btrfsx_{version}_{arch}.changes"
    assert all(f.exists() for f in found.values()), sorted(os.listdir(top))
    return found


def test_version_is_the_changelogs():
    """debian/changelog carries the version configure.ac does."""
    ac = re.search(r"AC_INIT\(\[btrfsx\], \[([^]]+)\]", (REPO / "configure.ac").read_text())
    log = re.match(r"btrfsx \(([^)]+)\)", (REPO / "debian" / "changelog").read_text())
    assert ac and log and ac.group(1) == log.group(1)


def test_lintian_finds_no_error_and_no_warning(debs):
    """Issue 39: lintian clean of warnings too (it warned about groff in
    btrfsx-monitor.8 and WantedBy=local-fs.target)."""
    p = run(["lintian", "--fail-on", "error,warning", debs["changes"]])
    print(p.stdout)
    assert p.returncode == 0 and not re.search(r"^[EW]: ", p.stdout, re.M), p.stdout + p.stderr


def test_symbols_file_checked_at_build():
    """libbtrfsx0's symbols file lists every exported symbol and its version node,
    and the build fails on a change (dpkg-gensymbols -c4)."""
    symbols = (REPO / "debian" / "libbtrfsx0.symbols").read_text()
    assert symbols.startswith("libbtrfsx.so.0 libbtrfsx0 #MINVER#\n")
    listed = set(re.findall(r"^ (\w+)@(LIBBTRFSX_[\d.]+) ", symbols, re.M))
    header = (REPO / "libbtrfsx" / "btrfsx.h").read_text()
    functions = set(re.findall(r"\b(btrfsx_\w+)\(", re.sub(r"/\*.*?\*/", "", header,
                                                            flags=re.S)))
    assert {name for name, _ in listed} >= functions
    rules = (REPO / "debian" / "rules").read_text()
    assert "dh_makeshlibs -- -c4" in rules


def contents(deb: Path) -> set[str]:
    listing = run(["dpkg-deb", "-c", deb]).stdout
    return {line.split()[5].removeprefix(".") for line in listing.splitlines()}


def test_what_each_package_holds(debs):
    tool, lib, dev, py, web = (contents(debs[name]) for name in PACKAGES)
    assert {"/usr/bin/btrfsx", "/lib/systemd/system/btrfsx-monitor.service",
            "/lib/systemd/system/btrfsx-monitor.timer",
            "/lib/systemd/system/btrfsx-maintain.service",
            "/lib/systemd/system/btrfsx-maintain.timer",
            "/usr/share/man/man8/btrfsx-maintain.8.gz",
            "/usr/share/btrfsx/json/maintain-run.schema.json",
            "/lib/systemd/system/btrfsx-read-policy.service",
            "/usr/share/btrfsx/prometheus/btrfsx.rules.yml",
            "/usr/share/bash-completion/completions/btrfsx",
            "/usr/share/man/man8/btrfsx-monitor.8.gz", "/usr/share/btrfsx/json/common.schema.json",
            "/usr/share/doc/btrfsx/examples/grafana-btrfsx-monitor.json",
            "/usr/lib/nagios/plugins/check_btrfsx", "/var/lib/btrfsx/"} <= tool
    assert any(re.fullmatch(r"/usr/lib/[^/]+/libbtrfsx\.so\.0", f) for f in lib)
    assert {"/usr/include/btrfsx.h", "/usr/share/man/man3/libbtrfsx.3.gz"} <= dev
    assert any(f.endswith("/pkgconfig/btrfsx.pc") for f in dev)
    assert "/usr/lib/python3/dist-packages/btrfsx/__init__.py" in py
    assert any(re.fullmatch(r"/usr/lib/python3/dist-packages/btrfsx/_btrfsx\..*so", f) for f in py)
    assert {"/usr/share/cockpit/btrfsx/manifest.json", "/usr/share/cockpit/btrfsx/index.html",
            "/usr/share/cockpit/btrfsx/bx-core.js", "/usr/share/cockpit/btrfsx/d3.min.js"} <= web
    everything = tool | lib | dev | py | web
    assert not [f for f in everything if f.endswith((".la", ".a"))]


PROBE = r'''
#include <btrfsx.h>
#include <stdio.h>

int main(void)
{
	printf("%s\n", btrfsx_hint_name(2));
	return 0;
}
'''


def exercise(tmp_path: Path):
    """What the installed packages do, from their Debian places only."""
    clean = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    p = run(["/usr/bin/btrfsx", "--version"], env=clean)
    assert p.returncode == 0 and p.stdout.startswith("btrfsx "), p
    # a --prefix=/usr build, installed into a DESTDIR (debian/tmp): configuration in /etc
    library = sorted(Path("/usr/lib").glob("*/libbtrfsx.so.0"))
    for binary in [Path("/usr/bin/btrfsx")] + library[:1]:
        strings = run(["strings", binary]).stdout.split()
        assert "/etc/btrfsx" in strings and "/usr/etc/btrfsx" not in strings, binary
    for check in (["/usr/bin/btrfsx", "monitor", "report", "--check"],
                  ["/usr/lib/nagios/plugins/check_btrfsx"]):
        p = run([*check, "--db", tmp_path / "none.db"], env=clean)
        assert p.returncode == 3 and p.stdout.startswith("BTRFSX UNKNOWN - "), p
    if shutil.which("man"):
        p = run(["man", "-w", "btrfsx-monitor"], env=clean)
        assert p.stdout.strip() == "/usr/share/man/man8/btrfsx-monitor.8.gz", p
    p = run(["zcat", "/usr/share/man/man8/btrfsx-monitor.8.gz"])
    assert "btrfsx monitor report" in p.stdout
    service = Path("/lib/systemd/system/btrfsx-monitor.service").read_text()
    assert "ExecStart=/usr/bin/btrfsx monitor record $MOUNTPOINTS" in service
    assert "EnvironmentFile=-/etc/default/btrfsx-monitor" in service
    assert "OnCalendar=*:0/5" in Path("/lib/systemd/system/btrfsx-monitor.timer").read_text()
    assert not list(Path("/etc/systemd/system").glob("*/btrfsx-*")), "enabled on installation"
    p = run(["/usr/bin/python3", "-c", "import btrfsx; print(btrfsx.__file__); "
             "print(btrfsx.hint_name(2))"], env=clean, cwd="/")
    assert p.stdout.split() == ["/usr/lib/python3/dist-packages/btrfsx/__init__.py",
                                "metadata_only"], p
    flags = run(["pkg-config", "--cflags", "--libs", "btrfsx"], env=clean).stdout.split()
    assert "-lbtrfsx" in flags
    (tmp_path / "probe.c").write_text(PROBE)
    p = run(["cc", "-o", tmp_path / "probe", tmp_path / "probe.c", *flags], env=clean)
    assert p.returncode == 0, p.stderr
    assert run([tmp_path / "probe"], env=clean).stdout == "metadata_only\n"
    # the web console's application, its chart library Debian's d3
    app = Path("/usr/share/cockpit/btrfsx")
    assert json.loads((app / "manifest.json").read_text())["menu"]["index"]["label"]
    assert (app / "d3.min.js").resolve() == Path("/usr/share/javascript/d3/d3.min.js")
    if shutil.which("promtool"):
        p = run(["promtool", "check", "rules", "/usr/share/btrfsx/prometheus/btrfsx.rules.yml"])
        assert p.returncode == 0, p.stdout + p.stderr


def installed(name: str) -> bool:
    status = run(["dpkg-query", "-W", "-f=${Status}", name]).stdout
    return "installed" in status and "not-installed" not in status


@pytest.mark.root
def test_installed_exercised_and_purged(debs, tmp_path):
    need("dpkg")
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if any(installed(n) for n in PACKAGES) or Path("/usr/bin/btrfsx").exists():
            pytest.skip("btrfsx is installed on this machine already; not replacing it")
        # (/var/lib/btrfsx may be there already: the tests' own runs use it)
        watched = [f for f in ("/usr/bin/btrfsx", "/var/lib/btrfsx", "/usr/share/btrfsx",
                               "/lib/systemd/system/btrfsx-monitor.timer",
            "/lib/systemd/system/btrfsx-maintain.service",
            "/lib/systemd/system/btrfsx-maintain.timer",
            "/usr/share/man/man8/btrfsx-maintain.8.gz",
            "/usr/share/btrfsx/json/maintain-run.schema.json",
                               "/usr/share/cockpit/btrfsx",
                               "/usr/lib/python3/dist-packages/btrfsx") if not Path(f).exists()]
        try:
            p = run(["dpkg", "-i"] + [debs[n] for n in PACKAGES],
                    env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            assert p.returncode == 0, p.stdout + p.stderr
            assert not run(["pgrep", "-f", "^/usr/bin/btrfsx"]).stdout, "a unit was started"
            exercise(tmp_path)
        finally:
            p = run(["dpkg", "--purge"] + list(PACKAGES))
        assert p.returncode == 0, p.stdout + p.stderr
    assert not any(installed(n) for n in PACKAGES)
    left = [f for f in watched if Path(f).exists()]
    assert not left, left
