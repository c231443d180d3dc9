# SPDX-License-Identifier: GPL-2.0-or-later
"""The Python bindings (module btrfsx) and the example scripts in examples/.

Every call is compared with what the btrfsx command (and btrfs-progs) says
about the same real filesystem on loop devices; mounted-only interfaces the
running kernel lacks are exercised on fake sysfs trees.

Each check runs in a fresh interpreter: ``run_py`` executes a snippet with
PYTHONPATH at the build tree's package. The suite's build is ASan+UBSan, and
an instrumented extension only loads into an uninstrumented python with the
sanitizer runtime preloaded, so ``py_env`` adds LD_PRELOAD of the runtime of
the build's compiler (leak detection off: the interpreter itself keeps memory
until exit). This tests the very library the rest of the suite tests, with the
sanitizers watching the bindings too, and a crash fails one test instead of
the pytest process.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import platform
import re
import shutil
import sqlite3
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from helpers import fsutil
from helpers import oracle
# fake_fs and three_devs are fixtures, used by name
from test_property import (NAMES, fake_fs, progs_dev_type, progs_super_types,  # noqa: F401
                           three_devs)
from test_read_policy import EXPERIMENTAL, Fs, make_fake
from test_balance import HINTS as MISPLACED_HINTS
from test_balance import misplaced_fs  # noqa: F401 (a fixture, used by name)
from test_scrub import Layout, corrupt, fresh_fs

MiB = 1024 * 1024
EXAMPLES = fsutil.REPO / "examples"


# --------------------------------------------------------------------------- harness

def build_dir() -> Path:
    return Path(os.environ.get("BTRFSX_BUILD_DIR") or Path(fsutil.btrfsx_path()).resolve().parent)


def make_variable(name: str) -> str:
    """A variable of the build's Makefile (what configure found)."""
    text = (build_dir() / "Makefile").read_text()
    m = re.search(rf"^{name} = (.*)$", text, re.M)
    return m.group(1).strip() if m else ""


def sanitizer_runtime() -> str | None:
    """The ASan runtime to preload for a sanitizer build, else None."""
    if "address" not in make_variable("SANITIZER_CFLAGS"):
        return None
    cc = make_variable("CC").split()[0]
    name = f"libclang_rt.asan-{platform.machine()}.so" if "clang" in cc else "libasan.so"
    path = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert os.path.isabs(path), f"{cc} does not know where {name} is"
    return path


@pytest.fixture(scope="session")
def py_env(tmp_path_factory) -> dict:
    package = build_dir() / "libbtrfsx" / "python"
    if not (package / "btrfsx" / "_btrfsx.so").exists():
        pytest.fail(f"the Python module is not built in {package} (configure --disable-python?)")
    env = dict(os.environ, PYTHONPATH=str(package), PYTHONDONTWRITEBYTECODE="1",
               BTRFSX_TEST_STATE_DIR=str(tmp_path_factory.mktemp("state")))
    runtime = sanitizer_runtime()
    if runtime:
        env["LD_PRELOAD"] = " ".join(filter(None, [runtime, os.environ.get("LD_PRELOAD")]))
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


@pytest.fixture(scope="session")
def python() -> str:
    """The interpreter the module was built for."""
    return make_variable("PYTHON") or "python3"


# Helpers every snippet has: emit() prints results as JSON, error() runs a
# call that must fail and describes the exception. Scrubs record their runs
# in the session's state directory unless a snippet says where, never in
# /var/lib/btrfsx.
PRELUDE = '''
import dataclasses, datetime, json, os, sys, threading
import btrfsx

if os.environ.get("BTRFSX_TEST_STATE_DIR"):
    _scrub_offline = btrfsx.scrub_offline
    def scrub_offline(*args, state_dir=os.environ["BTRFSX_TEST_STATE_DIR"], **kw):
        return _scrub_offline(*args, state_dir=state_dir, **kw)
    btrfsx.scrub_offline = scrub_offline

def _plain(o):
    if dataclasses.is_dataclass(o):
        return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
    if isinstance(o, datetime.datetime):
        return o.timestamp()
    raise TypeError(type(o).__name__)

def emit(obj):
    print(json.dumps(obj, default=_plain))

def error(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except btrfsx.BtrfsxError as e:
        return {"class": type(e).__name__, "code": e.code.name, "message": e.message,
                "warnings": list(e.warnings), "result": e.result,
                "mro": [c.__name__ for c in type(e).__mro__]}
    raise AssertionError(f"{fn.__name__} did not fail")
'''


def run_py(py_env, python, code: str, *args, env: dict | None = None, check=True,
           timeout: float = 300) -> subprocess.CompletedProcess:
    """Run @code (after PRELUDE) in a new interpreter with sys.argv[1:] = @args."""
    e = dict(py_env, **(env or {}))
    p = subprocess.run([python, "-c", PRELUDE + textwrap.dedent(code), *map(str, args)],
                       env=e, capture_output=True, text=True, timeout=timeout)
    assert "Sanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    if check:
        assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture
def py(py_env, python):
    """py(code, *args) -> the JSON documents the snippet emitted (one, or a list)."""
    def _py(code, *args, env=None, timeout=300):
        out = run_py(py_env, python, code, *args, env=env, timeout=timeout).stdout
        docs = [json.loads(line) for line in out.splitlines()]
        return docs[0] if len(docs) == 1 else docs
    return _py


def run_example(py_env, python, name, *args, check=None):
    p = subprocess.run([python, str(EXAMPLES / name), *map(str, args)], env=py_env,
                       capture_output=True, text=True, timeout=300)
    assert "Sanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    if check is not None:
        assert p.returncode == check, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


# --------------------------------------------------------------------------- module basics

def test_enums_names_and_errors(py):
    doc = py('''
        codes = {c.name: (int(c), btrfsx.strerror(c)) for c in btrfsx.ErrorCode}
        classes = {c.name: [k.__name__ for k in type(btrfsx._make_error(c, "", ())).__mro__]
                   for c in btrfsx.ErrorCode}
        e = btrfsx._make_error(btrfsx.ErrorCode.BUSY, "", ("w",))
        emit({"version": btrfsx.__version__, "codes": codes, "classes": classes,
              "busy": [str(e), e.message, list(e.warnings)],
              "unknown": type(btrfsx._make_error(99, "x", ())).__name__,
              "names": [btrfsx.hint_name(v) for v in [*range(-1, 9), (1 << 64) + 2]],
              "str": [str(h) for h in btrfsx.Hint],
              "profiles": [btrfsx.profile_name(f) for f in (0, 1 << 4, 1 << 5, 1 << 9, 1 << 8)],
              "types": [btrfsx.type_name(f) for f in (1, 2, 4, 5)]})
    ''')
    header = (fsutil.REPO / "libbtrfsx" / "btrfsx.h").read_text()
    assert doc["version"] == ".".join(re.search(rf"#define BTRFSX_VERSION_{part} (\d+)", header)[1]
                                      for part in ("MAJOR", "MINOR", "PATCH"))
    assert [v for v, _ in doc["codes"].values()] == list(range(16))
    assert doc["codes"]["NOT_BTRFS"][1] == "not a btrfs filesystem"
    assert all(text for _, text in doc["codes"].values())
    classes = doc["classes"]
    assert classes["INVALID_ARGUMENT"][:3] == ["InvalidArgumentError", "BtrfsxError", "ValueError"]
    assert "PermissionError" in classes["PERMISSION"]
    assert "FileNotFoundError" in classes["NOT_FOUND"]
    assert "MemoryError" in classes["NO_MEMORY"]
    for name, cls in [("NOT_BTRFS", "NotBtrfsError"), ("BUSY", "BusyError"),
                      ("MOUNTED", "MountedError"), ("NOT_MOUNTED", "NotMountedError"),
                      ("NOT_SUPPORTED", "NotSupportedError"), ("CANCELLED", "CancelledError"),
                      ("NO_SPACE", "NoSpaceError"),
                      ("CORRUPTED", "CorruptedError"), ("IO", "BtrfsxIOError"),
                      ("MISSING_DEVICE", "MissingDeviceError"), ("OTHER", "BtrfsxError")]:
        assert classes[name][0] == cls and "BtrfsxError" in classes[name]
    assert doc["busy"] == [doc["codes"]["BUSY"][1]] * 2 + [["w"]]
    assert doc["unknown"] == "BtrfsxError"
    assert doc["names"] == [None] + NAMES + [None] * 5
    assert doc["str"] == NAMES
    assert doc["profiles"] == ["single", "raid1", "dup", "raid1c3", "raid6"]
    assert doc["types"] == ["data", "system", "metadata", "data+metadata"]


def test_a_field_only_the_c_table_has_stops_the_import(py):
    """The classes hold the fields of the C module's tables (made from the
    engines' field lists, tests/test_result_fields.py); one a table has and
    its class lacks stops the import, naming it."""
    got = py("""
        btrfsx._btrfsx.FIELDS["ScrubCounters"] += ("added_in_the_engine",)
        try:
            btrfsx._c_fields()(btrfsx.ScrubCounters)
        except ImportError as e:
            emit(str(e))
    """)
    assert "ScrubCounters" in got and "added_in_the_engine" in got
    assert set(py("emit(list(btrfsx._btrfsx.FIELDS))")) >= {"ScrubCounters", "MonitorSample"}


def test_an_option_only_the_c_table_has_stops_the_import(py):
    """relocate_misplaced() takes the options of the C module's table (made
    from relocate/relocate.h's list of struct btrfsx_relocate_options): one
    the table has and the function lacks stops the import, naming it; the
    function passes its parameters on by the table's names."""
    got = py("""
        names = btrfsx._btrfsx.OPTIONS["relocate_misplaced"]
        btrfsx._btrfsx.OPTIONS["relocate_misplaced"] += ("added_in_the_engine",)
        try:
            btrfsx._common._c_options(python_only=("progress", "cancel"))(
                btrfsx.relocate_misplaced)
        except ImportError as e:
            emit([str(e), list(names)])
    """)
    assert "relocate_misplaced" in got[0] and "added_in_the_engine" in got[0]
    assert got[1] == ["forbidden_only", "dry_run", "force", "limit", "max_bytes", "pause",
                      "sysfs_root", "state_dir", "progress_interval"]


def test_hint_parse(py):
    doc = py('''
        ok = [btrfsx.hint_parse(t) for t in sys.argv[1:]]
        emit({"ok": ok, "number": btrfsx.hint_parse("5", allow_number=True),
              "enum": type(btrfsx.hint_parse("m")).__name__,
              "bad": [error(btrfsx.hint_parse, t) for t in ("fast", "5", "", "data only")]})
    ''', "METADATA_ONLY", "Data_Only", "m", "monly", "donly", "d", "none", "data_preferred")
    assert doc["ok"] == [2, 3, 1, 2, 3, 0, 4, 0]
    assert doc["number"] == 5 and doc["enum"] == "Hint"
    for bad in doc["bad"]:
        assert bad["class"] == "InvalidArgumentError" and bad["code"] == "INVALID_ARGUMENT"
        assert "ValueError" in bad["mro"]


# --------------------------------------------------------------------------- fs_info_offline

@pytest.mark.root
def test_fs_info_offline(fs_cache, py):
    fs = fs_cache.get(data="raid1", metadata="raid1", ndevs=2)
    doc = py('emit(btrfsx.fs_info_offline(sys.argv[1]))', fs.dev)
    sb = oracle.progs_dump_super(fs.dev)
    assert doc["fsid"] == fs.fsid == sb["fsid"]
    assert doc["metadata_uuid"] == sb["metadata_uuid"]
    assert doc["label"] == sb.get("label", "")
    for key in ("generation", "num_devices", "total_bytes", "bytes_used", "nodesize",
                "sectorsize"):
        assert doc[key] == int(sb[key]), key
    assert doc["csum_type"] == int(sb["csum_type"].split()[0])
    assert doc["csum_name"] == "crc32c"
    assert doc == py('emit(btrfsx.fs_info_offline(sys.argv[1:]))', *fs.devs)


# --------------------------------------------------------------------------- allocation hints

HINT_SET_GET = '''
change = btrfsx.hint_set(sys.argv[1], sys.argv[2])
emit({"change": change, "changed": change.changed, "get": btrfsx.hint_get(sys.argv[1])})
'''


@pytest.mark.root
def test_hint_set_get_offline_round_trip(three_devs, py, btrfsx_json):
    """Every value by name, against the command and btrfs-progs' view of the
    chunk tree and the superblock copies."""
    devs = three_devs.devs
    previous = 0
    for value in [1, 2, 3, 4, 0]:
        doc = py(HINT_SET_GET, devs[2], NAMES[value])
        before, after, got = doc["change"]["before"], doc["change"]["after"], doc["get"]
        assert (before["hint"], after["hint"], doc["changed"]) == (previous, value, True)
        assert got == dict(after, warnings=got["warnings"])
        cli = btrfsx_json("device", "property", "get", devs[2], "allocation_hint")
        assert (got["hint"], got["type"], got["devid"], got["path"], got["mounted"],
                got["effective"]) == (cli["hint_value"], cli["dev_item_type"], cli["devid"],
                                      cli["device"],
                                      cli["mounted"], cli["effective"])
        assert (got["devid"], got["interface"], got["mounted"]) == (3, 0, False)
        assert got["warnings"] == cli.get("warnings", [])
        assert progs_dev_type(devs, 3) == value
        assert progs_super_types(devs[2]) == [value, value]
        previous = value
    assert progs_dev_type(devs, 1) == 0 and progs_super_types(devs[0]) == [0, 0]
    # an enum member and a plain int do the same
    doc = py('''
        emit([btrfsx.hint_set(sys.argv[1], btrfsx.Hint.DATA_ONLY).after.hint,
              btrfsx.hint_set(sys.argv[1], 1).after.hint,
              btrfsx.hint_set(sys.argv[1], 1).changed])
    ''', devs[1])
    assert doc == [3, 1, False]
    assert progs_dev_type(devs, 2) == 1


@pytest.mark.root
def test_hint_set_force_unknown_and_guard_rails(loopdevs, py):
    one = loopdevs(1)
    fsutil.mkfs(one.devs, data="single", metadata="dup")
    dev = one.devs[0]
    doc = py('''
        dev = sys.argv[1]
        emit({"rail": error(btrfsx.hint_set, dev, "data_only"),
              "unknown": error(btrfsx.hint_set, dev, 5),
              "name5": error(btrfsx.hint_set, dev, "5"),
              "negative": error(btrfsx.hint_set, dev, -1),
              "huge": error(btrfsx.hint_set, dev, (1 << 64) + 2, force=True),
              "wide": error(btrfsx.hint_set, dev, 9, force=True)})
        try:
            btrfsx.hint_set(dev, 2.5)
        except TypeError as e:
            emit(str(e))
        forced = btrfsx.hint_set(dev, "5", force=True)
        emit({"forced": forced, "get": btrfsx.hint_get(dev)})
    ''', dev)
    (errors, typeerror, forced) = doc
    assert errors["rail"]["class"] == "InvalidArgumentError"
    assert "0 devices would allow metadata" in errors["rail"]["message"]
    for key in ("unknown", "name5", "negative", "huge"):
        assert errors[key]["class"] == "InvalidArgumentError", errors[key]
    assert "does not fit the 3-bit hint field" in errors["wide"]["message"]
    assert "hint must be" in typeerror
    assert forced["forced"]["after"]["hint"] == 5 and forced["get"]["hint"] == 5
    assert any("unknown allocation hint value 5" in w for w in forced["get"]["warnings"])
    assert progs_dev_type([dev], 1) == 5


@pytest.mark.root
def test_hint_mounted_without_kernel_support(loopdevs, py, btrfsx_json):
    loops = loopdevs(2)
    fsutil.mkfs(loops.devs, data="single", metadata="raid1")
    py('btrfsx.hint_set(sys.argv[1], btrfsx.Hint.METADATA_PREFERRED)', loops.devs[1])
    with fsutil.mounted(loops.devs):
        doc = py('''
            emit({"set": error(btrfsx.hint_set, sys.argv[1], "data_only"),
                  "get": btrfsx.hint_get(sys.argv[1])})
        ''', loops.devs[1])
        cli = btrfsx_json("property", "get", loops.devs[1], "allocation_hint")
    assert doc["set"]["class"] == "NotSupportedError"
    assert "no allocation hint support" in doc["set"]["message"]
    got = doc["get"]
    assert got["mounted"] is True and got["effective"] is False and got["interface"] == 0
    assert got["hint"] == 1 == cli["hint_value"]
    assert got["warnings"] == cli["warnings"]
    assert any("has no effect" in w for w in got["warnings"])
    assert progs_dev_type(loops.devs, 2) == 1


FAKE_SET = '''
dev, root, attribute, value = sys.argv[1:5]
emit(btrfsx.hint_get(dev, sysfs_root=root))
emit(btrfsx.hint_set(dev, value, sysfs_root=root))
emit(open(attribute).read())
'''


@pytest.mark.root
def test_hint_on_fake_v12_sysfs(fake_fs, py):
    devs, fake = fake_fs("allocation_hint", "DATA_PREFERRED\n")
    got, change, written = py(FAKE_SET, devs[2], fake.root, fake.file, "metadata_only")
    assert got["effective"] is True and got["interface"] == 1 and got["mounted"] is True
    assert change["after"]["hint"] == 2 and change["after"]["effective"] is True
    assert written == "METADATA_ONLY"
    refused = py('emit(error(btrfsx.hint_set, sys.argv[1], "none", sysfs_root=sys.argv[2]))',
                 devs[2], fake.root)
    assert refused["class"] == "InvalidArgumentError"
    assert "takes only data_preferred, metadata_preferred, metadata_only and data_only" in \
        refused["message"]
    assert progs_dev_type(devs, 3) == 0          # the online path never writes the disk


@pytest.mark.root
def test_hint_on_fake_type_sysfs(fake_fs, py):
    devs, fake = fake_fs("type", "0x00000100\n")
    got, change, written = py(FAKE_SET, devs[2], fake.root, fake.file, "none")
    assert got["interface"] == 2 and got["type"] == 0x100 and got["hint"] == 0
    assert change["before"]["type"] == 0x100 and change["after"]["type"] == 0x104
    assert written == "0x104"


# --------------------------------------------------------------------------- usage

def assert_usage_equals_cli(u, cli):
    """Every figure of btrfsx.usage() against `btrfsx --format json filesystem usage`."""
    assert u["fsid"] == cli["fsid"]
    assert cli["mountpoint"] == (u["path"] if u["mounted"] else None)
    assert u["mounted"] == cli["mounted"]
    ov = cli["overall"]
    for key in ("device_size", "device_allocated", "device_unallocated", "device_missing",
                "device_slack", "used", "global_reserve", "global_reserve_used",
                "free_statfs"):
        assert u[key] == ov[key], key
    assert u["progs_free_estimated"] == ov["free_estimated_by_ratio"]
    assert u["progs_free_min"] == ov["free_estimated_by_ratio_min"]
    assert round(u["data_ratio"], 2) == ov["data_ratio"]
    assert round(u["metadata_ratio"], 2) == ov["metadata_ratio"]
    assert bool(u["multiple_profiles"]) == ov["multiple_profiles"]
    names = {1: "data", 2: "system", 4: "metadata", 5: "data+metadata"}
    assert [(names[s["flags"] & 7], s["total_bytes"], s["used_bytes"]) for s in u["spaces"]] == \
        [(s["type"], s["size"], s["used"]) for s in cli["spaces"]]
    assert [(c["hint"], c["devices"], c["size"], c["unallocated"], c["data_allocatable"],
             c["metadata_allocatable"]) for c in u["classes"]] == \
        [(c["hint_value"], c["devices"], c["size"], c["unallocated"], c["data_allocatable"],
          c["metadata_allocatable"]) for c in cli["classes"]]
    model = cli["model"]
    for key in ("hints_honoured", "strict", "data_free_in_chunks", "data_new_chunks",
                "metadata_free_in_chunks", "metadata_needed"):
        assert u[key] == model[key], key
    for key in ("free_estimated", "free_strict", "free_statfs", "metadata_room",
                "metadata_room_after_data"):
        assert u[key] == cli[key], key
    assert [(d["devid"], d["path"], NAMES[d["hint"]], d["size"], d["unallocated"], d["data"],
             d["metadata"], d["system"], d["slack"]) for d in u["devices"]] == \
        [(d["devid"], d["device"], d["hint"], d["size"], d["unallocated"], d["data"],
          d["metadata"], d["system"], d["slack"]) for d in cli["devices"]]
    assert u["warnings"] == cli.get("warnings", [])
    # figures the command shows only inside its per-profile lines
    by_type = {}
    for s in u["spaces"]:
        t = by_type.setdefault(s["flags"] & 7, [0, 0])
        t[0] += s["total_bytes"]
        t[1] += s["used_bytes"]
    assert [u["data_size"], u["data_used"]] == by_type.get(1, [0, 0])
    assert [u["metadata_size"], u["metadata_used"]] == by_type.get(4, [0, 0])


USAGE = '''
u = btrfsx.usage(sys.argv[2:], strict=sys.argv[1] == "strict")
emit(dict(_plain(u), names=[u.data_profile_name, u.metadata_profile_name],
          flags=[f.name for f in btrfsx.UsageWarning if f in u.warning_flags]))
'''


@pytest.mark.root
def test_usage_equals_cli_offline_and_mounted(loopdevs, py, btrfsx_json):
    loops = loopdevs(sizes=["512M", "768M", "1G"])
    devs = loops.devs
    fsutil.mkfs(devs, data="single", metadata="raid1")
    with fsutil.mounted(devs) as mnt:
        fsutil.fill_files(mnt, big_files=2, small_files=8)
    py('btrfsx.hint_set(sys.argv[1], "metadata_only"); btrfsx.hint_set(sys.argv[2], "d")',
       devs[0], devs[2])
    for mode in ("", "strict"):
        u = py(USAGE, mode, *devs)
        cli = btrfsx_json("filesystem", "usage", *(["--strict"] if mode else []), *devs)
        assert_usage_equals_cli(u, cli)
        assert u["names"] == ["single", "raid1"] and u["strict"] == bool(mode)
        assert u["global_reserve"] is None and u["free_statfs"] is None
    with fsutil.mounted(devs) as mnt:
        u = py(USAGE, "", mnt)
        cli = btrfsx_json("filesystem", "usage", mnt)
        assert_usage_equals_cli(u, cli)
        assert u["mounted"] is True and u["free_statfs"] is not None
        assert u["global_reserve"] > 0
        assert "HINTS_IGNORED" in u["flags"] and u["hints_honoured"] is False
        # a member device of the mounted filesystem is read through its mount point
        assert py(USAGE, "", devs[1])["path"] == str(mnt)


@pytest.mark.root
def test_usage_ignore_hints(loopdevs, py):
    loops = loopdevs(3)
    fsutil.mkfs(loops.devs, data="single", metadata="raid1")
    py('btrfsx.hint_set(sys.argv[1], "metadata_only")', loops.devs[0])
    doc = py('''
        emit([btrfsx.usage(sys.argv[1:]), btrfsx.usage(sys.argv[1:], ignore_hints=True)])
    ''', *loops.devs)
    honoured, ignored = doc
    assert honoured["hints_honoured"] is True and ignored["hints_honoured"] is False
    assert ignored["free_estimated"] > honoured["free_estimated"]

@pytest.mark.root
def test_plan_equals_cli(loopdevs, py, btrfsx_json):
    """btrfsx.plan(): the plan as data, the figures of ``btrfsx filesystem plan``."""
    loops = loopdevs(sizes=["512M", "768M", "1G"])
    devs = loops.devs
    fsutil.mkfs(devs, data="raid1", metadata="raid1")
    with fsutil.mounted(devs) as mnt:
        fsutil.fill_files(mnt, big_files=2, small_files=8)
    doc = py('''
        p = btrfsx.plan(sys.argv[1:], [("add", "1G:metadata_only"), ("remove", 1),
                                       ("convert", "data=single"), ("relocate",)])
        emit({"possible": p.possible, "steps": [(s.description, s.status.name, s.devid,
                                                 s.moved_bytes, s.change.op.name)
                                                for s in p.steps],
              "before": p.before.free_estimated, "after": p.after.free_estimated,
              "room": p.after.metadata_room, "moved": [(c.logical, c.type, c.used_before,
                                                        c.existed) for c in p.moved],
              "hint": p.steps[0].change.hint.name, "warnings": p.plan_warnings,
              "misplaced": p.misplaced_after is not None and len(p.misplaced_after.chunks),
              "newly": len(p.newly_misplaced)})
    ''', *devs)
    cli = btrfsx_json("filesystem", "plan", *devs, "--add", "1G:metadata_only", "--remove", "1",
                      "--convert", "data=single", "--relocate", check=False)
    assert doc["possible"] is cli["possible"]
    assert [s[0] for s in doc["steps"]] == [c["description"] for c in cli["changes"]]
    assert [s[3] for s in doc["steps"]] == [c["moved_bytes"] for c in cli["changes"]]
    assert [s[4] for s in doc["steps"]] == ["ADD", "REMOVE", "CONVERT", "RELOCATE"]
    assert doc["before"] == cli["before"]["free_estimated"]
    assert doc["after"] == cli["after"]["free_estimated"]
    assert doc["room"] == cli["after"]["metadata_room"]
    assert [m[0] for m in doc["moved"]] == [c["logical"] for c in cli["moved"]]
    assert doc["hint"] == "METADATA_ONLY" and doc["newly"] == doc["misplaced"]
    assert doc["warnings"] == cli.get("warnings", [])


@pytest.mark.root
def test_kernel_traits_and_plans_for_a_kernel(images, py, btrfsx_json):
    """btrfsx.kernel_traits() and the kernel= of usage(), misplaced(), plan()
    (issue 40): the register as `btrfsx inspect kernel-traits` lists it, the
    results say which kernel they followed."""
    imgs = images(["512M", "512M"])
    fsutil.mkfs(imgs, data="raid1", metadata="raid1")
    got = py('''
        t = btrfsx.kernel_traits("6.1")
        u = btrfsx.usage(sys.argv[1:], kernel="6.1")
        m = btrfsx.misplaced(sys.argv[1:], kernel="7.3")
        p = btrfsx.plan(sys.argv[1:], [("add", "1G")], kernel="6.12")
        running = btrfsx.usage(sys.argv[1:])
        emit({"traits": [(x.name, x.first, x.last, x.active) for x in t.traits],
              "kernel": (t.kernel, t.release, t.kernel_running),
              "usage": (u.kernel, u.kernel_running), "misplaced": m.kernel,
              "plan": (p.kernel, p.before.kernel, p.after.kernel),
              "running": running.kernel_running,
              "bad": error(btrfsx.kernel_traits, "6.99"),
              "bad_plan": error(btrfsx.plan, sys.argv[1:], [("add", "1G")], kernel="5.4")})
    ''', *imgs)
    cli = btrfsx_json("inspect", "kernel-traits", "--kernel", "6.1")
    assert got["traits"] == [[t["name"], t["first"] or "", t["last"] or "", t["active"]]
                             for t in cli["traits"]]
    assert got["kernel"] == ["6.1", "6.1", False]
    assert got["usage"] == ["6.1", False] and got["misplaced"] == "7.3"
    assert got["plan"] == ["6.12", "6.12", "6.12"] and got["running"] is True
    for bad in (got["bad"], got["bad_plan"]):
        assert bad["class"] == "InvalidArgumentError"
        assert "not a kernel the model knows" in bad["message"]


def test_plan_bad_input(loopdevs, py):
    loops = loopdevs(2)
    fsutil.mkfs(loops.devs, data="single", metadata="raid1")
    errors = py('''
        emit({"devid": error(btrfsx.plan, sys.argv[1:], [("remove", 7)]),
              "parse": error(btrfsx.plan, sys.argv[1:], [("grow", "1")]),
              "shape": error(btrfsx.plan, sys.argv[1:], ["remove"]),
              "none": error(btrfsx.plan, sys.argv[1:], [])})
    ''', *loops.devs)
    assert errors["devid"]["class"] == "InvalidArgumentError"
    assert "devid 7 is not in the filesystem" in errors["devid"]["message"]
    assert "unknown change 'grow'" in errors["parse"]["message"]
    assert errors["shape"]["class"] == errors["none"]["class"] == "InvalidArgumentError"


# --------------------------------------------------------------------------- read policy

@pytest.fixture(scope="module")
def raid1(tmp_path_factory):
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    fs = Fs(tmp_path_factory.mktemp("py-raid1"), 2, "raid1", "raid1")
    yield fs
    fs.close()


@pytest.mark.root
def test_read_policy_real_kernel(raid1, py, btrfsx_json):
    doc = py('''
        emit(btrfsx.read_policy_get(sys.argv[1]))
        emit(btrfsx.read_policy_set(sys.argv[1], "pid"))
        emit(error(btrfsx.read_policy_set, sys.argv[1], "round-robin"))
    ''', raid1.mnt)
    got, same, refused = doc
    cli = btrfsx_json("read-policy", "get", raid1.mnt)
    assert got["fsid"] == raid1.fsid == cli["fsid"]
    assert got["active"] == cli["policy"] == "pid"
    assert got["interface"] == 1 and got["raw"].strip() == cli["kernel_shows"]
    assert got["mirrored"] == cli["mirrored"]
    assert set(got["mirrored"]) >= {"data/raid1", "metadata/raid1"}
    assert got["recorded"] is None and cli["persistent"] is None
    assert same["changed"] is False and same["policy"]["active"] == "pid"
    if got["raw"].strip() == "[pid]":
        assert refused["class"] == "NotSupportedError"
        assert "offers only the 'pid' read policy" in refused["message"]


@pytest.mark.root
def test_read_policy_fake_set_persist_apply(raid1, py, tmp_path):
    fake = make_fake(tmp_path, raid1.fsid, "experimental")
    docs = py('''
        mnt, root, config = sys.argv[1:4]
        kw = dict(sysfs_root=root, config_dir=config)
        emit(btrfsx.read_policy_get(mnt, **kw))
        emit(btrfsx.read_policy_set(mnt, "round-robin:64K", persist=True, **kw))
        emit(btrfsx.read_policy_get(mnt, **kw))
        open(sys.argv[4], "w").write(sys.argv[5])       # a new mount: the default again
        emit(btrfsx.read_policy_apply(mnt, **kw))
        emit(btrfsx.read_policy_apply(**kw))
        emit(error(btrfsx.read_policy_set, mnt, "latency", **kw))
    ''', raid1.mnt, fake.root, fake.config, fake.dir / "read_policy", EXPERIMENTAL + "\n")
    first, change, got, applied, again, refused = docs
    assert first["offered"] == ["pid", "round-robin", "devid"]
    assert (first["active"], first["raw"], first["recorded"]) == ("pid", EXPERIMENTAL, None)
    assert first["interface"] == 1 and set(first["mirrored"]) >= {"data/raid1", "metadata/raid1"}
    assert change["changed"] is True
    assert change["policy"]["active"] == "round-robin:65536"
    assert change["policy"]["recorded"] == "round-robin:65536"
    assert (got["active"], got["recorded"]) == ("round-robin:65536", "round-robin:65536")
    assert applied["results"] == [{"fsid": raid1.fsid, "path": str(raid1.mnt),
                                   "policy": "round-robin:65536", "status": 0, "error": None}]
    assert fake.read("read_policy") == "round-robin:65536"
    assert [(r["fsid"], r["status"]) for r in again["results"]] == [(raid1.fsid, 1)]
    assert refused["class"] == "NotSupportedError" or refused["class"] == "InvalidArgumentError"
    assert "unknown read policy 'latency'" in refused["message"]


@pytest.mark.root
def test_read_policy_apply_failure_keeps_the_report(raid1, py, tmp_path):
    fake = make_fake(tmp_path, raid1.fsid, "experimental")
    fake.config.mkdir()
    other = "12345678-1234-1234-1234-123456789abc"
    (fake.config / "read-policy.conf").write_text(f"{other} pid\n{raid1.fsid} devid:9\n")
    failed = py('emit(error(btrfsx.read_policy_apply, sysfs_root=sys.argv[1], '
                'config_dir=sys.argv[2]))', fake.root, fake.config)
    assert "device 9 is not part of filesystem" in failed["message"]
    results = failed["result"]["results"]
    assert [(r["fsid"], r["status"], r["path"]) for r in results] == \
        [(other, 4, ""), (raid1.fsid, 2, str(raid1.mnt))]
    assert "device 9 is not part of filesystem" in results[1]["error"]
    assert fake.read("read_policy") == EXPERIMENTAL + "\n"


@pytest.mark.root
def test_read_policy_bad_paths(py, tmp_path):
    doc = py('''
        emit([error(btrfsx.read_policy_get, sys.argv[1]),
              error(btrfsx.read_policy_get, sys.argv[1] + "/nosuch"),
              error(btrfsx.io_stats_sample, sys.argv[1])])
    ''', tmp_path)
    not_btrfs, missing, stats = doc
    assert "not on a mounted btrfs filesystem" in not_btrfs["message"]
    assert missing["class"] == "NotFoundError"
    assert "not on a mounted btrfs filesystem" in stats["message"]


@pytest.mark.root
def test_read_policy_recommend(raid1, py, tmp_path):
    """The probe through Python: the same figures as the command line's keys,
    progress after each replay, --apply on a kernel with the policies (a fake
    tree), NotSupportedError with the recommendation on this kernel, and
    cancelling through the callback and the event."""
    with open(raid1.mnt / "rec.bin", "wb") as f:
        f.write(os.urandom(16 * MiB))
    subprocess.run(["sync"], check=True)
    fake = make_fake(tmp_path, raid1.fsid, "experimental")
    docs = py('''
        mnt, root, config = sys.argv[1:4]
        ticks = []
        quick = dict(seconds=1.2, readers=[1], random=False)
        rec = btrfsx.read_policy_recommend(mnt, progress=ticks.append, **quick)
        emit(rec)
        emit(ticks)
        emit(type(rec.candidates[0]).__name__ + " " + type(rec.workloads[0]).__name__)
        emit(btrfsx.read_policy_recommend(mnt, apply=True, sysfs_root=root, config_dir=config,
                                          **quick))
        try:        # applied when this run picks pid, the one policy this kernel has
            emit({"class": None, "recommended":
                  btrfsx.read_policy_recommend(mnt, apply=True, **quick).recommended})
        except btrfsx.BtrfsxError as e:
            emit({"class": type(e).__name__, "result": e.result})
        emit(error(btrfsx.read_policy_recommend, mnt, progress=lambda t: True, **quick))
        stop = threading.Event()
        stop.set()
        emit(error(btrfsx.read_policy_recommend, mnt, cancel=stop, **quick))
        emit(error(btrfsx.read_policy_recommend, mnt, seconds=0.5))
        emit(error(btrfsx.read_policy_recommend, sys.argv[4]))
        try:
            btrfsx.read_policy_recommend(mnt, sequential=False, random=False)
        except ValueError as e:
            emit(str(e))
    ''', raid1.mnt, fake.root, fake.config, tmp_path)
    rec, ticks, classes, applied, refused, cancelled, preset, short, not_btrfs, neither = docs
    assert rec["fsid"] == raid1.fsid and rec["affects_reads"] is True
    assert [c["policy"] for c in rec["candidates"]] == [
        "pid", "round-robin:65536", "round-robin:262144", "round-robin:1048576", "devid:1",
        "devid:2"]
    assert all(len(c["rates"]) == 1 and c["rates"][0] > 0 for c in rec["candidates"])
    assert rec["workloads"][0]["readers"] == 1 and rec["workloads"][0]["random"] is False
    assert rec["workloads"][0]["fastest"] == rec["recommended"]
    assert [d["devid"] for d in rec["devices"]] == [1, 2]
    # 12 replays a round (6 policies, one workload, two passes), up to three rounds
    assert [t["done"] for t in ticks] == list(range(1, 12 * rec["rounds"] + 1))
    assert ticks[-1]["total"] == 12 * rec["rounds"]
    assert classes == "RecommendCandidate RecommendWorkload"
    assert applied["applied"] is True and applied["persistent"] == applied["recommended"]
    assert applied["offered"] is True and applied["not_offered"] is None
    if refused["class"] is None:
        assert refused["recommended"] == "pid"
    else:
        assert refused["class"] == "NotSupportedError"
        assert refused["result"]["recommended"] != "pid"
        assert refused["result"]["applied"] is False
    for stopped in (cancelled, preset):
        assert stopped["class"] == "CancelledError" and stopped["result"] is None
        assert "nothing recommended, nothing applied" in stopped["message"]
    assert short["class"] == "InvalidArgumentError" and "give at least" in short["message"]
    assert not_btrfs["class"] == "NotBtrfsError" or "not on a mounted btrfs" in not_btrfs["message"]
    assert neither == "sequential, random or both"


# --------------------------------------------------------------------------- io stats

STAT = "{reads} 0 {sectors} 10 0 0 0 0 0 20 30 0 0 0 0 0 0\n"


def dev_numbers(dev: str) -> str:
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


@pytest.mark.root
def test_io_stats_sample(raid1, py, tmp_path):
    big = raid1.mnt / "big.bin"
    with open(big, "wb") as f:
        f.write(os.urandom(16 * MiB))
    subprocess.run(["sync"], check=True)
    stats = [f"/sys/dev/block/{dev_numbers(dev)}/stat" for dev in raid1.devs]
    docs = py('''
        import subprocess

        def kernel():
            return [[int(x) for x in open(p).read().split()[:3:2]] for p in sys.argv[3:]]

        emit(btrfsx.io_stats_sample(sys.argv[1]))
        emit(kernel())
        subprocess.run(["dd", "if=" + sys.argv[2], "of=/dev/null", "bs=1M", "iflag=direct",
                        "status=none"], check=True)
        emit(btrfsx.io_stats_sample(sys.argv[1]))
        emit(kernel())
    ''', raid1.mnt, big, *stats)
    before, kernel_before, after, kernel_after = docs
    assert [(d["devid"], d["path"], d["present"]) for d in after["devices"]] == \
        [(1, raid1.devs[0], True), (2, raid1.devs[1], True)]
    # The oracle is the kernel's block stat read right after each sample (the
    # filesystem is idle): how many bytes a 16 MiB O_DIRECT read counts is the
    # kernel's business (6.18 counted 15 MiB), equal to what btrfsx reports.
    for doc, kernel in ((before, kernel_before), (after, kernel_after)):
        assert [(d["reads"], d["read_bytes"]) for d in doc["devices"]] == \
            [(reads, sectors * 512) for reads, sectors in kernel]
    grown = sum(a["read_bytes"] - b["read_bytes"]
                for a, b in zip(after["devices"], before["devices"]))
    assert grown > 0
    assert all(a["reads"] >= b["reads"] for a, b in zip(after["devices"], before["devices"]))
    # exact figures from a fake tree; the second device has no statistics
    root = tmp_path / "sys"
    stat = root / "dev" / "block" / dev_numbers(raid1.devs[0]) / "stat"
    stat.parent.mkdir(parents=True)
    stat.write_text(STAT.format(reads=1234, sectors=5678))
    fake = py('emit(btrfsx.io_stats_sample(sys.argv[1], sysfs_root=sys.argv[2]))',
              raid1.mnt, root)
    d1, d2 = fake["devices"]
    assert (d1["reads"], d1["read_bytes"], d1["present"]) == (1234, 5678 * 512, True)
    assert (d2["reads"], d2["read_bytes"], d2["present"]) == (0, 0, False)
    assert any(f"device 2 ({raid1.devs[1]}) has no block device statistics" in w
               for w in fake["warnings"])


# --------------------------------------------------------------------------- offline scrub

SCRUB = '''
ticks = []
def progress(p):
    ticks.append([p.bytes_done, p.bytes_total])
mode, _, memory = sys.argv[1].partition(":")
flags = mode.split("+")
result = btrfsx.scrub_offline(sys.argv[2:], readonly="ro" in flags, progress=progress,
                              progress_interval=0.01, memory=int(memory or 0),
                              metadata_only="meta" in flags)
emit({"result": result, "ticks": ticks})
'''


def cli_scrub(run_btrfsx, devs, *opts, tmp_path):
    rc, out, err = run_btrfsx("scrub", "start", "--offline", "-B", *opts, *devs, fmt="json",
                              check=False, env={"BTRFSX_STATE_DIR": tmp_path / "state"})
    return rc, json.loads(out)["scrub"]


COUNTERS = ["data_extents_scrubbed", "tree_extents_scrubbed", "data_bytes_scrubbed",
            "tree_bytes_scrubbed", "read_errors", "csum_errors", "verify_errors", "no_csum",
            "csum_discards", "super_errors", "malloc_errors", "uncorrectable_errors",
            "unverified_errors", "corrected_errors", "last_physical", "parity_errors",
            "super_corrected"]


def assert_scrub_equals_cli(result, cli):
    assert result["fsid"] == cli["fsid"]
    assert result["bytes_to_scrub"] == cli["bytes_to_scrub"]
    assert result["degraded"] == cli["degraded"]
    assert result["uncorrectable"] == cli["has_uncorrectable"]
    assert {k: result["total"][k] for k in COUNTERS} == {k: cli["total"][k] for k in COUNTERS}
    assert [(d["devid"], d["path"], d["missing"], d["bytes_to_scrub"], d["counters"])
            for d in result["devices"]] == \
        [(d["devid"], d["device"], d["missing"], d["bytes_to_scrub"],
          {k: d[k] for k in COUNTERS}) for d in cli["devices"]]
    assert [(e["what"], e["fault"], e["fix"], e["logical"], e["len"], e["devid"], e["physical"])
            for e in result["errors"]] == \
        [(e["what"], e["fault"], e["fix"], e["logical"], e["len"], e["devid"], e["physical"])
         for e in cli["errors"]]


@pytest.mark.root
def test_scrub_clean_equals_cli(fs_cache, py, run_btrfsx, tmp_path):
    fs = fs_cache.get(data="raid1", metadata="raid1", ndevs=2)
    doc = py(SCRUB, "ro", *fs.devs)
    result, ticks = doc["result"], doc["ticks"]
    rc, cli = cli_scrub(run_btrfsx, fs.devs, "-r", tmp_path=tmp_path)
    assert rc == 0
    assert_scrub_equals_cli(result, cli)
    assert result["readonly"] is True and result["cancelled"] is False
    assert result["errors"] == [] and result["files"] == [] and not result["uncorrectable"]
    assert result["total"]["data_bytes_scrubbed"] > 10 * MiB
    assert ticks and ticks[-1] == [result["bytes_to_scrub"]] * 2
    assert [t[0] for t in ticks] == sorted(t[0] for t in ticks)
    assert result["warnings"] == []


@pytest.mark.root
def test_scrub_metadata_only_equals_cli(fs_cache, py, run_btrfsx, tmp_path):
    fs = fs_cache.get(data="raid1", metadata="raid1", ndevs=2)
    result = py(SCRUB, "ro+meta", *fs.devs)["result"]
    rc, cli = cli_scrub(run_btrfsx, fs.devs, "-r", "--metadata-only", tmp_path=tmp_path)
    assert rc == 0
    assert_scrub_equals_cli(result, cli)
    assert result["metadata_only"] is True and cli["metadata_only"] is True
    assert result["total"]["data_bytes_scrubbed"] == 0
    assert result["total"]["tree_bytes_scrubbed"] > 0


@pytest.mark.root
def test_scrub_finds_and_repairs_corruption(tmp_path, py, run_btrfsx, btrfsx_json):
    images, _ = fresh_fs(tmp_path, "dup", "dup", 1)
    lay = Layout(images, btrfsx_json)
    data = lay.copies(lay.extent_of("big2.bin")[0] + 4096)[1]
    corrupt(data[1], data[2])
    found = py(SCRUB, "ro", *images)["result"]
    rc, cli = cli_scrub(run_btrfsx, images, "-r", tmp_path=tmp_path)
    assert_scrub_equals_cli(found, cli)
    assert found["total"]["csum_errors"] == 1 and not found["uncorrectable"]
    [err] = found["errors"]
    assert (err["what"], err["fault"], err["fix"], err["physical"], err["mirror"]) == \
        ("data", "csum", "correctable", data[2], 2)
    # the smallest read budget repairs the same
    repaired = py(SCRUB, "rw:1048576", *images)["result"]
    assert repaired["readonly"] is False
    assert repaired["total"]["corrected_errors"] == 1
    again = py(SCRUB, "ro", *images)["result"]
    assert again["errors"] == [] and again["total"]["csum_errors"] == 0


@pytest.mark.root
def test_scrub_uncorrectable_names_the_file(tmp_path, py, run_btrfsx, btrfsx_json):
    images, _ = fresh_fs(tmp_path, "single", "dup", 1)
    lay = Layout(images, btrfsx_json)
    [(devid, image, physical)] = lay.copies(lay.extent_of("big1.bin")[0])
    corrupt(image, physical + 100)
    result = py(SCRUB, "ro", *images)["result"]
    rc, cli = cli_scrub(run_btrfsx, images, "-r", tmp_path=tmp_path)
    assert rc == 3
    assert_scrub_equals_cli(result, cli)
    assert result["uncorrectable"] is True
    assert [f["path"] for f in result["files"]] == [f["path"] for f in cli["files"]]
    assert result["files"][0]["path"].endswith("big/big1.bin")
    assert result["files"][0]["inode"] == lay.inode["big1.bin"]


CANCEL = '''
paths = sys.argv[2:]
# The least read buffers: small reads, so a scrub of this small filesystem
# still runs past its first progress ticks.
SLOW = 1 << 20
how = sys.argv[1]
seen = []
if how == "event-before":
    ev = threading.Event(); ev.set()
    emit(error(btrfsx.scrub_offline, paths, readonly=True, cancel=ev))
elif how == "progress":
    def stop_mid_way(p):
        seen.append(p.bytes_done < p.bytes_total)
        return p.bytes_done < p.bytes_total
    try:
        r = btrfsx.scrub_offline(paths, readonly=True, progress=stop_mid_way,
                                 progress_interval=0.001, memory=SLOW)
        emit({"finished_first": True, "seen": seen})
    except btrfsx.CancelledError as e:
        emit({"cancelled": e.result, "seen": seen})
elif how == "event-from-thread":
    ev = threading.Event()
    def progress(p):
        if p.bytes_done < p.bytes_total and not ev.is_set():
            t = threading.Thread(target=ev.set); t.start(); t.join()
    try:
        btrfsx.scrub_offline(paths, readonly=True, progress=progress, cancel=ev,
                             progress_interval=0.001, memory=SLOW)
        emit({"finished_first": True})
    except btrfsx.CancelledError as e:
        emit({"cancelled": e.result})
elif how == "sigint":
    import signal
    def interrupt(p):
        if p.bytes_done < p.bytes_total:
            os.kill(os.getpid(), signal.SIGINT)
    try:
        btrfsx.scrub_offline(paths, readonly=True, progress=interrupt, progress_interval=0.001,
                             memory=SLOW)
        emit({"finished_first": True})
    except KeyboardInterrupt:
        emit({"interrupted": True})
elif how == "raise":
    try:
        btrfsx.scrub_offline(paths, readonly=True, progress=lambda p: 1 / 0)
    except ZeroDivisionError:
        emit("ZeroDivisionError")
'''


@pytest.mark.root
def test_a_python_scrub_shows_in_scrub_status_and_the_monitor(loopdevs, py, btrfsx_json,
                                                               tmp_path):
    """The library records a run where the command does (state_dir): `scrub
    status` shows it, and `monitor record` stores its result."""
    loops = loopdevs(1, size="256M")
    fsutil.mkfs(loops.devs, data="single", metadata="dup")
    state = tmp_path / "state"
    result = py('emit(btrfsx.scrub_offline(sys.argv[2:], readonly=True, state_dir=sys.argv[1]))',
                state, *loops.devs)
    env = {"BTRFSX_STATE_DIR": str(state)}
    status = btrfsx_json("scrub", "status", "--offline", loops.devs[0], env=env)["scrub"]
    assert (status["status"], status["mode"], status["fsid"]) == \
        ("finished", "read-only", result["fsid"])
    assert status["total"] == result["total"] and status["started"] == result["started"]
    with fsutil.mounted(loops.devs) as mnt:
        btrfsx_json("monitor", "record", "--db", str(tmp_path / "monitor.db"), str(mnt), env=env)
    with contextlib.closing(sqlite3.connect(tmp_path / "monitor.db")) as db:
        row = db.execute("SELECT scrub_status, scrub_started, scrub_bytes FROM samples").fetchone()
    scrubbed = result["total"]["data_bytes_scrubbed"] + result["total"]["tree_bytes_scrubbed"]
    assert row == ("finished", result["started"], scrubbed)


@pytest.mark.root
def test_scrub_cancel(fs_cache, py):
    fs = fs_cache.get(data="raid1", metadata="raid1", ndevs=2)
    before = py(CANCEL, "event-before", *fs.devs)
    assert before["class"] == "CancelledError" and before["code"] == "CANCELLED"
    assert before["result"]["cancelled"] is True
    assert before["result"]["total"]["data_bytes_scrubbed"] == 0
    assert py(CANCEL, "raise", *fs.devs) == "ZeroDivisionError"
    for how in ("progress", "event-from-thread", "sigint"):
        doc = py(CANCEL, how, *fs.devs)
        if "finished_first" in doc:
            pytest.skip("the scrub finished before its first progress tick")
        if how == "sigint":
            assert doc == {"interrupted": True}
            continue
        assert doc["cancelled"]["cancelled"] is True
        assert doc["cancelled"]["total"]["data_bytes_scrubbed"] < \
            doc["cancelled"]["bytes_to_scrub"]


@pytest.mark.root
def test_scrub_refusals(loopdevs, py, tmp_path):
    loops = loopdevs(1)
    fsutil.mkfs(loops.devs)
    zero = tmp_path / "zero.img"
    zero.write_bytes(bytes(1 << 20))
    with fsutil.mounted(loops.devs) as mnt:
        mounted = py('emit(error(btrfsx.scrub_offline, sys.argv[1], readonly=True))',
                     loops.devs[0])
    assert mounted["class"] == "MountedError"
    assert f"filesystem is mounted at {mnt}" in mounted["message"]
    doc = py('''
        emit([error(btrfsx.scrub_offline, sys.argv[1]),
              error(btrfsx.scrub_offline, sys.argv[2]),
              error(btrfsx.scrub_offline, []),
              error(btrfsx.scrub_offline, sys.argv[1], progress_interval=0),
              error(btrfsx.usage, sys.argv[1]),
              error(btrfsx.usage, []),
              error(btrfsx.hint_get, sys.argv[1]),
              error(btrfsx.hint_set, sys.argv[2], "m"),
              error(btrfsx.fs_info_offline, sys.argv[1])])
        for bad in ([1], "a\\0b", None):
            try:
                btrfsx.usage(bad)
            except (TypeError, ValueError) as e:
                emit(type(e).__name__)
    ''', zero, tmp_path / "nosuch")
    errors, *type_errors = doc
    assert [e["class"] for e in errors] == \
        ["NotBtrfsError", "NotFoundError", "InvalidArgumentError", "InvalidArgumentError",
         "NotBtrfsError", "InvalidArgumentError", "NotBtrfsError", "NotFoundError",
         "NotBtrfsError"]
    assert "not a btrfs filesystem" in errors[0]["message"]
    assert "No such file" in errors[1]["message"]
    assert type_errors == ["TypeError", "ValueError", "TypeError"]
    assert zero.read_bytes() == bytes(1 << 20)


BLKIO = Path("/sys/fs/cgroup/blkio")


@pytest.fixture
def throttled_device(loopdevs, tmp_path):
    """A btrfs loop device and a blkio cgroup that lets its members read
    1 byte/s from it: a process that joins the cgroup blocks on its first read
    until the limit is lifted. Lifted and removed at teardown."""
    if not (BLKIO / "blkio.throttle.read_bps_device").exists():
        pytest.skip("needs the cgroup v1 blkio throttle")
    loops = loopdevs(1)
    fsutil.mkfs(loops.devs)
    subprocess.run(["blockdev", "--flushbufs", loops.devs[0]], check=True)
    st = os.stat(loops.devs[0])
    rule = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    group = BLKIO / f"btrfsx-gil-{os.getpid()}-{tmp_path.name}"
    group.mkdir()
    limit = group / "blkio.throttle.read_bps_device"
    try:
        limit.write_text(f"{rule} 1")
        yield loops.devs[0], group, rule
    finally:
        limit.write_text(f"{rule} 0")
        # A read a call gave up on ends once the limit is lifted; until then
        # the kernel's worker that issued it keeps the group busy.
        for _ in range(100):
            for pid in (group / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    (BLKIO / "cgroup.procs").write_text(pid)
            try:
                group.rmdir()
                break
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise
                time.sleep(0.1)
        else:
            group.rmdir()


@pytest.mark.root
def test_scrub_io_timeout(py, throttled_device):
    """A device whose reads do not come back (the throttle) stalls: the call
    gives up after its own io_timeout with an I/O error naming the device."""
    dev, group, _ = throttled_device
    doc = py('''
        from pathlib import Path
        (Path(sys.argv[2]) / "cgroup.procs").write_text(str(os.getpid()))
        emit(error(btrfsx.scrub_offline, sys.argv[1], readonly=True, io_timeout=1))
    ''', dev, group, timeout=60)
    assert doc["class"] == "BtrfsxIOError" and doc["code"] == "IO"
    assert f"{dev}: superblock copy 0: the read did not complete within 1 s" in doc["message"]
    bad = py('emit(error(btrfsx.scrub_offline, sys.argv[1], io_timeout=-1))', dev)
    assert bad["class"] == "InvalidArgumentError" and "io_timeout" in bad["message"]


@pytest.mark.root
@pytest.mark.parametrize("call", ["fs_info_offline", "usage", "scrub_offline"])
def test_long_calls_release_the_gil(py, throttled_device, call):
    """The call's first read of the device blocks on the throttle; a Python
    thread lifts it a moment later. The thread can only run, and the call only
    return, if the call released the GIL while it waited for the disk;
    otherwise the snippet hangs until the timeout fails the test."""
    dev, group, rule = throttled_device
    doc = py(f'''
        import time
        from pathlib import Path
        group = Path(sys.argv[2])
        (group / "cgroup.procs").write_text(str(os.getpid()))
        def lift():
            time.sleep(1)
            (group / "blkio.throttle.read_bps_device").write_text(sys.argv[3] + " 0")
        t = threading.Thread(target=lift)
        t.start()
        began = time.monotonic()
        btrfsx.{call}([sys.argv[1]])
        t.join()
        emit(time.monotonic() - began)
    ''', dev, group, rule, timeout=60)
    assert doc >= 0.9


# --------------------------------------------------------------------------- pip

def pip_python(python) -> str | None:
    """An interpreter that builds without network (setuptools and wheel at
    hand): the build's, or Debian's with python3-wheel."""
    for candidate in (python, "/usr/bin/python3"):
        if subprocess.run([candidate, "-c", "import setuptools, wheel"],
                          capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.mark.root
def test_pip_install_from_the_build_tree(py_env, python, tmp_path):
    """pip builds the package against an uninstalled build (BTRFSX_BUILD_DIR);
    from a copy of the sources (the module's folder and the headers of the
    field lists its tables come from), since pip leaves its build files
    beside them."""
    interpreter = pip_python(python)
    if interpreter is None:
        pytest.skip("no python with setuptools and wheel (apt-get install python3-wheel)")
    target = tmp_path / "site"
    src = tmp_path / "src" / "libbtrfsx"
    for folder in fsutil.REPO.iterdir():
        if folder.is_dir() and not folder.name.startswith(("build", ".")) and \
                any(folder.glob("*.h")):
            shutil.copytree(folder, src.parent / folder.name)
    p = subprocess.run([interpreter, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                        "--no-index", "--target", str(target), str(src / "python")],
                       env=dict(os.environ, BTRFSX_BUILD_DIR=str(build_dir())),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    p = run_py(dict(py_env, PYTHONPATH=str(target)), interpreter,
               'emit([btrfsx.__file__, btrfsx._btrfsx.__file__, btrfsx.hint_name(2)])')
    package, extension, name = json.loads(p.stdout)
    assert package.startswith(str(target)) and extension.startswith(str(target))
    assert name == "metadata_only"


# --------------------------------------------------------------------------- examples

@pytest.mark.parametrize("name", ["metadata-room-alert", "set-hints-by-rotational"])
def test_example_help(py_env, python, name):
    p = run_example(py_env, python, name, "--help", check=0)
    assert p.stdout.startswith(f"usage: {name}")
    assert "--sysfs-root" in p.stdout
    p = run_example(py_env, python, name, check=2)
    assert "required" in p.stderr
    assert os.access(EXAMPLES / name, os.X_OK)


@pytest.mark.root
def test_metadata_room_alert(loopdevs, py_env, python, py, tmp_path):
    loops = loopdevs(2)
    fsutil.mkfs(loops.devs, data="single", metadata="raid1")
    u = py('emit(btrfsx.usage(sys.argv[1:]))', *loops.devs)
    p = run_example(py_env, python, "metadata-room-alert", *loops.devs, check=0)
    assert p.stdout.startswith(f"OK {loops.devs[0]}: metadata room ")
    assert len(p.stdout.splitlines()) == 1
    room = u["metadata_room"]
    p = run_example(py_env, python, "metadata-room-alert", "--threshold", room + 1, *loops.devs,
                    check=1)
    assert p.stdout.startswith("ALERT ") and len(p.stdout.splitlines()) == 1
    run_example(py_env, python, "metadata-room-alert", "--threshold", room, *loops.devs, check=0)
    # as a percentage of the metadata in use: it is tiny on a new filesystem
    run_example(py_env, python, "metadata-room-alert", "--threshold", "1000%", *loops.devs,
                check=0)
    p = run_example(py_env, python, "metadata-room-alert", "--after-data", "--threshold", "1T",
                    *loops.devs, check=1)
    assert "metadata room after data" in p.stdout
    with fsutil.mounted(loops.devs) as mnt:
        p = run_example(py_env, python, "metadata-room-alert", mnt, check=0)
        assert p.stdout.startswith(f"OK {mnt}: ")
    zero = tmp_path / "zero.img"
    zero.write_bytes(bytes(1 << 20))
    p = run_example(py_env, python, "metadata-room-alert", zero, check=2)
    assert p.stdout.startswith("ERROR ") and "not a btrfs filesystem" in p.stdout
    p = run_example(py_env, python, "metadata-room-alert", "--threshold", "lots", zero, check=2)
    assert "'lots' is not a size or a percentage" in p.stderr


def fake_rotational(root: Path, devs, flags):
    for dev, flag in zip(devs, flags):
        queue = root / "block" / Path(dev).name / "queue"
        queue.mkdir(parents=True)
        (queue / "rotational").write_text(f"{flag}\n")


@pytest.mark.root
def test_set_hints_by_rotational(loopdevs, py_env, python, tmp_path, btrfsx_json):
    loops = loopdevs(3)
    devs = loops.devs
    fsutil.mkfs(devs, data="single", metadata="raid1")
    root = tmp_path / "sys"
    fake_rotational(root, devs, [0, 0, 1])
    args = ["--sysfs-root", root, devs[0]]
    p = run_example(py_env, python, "set-hints-by-rotational", *args, check=0)
    assert p.stdout.splitlines() == [
        f"devid 1 {devs[0]}: non-rotational, data_preferred -> metadata_only",
        f"devid 2 {devs[1]}: non-rotational, data_preferred -> metadata_only",
        f"devid 3 {devs[2]}: rotational, data_preferred -> data_only",
        "dry run: 3 change(s); use --apply to set them"]
    assert [progs_dev_type(devs, i) for i in (1, 2, 3)] == [0, 0, 0]
    p = run_example(py_env, python, "set-hints-by-rotational", "--apply", *args, check=0)
    assert p.stdout.splitlines()[-3:] == [f"devid 1 {devs[0]}: set metadata_only",
                                          f"devid 2 {devs[1]}: set metadata_only",
                                          f"devid 3 {devs[2]}: set data_only"]
    assert [progs_dev_type(devs, i) for i in (1, 2, 3)] == [2, 2, 3]
    assert [btrfsx_json("property", "get", d, "allocation_hint")["allocation_hint"]
            for d in devs] == ["metadata_only", "metadata_only", "data_only"]
    p = run_example(py_env, python, "set-hints-by-rotational", *args, check=0)
    assert p.stdout.splitlines()[0] == f"devid 1 {devs[0]}: non-rotational, already metadata_only"
    assert "dry run" not in p.stdout


@pytest.mark.root
def test_set_hints_by_rotational_refusals(loopdevs, py_env, python, tmp_path):
    loops = loopdevs(2)
    devs = loops.devs
    fsutil.mkfs(devs, data="single", metadata="raid1")
    root = tmp_path / "sys"
    fake_rotational(root, devs, [1, 1])
    p = run_example(py_env, python, "set-hints-by-rotational", "--apply", "--sysfs-root", root,
                    *devs, check=1)
    assert "not a mix of rotational and non-rotational devices" in p.stderr
    # a mix the guard rails refuse: raid1 metadata would have one device
    (root / "block" / Path(devs[0]).name / "queue" / "rotational").write_text("0\n")
    p = run_example(py_env, python, "set-hints-by-rotational", "--apply", "--sysfs-root", root,
                    *devs, check=1)
    assert "1 device would allow metadata, but raid1" in p.stderr
    assert progs_dev_type(devs, 1) == 2 and progs_dev_type(devs, 2) == 0
    # without a flag to read a device is left alone
    (root / "block" / Path(devs[1]).name / "queue" / "rotational").unlink()
    p = run_example(py_env, python, "set-hints-by-rotational", "--sysfs-root", root, *devs,
                    check=1)
    assert f"devid 2 {devs[1]}: rotational flag unknown, left at data_preferred" in p.stdout
    zero = tmp_path / "zero.img"
    zero.write_bytes(bytes(1 << 20))
    p = run_example(py_env, python, "set-hints-by-rotational", zero, check=1)
    assert "not a btrfs filesystem" in p.stderr


# --------------------------------------------------------------------------- misplaced chunks

MISPLACED = '''
how, mnt = sys.argv[1], sys.argv[2]
state = os.environ["BTRFSX_STATE_DIR"]
if how == "report":
    emit(btrfsx.misplaced(mnt, state_dir=state))
elif how == "refused":
    emit(error(btrfsx.relocate_misplaced, mnt, state_dir=state))
elif how == "dry":
    emit(btrfsx.relocate_misplaced(mnt, dry_run=True, state_dir=state))
elif how == "cancel":
    def stop_while_moving(p):
        return p.current != 0
    emit(error(btrfsx.relocate_misplaced, mnt, force=True, state_dir=state,
               progress=stop_while_moving, progress_interval=0.01))
elif how == "relocate":
    ticks = []
    r = btrfsx.relocate_misplaced(mnt, force=True, state_dir=state, progress=ticks.append,
                                  progress_interval=0.01)
    emit({"result": r, "ticks": ticks, "status": r.status.name,
          "classes": [m.cls.name for m in r.relocated]})
'''


@pytest.mark.root
def test_misplaced_and_relocation(misplaced_fs, py, btrfsx_json, tmp_path):
    devs, mnt, sums = misplaced_fs
    state = {"BTRFSX_STATE_DIR": str(tmp_path / "state")}
    report = py(MISPLACED, "report", mnt, env=state)
    cli = btrfsx_json("filesystem", "misplaced", mnt, check=4, env=state)["misplaced"]
    assert report["hints_effective"] is False and report["copy_rate"] is None
    assert any("ignores allocation hints" in w for w in report["warnings"])
    assert [(c["logical"], c["used"], c["devids"], c["offending"], c["model_devids"])
            for c in report["chunks"]] == \
        [(c["logical"], c["used"], c["devids"], c["offending"], c["model"]["devids"])
         for c in cli["chunks"]]
    assert report["forbidden"] == {**cli["forbidden"], "estimate_seconds": None}

    refused = py(MISPLACED, "refused", mnt, env=state)
    assert refused["class"] == "NotSupportedError" and "--force" in refused["message"]
    # a dry run is not refused: it says what a real run would be refused for
    dry = py(MISPLACED, "dry", mnt, env=state)
    assert dry["status"] == 2 and dry["relocated"] == []    # RelocateStatus.DRY_RUN
    assert "ignores allocation hints" in dry["refused"]
    assert dry["remaining_chunks"] == len(cli["chunks"])

    cancelled = py(MISPLACED, "cancel", mnt, env=state)
    assert cancelled["class"] == "CancelledError"
    assert cancelled["result"]["status"] == 3       # RelocateStatus.CANCELLED
    assert cancelled["result"]["relocated"] == []

    doc = py(MISPLACED, "relocate", mnt, env=state)
    result = doc["result"]
    assert doc["status"] == "DONE" and result["forced"] is True
    assert {m["logical"] for m in result["relocated"]} == {c["logical"] for c in cli["chunks"]}
    assert all(m["as_modelled"] for m in result["relocated"])
    assert set(doc["classes"]) == {"FORBIDDEN", "OFF_PREFERENCE"}
    ticks = doc["ticks"]
    assert ticks and ticks[-1]["chunks_done"] == len(result["relocated"])
    assert [t["bytes_done"] for t in ticks] == sorted(t["bytes_done"] for t in ticks)
    assert {p: fsutil.sha256_file(mnt / p) for p in sums} == sums
