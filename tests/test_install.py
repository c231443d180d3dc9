# SPDX-License-Identifier: GPL-2.0-or-later
"""`make install` into a DESTDIR, and everything used from there: the
binary, a C program built with `pkg-config btrfsx` against the library, the
man pages, the bash completion, the systemd unit and the Python module; and
`make uninstall` leaving nothing behind.

The build installed is the suite's (BTRFSX_BUILD_DIR, an ASan+UBSan build):
what is tested is what was built, and the C program is compiled with the
same compiler and sanitizer flags."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from helpers import fsutil
from helpers.bashcomp import complete

DIRS = ("prefix", "bindir", "libdir", "includedir", "mandir", "datadir", "pkgdatadir", "docdir",
        "bashcompletiondir", "systemdsystemunitdir", "nagiospluginsdir", "CC",
        "SANITIZER_CFLAGS")


def build_dir() -> Path:
    build = Path(os.environ.get("BTRFSX_BUILD_DIR") or Path(fsutil.btrfsx_path()).parent)
    if not (build / "Makefile").exists():
        pytest.skip(f"no configured build tree at {build} (set BTRFSX_BUILD_DIR)")
    return build


def make_vars(build: Path, names) -> dict[str, str]:
    """Variables as make expands them (${prefix}/lib -> /usr/local/lib)."""
    rule = "btrfsx-print-vars:\n" + "".join(f"\t@echo '{n}=$({n})'\n" for n in names)
    out = subprocess.run(["make", "-s", "-C", str(build), "-f", "Makefile", "-f", "-",
                          "btrfsx-print-vars"], input=rule, capture_output=True, text=True,
                         check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def make_install(build: Path, destdir: Path, target: str = "install") -> None:
    subprocess.run(["make", "-s", "-C", str(build), target, f"DESTDIR={destdir}"],
                   capture_output=True, text=True, check=True)


class Installed:
    def __init__(self, build: Path, destdir: Path):
        self.build = build
        self.destdir = destdir
        self.vars = make_vars(build, DIRS)

    def path(self, var: str, *parts: str) -> Path:
        """DESTDIR + the configured directory + parts."""
        return Path(str(self.destdir) + self.vars[var], *parts)

    def env(self, **extra) -> dict[str, str]:
        env = dict(os.environ, LD_LIBRARY_PATH=str(self.path("libdir")))
        env.update(extra)
        return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    build = build_dir()
    destdir = tmp_path_factory.mktemp("destdir")
    make_install(build, destdir)
    return Installed(build, destdir)


def test_directories_follow_the_prefix(installed):
    prefix = installed.vars["prefix"]
    for var in ("bindir", "libdir", "includedir", "mandir", "bashcompletiondir",
                "systemdsystemunitdir"):
        assert installed.vars[var].startswith(prefix + "/"), (var, installed.vars[var])


def test_binary_runs_from_destdir(installed):
    exe = installed.path("bindir", "btrfsx")
    out = subprocess.run([str(exe), "--help"], env=installed.env(), capture_output=True,
                         text=True, check=True)
    assert out.stdout.startswith("usage: btrfsx ")
    out = subprocess.run([str(exe), "--version"], env=installed.env(), capture_output=True,
                         text=True, check=True)
    assert out.stdout.startswith("btrfsx ")


def test_json_schemas_installed(installed):
    """Every schema of Documentation/json/ under pkgdatadir/json, as the man pages say."""
    source = sorted(p.name for p in (Path(__file__).parent.parent / "Documentation" / "json")
                    .glob("*.schema.json"))
    assert sorted(p.name for p in installed.path("pkgdatadir", "json").iterdir()) == source


def test_guides_installed(installed):
    """Every guide the README links, under docdir/guides, and the images they show."""
    guides = Path(__file__).parent.parent / "Documentation" / "guides"
    source = sorted(p.relative_to(guides) for p in guides.rglob("*")
                    if p.suffix in (".md", ".png"))
    target = installed.path("docdir", "guides")
    assert sorted(p.relative_to(target) for p in target.rglob("*") if p.is_file()) == source


def test_library_soname_and_exports(installed):
    lib = installed.path("libdir", "libbtrfsx.so")
    assert lib.is_symlink()
    dynamic = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True,
                             check=True).stdout
    assert "Library soname: [libbtrfsx.so.0]" in dynamic
    assert installed.path("libdir", "libbtrfsx.so.0").exists()
    exported = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                              text=True, check=True).stdout.split("\n")
    names = [line.split()[-1] for line in exported if line.strip()]
    ours = [n for n in names if not n.startswith("LIBBTRFSX_")]
    assert ours and all(n.startswith("btrfsx_") for n in ours), ours


PROBE = r'''
#include <btrfsx.h>
#include <stdio.h>

int main(void)
{
	printf("%s\n", btrfsx_strerror(BTRFSX_ERROR_NOT_BTRFS));
	printf("%s\n", btrfsx_hint_name(2));
	return 0;
}
'''


def test_pkg_config_compiles_and_links_a_client(installed, tmp_path):
    env = installed.env(PKG_CONFIG_PATH=str(installed.path("libdir", "pkgconfig")),
                        PKG_CONFIG_SYSROOT_DIR=str(installed.destdir))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "btrfsx"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert str(installed.destdir) in flags
    src = tmp_path / "probe.c"
    src.write_text(PROBE)
    exe = tmp_path / "probe"
    cc = shlex.split(installed.vars["CC"]) + shlex.split(installed.vars["SANITIZER_CFLAGS"])
    subprocess.run(cc + ["-Wall", "-Werror", "-o", str(exe), str(src)] + shlex.split(flags),
                   env=env, check=True)
    out = subprocess.run([str(exe)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    strerror, hint = out.stdout.splitlines()
    assert "btrfs" in strerror.lower()
    assert hint == "metadata_only"


def test_man_pages(installed):
    """Documentation/<page>.adoc is <page>(8), <page>.3.adoc is <page>(3)."""
    pages = sorted(p.name.removesuffix(".adoc") for p in
                   (fsutil.REPO / "Documentation").glob("*.adoc"))
    assert "btrfsx" in pages
    for page in pages:
        name, dot, section = page.rpartition(".")
        if not dot:
            name, section = page, "8"
        man = installed.path("mandir", f"man{section}", f"{name}.{section}")
        assert man.exists(), man
        title = name.upper().replace("-", "\\-")
        assert f'\n.TH "{title}" "{section}"' in man.read_text(), man


def test_systemd_unit(installed):
    unit = installed.path("systemdsystemunitdir", "btrfsx-read-policy.service")
    text = unit.read_text()
    assert f"ExecStart={installed.vars['bindir']}/btrfsx read-policy apply --watch" in text
    assert not re.search(r"@\w+@", text), "unsubstituted"


def test_systemd_monitor_units(installed):
    """The timer starts the service every 5 minutes; the service records, then
    writes the metrics (tests/test_monitor.py runs these very command lines)."""
    bindir = installed.vars["bindir"]
    service = installed.path("systemdsystemunitdir", "btrfsx-monitor.service").read_text()
    timer = installed.path("systemdsystemunitdir", "btrfsx-monitor.timer").read_text()
    assert f"ExecStart={bindir}/btrfsx monitor record $MOUNTPOINTS" in service
    assert f"ExecStart=-{bindir}/btrfsx monitor metrics --textfile ${{TEXTFILE_DIR}}" in service
    assert "Type=oneshot" in service
    assert "OnCalendar=*:0/5" in timer and "WantedBy=timers.target" in timer
    for text in (service, timer):
        assert not re.search(r"@\w+@", text), "unsubstituted"


def test_systemd_maintain_units(installed):
    """The timer starts the service daily; the service runs maintain on each
    mounted btrfs with the metrics beside the monitor's."""
    bindir = installed.vars["bindir"]
    service = installed.path("systemdsystemunitdir", "btrfsx-maintain.service").read_text()
    timer = installed.path("systemdsystemunitdir", "btrfsx-maintain.timer").read_text()
    assert f"{bindir}/btrfsx maintain run" in service and "--textfile" in service
    assert "Type=oneshot" in service and "EnvironmentFile=-" in service
    assert "OnCalendar=*-*-* 03:00" in timer and "WantedBy=timers.target" in timer
    for text in (service, timer):
        assert not re.search(r"@\w+@", text), "unsubstituted"


def test_completion_from_destdir(installed, tmp_path):
    script = installed.path("bashcompletiondir", "btrfsx")
    assert complete("btrfsx ", script) == \
        "filesystem inspect read-policy property device scrub monitor balance maintain mkfs".split()
    assert complete("btrfsx dev prop set /dev/sdb allocation_hint m", script) == \
        ["metadata_preferred", "metadata_only"]
    assert complete("btrfsx read-policy set /mnt ", script) == ["pid", "round-robin", "devid"]
    assert complete("btrfsx scrub start --off", script) == ["--offline"]
    (tmp_path / "disk.img").write_bytes(b"")
    assert "disk.img" in complete("btrfsx inspect dump-super ", script, cwd=tmp_path)


def python_module_dirs(root: Path) -> list[Path]:
    """Directories under root from which `import btrfsx` finds the module."""
    found = {p.parent for p in root.rglob("btrfsx*.so") if "-packages" in str(p)}
    found |= {p.parent.parent for p in root.rglob("btrfsx/__init__.py")}
    return sorted(found)


def sanitizer_preload(installed) -> dict[str, str]:
    """An uninstrumented python3 loading an ASan-built module needs the
    runtime first."""
    if "address" not in installed.vars["SANITIZER_CFLAGS"]:
        return {}
    cc = shlex.split(installed.vars["CC"])
    runtime = subprocess.run(cc + ["-print-file-name=libclang_rt.asan-x86_64.so"],
                             capture_output=True, text=True, check=True).stdout.strip()
    return {"LD_PRELOAD": runtime, "ASAN_OPTIONS": "detect_leaks=0"}


def test_python_module_imports_from_destdir(installed):
    if not (fsutil.REPO / "libbtrfsx" / "python").is_dir():
        pytest.skip("the Python bindings (libbtrfsx/python) are not in this tree yet")
    dirs = python_module_dirs(installed.destdir)
    assert len(dirs) == 1, f"module installed in {dirs}"
    env = installed.env(PYTHONPATH=str(dirs[0]), **sanitizer_preload(installed))
    out = subprocess.run(["python3", "-c", "import btrfsx; print(btrfsx.__file__); "
                          "print(btrfsx.__doc__ is not None)"],
                         env=env, capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    path, documented = out.stdout.splitlines()
    assert path.startswith(str(installed.destdir)), path
    assert documented == "True"


def test_uninstall_leaves_nothing(tmp_path):
    build = build_dir()
    destdir = tmp_path / "destdir"
    make_install(build, destdir)
    assert any(p.is_file() for p in destdir.rglob("*"))
    make_install(build, destdir, "uninstall")
    left = [str(p.relative_to(destdir)) for p in destdir.rglob("*") if not p.is_dir()]
    assert left == []


def test_monitoring_plugin_installed(installed):
    """check_btrfsx where Nagios and Icinga look for plugins: the monitor's check."""
    assert installed.vars["nagiospluginsdir"] == installed.vars["prefix"] + "/lib/nagios/plugins"
    plugin = installed.path("nagiospluginsdir", "check_btrfsx")
    assert os.access(plugin, os.X_OK)
    text = plugin.read_text()
    assert f'exec {installed.vars["bindir"]}/btrfsx monitor report --check "$@"' in text


def test_libtool_files_are_in_the_install_guide(installed):
    """Issue 39: what make install puts there that is no program, page or module of
    ours (libtool's .la, a static .a) is named in the install guide's table."""
    guide = (fsutil.REPO / "Documentation" / "guides" / "install.md").read_text()
    found = {p.name for p in installed.destdir.rglob("*") if p.suffix in (".la", ".a")}
    assert found, "no .la installed?"
    for name in found:
        assert f"`{name}`" in guide, name


def test_prometheus_rules_installed(installed):
    rules = installed.path("pkgdatadir", "prometheus", "btrfsx.rules.yml")
    assert rules.read_text() == (fsutil.REPO / "prometheus" / "btrfsx.rules.yml").read_text()


def test_prefix_usr_reads_configuration_from_etc(tmp_path):
    """./configure --prefix=/usr, as the install guide says: configuration in
    /etc (not /usr/etc), in the units installed into a DESTDIR and in what
    the binary and the library are compiled with. Configured in a directory
    of its own; only the units and the two objects that hold the path are
    made (the full builds are the suite's and the Debian package's)."""
    build = tmp_path / "build"
    build.mkdir()
    if not (fsutil.REPO / "configure").exists():
        pytest.skip("no configure in the source tree (./autogen.sh makes it)")
    p = subprocess.run([str(fsutil.REPO / "configure"), "-q", "--prefix=/usr", "--disable-python"],
                       cwd=build, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert make_vars(build, ["sysconfdir"])["sysconfdir"] == "/etc"
    objects = re.findall(r"^([\w/.-]*libbtrfsx\.lo|btrfsx-btrfsx\.o):",
                         (build / "Makefile").read_text(), re.M)
    assert len(set(objects)) == 2, objects
    subprocess.run(["make", "-s", *sorted(set(objects))], cwd=build, check=True,
                   capture_output=True)
    for obj in set(objects):
        obj = build / obj
        if obj.suffix == ".lo":
            obj = obj.parent / ".libs" / obj.with_suffix(".o").name
        strings = subprocess.run(["strings", str(obj)], capture_output=True, text=True).stdout
        assert "/etc/btrfsx" in strings.split() and "/usr/etc" not in strings, obj
    destdir = tmp_path / "destdir"
    subprocess.run(["make", "-s", "install-systemdsystemunitDATA", f"DESTDIR={destdir}"],
                   cwd=build, check=True, capture_output=True)
    units = destdir / "usr" / "lib" / "systemd" / "system"
    service = (units / "btrfsx-monitor.service").read_text()
    assert "EnvironmentFile=-/etc/default/btrfsx-monitor" in service
    assert "ExecStart=/usr/bin/btrfsx monitor record $MOUNTPOINTS" in service
    assert "ExecStart=/usr/bin/btrfsx read-policy apply --watch" in \
        (units / "btrfsx-read-policy.service").read_text()
    assert not re.search(r"/usr/etc|/usr/local|@\w+@", service)


def test_build_script_without_a_directory_prints_its_usage():
    """scripts/build.sh with no argument: its usage line and exit 2, not bash's
    "unbound variable" (issue 32); --help: the same on exit 0."""
    script = fsutil.REPO / "scripts" / "build.sh"
    p = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.startswith("usage: scripts/build.sh <dir>"), p.stderr
    p = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "usage: scripts/build.sh <dir>" in p.stderr
