"""btrfsx balance misplaced, on loop devices under the host kernel.

The host kernel ignores allocation hints, so a relocation here moves chunks
only with --force and the kernel places them by its own (mainline) rules:
what these tests check is the engine around the kernel's balance calls, one
chunk per call, against the allocator model run without hints (every new
chunk where the model says), the checksums of the files, btrfs check, the
limits, the plan, progress, the lock, SIGINT, and the refusals. The
placement under hints is proven in the guests (tests/vm/test_vm_relocate.py).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

from helpers import fsutil
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
def misplaced_fs(loopdevs, run_btrfsx):
    """4 x 1 GiB, raid1: mkfs.btrfs puts metadata and the first data chunk
    on devids 3, 4, the kernel the next data chunk on 1, 2; hints set
    offline. Yields (devs, mount point, the files' checksums)."""
    loops = loopdevs(4, size="1G")
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    with fsutil.mounted(loops.devs) as mnt:
        for i in range(5):
            with open(mnt / f"f{i}", "wb") as f:
                f.write(os.urandom(50 * MiB))
        os.mkdir(mnt / "small")
        for i in range(100):
            (mnt / "small" / str(i)).write_bytes(os.urandom(3000))
    for dev, hint in zip(loops.devs, HINTS):
        run_btrfsx("property", "set", dev, "allocation_hint", hint)
    with fsutil.mounted(loops.devs) as mnt:
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
        assert m["as_modelled"], m
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
    # unmounted: the report reads the devices (the stored hints)
    fsutil.umount(mnt)
    rc, out, err = run_btrfsx("filesystem", "misplaced", *devs, check=4, env=state)
    assert "hints_effective              yes" in out


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
        while "moved 1/" not in errfile.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "pausing" in errfile.read_text() or "moved 1/" in errfile.read_text()
        rc, out, err = run_btrfsx("balance", "misplaced", "--force", mnt, check=1, env=state)
        assert "another 'balance misplaced' runs on this filesystem" in err
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
