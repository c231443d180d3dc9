# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx maintain plan|run on loop devices under the host kernel (issue 37).

The trap of the issue, small: one 1 GiB device, data single, metadata dup,
32 MiB files until full, every other one deleted; then 1,800-byte files
(inline: metadata only) until ENOSPC. Without maintenance they stop with
half the data space free; with 'maintain run' every few thousand files
(the timer, fast-forwarded) they go on until the filesystem is truly full,
after a few data chunks moved. Besides: a young filesystem moves nothing,
the plan is what the run then does, plan and --dry-run write nothing (no
state file, no transaction), the refusals, the policy file, the window,
SIGTERM and a second run, the metrics, and bad input for every option.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from helpers import fsutil
from helpers.fsutil import MiB

pytestmark = pytest.mark.root

SMALL = b"s" * 1800
BIG = 32 * MiB


@pytest.fixture
def env(tmp_path):
    """A state and a configuration directory of the test's own (empty)."""
    conf = tmp_path / "etc"
    conf.mkdir()
    return {"BTRFSX_STATE_DIR": str(tmp_path / "state"), "BTRFSX_CONFIG_DIR": str(conf)}


def maintain(run_btrfsx, *args, env, check=0):
    rc, out, err = run_btrfsx("maintain", *args, fmt="json", check=check, env=env)
    return json.loads(out), err


def fill_small(mnt: Path, every: int = 0, run=None) -> tuple[int, list[dict]]:
    """1,800-byte files until ENOSPC; run(mnt) after every @every files."""
    n, runs = 0, []
    try:
        while True:
            d = mnt / f"s{n // 1000}"
            if n % 1000 == 0:
                d.mkdir(exist_ok=True)
            with open(d / f"f{n}", "wb") as f:
                f.write(SMALL)
            n += 1
            if every and n % every == 0:
                runs.append(run(mnt))
    except OSError as e:
        assert e.errno == 28, e
    return n, runs


@pytest.fixture
def trap(loopdevs):
    loops = loopdevs(sizes=["1G"])
    fsutil.mkfs(loops.devs, data="single", metadata="dup")
    with fsutil.mounted(loops.devs) as mnt:
        fsutil.fill_then_thin(mnt, BIG)
        yield loops.devs, mnt


def generation(dev: str) -> int:
    out = fsutil.run(["btrfs", "inspect-internal", "dump-super", dev]).stdout
    return int(re.search(r"^generation\s+(\d+)", out, re.M).group(1))


def chunk_logicals(mnt: Path) -> set[int]:
    out = fsutil.run(["btrfs", "inspect-internal", "dump-tree", "-t", "chunk",
                      fsutil.run(["findmnt", "-n", "-o", "SOURCE", str(mnt)]).stdout.strip()]
                     ).stdout
    return {int(m) for m in re.findall(r"CHUNK_ITEM (\d+)\)", out)}


# --------------------------------------------------------------------------- young

def test_young_filesystem_moves_nothing(loopdevs, run_btrfsx, env):
    loops = loopdevs(sizes=["1G"])
    fsutil.mkfs(loops.devs, data="single", metadata="dup")
    with fsutil.mounted(loops.devs) as mnt:
        fsutil.fill_files(mnt, seed=3)
        plan, _ = maintain(run_btrfsx, "plan", mnt, env=env)
        m = plan["maintain"]
        assert m["status"] == "nothing-to-do" and m["mode"] == "plan"
        assert m["actions"] == [] and m["target_met"]
        assert m["before"]["metadata_room"] >= m["target"] > 0
        assert m["target_why"].startswith("auto:")
        run, _ = maintain(run_btrfsx, "run", mnt, env=env)
        assert run["maintain"]["status"] == "nothing-to-do"
        assert run["maintain"]["moved"] == [] and run["maintain"]["chunks_moved"] == 0
        # nothing moved: no copy rate recorded
        assert not list(Path(env["BTRFSX_STATE_DIR"]).glob("relocate/*.json"))
        rc, out, err = run_btrfsx("maintain", "plan", mnt, env=env)
        assert "nothing-to-do" in out


# --------------------------------------------------------------------------- the trap

def test_trap_plan_is_what_run_does_and_small_files_go_on(trap, loopdevs, run_btrfsx, btrfsx,
                                                         env, tmp_path):
    devs, mnt = trap
    state = Path(env["BTRFSX_STATE_DIR"])
    gen = generation(devs[0])
    plan, _ = maintain(run_btrfsx, "plan", mnt, env=env)
    dry, _ = maintain(run_btrfsx, "run", "--dry-run", mnt, env=env)
    # plan and --dry-run write nothing: no state file, no transaction
    assert not state.exists()
    assert generation(devs[0]) == gen
    p = plan["maintain"]
    assert p["status"] == "planned", p
    assert dry["maintain"]["actions"] == p["actions"] and dry["maintain"]["mode"] == "dry-run"
    assert p["before"]["metadata_room"] < p["target"] <= p["after"]["metadata_room"]
    assert 1 <= len(p["actions"]) <= 3
    assert all(a["type"] == "data" and a["reason"] in ("metadata-room", "empty")
               for a in p["actions"])
    assert p["chunks_created"] == 0 and p["device_needed"] is None

    run, _ = maintain(run_btrfsx, "run", "--textfile", tmp_path, mnt, env=env)
    r = run["maintain"]
    assert r["status"] == "target-met" and r["target_met"]
    # the plan is what the run did, and the prediction what the kernel did
    assert [c["logical"] for c in r["moved"]] == [a["logical"] for a in p["actions"]]
    assert r["bytes_moved"] == p["bytes_planned"]
    # the device space exactly; the room but for the metadata the relocation itself changed
    assert r["final"]["unallocated"] == p["after"]["unallocated"]
    assert abs(r["final"]["metadata_room"] - p["after"]["metadata_room"]) < MiB
    assert not chunk_logicals(mnt) & {a["logical"] for a in p["actions"]}
    prom = Path(r["metrics_textfile"]).read_text()
    assert 'btrfsx_maintain_target_met{fsid="' in prom
    assert re.search(r"^btrfsx_maintain_actions\{.*\} %d$" % len(p["actions"]), prom, re.M)
    # the copy rate is measured now: the next plan has a time
    again, _ = maintain(run_btrfsx, "plan", mnt, env=env)
    assert again["maintain"]["status"] == "nothing-to-do"
    assert again["maintain"]["copy_rate"] > 0

    # small files on its timer, fast-forwarded: every 5,000 files
    def timer(m):
        doc, _ = maintain(run_btrfsx, "run", m, env=env, check=False)
        return doc["maintain"]
    files, runs = fill_small(mnt, 5000, timer)
    moved = len(r["moved"]) + sum(x["chunks_moved"] for x in runs)
    usage = fsutil.run(["btrfs", "filesystem", "usage", "-b", str(mnt)]).stdout
    data_free = int(re.search(r"Free \(estimated\):\s+(\d+)", usage).group(1))

    # the same without maintenance
    loops = loopdevs(sizes=["1G"])
    fsutil.mkfs(loops.devs, data="single", metadata="dup")
    with fsutil.mounted(loops.devs) as bare:
        fsutil.fill_then_thin(bare, BIG)
        bare_files, _ = fill_small(bare)
        bare_usage = fsutil.run(["btrfs", "filesystem", "usage", "-b", str(bare)]).stdout
    bare_free = int(re.search(r"Free \(estimated\):\s+(\d+)", bare_usage).group(1))
    print(f"trap 1 GiB: {bare_files} small files without maintain ({bare_free >> 20} MiB "
          f"data free at ENOSPC); {files} with 'maintain run' every 5,000 files "
          f"({data_free >> 20} MiB free), {moved} chunks moved")
    assert bare_free > 300 * MiB          # the trap: ENOSPC with the data half free
    assert files > 4 * bare_files
    assert data_free < 64 * MiB            # truly full
    assert moved <= 6
    # at the end the target cannot be met any more: said, with a device that would
    assert runs[-1]["status"] in ("cannot-meet", "nothing-to-do")
    if runs[-1]["status"] == "cannot-meet":
        assert runs[-1]["device_needed"] > 0 and "add a device of at least" in runs[-1]["reason"]


@contextlib.contextmanager
def slow_run(mnt: Path, btrfsx, run_btrfsx, env, tmp_path,
             budget: int = 1) -> Iterator[tuple[subprocess.Popen, list, Path]]:
    """A run at @budget MiB/s, which after its first chunk waits for it:
    yielded once that chunk has moved, with the planned chunks and the
    policy file; killed at the end if it is still running."""
    policy = tmp_path / "policy.conf"
    policy.write_text("[default]\nmetadata-room = 200M\nbusy-pressure = 0\n")
    plan, _ = maintain(run_btrfsx, "plan", "--policy", policy, mnt, env=env)
    actions = [a["logical"] for a in plan["maintain"]["actions"]]
    assert len(actions) >= 2, plan
    proc = subprocess.Popen([btrfsx, "--format", "json", "maintain", "run", "--policy",
                             str(policy), "--budget", str(budget), str(mnt)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **env))
    try:
        deadline = time.monotonic() + 120
        while actions[0] in chunk_logicals(mnt) and time.monotonic() < deadline:
            time.sleep(0.2)
        if actions[0] in chunk_logicals(mnt):
            pytest.fail("the first chunk did not move in 120 s")
        yield proc, actions, policy
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigterm_then_a_second_run_goes_on(trap, btrfsx, run_btrfsx, env, tmp_path):
    devs, mnt = trap
    with slow_run(mnt, btrfsx, run_btrfsx, env, tmp_path) as (proc, actions, policy):
        # beside it: refused (the lock 'balance misplaced' takes too)
        rc, out, err = run_btrfsx("maintain", "run", mnt, check=1, env=env)
        assert "runs on this filesystem" in err
        rc, out, err = run_btrfsx("balance", "misplaced", "--force", mnt, check=1, env=env)
        assert "another 'balance misplaced' runs" in err
        plan_beside, _ = maintain(run_btrfsx, "plan", mnt, env=env)
        assert "runs on this filesystem" in plan_beside["maintain"]["refused"]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 6, err
    doc = json.loads(out)["maintain"]
    assert doc["status"] == "stopped" and "signal" in doc["reason"]
    assert [c["logical"] for c in doc["moved"]] == actions[:1]
    second, _ = maintain(run_btrfsx, "run", "--policy", policy, mnt, env=env)
    s = second["maintain"]
    assert s["status"] == "target-met", s
    assert [c["logical"] for c in s["moved"]] == actions[1:]


def test_progress_lines_and_eof_stops_the_run(trap, btrfsx, run_btrfsx, env, tmp_path):
    """--progress with --format json: one {"progress": ...} line a report on
    stderr, as balance misplaced's; --cancel-on-eof: closing standard input
    stops the run as SIGTERM does (exit 6, the document still printed)."""
    devs, mnt = trap
    policy = tmp_path / "policy.conf"
    policy.write_text("[default]\nmetadata-room = 200M\nbusy-pressure = 0\n")
    plan, _ = maintain(run_btrfsx, "plan", "--policy", policy, mnt, env=env)
    p = plan["maintain"]
    assert len(p["actions"]) >= 2, plan
    schema = json.loads((Path(__file__).parent.parent / "Documentation/json/"
                         "maintain-run.schema.json").read_text())["$defs"]["progress"]
    fields = schema["properties"]["progress"]["required"]
    # 1 MiB/s: after the first chunk the run waits for its budget
    proc = subprocess.Popen([btrfsx, "--format", "json", "maintain", "run", "--policy",
                             str(policy), "--budget", "1", "--progress", "--cancel-on-eof",
                             str(mnt)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env))
    lines = []
    try:
        for line in proc.stderr:
            report = json.loads(line)["progress"]
            assert sorted(report) == sorted(fields), report
            lines.append(report)
            if report["chunks_done"] >= 1 and report["pausing"]:
                break
        proc.stdin.close()
        out = proc.stdout.read()
        rest = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 6, rest
    first, last = lines[0], lines[-1]
    assert first["chunks_done"] == 0 and first["bytes_done"] == 0
    assert first["chunks_total"] == len(p["actions"])
    assert first["bytes_total"] == p["bytes_planned"]
    assert any(r["current"] == p["actions"][0]["logical"] for r in lines)
    doc = json.loads(out)["maintain"]
    assert doc["status"] == "stopped" and "end of input" in doc["reason"], doc
    assert [c["logical"] for c in doc["moved"]] == [p["actions"][0]["logical"]]
    assert last["chunks_done"] == 1 and last["bytes_done"] == doc["bytes_moved"]
    # the last report, at the end: nothing moving, nothing waited for
    end = json.loads(rest.strip().splitlines()[-1])["progress"]
    assert end["current"] == 0 and not end["pausing"] and end["chunks_done"] == 1
    # without --progress (stderr no terminal): no progress line
    rc, out, err = run_btrfsx("maintain", "run", "--no-progress", "--policy", policy, mnt,
                              fmt="json", env=env)
    assert "progress" not in err


def test_window_outside_moves_nothing(trap, run_btrfsx, env):
    devs, mnt = trap
    now = time.localtime()
    start = (now.tm_hour + 2) % 24
    window = f"{start:02d}:00-{(start + 1) % 24:02d}:00"
    before = chunk_logicals(mnt)
    doc, _ = maintain(run_btrfsx, "run", "--window", window, mnt, env=env, check=6)
    assert doc["maintain"]["status"] == "stopped"
    assert "outside the time window" in doc["maintain"]["reason"]
    assert doc["maintain"]["moved"] == [] and chunk_logicals(mnt) == before


# --------------------------------------------------------------------------- policy

def test_policy_sections_and_cannot_meet(loopdevs, run_btrfsx, env):
    loops = loopdevs(sizes=["1G"])
    fsid = fsutil.mkfs(loops.devs, data="single", metadata="dup")
    with fsutil.mounted(loops.devs) as mnt:
        conf = Path(env["BTRFSX_CONFIG_DIR"]) / "maintain.conf"
        conf.write_text(f"# for every filesystem\n[default]\nplacement = off\nbudget = 20\n\n"
                        f"[{fsid}]\nmetadata-room = 2G   # more than the device\n"
                        f"quiet-hours = 22:00-06:00\n[/elsewhere]\nbudget = none\n")
        doc, _ = maintain(run_btrfsx, "plan", mnt, env=env, check=5)
        m = doc["maintain"]
        assert m["policy"]["file"] == str(conf) and m["policy"]["section"]
        assert m["policy"]["placement"] == "off" and m["policy"]["budget"] == 20
        assert m["policy"]["quiet_hours"] == "22:00-06:00"
        assert m["status"] == "cannot-meet" and m["target"] == 2 << 30
        assert m["device_needed"] > 0 and "add a device of at least" in m["reason"]
        doc, _ = maintain(run_btrfsx, "run", mnt, env=env, check=5)
        assert doc["maintain"]["moved"] == []
        # the mount point names the section too
        conf.write_text(f"[{mnt}]\nmetadata-room = none\n")
        doc, _ = maintain(run_btrfsx, "plan", mnt, env=env)
        assert doc["maintain"]["target"] == 0 and doc["maintain"]["status"] == "nothing-to-do"


@pytest.mark.parametrize("text, says", [
    ("[default]\nspeed = 3\n", "maintain.conf:2: unknown key 'speed'"),
    ("[default]\nmetadata-room = lots\n", "maintain.conf:2: metadata-room: 'lots'"),
    ("[default]\nmetadata-room-days = -3\n", "metadata-room-days: '-3'"),
    ("[default]\nplacement = sometimes\n", "placement: 'sometimes'"),
    ("[default]\nbudget = 0\n", "budget: '0'"),
    ("[default]\nquiet-hours = 25:00-01:00\n", "quiet-hours:"),
    ("[default]\nbusy-pressure = 150\n", "busy-pressure: '150'"),
    ("[default\nbudget = 3\n", "maintain.conf:1: '[default' is not a section"),
    ("budget 3\n", "maintain.conf:1: 'budget 3' is not 'key = value'"),
    ("[/other]\nbogus = 1\n", "unknown key 'bogus'"),
])
def test_bad_policy(loopdevs, run_btrfsx, env, text, says):
    loops = loopdevs(sizes=["512M"])
    fsutil.mkfs(loops.devs)
    with fsutil.mounted(loops.devs) as mnt:
        (Path(env["BTRFSX_CONFIG_DIR"]) / "maintain.conf").write_text(text)
        for cmd in ("plan", "run"):
            rc, out, err = run_btrfsx("maintain", cmd, mnt, check=2, env=env)
            assert says in err, err


# --------------------------------------------------------------------------- refusals

def test_refusals(loopdevs, run_btrfsx, env, tmp_path):
    loops = loopdevs(sizes=["1G"])
    fsid = fsutil.mkfs(loops.devs, data="single", metadata="dup")
    # not a btrfs, not mounted, nothing there
    rc, out, err = run_btrfsx("maintain", "run", tmp_path, check=1, env=env)
    rc, out, err = run_btrfsx("maintain", "plan", loops.devs[0], check=1, env=env)
    assert "not a mounted btrfs" in err
    rc, out, err = run_btrfsx("maintain", "plan", tmp_path / "nothing", check=1, env=env)
    assert "No such file" in err
    with fsutil.mounted(loops.devs, options="ro") as mnt:
        rc, out, err = run_btrfsx("maintain", "run", mnt, check=1, env=env)
        assert "read-only" in err and out == ""
        doc, _ = maintain(run_btrfsx, "plan", mnt, env=env)
        assert "read-only" in doc["maintain"]["refused"]
    with fsutil.mounted(loops.devs) as mnt:
        fsutil.fill_then_thin(mnt, BIG)
        # a paused balance holds the kernel's exclusive operation
        fsutil.run(["btrfs", "balance", "start", "--full-balance", "--bg", str(mnt)])
        fsutil.run(["btrfs", "balance", "pause", str(mnt)], check=False)
        status = fsutil.run(["btrfs", "balance", "status", str(mnt)], check=False).stdout
        if "paused" in status:
            rc, out, err = run_btrfsx("maintain", "run", mnt, check=1, env=env)
            assert "balance" in err
            doc, _ = maintain(run_btrfsx, "plan", mnt, env=env)
            assert "balance" in doc["maintain"]["refused"]
        # paused or not (on a loaded host the pause may come too late), no balance after
        # this: cancel waits for it to end
        fsutil.run(["btrfs", "balance", "cancel", str(mnt)], check=False)
        # the lock of 'balance misplaced' held
        lockdir = Path(env["BTRFSX_STATE_DIR"]) / "relocate"
        lockdir.mkdir(parents=True)
        with open(lockdir / f"{fsid}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            rc, out, err = run_btrfsx("maintain", "run", mnt, check=1, env=env)
            assert "runs on this filesystem" in err


def test_degraded_refused(loopdevs, run_btrfsx, env):
    loops = loopdevs(2, size="512M")
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    second = loops.devs[1]
    fsutil.detach_loop(second)
    loops.devs.remove(second)
    fsutil.run(["btrfs", "device", "scan", "--forget"], check=False)
    with fsutil.mounted(loops.devs[:1], options="degraded") as mnt:
        rc, out, err = run_btrfsx("maintain", "run", mnt, check=1, env=env)
        assert "missing" in err or "degraded" in err, err


def test_bad_options(run_btrfsx, env, tmp_path):
    rc, out, err = run_btrfsx("maintain", "--help", env=env)
    assert "plan" in out and "run" in out
    rc, out, err = run_btrfsx("maintain", "run", "--help", env=env)
    assert "--budget" in out and "Exit status" in out
    for args in (["plan"], ["run"], ["plan", tmp_path, tmp_path], ["plan", "--dry-run", tmp_path],
                 ["run", "--budget", "x", tmp_path], ["run", "--budget", "-1", tmp_path],
                 ["run", "--budget", "", tmp_path], ["run", "--budget", "1e9", tmp_path],
                 ["run", "--window", "01:00", tmp_path],
                 ["run", "--window", "25:00-01:00", tmp_path],
                 ["run", "--window", "01:00-01:00", tmp_path],
                 ["run", "--window", "1:0-2:00", tmp_path],
                 ["run", "--textfile", "--budget", tmp_path],
                 ["run", "--policy", "--help", tmp_path],
                 ["run", "--progress", "--no-progress", tmp_path],
                 ["plan", "--progress", tmp_path], ["plan", "--cancel-on-eof", tmp_path],
                 ["run", "--bogus", tmp_path], ["frobnicate", tmp_path]):
        rc, out, err = run_btrfsx("maintain", *args, check=2, env=env)
        doc = json.loads(run_btrfsx("maintain", *args, fmt="json", check=2, env=env)[1])
        assert doc["error"]["exit_code"] == 2
    # a policy file named but missing: a failure, not the defaults
    rc, out, err = run_btrfsx("maintain", "plan", "--policy", tmp_path / "none.conf", tmp_path,
                              check=1, env=env)
    assert "none.conf" in err


def test_pace_from_the_monitors_history(loopdevs, run_btrfsx, env, tmp_path):
    """Samples every 6 hours of simulated time (BTRFSX_MONITOR_NOW) while small
    files grow the metadata: the pace, the days left, and a target in days."""
    loops = loopdevs(sizes=["1G"])
    fsutil.mkfs(loops.devs)
    t0 = 1_790_000_000
    with fsutil.mounted(loops.devs) as mnt:
        for i in range(12):
            d = mnt / f"d{i}"
            d.mkdir()
            for j in range(300):
                (d / f"f{j}").write_bytes(SMALL)
            os.sync()
            run_btrfsx("monitor", "record", mnt, env={**env, "BTRFSX_MONITOR_NOW": t0 + i * 21600})
        now = {**env, "BTRFSX_MONITOR_NOW": t0 + 12 * 21600}
        doc, _ = maintain(run_btrfsx, "plan", mnt, env=now)
        m = doc["maintain"]
        assert m["pace"] > 0 and m["before"]["days_left"] > 0
        assert abs(m["before"]["days_left"] - m["before"]["metadata_room"] / m["pace"]) < 0.1
        policy = tmp_path / "days.conf"
        policy.write_text("[default]\nmetadata-room-days = 3650\n")
        doc, _ = maintain(run_btrfsx, "plan", "--policy", policy, mnt, env=now, check=5)
        m = doc["maintain"]
        assert m["target_why"].startswith("metadata-room-days: 3650 days")
        assert m["target"] == pytest.approx(3650 * m["pace"], rel=0.01)
        # another history, with one sample of it: too little for a pace
        other = tmp_path / "other.db"
        run_btrfsx("monitor", "record", "--db", other, mnt, env=now)
        doc, _ = maintain(run_btrfsx, "plan", "--db", other, mnt, env=now)
        assert doc["maintain"]["pace"] is None and doc["maintain"]["before"]["days_left"] is None
        # a history named but missing: a failure, as a missing --policy file
        rc, out, err = run_btrfsx("maintain", "plan", "--db", tmp_path / "none.db", mnt,
                                  check=1, env=now)
        assert "--db" in err and "none.db" in err, err


def test_python_plan_and_run(trap, run_btrfsx, env):
    """btrfsx.maintain() (libbtrfsx's btrfsx_maintain()): the plan the
    command line shows, then the run."""
    import test_python as tp
    devs, mnt = trap
    pyenv = dict(os.environ, PYTHONPATH=str(tp.build_dir() / "libbtrfsx" / "python"),
                 PYTHONDONTWRITEBYTECODE="1", ASAN_OPTIONS="detect_leaks=0", **env)
    runtime = tp.sanitizer_runtime()
    if runtime:
        pyenv["LD_PRELOAD"] = runtime
    cli, _ = maintain(run_btrfsx, "plan", mnt, env=env)
    code = """
import json, math, sys, btrfsx
mnt, state, conf = sys.argv[1:4]
plan = btrfsx.maintain(mnt, plan_only=True, state_dir=state, policy_file=None)
run = btrfsx.maintain(mnt, state_dir=state)
print(json.dumps({
    "plan": {"status": plan.status.name, "actions": [(c.logical, c.used, c.reason.name, c.kind)
                                                   for c in plan.actions],
             "target": plan.target, "room": plan.before.metadata_room,
             "after": plan.after.metadata_room, "days": plan.before.days_left},
    "run": {"status": run.status.name, "moved": [c.logical for c in run.moved],
            "met": run.target_met, "fsid": run.fsid}}))
"""
    p = subprocess.run([tp.make_variable("PYTHON") or "python3", "-c", code, str(mnt),
                        env["BTRFSX_STATE_DIR"], env["BTRFSX_CONFIG_DIR"]],
                       capture_output=True, text=True, env=pyenv, timeout=300)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    m = cli["maintain"]
    assert got["plan"]["status"] == "PLANNED" and got["plan"]["days"] is None
    assert got["plan"]["actions"] == [[a["logical"], a["used"], "ROOM", "data"]
                                      for a in m["actions"]]
    assert got["plan"]["target"] == m["target"] and got["plan"]["room"] == \
        m["before"]["metadata_room"]
    assert got["run"]["status"] == "MET" and got["run"]["met"]
    assert got["run"]["moved"] == [a["logical"] for a in m["actions"]]
    assert got["run"]["fsid"] == m["fsid"]


def test_python_cancel_stops_after_the_chunk_moving(trap, run_btrfsx, env, tmp_path):
    """btrfsx.maintain(cancel=Event): set from another thread while the
    first chunk moves at 1 MiB/s, the run ends after it (STOPPED, that chunk
    moved) as SIGTERM ends the command's."""
    import test_python as tp
    devs, mnt = trap
    policy = tmp_path / "policy.conf"
    policy.write_text("[default]\nmetadata-room = 200M\nbusy-pressure = 0\nbudget = 1\n")
    plan, _ = maintain(run_btrfsx, "plan", "--policy", policy, mnt, env=env)
    actions = [a["logical"] for a in plan["maintain"]["actions"]]
    assert len(actions) >= 2, plan
    pyenv = dict(os.environ, PYTHONPATH=str(tp.build_dir() / "libbtrfsx" / "python"),
                 PYTHONDONTWRITEBYTECODE="1", ASAN_OPTIONS="detect_leaks=0", **env)
    runtime = tp.sanitizer_runtime()
    if runtime:
        pyenv["LD_PRELOAD"] = runtime
    code = """
import json, sys, threading, btrfsx
mnt, state, policy = sys.argv[1:4]
cancel, out = threading.Event(), {}
def run():
    out["result"] = btrfsx.maintain(mnt, state_dir=state, policy_file=policy, cancel=cancel)
worker = threading.Thread(target=run)
worker.start()
print("started", flush=True)
sys.stdin.readline()
cancel.set()
worker.join(120)
r = out["result"]
print(json.dumps({"status": r.status.name, "moved": [c.logical for c in r.moved],
                  "reason": r.reason}))
"""
    proc = subprocess.Popen([tp.make_variable("PYTHON") or "python3", "-c", code, str(mnt),
                             env["BTRFSX_STATE_DIR"], str(policy)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=pyenv)
    try:
        assert proc.stdout.readline().strip() == "started", proc.stderr.read()
        deadline = time.monotonic() + 120
        while actions[0] in chunk_logicals(mnt) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert actions[0] not in chunk_logicals(mnt), "the first chunk did not move in 120 s"
        out, err = proc.communicate("\n", timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    got = json.loads(out.splitlines()[-1])
    assert got["status"] == "STOPPED" and got["moved"] == actions[:1], got


def test_busy_device_pauses_the_run(trap, btrfsx, env, tmp_path):
    """A reader keeps the device busy (its io_ticks) while the run is about to
    move its first chunk: the run pauses until the reader stops."""
    devs, mnt = trap
    policy = tmp_path / "busy.conf"
    # busy a fifth of the second: a reader of a loop device keeps it far busier
    policy.write_text("[default]\nbudget = none\nbusy-pressure = 40\nbusy-device = 20\n")
    reader = subprocess.Popen(["sh", "-c", f"while :; do dd if={devs[0]} of=/dev/null bs=1M "
                               "iflag=direct status=none; done"], start_new_session=True)
    try:
        run = subprocess.Popen([btrfsx, "--format", "json", "maintain", "run", "--policy",
                                str(policy), str(mnt)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env))
        time.sleep(4)
    finally:
        os.killpg(reader.pid, signal.SIGTERM)
        reader.wait()
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    doc = json.loads(out)["maintain"]
    assert doc["status"] == "target-met"
    # at least one pause of 5 seconds while the reader ran
    assert doc["paused_seconds"] >= 5, doc


def test_unmounted_mid_run_says_so(trap, btrfsx, run_btrfsx, env, tmp_path):
    """The filesystem unmounted (lazily: the run holds it open) after the
    first chunk: the run stops with a message naming the mountpoint, what
    it moved before is reported, and nothing more moves."""
    devs, mnt = trap
    # 4 MiB/s: some 8 s of waiting after the first chunk, all the unmount needs
    with slow_run(mnt, btrfsx, run_btrfsx, env, tmp_path, budget=4) as (proc, actions, _):
        fsutil.run(["umount", "-l", str(mnt)])
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    doc = json.loads(out)["maintain"]
    assert doc["status"] == "failed" and not doc["target_met"], doc
    assert f"{mnt}: not on a mounted btrfs filesystem" in doc["reason"]
    assert f"{mnt}: not on a mounted btrfs filesystem" in err
    assert [c["logical"] for c in doc["moved"]] == actions[:1]
    with fsutil.mounted(devs) as again:
        left = chunk_logicals(again)
    assert actions[0] not in left and set(actions[1:]) <= left
