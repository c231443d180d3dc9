# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx balance misplaced, on loop devices under the host kernel.

The host kernel ignores allocation hints, so a relocation here moves chunks
only with --force and the kernel places them by its own (mainline) rules:
what these tests check is the engine around the kernel's balance calls, one
chunk per call, on a layout where mainline places by free space what the
hints want too (every new chunk where the model with the hints says), the
checksums of the files, btrfs check, the limits, the plan, progress, the
lock, SIGINT, and the refusals; and, on issue 30's layout, that a chunk the
kernel puts back where the hints forbid stops a forced run. The placement
under hints is proven in the guests (tests/vm/test_vm_relocate.py).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

from helpers import aging, fsutil, json_schemas
from helpers import oracle
from helpers.fsutil import MiB
from helpers.misplaced_oracle import chunk_tree, expected

pytestmark = pytest.mark.root

# devid 1 metadata_only: data on it is forbidden; metadata and system on the
# data_preferred devids 3, 4 are off-preference (1 and 2 rank better).
HINTS = ["metadata_only", "metadata_preferred", "data_preferred", "data_preferred"]


@pytest.fixture
def state(tmp_path):
    return {"BTRFSX_STATE_DIR": str(tmp_path / "state")}


@pytest.fixture
def misplaced_fs(loopdevs, run_btrfsx, aged):
    """raid1 on 1 GiB + 1040 + 1280 + 1320 MiB: made on devids 1, 2 with
    the files (in mkfs's one data chunk); devids 3, 4 added, and a metadata
    balance puts metadata and system on them; hints set offline. The host
    kernel ignores hints and places by free space, which here is where the
    hints want it too: the forbidden data goes to devids 3, 4 (more free
    space), then the off-preference system and metadata to devids 1, 2,
    which the data left. No two devices tie on free space, so the stripe
    order is the same with and without hints (the hint kernels sort ties
    differently). Settled (tests/helpers/aging.py settle) before it is
    used. Yields (devs, mount point, the files' checksums)."""
    loops = loopdevs(sizes=["1G", "1040M", "1280M", "1320M"])
    fsutil.mkfs(loops.devs[:2], data="raid1", metadata="raid1")
    with fsutil.mounted(loops.devs[:2]) as mnt:
        # 60 % of that chunk (small files or 80 % and the kernel allocates another)
        for i in range(3):
            with open(mnt / f"f{i}", "wb") as f:
                f.write(os.urandom(20 * MiB))
        os.sync()
        fsutil.run(["btrfs", "device", "add", "-K", *loops.devs[2:], str(mnt)])
        fsutil.run(["btrfs", "balance", "start", "-m", str(mnt)])
    for dev, hint in zip(loops.devs, HINTS):
        run_btrfsx("property", "set", dev, "allocation_hint", hint)
    with fsutil.mounted(loops.devs) as mnt:
        # At rest before any model looks: a chunk the cleaner has yet to
        # delete would change where the kernel puts a relocated one.
        aging.settle(mnt, aged.path_env)
        sums = {p: fsutil.sha256_file(mnt / p) for p in sorted(files_of(mnt))}
        yield loops.devs, mnt, sums


def files_of(mnt):
    return [os.path.relpath(os.path.join(d, f), mnt)
            for d, _, fs in os.walk(mnt) for f in fs]


def chunks_now(devs):
    subprocess.run(["sync"], check=True)
    return chunk_tree(oracle.progs_dump_tree_text(devs, "chunk"))


def balance(run_btrfsx, mnt, *opts, rc=0, env=None):
    code, out, err = run_btrfsx("balance", "misplaced", "--no-progress", *opts, mnt,
                                fmt="json", check=rc, env=env)
    assert "Sanitizer" not in err and "runtime error" not in err, err
    return json.loads(out)["balance"] if out.strip() else None, err


def test_forced_relocation_moves_only_the_misplaced_chunks(misplaced_fs, run_btrfsx,
                                                           btrfsx_json, state):
    devs, mnt, sums = misplaced_fs
    before = chunks_now(devs)
    want = expected(before, HINTS)
    assert {"forbidden", "off-preference"} == set(want.values()), want
    report = btrfsx_json("filesystem", "misplaced", mnt, check=4, env=state)["misplaced"]
    assert {c["logical"]: c["class"] for c in report["chunks"]} == want

    run, err = balance(run_btrfsx, mnt, "--force", env=state)
    assert "ignores allocation hints" in err
    assert run["status"] == "finished" and run["forced"] is True
    assert [c["logical"] for c in run["planned"]] == [c["logical"] for c in report["chunks"]]
    moved = {m["logical"] for m in run["moved"]}
    assert moved == set(want)
    after = chunks_now(devs)
    # the well-placed chunks stayed where they were, the misplaced ones went
    for logical, chunk in before.items():
        assert (logical in after) == (logical not in want), logical
        if logical in after:
            assert after[logical] == chunk
    # every new chunk where the model (mainline: this kernel ignores hints) said
    for m in run["moved"]:
        assert m["as_modelled"], (m, run["planned"])
        for n in m["new_chunks"]:
            assert n["as_modelled"] and after[n["logical"]][1] == n["devids"], (n, after)
    assert run["bytes_moved"] == sum(m["used"] for m in run["moved"])
    assert run["remaining_chunks"] == len(expected(after, HINTS))
    assert {p: fsutil.sha256_file(mnt / p) for p in sorted(files_of(mnt))} == sums
    # the copy rate was recorded: the report now has an estimate
    again = btrfsx_json("filesystem", "misplaced", mnt, check=False, env=state)["misplaced"]
    assert again["copy_rate"] > 0
    fsutil.umount(mnt)
    oracle.run_progs(["check", "--readonly", devs[0]])


def test_dry_run_limit_forbidden_only_and_max_bytes(misplaced_fs, run_btrfsx, btrfsx_json,
                                                     state):
    devs, mnt, _ = misplaced_fs
    before = chunks_now(devs)
    report = btrfsx_json("filesystem", "misplaced", mnt, check=4, env=state)["misplaced"]
    order = [c["logical"] for c in report["chunks"]]

    plan, _ = balance(run_btrfsx, mnt, "--force", "--dry-run", env=state)
    assert plan["status"] == "dry run" and plan["moved"] == []
    for pause in ("30", "2s", "2m", "1h"):
        balance(run_btrfsx, mnt, "--force", "--dry-run", "--pause", pause, env=state)
    assert [c["logical"] for c in plan["planned"]] == order
    assert chunks_now(devs) == before

    forbidden = [c["logical"] for c in report["chunks"] if c["class"] == "forbidden"]
    plan, _ = balance(run_btrfsx, mnt, "--force", "--dry-run", "--forbidden-only", env=state)
    assert [c["logical"] for c in plan["planned"]] == forbidden

    smallest = report["chunks"][0]["used"]
    run, err = balance(run_btrfsx, mnt, "--force", "--max-bytes", str(max(smallest // 2, 1)),
                       env=state)
    assert run["status"] == "limit reached" and run["moved"] == []
    assert "more than --max-bytes" in err

    run, _ = balance(run_btrfsx, mnt, "--force", "--limit", "1", env=state)
    assert run["status"] == "limit reached"
    assert [m["logical"] for m in run["moved"]] == order[:1]

    run, _ = balance(run_btrfsx, mnt, "--force", "--forbidden-only", env=state)
    assert run["status"] == "finished"
    assert {m["class"] for m in run["moved"]} <= {"forbidden"}


def test_text_output_progress_and_exit_codes(misplaced_fs, run_btrfsx, state):
    devs, mnt, _ = misplaced_fs
    rc, out, err = run_btrfsx("filesystem", "misplaced", mnt, check=4, env=state)
    assert "forbidden: chunks" in out and "off-preference: chunks" in out
    assert "forbidden data raid1 logical" in out and " model " in out
    rc, out, err = run_btrfsx("balance", "misplaced", "--force", "--progress", "--limit", "1",
                              mnt, env=state)
    assert "moved 1/1 chunks" in err and "ETA" in err
    assert re.search(r"^\s*status\s+limit reached$", out, re.M), out
    assert "moved (to: new chunk:devids):" in out
    # for programs: each report a JSON line of its own, as the schema's $defs/progress says
    rc, out, err = run_btrfsx("balance", "misplaced", "--force", "--progress", "--limit", "1",
                              mnt, fmt="json", env=state)
    lines = [json.loads(line) for line in err.splitlines() if line.startswith('{"progress"')]
    assert lines and "\r" not in err, err
    for line in lines:
        json_schemas.validate_def("balance misplaced", "progress", line)
    last = lines[-1]["progress"]
    doc = json.loads(out)["balance"]
    assert (last["chunks_done"], last["bytes_done"]) == (doc["chunks_moved"], doc["bytes_moved"])
    # unmounted: the report reads the devices (the stored hints)
    fsutil.umount(mnt)
    rc, out, err = run_btrfsx("filesystem", "misplaced", *devs, check=4, env=state)
    assert "hints_effective              yes" in out


def state_files(state):
    root = state["BTRFSX_STATE_DIR"]
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, dirs, files in os.walk(root) for n in dirs + files)


def test_read_only_runs_leave_the_state_dir_alone(misplaced_fs, run_btrfsx, state):
    """Issue 39, defect 5: a run that changes nothing takes no lock file and writes
    nothing in the state directory ('balance misplaced --dry-run' made
    relocate/<fsid>.lock)."""
    devs, mnt, _ = misplaced_fs
    os.makedirs(state["BTRFSX_STATE_DIR"])
    for args, rc in ((["balance", "misplaced", "--dry-run", mnt], 0),
                     (["balance", "misplaced", "--dry-run", "--force", mnt], 0),
                     (["filesystem", "misplaced", mnt], 4),
                     (["filesystem", "plan", mnt, "--relocate"], 5),
                     (["filesystem", "usage", mnt], 0),
                     (["device", "usage", mnt], 0)):
        run_btrfsx(*args, check=rc, env=state)
        assert state_files(state) == [], (args, state_files(state))


def test_second_run_refused_and_sigint_between_chunks(misplaced_fs, btrfsx, run_btrfsx,
                                                      state, tmp_path):
    devs, mnt, _ = misplaced_fs
    env = dict(os.environ, **state)
    errfile = tmp_path / "progress"
    with open(errfile, "w") as err:
        first = subprocess.Popen([btrfsx, "--format", "json", "balance", "misplaced", "--force",
                                  "--progress", "--pause", "60", str(mnt)],
                                 stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while '"chunks_done": 1' not in errfile.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert '"chunks_done": 1' in errfile.read_text()
        rc, out, err = run_btrfsx("balance", "misplaced", "--force", mnt, check=1, env=state)
        assert "another 'balance misplaced' runs on this filesystem" in err
        # a dry run takes no lock, but still sees the one held
        plan, _ = balance(run_btrfsx, mnt, "--dry-run", "--force", env=state)
        assert "another 'balance misplaced' runs on this filesystem" in plan["refused"]
        first.send_signal(signal.SIGINT)
        out, _ = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 1
    doc = json.loads(out)
    assert doc["balance"]["status"] == "cancelled"
    assert doc["balance"]["reason"].startswith("cancelled between chunks")
    assert len(doc["balance"]["moved"]) == 1
    assert "cancelled" in doc["error"]["message"]
    # running again goes on with what is left
    run, _ = balance(run_btrfsx, mnt, "--force", env=state)
    assert run["status"] == "finished"


def test_refusals(loopdevs, run_btrfsx, tmp_path, state):
    loops = loopdevs(2, size="512M")
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    # raid1 data then has one device: the guard rail refuses unless forced
    run_btrfsx("property", "set", "-f", loops.devs[0], "allocation_hint", "metadata_only")
    # unmounted: a device is no mount point, and the filesystem is not mounted
    rc, out, err = run_btrfsx("balance", "misplaced", loops.devs[0], check=1, env=state)
    assert "not mounted" in err
    with fsutil.mounted(loops.devs) as mnt:
        rc, out, err = run_btrfsx("balance", "misplaced", mnt, check=1, env=state)
        assert "ignores allocation hints" in err and "--force" in err
        assert out == ""
        # a member device stands for its mount point
        rc, out, err = run_btrfsx("balance", "misplaced", loops.devs[1], check=1, env=state)
        assert f"{mnt}: the running kernel ignores allocation hints" in err
    with fsutil.mounted(loops.devs, options="ro") as mnt:
        rc, out, err = run_btrfsx("balance", "misplaced", "--force", mnt, check=1, env=state)
        assert "mounted read-only" in err
    rc, out, err = run_btrfsx("balance", "misplaced", tmp_path, check=1, env=state)
    assert "not on a mounted btrfs" in err
    rc, out, err = run_btrfsx("balance", "misplaced", tmp_path / "nothing", check=1, env=state)
    assert "No such file" in err
    for bad in (["--limit", "0"], ["--limit", "x"], ["--max-bytes", "lots"], ["--pause", "soon"],
                ["--pause", "2d"], ["--pause", "500ms"], ["--progress", "--no-progress"], []):
        rc, out, err = run_btrfsx("balance", "misplaced", *bad, *([] if not bad else [tmp_path]),
                                  check=2, env=state)
    rc, out, err = run_btrfsx("balance", "misplaced", tmp_path, tmp_path, check=2, env=state)


def test_room_check_refuses_before_moving(loopdevs, run_btrfsx, tmp_path, state):
    """Every device full of data, then devids 1 and 2 made metadata_only: their
    data chunks are forbidden, but devids 3 and 4 (data_only) have no room
    for them. A kernel with hint support is faked through sysfs (the host
    kernel has none), so the model's room check runs: nothing moves, and the
    message says which devices lack how much."""
    from test_filesystem import fake_sysfs
    loops = loopdevs(4, size="512M")
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    with fsutil.mounted(loops.devs) as mnt:
        i = 0
        while True:
            with open(mnt / f"fill{i}", "wb") as f:
                try:
                    os.posix_fallocate(f.fileno(), 0, 32 * MiB)
                except OSError:
                    break
            i += 1
    hints = ["metadata_only", "metadata_only", "data_only", "data_only"]
    for dev, hint in zip(loops.devs, hints):
        run_btrfsx("property", "set", "-f", dev, "allocation_hint", hint)
    env = dict(state, **fake_sysfs(tmp_path / "sys", fsutil.read_fsid(loops.devs[0]),
                                   {i + 1: h for i, h in enumerate(hints)}))
    with fsutil.mounted(loops.devs) as mnt:
        before = chunks_now(loops.devs)
        plan, err = balance(run_btrfsx, mnt, "--dry-run", rc=1, env=env)
        assert plan["status"] == "no room" and plan["hints_effective"] is True
        assert plan["planned"] and plan["moved"] == []
        assert "data needs" in err and "more on its preferred devices" in err
        assert "devid 3 (data_only), devid 4 (data_only)" in err
        balance(run_btrfsx, mnt, rc=1, env=env)
        assert chunks_now(loops.devs) == before


def fill_to_enospc(mnt):
    """Data until no chunk of any kind fits: fallocated files, smaller and
    smaller (the kernel shrinks its last data chunks to the holes)."""
    i = 0
    for size in (64 * MiB, 16 * MiB, 4 * MiB, MiB):
        while True:
            with open(mnt / f"fill{i}", "wb") as f:
                try:
                    os.posix_fallocate(f.fileno(), 0, size)
                except OSError:
                    break
            i += 1
    os.sync()


def misplaced_count(btrfsx_json, mnt, state):
    return len(btrfsx_json("filesystem", "misplaced", mnt, check=4, env=state)
               ["misplaced"]["chunks"])


def test_forced_where_hints_are_ignored_stops_at_a_forbidden_chunk(loopdevs, run_btrfsx,
                                                                    btrfsx_json, state):
    """Issue 30's reproduction: raid1 on 1 + 1 + 3 + 3 GiB, devids 1-2
    metadata_only and 3-4 data_only set offline; mkfs put system and
    metadata on 3, 4. The host kernel ignores hints: forced, it puts the
    first chunk back on 3, 4, which is no improvement and not what the
    model predicted, and the run stops there with the reason and exit 1.
    A dry run needs no --force and says why a real run is refused; after an
    early stop (the kernel's ENOSPC before the first chunk) what remains is
    what filesystem misplaced counts."""
    loops = loopdevs(sizes=["1G", "1G", "3G", "3G"])
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    for dev, hint in zip(loops.devs, ["metadata_only"] * 2 + ["data_only"] * 2):
        run_btrfsx("property", "set", dev, "allocation_hint", hint)
    with fsutil.mounted(loops.devs) as mnt:
        report = btrfsx_json("filesystem", "misplaced", mnt, check=4, env=state)["misplaced"]
        assert {c["type"] for c in report["chunks"]} == {"system", "metadata"}
        assert all(c["devids"] in ([3, 4], [4, 3]) and c["model"]["devids"] in ([1, 2], [2, 1])
                   for c in report["chunks"]), report

        plan, err = balance(run_btrfsx, mnt, "--dry-run", env=state)
        assert plan["status"] == "dry run" and plan["moved"] == []
        assert "ignores allocation hints" in plan["refused"] and "--force" in plan["refused"]
        assert [c["logical"] for c in plan["planned"]] == [c["logical"] for c in report["chunks"]]
        assert plan["remaining_chunks"] == len(report["chunks"])
        rc, out, _ = run_btrfsx("balance", "misplaced", "--dry-run", mnt, env=state)
        assert re.search(r"^a real run is refused\s+.*ignores allocation hints", out, re.M), out

        run, err = balance(run_btrfsx, mnt, "--force", rc=1, env=state)
        assert run["status"] == "placed no better" and len(run["moved"]) == 1, run
        new = run["moved"][0]["new_chunks"]
        assert new and not any(n["improves"] or n["as_modelled"] for n in new), run
        assert not run["moved"][0]["as_modelled"]
        assert run["moved"][0]["devids"] in ([3, 4], [4, 3]) and new[0]["devids"] in ([3, 4], [4, 3])
        assert "which the hints forbid (devid" in run["reason"] and "data_only" in run["reason"]
        assert run["reason"] in err
        assert run["remaining_chunks"] == misplaced_count(btrfsx_json, mnt, state)

        fill_to_enospc(mnt)
        run, err = balance(run_btrfsx, mnt, "--force", rc=1, env=state)
        assert run["status"] == "out of space" and run["moved"] == [], run
        assert run["remaining_chunks"] == misplaced_count(btrfsx_json, mnt, state) >= 2
        assert run["remaining_bytes"] > 0
    # read-only: a dry run still plans, and names both refusals
    with fsutil.mounted(loops.devs, options="ro") as mnt:
        plan, _ = balance(run_btrfsx, mnt, "--dry-run", env=state)
        assert "mounted read-only" in plan["refused"]
        assert "ignores allocation hints" in plan["refused"]
        assert plan["remaining_chunks"] == len(plan["planned"]) >= 2
    oracle.run_progs(["check", "--readonly", loops.devs[0]])
