# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx monitor as a sysadmin meets it: alerts that can be trusted.

- No page without evidence: a burst right after the timer is enabled is told
  and not projected (with --min-history 0 the same history pages, which
  shows the guard is what keeps it quiet); a steady leak pages once the
  history spans the learning span and the latest end of the 95% range of
  days left crosses the threshold.
- The plugin conventions (Nagios, Icinga, Sensu): one status line, UNKNOWN
  (3) for every usage or configuration error with the range named, nothing
  on standard error, perfdata in the standard form.
- Bad input: a history directory that does not exist, read-only commands
  that must leave no -wal/-shm behind, the clock going back, two timers at
  once, a filesystem unmounted between samples, an older schema.

Simulated time through BTRFSX_MONITOR_NOW, as in test_monitor.py.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess

import pytest

from helpers import fsutil
from test_monitor import (DAY, MiB, T0, db_rows, env_at, history_is_whole, record, write_day,
                          fs, state)  # noqa: F401 (fixtures)


def check(run_btrfsx, state, day, *args, code):
    """report --check at @day: (first line, whole stdout); stderr stays empty."""
    rc, out, err = run_btrfsx("monitor", "report", "--check", *args, env=env_at(state, day),
                              check=code)
    assert err == "", err
    return out.splitlines()[0], out


# --------------------------------------------------------------------------- evidence

@pytest.mark.root
def test_burst_after_enabling_is_told_not_paged(fs, state, run_btrfsx, btrfsx_json):
    """The issue's report: records seconds apart while small files are
    written (1500 files, ~16 KiB of metadata each, between 4 samples). The
    check is OK and says it saw a burst; the same history with no learning
    span pages CRITICAL at minutes left. A quiet day later the burst is one
    moment of the history, not its pace."""
    small = fs / "small"
    small.mkdir()
    n = 0
    for i in range(4):
        if i:
            n = write_day(small, n, 500)
        record(run_btrfsx, state, fs, i * 5 / DAY)
    now = 15 / DAY
    line, out = check(run_btrfsx, state, now, code=0)
    assert line.startswith("BTRFSX OK - tank: learning: 4 samples over 15s of the 1d needed; "
                           "metadata +"), line
    assert ", a burst, not projected |" in line, line
    doc = btrfsx_json("monitor", "report", env=env_at(state, now))["filesystems"][0]
    assert doc["learning"] and doc["burst"] and doc["metadata_growth_seen"] > 20 * MiB
    assert doc["history_span"] == 15 and "metadata_days_left" not in doc
    # without the learning span the same samples page: the guard is what keeps it quiet
    line, out = check(run_btrfsx, state, now, "--min-history", "0", code=2)
    assert re.match(r"BTRFSX CRITICAL - tank: metadata 0\.0 days left", line), line
    # a quiet day of samples every 2 hours: the burst no longer decides the pace
    for h in range(2, 28, 2):
        record(run_btrfsx, state, fs, h / 24)
    line, out = check(run_btrfsx, state, 26 / 24, code=0)
    assert line.startswith("BTRFSX OK - tank: metadata never (not growing") or \
        re.match(r"BTRFSX OK - tank: metadata \d{3,}", line), line
    doc = btrfsx_json("monitor", "report", env=env_at(state, 26 / 24))["filesystems"][0]
    assert not doc["learning"] and doc["metadata_growth_per_day"] < MiB


@pytest.mark.root
def test_steady_leak_pages_after_learning(fs, state, run_btrfsx, btrfsx_json):
    """Data grows 20 MiB every 2 hours (240 MiB a day, ~1.7 days of free
    space): while learning the plugin is OK and calls it a burst; with a
    day of history it is CRITICAL, on the latest end of the range."""
    for h in range(0, 28, 2):
        with open(fs / f"leak{h}", "wb") as f:
            f.write(os.urandom(20 * MiB))
        record(run_btrfsx, state, fs, h / 24)
        if h == 12:
            line, out = check(run_btrfsx, state, h / 24, code=0)
            assert "learning: 7 samples over 12h of the 1d needed" in line, line
            assert "a burst, not projected" in line, line
    line, out = check(run_btrfsx, state, 26 / 24, code=2)
    assert line.startswith("BTRFSX CRITICAL - tank: metadata "), line
    doc = btrfsx_json("monitor", "report", env=env_at(state, 26 / 24))["filesystems"][0]
    assert not doc["learning"] and doc["data_days_left_high"] < 14
    upper = re.search(r"'tank data_days_left_upper'=([0-9.]+);30:;14:;0", line)
    assert upper and float(upper.group(1)) == pytest.approx(doc["data_days_left_high"], abs=0.01)


@pytest.mark.root
def test_no_page_for_data_on_metadata_preferred_devices(loopdevs, mkfs, mounted, state,
                                                        run_btrfsx, btrfsx_json):
    """Every device metadata_preferred: strict mode treats the preference as
    metadata_only, so the strict free space for data is only what is left in
    the data chunks (and 0 once they fill), yet data has all the room it
    wants. The data days count what data can take (free_estimated): at
    12 MiB a day the check is OK, where the strict figure would page
    CRITICAL in days, and never stop paging once it reached 0."""
    devs = loopdevs(2, size="512M")
    mkfs(list(devs), data="raid1", metadata="raid1", label="tank")
    for dev in devs:
        run_btrfsx("device", "property", "set", dev, "allocation_hint", "metadata_preferred")
    with mounted(devs[0]) as mnt:
        for h in range(0, 28, 4):
            with open(mnt / f"data{h}", "wb") as f:
                f.write(os.urandom(2 * MiB))
            record(run_btrfsx, state, mnt, h / 24)
        usage = btrfsx_json("filesystem", "usage", str(mnt))
        line, out = check(run_btrfsx, state, 24 / 24, code=0)
    assert usage["free_strict"] < 100 * MiB < 4 * usage["free_strict"] < usage["free_estimated"]
    assert line.startswith("BTRFSX OK - tank: "), line
    left = re.search(r"'tank data_left'=([0-9]+)B", line)
    assert left and int(left.group(1)) == usage["free_estimated"], line
    doc = btrfsx_json("monitor", "report", env=env_at(state, 24 / 24))["filesystems"][0]
    assert not doc["learning"] and doc["data_days_left"] > 30
    assert usage["free_strict"] / doc["data_growth_per_day"] < 14


@pytest.mark.root
def test_stale_filesystem_and_unmounted_between_samples(loopdevs, mkfs, mounted, state,
                                                        run_btrfsx, btrfsx_json):
    """Two filesystems; one is unmounted after two days. Named, its record
    fails (exit 1) and nothing is stored; the check is UNKNOWN for it when
    named, OK (with the note) when the other is fresh, and UNKNOWN when no
    filesystem has a recent sample (the recorder is not running)."""
    devs = loopdevs(2, size="512M")
    mkfs(devs[0], label="keep")
    mkfs(devs[1], label="gone")
    with mounted(devs[0]) as keep:
        with mounted(devs[1]) as gone:
            for day in range(3):
                record(run_btrfsx, state, keep, day)
                record(run_btrfsx, state, gone, day)
        before = history_is_whole(state)
        rc, out, err = run_btrfsx("monitor", "record", gone, env=env_at(state, 3), check=1)
        assert "No such file" in err, err
        assert history_is_whole(state) == before
        # its directory left behind on another btrfs: that one is not sampled under its name
        left_behind = keep / "gone"
        left_behind.mkdir()
        rc, out, err = run_btrfsx("monitor", "record", left_behind, env=env_at(state, 3),
                                  check=1)
        assert f"{left_behind}: not where a btrfs filesystem is mounted (unmounted?)" in err
        assert history_is_whole(state) == before
        left_behind.rmdir()
        record(run_btrfsx, state, keep, 3)
        line, out = check(run_btrfsx, state, 3, code=0)
        assert line.startswith("BTRFSX OK - "), line
        assert "gone: no sample for 1d (unmounted, or not recorded?)" in line, line
        assert "'gone metadata_left'" not in line, "no perfdata from a stale sample"
        gone_fsid = [f["fsid"] for f in btrfsx_json("monitor", "report",
                                                     env=env_at(state, 3))["filesystems"]
                     if f["label"] == "gone"][0]
        line, out = check(run_btrfsx, state, 3, gone_fsid, code=3)
        assert line.startswith("BTRFSX UNKNOWN - gone: no sample for 1d"), line
        # an hour later nothing is recent: the recorder stopped
        line, out = check(run_btrfsx, state, 3 + 1 / 24, code=3)
        assert line.startswith("BTRFSX UNKNOWN - "), line
        assert "keep: no sample for 1h" in line and "gone: no sample for 1d 1h" in line, line
        line, out = check(run_btrfsx, state, 3 + 1 / 24, "--max-age", "2h", code=0)


# --------------------------------------------------------------------------- plugin conventions

PLUGIN_USAGE_ERRORS = [
    (("--check", "--bogus"), "unknown option '--bogus'"),
    (("--bogus", "--check"), "unknown option '--bogus'"),
    (("--check", "-w", "60", "-c", "90"), "--critical (90 days) must not be more than --warning "
                                          "(60 days)"),
    (("--check", "-w", "100000"), "--warning: '100000' is not a number of days from 0 to 36500"),
    (("--check", "-c", "-1"), "--critical: '-1' is not a number of days from 0 to 36500"),
    (("--check", "-c", "many"), "--critical: 'many' is not a number of days from 0 to 36500"),
    (("--check", "--max-age", "0"), "--max-age: '0' is not a duration from 1s to 100 years"),
    (("--check", "--window", "30x"), "--window: '30x' is not a duration from 1s to 100 years"),
    (("--check", "--min-history", "40d"), "--min-history (40d) must be shorter than --window "
                                          "(30d)"),
    (("--check", "--format", "xml"), "unknown format 'xml'"),
    (("--check", "-w"), "needs a value"),
    (("--ch", "--db", "--help"), "--db: '--help' looks like an option"),
]


@pytest.mark.parametrize("args,want", PLUGIN_USAGE_ERRORS,
                         ids=[" ".join(a) for a, _ in PLUGIN_USAGE_ERRORS])
def test_plugin_usage_error_is_unknown(args, want, run_btrfsx, tmp_path):
    """Exit 3 with one status line naming what is wrong (and the allowed
    range), nothing on stderr; the JSON form has the check object and the
    error with exit_code 3. Without --check the same is a usage error (2)."""
    env = {"BTRFSX_STATE_DIR": str(tmp_path)}
    rc, out, err = run_btrfsx("monitor", "report", *args, env=env, check=3)
    assert out.count("\n") == 1 and out.startswith("BTRFSX UNKNOWN - ") and want in out, out
    assert err == ""
    rc, out, err = run_btrfsx("monitor", "report", *args, fmt="json", env=env, check=3)
    doc = json.loads(out)
    assert doc["check"]["status"] == "UNKNOWN" and want in doc["check"]["line"]
    assert doc["error"]["exit_code"] == 3 and want in doc["error"]["message"]
    rest = [a for a in args if a not in ("--check", "--ch")]
    if not rest or rest[0].startswith(("-w", "-c", "--max-age")):
        return          # those go only with --check
    rc, out, err = run_btrfsx("monitor", "report", *rest, env=env, check=2)
    assert want in err and "Try 'btrfsx monitor report --help'" in err


def test_plugin_errors_and_help(run_btrfsx, tmp_path):
    """No history: UNKNOWN with the reason; --help is help (exit 0)."""
    env = {"BTRFSX_STATE_DIR": str(tmp_path)}
    rc, out, err = run_btrfsx("monitor", "report", "--check", env=env, check=3)
    assert out == (f"BTRFSX UNKNOWN - {tmp_path}/monitor.db: no history yet ('btrfsx monitor "
                   "record' starts it)\n") and err == ""
    rc, out, err = run_btrfsx("monitor", "report", "--check", "--help", env=env, check=0)
    assert out.startswith("usage: btrfsx monitor report ")


@pytest.mark.root
def test_perfdata_labels(loopdevs, mkfs, mounted, state, run_btrfsx):
    """A label with a quote and '=' (which perfdata labels cannot hold) and a
    tab (a status line is one line): replaced, the line still parses."""
    dev = loopdevs(1, size="512M")[0]
    mkfs(dev, label="we'ird=\tfs")
    with mounted(dev) as mnt:
        for day in range(3):
            record(run_btrfsx, state, mnt, day)
    line, out = check(run_btrfsx, state, 2, code=0)
    status, perf = line.split(" | ")
    assert "\t" not in line and status.startswith("BTRFSX OK - we'ird=?fs: metadata ")
    items = re.findall(r"'([^']*)'=([0-9.]+)(B?);([^; ]*);([^; ]*);0(?= |$)", perf)
    assert [i[0] for i in items][:2] == ["we_ird__fs metadata_left", "we_ird__fs data_left"]
    assert all(unit == "B" for name, value, unit, w, c in items[:2])


# --------------------------------------------------------------------------- files and bad input

@pytest.mark.root
def test_history_directory_must_exist(fs, tmp_path, run_btrfsx):
    """--db in a directory that does not exist is refused and nothing is
    made; the state directory itself is made (not its parents)."""
    rc, out, err = run_btrfsx("monitor", "record", "--db", str(tmp_path / "typo" / "dir" / "h.db"),
                              str(fs), check=1)
    assert "the history's directory must exist" in err, err
    assert not (tmp_path / "typo").exists()
    rc, out, err = run_btrfsx("monitor", "record", str(fs),
                              env={"BTRFSX_STATE_DIR": str(tmp_path / "a" / "b")}, check=1)
    assert "cannot make the directory" in err and not (tmp_path / "a").exists(), err
    run_btrfsx("monitor", "record", str(fs), env={"BTRFSX_STATE_DIR": str(tmp_path / "new")})
    assert (tmp_path / "new" / "monitor.db").is_file()


@pytest.mark.root
def test_read_only_commands_leave_no_files(fs, state, run_btrfsx, btrfsx_json):
    """report, report --check, metrics and the library read the history and
    leave only it behind: no -wal, no -shm."""
    for day in range(3):
        record(run_btrfsx, state, fs, day)
    assert sorted(os.listdir(state)) == ["monitor.db"]
    for args in (("report",), ("report", "--check"), ("metrics",), ("report", "/nowhere")):
        run_btrfsx("monitor", *args, env=env_at(state, 2), check=False)
        assert sorted(os.listdir(state)) == ["monitor.db"], args
    btrfsx_json("monitor", "metrics", env=env_at(state, 2))
    assert sorted(os.listdir(state)) == ["monitor.db"]


@pytest.mark.root
def test_clock_backwards_and_two_timers(fs, state, btrfsx, run_btrfsx):
    """A sample of the same second as the newest one (two timers at once) is
    not stored again: a warning, exit 0; one a moment before it (a record
    that lost the race for the lock) is stored; one more than a minute
    before (the clock went back) is refused, exit 1, naming it. The history
    keeps one timeline."""
    for day in range(3):
        record(run_btrfsx, state, fs, day)
    rc, out, err = record(run_btrfsx, state, fs, 1.5, check=1)
    assert "the clock is 12h behind the newest sample (2026-01-03 00:00:00 UTC): not stored; " \
           "check the system clock" in err, err
    procs = [subprocess.Popen([btrfsx, "monitor", "record", str(fs)],
                              env=dict(os.environ, **env_at(state, 3)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [rc for rc, _ in results] == [0, 0], results
    assert sum("already stored (another record at the same moment?)" in e
               for _, e in results) == 1, results
    assert history_is_whole(state) == 4
    record(run_btrfsx, state, fs, 3 - 30 / DAY)
    times = [t - T0 for (t,) in db_rows(state, "SELECT time FROM samples ORDER BY id")]
    assert times == [0, DAY, 2 * DAY, 3 * DAY, 3 * DAY - 30]


@pytest.mark.root
def test_schema_1_history_is_upgraded(fs, state, run_btrfsx, btrfsx_json):
    """A history of schema 1 (before the placement columns): read commands
    ask for record, which upgrades it in place; the old samples stay, their
    new columns unknown, and metrics leave out what they do not know."""
    for day in range(3):
        record(run_btrfsx, state, fs, day)
    with contextlib.closing(sqlite3.connect(state / "monitor.db")) as con:
        for column in ("hints_effective", "misplaced_forbidden_chunks", "misplaced_forbidden_used",
                       "misplaced_off_preference_chunks", "misplaced_off_preference_used"):
            con.execute(f"ALTER TABLE samples DROP COLUMN {column}")
        con.execute("PRAGMA user_version = 1")
        con.commit()
    rc, out, err = run_btrfsx("monitor", "metrics", env=env_at(state, 2), check=1)
    assert "older schema version 1; 'btrfsx monitor record' upgrades it" in err, err
    rc, out, err = run_btrfsx("monitor", "metrics", env=env_at(state, 2), check=False)
    record(run_btrfsx, state, fs, 3)
    assert db_rows(state, "PRAGMA user_version") == [(2,)]
    assert db_rows(state, "SELECT count(*), count(hints_effective), count(misplaced_forbidden_chunks)"
                   " FROM samples") == [(4, 1, 1)]
    rc, text, err = run_btrfsx("monitor", "metrics", env=env_at(state, 2))
    assert "btrfsx_misplaced_chunks" not in text and "btrfsx_hints_effective" not in text
    rc, text, err = run_btrfsx("monitor", "metrics", env=env_at(state, 3))
    assert 'btrfsx_misplaced_chunks{' in text and "btrfsx_hints_effective{" in text
