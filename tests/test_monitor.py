# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx monitor: record, report (and --check), metrics, on real loop-device
filesystems, with weeks of history simulated through BTRFSX_MONITOR_NOW.

- The projection is checked against the truth: metadata is written at a
  known pace with noise (files with a 15000-byte xattr, ~16 KiB of metadata
  each), with a deletion and a data balance in the history, and then the
  same writing goes on until the kernel says ENOSPC.
- The exposition passes prometheus_client's own parser (python3-prometheus-
  client, Debian's python) and its names follow the conventions; a reader
  never sees the textfile half-written.
- Failures leave the history whole: two records at once, a lock held, a
  damaged or foreign database, every amount of free space on a full disk,
  a read-only state directory.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import shlex
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers import fsutil

MiB = 1024 * 1024
DAY = 86400
T0 = 1_767_225_600          # 2026-01-01: the simulated history starts here
PAD = b"x" * 15000          # one xattr value: about one 16 KiB leaf of metadata
DEBIAN_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.root


# --------------------------------------------------------------------------- helpers

@pytest.fixture
def state(tmp_path):
    """BTRFSX_STATE_DIR for one test: the history is <state>/monitor.db."""
    d = tmp_path / "state"
    d.mkdir()
    return d


def env_at(state: Path, day: float | None = None) -> dict:
    env = {"BTRFSX_STATE_DIR": str(state)}
    if day is not None:
        env["BTRFSX_MONITOR_NOW"] = str(int(T0 + day * DAY))
    return env


def record(run_btrfsx, state, mnt, day, check=True):
    fsutil.run(["btrfs", "filesystem", "sync", str(mnt)])
    return run_btrfsx("monitor", "record", str(mnt), env=env_at(state, day), check=check)


def report(btrfsx_json, state, day, *args, check=True):
    return btrfsx_json("monitor", "report", *args, env=env_at(state, day), check=check)


def db_rows(state: Path, sql: str):
    with contextlib.closing(sqlite3.connect(state / "monitor.db")) as con:
        return con.execute(sql).fetchall()


def history_is_whole(state: Path) -> int:
    """The history passes SQLite's integrity check and holds no detail row
    without its sample (no half-stored sample); returns the samples."""
    with contextlib.closing(sqlite3.connect(state / "monitor.db")) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        for table in ("sample_devices", "sample_spaces"):
            orphans = con.execute(f"SELECT count(*) FROM {table} WHERE sample NOT IN "
                                  "(SELECT id FROM samples)").fetchone()[0]
            assert orphans == 0, table
        bare = con.execute("SELECT count(*) FROM samples WHERE id NOT IN "
                           "(SELECT sample FROM sample_devices)").fetchone()[0]
        assert bare == 0, "a sample without its devices"
        return con.execute("SELECT count(*) FROM samples").fetchone()[0]


def prometheus_parse_all(texts: list[str]) -> list[list[dict]]:
    """prometheus_client's text parser (Debian's python3-prometheus-client),
    in Debian's interpreter: for each exposition its families with their
    samples."""
    if not Path(DEBIAN_PYTHON).exists():
        pytest.skip("no /usr/bin/python3")
    code = (
        "import json, sys\n"
        "from prometheus_client.parser import text_string_to_metric_families\n"
        "def parse(text):\n"
        "    return [{'name': f.name, 'type': f.type, 'help': f.documentation,\n"
        "             'samples': [{'name': s.name, 'labels': s.labels, 'value': s.value}\n"
        "                         for s in f.samples]}\n"
        "            for f in text_string_to_metric_families(text)]\n"
        "print(json.dumps([parse(t) for t in json.load(sys.stdin)]))\n")
    p = subprocess.run([DEBIAN_PYTHON, "-c", code], input=json.dumps(texts),
                       capture_output=True, text=True)
    if "No module named 'prometheus_client'" in p.stderr:
        pytest.skip("python3-prometheus-client is not installed (scripts/install-deps.sh)")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def prometheus_parse(text: str) -> list[dict]:
    return prometheus_parse_all([text])[0]


@pytest.fixture
def fs(loopdevs, mkfs, mounted):
    """A 512 MiB single-device filesystem, labelled, mounted."""
    dev = loopdevs(1, size="512M")[0]
    mkfs(dev, data="single", metadata="single", label="tank")
    with mounted(dev) as mnt:
        yield mnt


def write_file(directory: Path, n: int) -> None:
    """A new file with a PAD xattr; OSError (ENOSPC) when the kernel refuses."""
    p = directory / f"{n:07d}"
    p.touch()
    os.setxattr(p, "user.pad", PAD)


def write_day(directory: Path, first: int, count: int) -> int:
    for n in range(first, first + count):
        write_file(directory, n)
    return first + count


# --------------------------------------------------------------------------- the projection

def test_projection_meets_enospc_within_10_percent(fs, state, run_btrfsx, btrfsx_json):
    """Daily samples while 300 files (+-30 %) a day each add 16 KiB of
    metadata; a deletion on day 6 and a balance freeing data chunks on day
    11. On day 20 the report projects the metadata days left; writing goes on
    the same way until the kernel refuses a write with ENOSPC: the projection
    is within 10 % of the day that happens."""
    rng = random.Random(18)
    with open(fs / "big", "wb") as f:
        for _ in range(300):
            f.write(os.urandom(MiB))
        # on disk before the metadata writes: 300 MiB of delayed allocation on a
        # 512 MiB filesystem made a mkdir fail with ENOSPC on a loaded machine
        os.fsync(f.fileno())
    small = fs / "small"
    small.mkdir()
    n = 0
    record(run_btrfsx, state, fs, 0)
    for day in range(1, 21):
        n = write_day(small, n, int(300 * rng.uniform(0.7, 1.3)))
        if day == 6:                                  # a deletion: 4 days of files
            for i in range(n - 1200, n):
                (small / f"{i:07d}").unlink()
        if day == 11:                                 # a balance frees data chunks
            before = btrfsx_json("filesystem", "usage", str(fs))["metadata_room"]
            os.truncate(fs / "big", 200 * MiB)
            fsutil.run(["btrfs", "filesystem", "sync", str(fs)])
            fsutil.run(["btrfs", "balance", "start", "-dusage=100", str(fs)])
            # the kernel's cleaner drops them; a loaded machine took over 10 s once
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                fsutil.run(["btrfs", "filesystem", "sync", str(fs)])
                if btrfsx_json("filesystem", "usage", str(fs))["metadata_room"] > before + 50 * MiB:
                    break
                time.sleep(0.1)
        record(run_btrfsx, state, fs, day)
    room = dict(db_rows(state, f"SELECT (time - {T0}) / {DAY}, metadata_room FROM samples"))
    used = dict(db_rows(state, f"SELECT (time - {T0}) / {DAY}, metadata_used FROM samples"))
    assert used[6] < used[5], "the deletion freed metadata"
    assert room[11] > room[10] + 50 * MiB, "the balance freed room for metadata"
    doc = report(btrfsx_json, state, 20)
    proj = doc["filesystems"][0]
    assert proj["status"] != "UNKNOWN" and proj["samples"] == 21
    assert proj["metadata_one_off_changes"] >= 1
    predicted = proj["metadata_days_left"]
    assert proj["metadata_days_left_low"] <= predicted <= proj["metadata_days_left_high"]
    day = 20
    with pytest.raises(OSError) as enospc:
        while day < 200:
            day += 1
            count = int(300 * rng.uniform(0.7, 1.3))
            for written in range(count):
                write_file(small, n)
                n += 1
    assert enospc.value.errno == 28
    truth = day - 1 + written / count - 20
    print(f"projected {predicted:.2f} days (95%: {proj['metadata_days_left_low']:.2f} to "
          f"{proj['metadata_days_left_high']:.2f}), ENOSPC after {truth:.2f}")
    assert abs(predicted - truth) <= 0.10 * truth, (predicted, truth)


def test_too_little_history_says_so(fs, state, run_btrfsx, btrfsx_json):
    """Two samples a day apart: learning (at least 3 are needed), told and
    not projected, and the plugin is OK about it: no page without evidence."""
    record(run_btrfsx, state, fs, 0)
    record(run_btrfsx, state, fs, 1)
    doc = report(btrfsx_json, state, 1)
    proj = doc["filesystems"][0]
    assert proj["status"] == "OK" and proj["samples"] == 2 and proj["learning"]
    assert proj["reason"].startswith("learning: 2 samples over 1d of the 1d needed (and at "
                                      "least 3 samples)"), proj["reason"]
    assert proj["history_span"] == DAY and proj["min_history"] == DAY
    assert "metadata_days_left" not in proj
    rc, out, err = run_btrfsx("monitor", "report", "--check", env=env_at(state, 1), check=0)
    assert out.startswith("BTRFSX OK - tank: learning: 2 samples over 1d"), out
    rc, out, err = run_btrfsx("monitor", "report", env=env_at(state, 1))
    assert "reason" in out and "learning: 2 samples" in out
    # the window decides: a year later nothing is in the last 30 days
    doc = report(btrfsx_json, state, 400)
    assert doc["filesystems"][0]["reason"] == "no sample in the last 30d"
    rc, out, err = run_btrfsx("monitor", "metrics", env=env_at(state, 1))
    assert "btrfsx_metadata_room_bytes" in out and "btrfsx_metadata_days_left" not in out
    assert re.search(r"^btrfsx_trend_learning\{.*\} 1$", out, re.M)


def test_samples_are_the_windows_with_what_the_days_count_down(fs, state, run_btrfsx,
                                                                btrfsx_json):
    """--samples lists the samples of the window, oldest first, each with the
    metadata room above the global reserve and free_estimated, as the
    history holds them; the newest's are the filesystem's metadata_left and
    data_left. Samples outside the window are not listed; text shows them too."""
    for day, files in ((0, 0), (1, 200), (2, 400), (40, 600)):
        write_day(fs, files, 200)
        record(run_btrfsx, state, fs, day)
    doc = report(btrfsx_json, state, 40, "--samples", "--window", "45d")
    proj = doc["filesystems"][0]
    rows = db_rows(state, "SELECT time, metadata_room, global_reserve, free_estimated "
                          "FROM samples ORDER BY time")
    assert proj["series"] == [{"time": t, "metadata_left": max(room - reserve, 0),
                               "data_left": free} for t, room, reserve, free in rows]
    assert proj["metadata_left"] == proj["series"][-1]["metadata_left"]
    assert proj["data_left"] == proj["series"][-1]["data_left"]
    assert "series" not in report(btrfsx_json, state, 40)["filesystems"][0]
    assert len(report(btrfsx_json, state, 40, "--samples")["filesystems"][0]["series"]) == 1
    rc, out, err = run_btrfsx("monitor", "report", "--samples", env=env_at(state, 40))
    assert re.search(r"^\s*\d{4}-\d\d-\d\d \S+ UTC metadata_left \S+ data_left ", out, re.M), out
    rc, out, err = run_btrfsx("monitor", "report", "--samples", "extra", env=env_at(state, 40),
                              check=1)
    assert "extra" in err


def test_check_states_and_exit_codes(fs, state, run_btrfsx, btrfsx_json):
    """Data grows 20 MiB a day on a filesystem with ~440 MiB strict free
    space: about 22 days left. The thresholds decide OK, WARNING, CRITICAL."""
    for day in range(5):
        with open(fs / f"data{day}", "wb") as f:
            f.write(os.urandom(20 * MiB))
        record(run_btrfsx, state, fs, day)
    days = report(btrfsx_json, state, 4)["filesystems"][0]["data_days_left"]
    assert 15 < days < 30
    cases = [((), 1, "WARNING"), (("-w", "10", "-c", "5"), 0, "OK"),
             (("--warning", "60", "--critical", "40"), 2, "CRITICAL")]
    for args, code, name in cases:
        rc, out, err = run_btrfsx("monitor", "report", "--check", *args, env=env_at(state, 4),
                                  check=code)
        line = out.splitlines()[0]
        assert line.startswith(f"BTRFSX {name} - tank: metadata "), line
        # perfdata in the standard form; the thresholds on the latest end of
        # the range, which the check pages on ("30:" alerts below 30)
        w, c = (args[1], args[3]) if args else ("30", "14")
        assert re.search(r"\| .*'tank data_days_left'=[0-9.]+;;;0 ", line), line
        assert re.search(rf"'tank data_days_left_upper'=[0-9.]+;{w}:;{c}:;0( |$)", line), line
        assert err == ""
        doc = btrfsx_json("monitor", "report", "--check", *args, env=env_at(state, 4),
                          check=code)
        assert doc["check"]["status"] == name and doc["check"]["line"] == line
    # from a path on the filesystem, from its fsid
    fsid = fsutil.run(["findmnt", "-n", "-o", "UUID", str(fs)]).stdout.strip()
    by_path = report(btrfsx_json, state, 4, str(fs / "data1"))["filesystems"]
    by_fsid = report(btrfsx_json, state, 4, fsid)["filesystems"]
    assert by_path == by_fsid and len(by_path) == 1 and by_path[0]["fsid"] == fsid


# --------------------------------------------------------------------------- what a sample holds

def test_sample_matches_usage_and_device_stats(fs, state, run_btrfsx, btrfsx_json):
    doc = btrfsx_json("monitor", "record", str(fs), env=env_at(state, 0))
    usage = btrfsx_json("filesystem", "usage", str(fs))
    rec = doc["recorded"][0]
    assert doc["db"] == str(state / "monitor.db")
    assert rec["fsid"] == usage["fsid"] and rec["label"] == "tank"
    assert rec["mountpoint"] == str(fs) and rec["time"] == T0
    (row,) = db_rows(state, "SELECT free_estimated, free_strict, metadata_room,"
                     " metadata_room_after_data, free_statfs, global_reserve, read_policy,"
                     " scrub_status FROM samples")
    assert row[:4] == (usage["free_estimated"], usage["free_strict"], usage["metadata_room"],
                       usage["metadata_room_after_data"])
    assert row[4] == usage["free_statfs"] and row[5] == usage["overall"]["global_reserve"]
    assert row[7] is None                               # no offline scrub of it yet
    spaces = db_rows(state, "SELECT total, used FROM sample_spaces ORDER BY flags")
    assert sorted(spaces) == sorted((s["size"], s["used"]) for s in usage["spaces"])
    stats = fsutil.run(["btrfs", "device", "stats", str(fs)]).stdout
    progs = {m[0]: int(m[1]) for m in re.findall(r"\]\.(\w+)\s+(\d+)", stats)}
    (dev,) = db_rows(state, "SELECT devid, size, unallocated, write_io_errs, read_io_errs,"
                     " flush_io_errs, corruption_errs, generation_errs FROM sample_devices")
    assert dev[3:] == tuple(progs[k] for k in ("write_io_errs", "read_io_errs",
                                                "flush_io_errs", "corruption_errs",
                                                "generation_errs"))
    (udev,) = usage["devices"]
    assert dev[:3] == (udev["devid"], udev["size"], udev["unallocated"])
    assert db_rows(state, "PRAGMA journal_mode") == [("wal",)]
    assert db_rows(state, "PRAGMA user_version") == [(2,)]
    assert db_rows(state, "PRAGMA application_id") == [(0x62747278,)]


def test_record_without_mountpoint_takes_every_mounted_btrfs(fs, state, run_btrfsx):
    """(Other mounted filesystems of the machine are recorded too, and may fail.)"""
    rc, out, err = run_btrfsx("monitor", "record", env=env_at(state, 0), check=False)
    assert f"recorded {fs} " in out
    fsids = [r[0] for r in db_rows(state, "SELECT fsid FROM filesystems")]
    assert fsutil.run(["findmnt", "-n", "-o", "UUID", str(fs)]).stdout.strip() in fsids


def test_retention_and_thinning(fs, state, run_btrfsx):
    """Three samples in one hour, one the next; 40 days later those older than
    35 days are one per hour; --keep drops what is older."""
    for seconds in (0, 600, 1200, 3600):
        record(run_btrfsx, state, fs, seconds / DAY)
    assert history_is_whole(state) == 4
    record(run_btrfsx, state, fs, 40)
    times = [r[0] - T0 for r in db_rows(state, "SELECT time FROM samples ORDER BY time")]
    assert times == [0, 3600, 40 * DAY]
    run_btrfsx("monitor", "record", "--keep", "2d", str(fs), env=env_at(state, 41))
    times = [r[0] - T0 for r in db_rows(state, "SELECT time FROM samples ORDER BY time")]
    assert times == [40 * DAY, 41 * DAY]
    assert history_is_whole(state) == 2


# --------------------------------------------------------------------------- Prometheus

NAME = re.compile(r"^btrfsx_[a-z][a-z0-9_]*$")
UNITS = ("_bytes", "_seconds", "_bytes_per_second", "_total", "_info", "_days_left",
         "_days_left_lower", "_days_left_upper", "_samples", "_errors", "_chunks")
BOOLEANS = {"btrfsx_hints_effective", "btrfsx_trend_learning"}   # 1 or 0, like up


def history(fs, state, run_btrfsx, days=4):
    for day in range(days):
        with open(fs / f"f{day}", "wb") as f:
            f.write(os.urandom(8 * MiB))
        record(run_btrfsx, state, fs, day)


def test_metrics_parse_and_follow_the_conventions(fs, state, run_btrfsx, btrfsx_json):
    history(fs, state, run_btrfsx)
    rc, text, err = run_btrfsx("monitor", "metrics", env=env_at(state, 3))
    families = prometheus_parse(text)
    by_name = {f["name"]: f for f in families}
    usage = btrfsx_json("filesystem", "usage", str(fs))
    for f in families:
        assert NAME.match(f["name"]) and f["help"], f["name"]
        assert f["type"] in ("gauge", "counter")
        exposed = f["name"] + ("_total" if f["type"] == "counter" else "")
        assert exposed.endswith(UNITS) or exposed in BOOLEANS, exposed
        if exposed in BOOLEANS:
            assert {s["value"] for s in f["samples"]} <= {0, 1}
        assert not re.search(r"_(k|m|g)i?b(_|$)|_ms(_|$)|_minutes|_hours", exposed)
        for s in f["samples"]:
            assert s["name"] == exposed
            assert {"fsid", "label", "mountpoint"} <= set(s["labels"])
            assert s["labels"]["label"] == "tank" and s["labels"]["mountpoint"] == str(fs)
    assert {"btrfsx_metadata_room_bytes", "btrfsx_metadata_days_left",
            "btrfsx_device_unallocated_bytes", "btrfsx_device_errors",
            "btrfsx_free_strict_bytes"} <= set(by_name)
    assert by_name["btrfsx_device_errors"]["type"] == "counter"
    unalloc = by_name["btrfsx_device_unallocated_bytes"]["samples"][0]
    assert unalloc["labels"]["devid"] == "1" and unalloc["labels"]["hint"] == "data_preferred"
    assert unalloc["value"] == usage["devices"][0]["unallocated"]
    room = by_name["btrfsx_metadata_room_bytes"]["samples"][0]["value"]
    assert room == usage["metadata_room"]
    data_days = by_name["btrfsx_data_days_left"]["samples"][0]["value"]
    rep = report(btrfsx_json, state, 3)["filesystems"][0]
    assert math.isclose(data_days, rep["data_days_left"], abs_tol=0.01)
    assert by_name["btrfsx_trend_samples"]["samples"][0]["value"] == 4
    # the same families in JSON
    doc = btrfsx_json("monitor", "metrics", env=env_at(state, 3))
    assert [m["name"] for m in doc["metrics"]] == \
        [f["name"] + ("_total" if f["type"] == "counter" else "") for f in families]
    assert doc["filesystems"] == 1
    # metadata that does not grow lasts forever: +Inf, which the parser takes
    infinite = [f for f in families if f["name"].endswith("days_left_upper")]
    assert all(isinstance(s["value"], float) for f in infinite for s in f["samples"])


def test_label_values_are_escaped(loopdevs, mkfs, mounted, state, run_btrfsx):
    dev = loopdevs(1, size="512M")[0]
    mkfs(dev, label='we"ird\\label')
    with mounted(dev) as mnt:
        record(run_btrfsx, state, mnt, 0)
        rc, text, err = run_btrfsx("monitor", "metrics", env=env_at(state, 0))
    labels = {s["labels"]["label"] for f in prometheus_parse(text) for s in f["samples"]}
    assert labels == {'we"ird\\label'}


def test_textfile_is_never_seen_half_written(fs, state, run_btrfsx, tmp_path):
    """A reader loop reads btrfsx.prom while metrics --textfile rewrites it:
    every read is a whole file that parses; no temporary file is left and
    none is named *.prom."""
    history(fs, state, run_btrfsx)
    out = tmp_path / "textfile"
    out.mkdir()
    run_btrfsx("monitor", "metrics", "--textfile", str(out), env=env_at(state, 3))
    done = threading.Event()
    seen: set[str] = set()
    names: set[str] = set()
    reads = 0

    def reader():
        nonlocal reads
        while not done.is_set():
            seen.add((out / "btrfsx.prom").read_text())
            names.update(os.listdir(out))
            reads += 1

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(15):
            run_btrfsx("monitor", "metrics", "--window", f"{30 + i}d", "--textfile", str(out),
                       env=env_at(state, 3 + i / 100))
    finally:
        done.set()
        t.join()
    assert reads > 15
    whole = {text for text in seen if text.endswith("\n") and
             "# TYPE btrfsx_trend_samples gauge\n" in text}
    assert whole == seen
    assert all(prometheus_parse_all(sorted(seen)))
    assert all(n == "btrfsx.prom" or (n.startswith(".btrfsx.prom.") and not n.endswith(".prom"))
               for n in names), names
    assert os.listdir(out) == ["btrfsx.prom"]


def test_systemd_service_commands(fs, state, btrfsx, tmp_path):
    """What btrfsx-monitor.service runs, as systemd would run it: record every
    mounted btrfs, then the textfile."""
    build = Path(os.environ.get("BTRFSX_BUILD_DIR") or Path(btrfsx).parent)
    unit = build / "systemd" / "btrfsx-monitor.service"
    if not unit.exists():
        pytest.skip(f"{unit} not built (configure --without-systemdsystemunitdir?)")
    textfile = tmp_path / "node-exporter"
    textfile.mkdir()
    lines = [l.split("=", 1)[1] for l in unit.read_text().splitlines()
             if l.startswith("ExecStart=")]
    assert len(lines) == 2
    for line in lines:
        # MOUNTPOINTS as /etc/default/btrfsx-monitor would set it: only ours
        line = line.lstrip("-").replace("${TEXTFILE_DIR}", str(textfile))
        argv = [str(fs) if a == "$MOUNTPOINTS" else a for a in shlex.split(line)
                if a != "$METRICS_OPTIONS"]     # unset: systemd drops the word
        argv[0] = btrfsx
        p = subprocess.run(argv, env=dict(os.environ, **env_at(state)), capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr
    text = (textfile / "btrfsx.prom").read_text()
    assert f'mountpoint="{fs}"' in text
    assert prometheus_parse(text)


# --------------------------------------------------------------------------- failures

def test_records_at_once_on_a_new_history(fs, state, btrfsx):
    """Six at once, the first ones making the history, each with a clock a
    second apart (the order they get the lock in is not the order of their
    clocks): every sample is stored."""
    fsutil.run(["btrfs", "filesystem", "sync", str(fs)])
    procs = [subprocess.Popen([btrfsx, "monitor", "record", str(fs)],
                              env=dict(os.environ, **env_at(state, i / DAY)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(6)]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    assert history_is_whole(state) == 6


def test_locked_history(fs, state, run_btrfsx, btrfsx_json):
    record(run_btrfsx, state, fs, 0)
    con = sqlite3.connect(state / "monitor.db", isolation_level=None)
    try:
        con.execute("BEGIN EXCLUSIVE")
        began = time.monotonic()
        rc, out, err = record(run_btrfsx, state, fs, 1, check=1)
        assert time.monotonic() - began >= 2.5
        assert "monitor.db" in err and "locked" in err and "try again" in err
        # readers do not wait for a writer
        assert report(btrfsx_json, state, 1)["filesystems"][0]["samples"] == 1
    finally:
        con.execute("ROLLBACK")
        con.close()
    assert history_is_whole(state) == 1
    record(run_btrfsx, state, fs, 1)
    assert history_is_whole(state) == 2


@pytest.mark.parametrize("damage", ["garbage", "foreign", "newer", "pages"])
def test_damaged_or_foreign_history(fs, state, run_btrfsx, damage):
    db = state / "monitor.db"
    if damage == "garbage":
        db.write_bytes(os.urandom(65536))
        want = "damaged, or not a database"
    elif damage == "foreign":
        with contextlib.closing(sqlite3.connect(db)) as con:
            con.execute("CREATE TABLE notes (text TEXT)")
            con.commit()
        want = "not a btrfsx monitor history"
    else:
        for day in range(3):
            record(run_btrfsx, state, fs, day)
        if damage == "newer":
            with contextlib.closing(sqlite3.connect(db)) as con:
                con.execute("PRAGMA user_version = 99")
                con.commit()
            want = "schema version 99"
        else:
            data = bytearray(db.read_bytes())
            page = 4096
            for off in range(page, len(data), page):      # every page but the header's
                data[off:off + page] = os.urandom(page)
            db.write_bytes(bytes(data))
            want = "damaged"
    before = db.read_bytes()
    for cmd in (("record", str(fs)), ("report",), ("metrics",)):
        rc, out, err = run_btrfsx("monitor", *cmd, env=env_at(state, 5), check=1)
        assert str(db) in err and want in err, (cmd, err)
    rc, out, err = run_btrfsx("monitor", "report", "--check", env=env_at(state, 5), check=3)
    assert out.startswith("BTRFSX UNKNOWN - ") and want in out.splitlines()[0]
    assert db.read_bytes() == before, "a damaged history is left as it was"


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    fsutil.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)])
    try:
        yield mnt
    finally:
        fsutil.run(["umount", str(mnt)])


def test_full_disk_at_every_amount_of_free_space(fs, small_tmpfs, run_btrfsx, btrfsx_json):
    """The history on a 1 MiB tmpfs, a filler leaving 0 to 120 KiB free: each
    record either stores its sample or fails with exit 1 saying the disk is
    full, and the history stays whole and readable."""
    state = small_tmpfs
    record(run_btrfsx, state, fs, 0)
    stored, failed = 1, 0
    for free_kib in range(0, 124, 8):
        filler = state / "filler"
        filler.unlink(missing_ok=True)
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - free_kib * 1024))
        os.close(fd)
        rc, out, err = record(run_btrfsx, state, fs, 1 + free_kib / 1000, check=False)
        if rc == 0:
            stored += 1
        else:
            assert rc == 1 and "monitor.db" in err and \
                re.search(r"full|No space left", err), err
            failed += 1
        filler.unlink()
        assert history_is_whole(state) == stored
        assert report(btrfsx_json, state, 2)["filesystems"][0]["samples"] == stored
    assert failed and stored > 1, (failed, stored)


def test_read_only_state_directory(fs, state, tmp_path, run_btrfsx, btrfsx_json):
    for day in range(3):
        record(run_btrfsx, state, fs, day)
    ro = tmp_path / "ro"
    ro.mkdir()
    fsutil.run(["mount", "--bind", str(state), str(ro)])
    try:
        fsutil.run(["mount", "-o", "remount,bind,ro", str(ro)])
        rc, out, err = record(run_btrfsx, ro, fs, 3, check=1)
        assert "monitor.db" in err and re.search(r"[Rr]ead-only|readonly", err), err
        assert report(btrfsx_json, ro, 3)["filesystems"][0]["samples"] == 3
        rc, out, err = run_btrfsx("monitor", "record", str(fs),
                                  env={"BTRFSX_STATE_DIR": str(ro / "new")}, check=1)
        assert "ro/new" in err and "Read-only" in err
    finally:
        fsutil.run(["umount", str(ro)])
    assert history_is_whole(state) == 3


# --------------------------------------------------------------------------- bad input

def test_bad_input(fs, state, tmp_path, run_btrfsx):
    e = env_at(state, 0)
    usage_errors = [
        ("record", "--keep", "soon", str(fs)),
        ("record", "--keep", "0d", str(fs)),
        ("record", "--keep", "-3d", str(fs)),
        ("record", "--bogus"),
        ("report", "--window", "30x"),
        ("report", "--window", ""),
        ("report", "-w", "5"),
        ("report", "--min-history", "30d"),
        ("metrics", "--window", "1y"),
        ("metrics", "--min-history", "soon"),
        ("metrics", "--textfile"),
        ("metrics", "--textfile", "-x"),
        ("record", "--db", "--help"),
    ]
    for args in usage_errors:
        rc, out, err = run_btrfsx("monitor", *args, env=e, check=2)
        assert "Try 'btrfsx monitor" in err, (args, err)
    rc, out, err = run_btrfsx("monitor", "report", env=e, check=1)
    assert "no history yet" in err and "monitor record" in err
    rc, out, err = run_btrfsx("monitor", "metrics", env=e, check=1)
    assert "no history yet" in err
    failures = [
        (("record", str(tmp_path / "nowhere")), "No such file"),
        (("record", "/proc"), "/proc: not where a btrfs filesystem is mounted"),
        (("record", "--db", str(tmp_path), str(fs)), "cannot open the history"),
        (("record", "--db", "/proc/monitor.db", str(fs)), "/proc/monitor.db"),
    ]
    for args, want in failures:
        rc, out, err = run_btrfsx("monitor", *args, env=e, check=1)
        assert want in err, (args, err)
    record(run_btrfsx, state, fs, 0)
    rc, out, err = run_btrfsx("monitor", "record", str(fs),
                              env=dict(e, BTRFSX_MONITOR_NOW="yesterday"), check=1)
    assert "BTRFSX_MONITOR_NOW" in err
    for args, want in [(("report", "01234567-89ab-cdef-0123-456789abcdef"), "no such filesystem"),
                       (("report", str(tmp_path)), "no such filesystem"),
                       (("metrics", "--textfile", str(tmp_path / "none")), "No such file"),
                       (("metrics", "--textfile", str(state / "monitor.db")), "not a directory")]:
        rc, out, err = run_btrfsx("monitor", *args, env=e, check=1)
        assert want in err, (args, err)
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    rc, out, err = run_btrfsx("monitor", "report", "--db", str(text), env=e, check=1)
    assert "notes.txt" in err and "not a database" in err
    rc, out, err = run_btrfsx("monitor", "report", "--check", "--db", str(tmp_path / "x.db"),
                              env=e, check=3)
    assert out.startswith("BTRFSX UNKNOWN - ") and "no history yet" in out


# --------------------------------------------------------------------------- library, Python

def test_python_history_and_projections(fs, state, run_btrfsx, btrfsx_json):
    """btrfsx.monitor_history / monitor_projections (libbtrfsx underneath)
    return plain lists of dataclasses that agree with the command line."""
    from test_python import build_dir, make_variable, run_py, sanitizer_runtime
    history(fs, state, run_btrfsx)
    rep = report(btrfsx_json, state, 3)["filesystems"][0]
    package = build_dir() / "libbtrfsx" / "python"
    env = dict(os.environ, PYTHONPATH=str(package), PYTHONDONTWRITEBYTECODE="1")
    runtime = sanitizer_runtime()
    if runtime:
        env.update(LD_PRELOAD=runtime, ASAN_OPTIONS="detect_leaks=0")
    p = run_py(env, make_variable("PYTHON") or "python3", '''
        db = sys.argv[1] + "/monitor.db"
        h = btrfsx.monitor_history(sys.argv[2], db=db)
        p = btrfsx.monitor_projections(db=db, now=int(sys.argv[3]))
        q = btrfsx.monitor_projections([sys.argv[2]], db=db, now=int(sys.argv[3]), window=86400)
        err = error(btrfsx.monitor_history, "/nowhere", db=db)
        missing = error(btrfsx.monitor_projections, db=sys.argv[1] + "/none.db")
        emit({"types": [type(h).__name__, type(h[0]).__name__, type(p).__name__,
                        type(p[0]).__name__, type(p[0].metadata).__name__],
              "history": [[s.time.timestamp(), s.metadata_room, s.free_strict] for s in h],
              "p": p[0], "metadata": p[0].metadata, "data": p[0].data,
              "q": [q[0].nr_samples, q[0].reason, q[0].data.days_left, q[0].learning,
                    q[0].history_span, q[0].metadata_growth_seen, p[0].learning,
                    p[0].metadata_growth_seen],
              "err": err, "missing": missing})
    ''', state, fs, T0 + 3 * DAY)
    doc = json.loads(p.stdout)
    assert doc["types"] == ["list", "MonitorSample", "list", "MonitorProjection", "MonitorTrend"]
    stored = db_rows(state, "SELECT time, metadata_room, free_strict FROM samples ORDER BY time")
    assert [tuple(s) for s in doc["history"]] == [tuple(r) for r in stored]
    assert doc["p"]["fsid"] == rep["fsid"] and doc["p"]["nr_samples"] == rep["samples"] == 4
    assert math.isclose(doc["data"]["days_left"], rep["data_days_left"], abs_tol=0.01)
    assert math.isclose(doc["data"]["growth"] * DAY, rep["data_growth_per_day"], rel_tol=1e-6)
    assert doc["q"][0] == 2 and doc["q"][2] is None
    # learning: told (the growth seen), not projected; a projection has no growth seen
    assert doc["q"][3:6] == [True, DAY, doc["q"][5]] and doc["q"][5] >= 0
    assert doc["q"][6:] == [False, None]
    assert doc["q"][1].startswith("learning: 2 samples over 1d of the 1d needed (and at least 3 "
                                  "samples)")
    assert doc["err"]["class"] == "NotFoundError" and "no such filesystem" in doc["err"]["message"]
    assert doc["missing"]["class"] == "NotFoundError" and "no history yet" in \
        doc["missing"]["message"]

