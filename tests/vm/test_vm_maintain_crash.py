# SPDX-License-Identifier: GPL-2.0-or-later
"""Power loss during `btrfsx maintain run` (issue 37), at the crash points
of one run.

`maintain run` moves each chunk it chose with a kernel balance of that chunk
alone, as `balance misplaced` does (tests/vm/test_vm_relocate_crash.py, whose
recording and checks this shares through crashpoints.py): what a crash
leaves is what the kernel's relocation leaves. The base image is the trap of
the issue, made on the host: one 512 MiB device, data single, metadata dup,
32 MiB files until full, every other one deleted (the data chunks hold the
device at half use), then small files until the metadata room is below
`maintain`'s default target, and a manifest of files to verify. One guest
(v12; any kernel would do, no hints are involved) mounts it as a slice of a
`log-writes` device and runs `btrfsx maintain run` between two marks: it
moves data chunks until a metadata chunk has room.

On the host the log is replayed up to each crash point; every distinct
state must pass `btrfs check`, mount read-only with every file intact, and
mount read-write, where the kernel resumes the balance whose item is on
disk; once that has ended the next `maintain run` must go on: exit 0, the
target met (or nothing left to do), every file intact, `btrfs check` clean,
and a plan after it with nothing to do.

``BTRFSX_VM_CRASH_POINTS`` (default 8 here) bounds the states checked.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

import vmharness
from crashpoints import checked_state, counts, recorded_relocation, replay_relocation
from helpers import fsutil

MiB = 1 << 20
SIZE = 512 * MiB
LOG_SIZE = 768 * MiB
DEFAULT_POINTS = 8
SMALL = b"m" * 1800
DONE = {"target-met", "nothing-to-do"}


def own_state(directory: Path) -> dict:
    """A state and an (empty) configuration directory: the defaults' policy."""
    (directory / "etc").mkdir(exist_ok=True)
    return {"BTRFSX_STATE_DIR": str(directory / "state"),
            "BTRFSX_CONFIG_DIR": str(directory / "etc")}


def make_trap(mnt: Path) -> None:
    """The data chunks take the device at half use; then metadata used until
    the room is below the default target (`maintain plan` says so)."""
    big = mnt / "trap-big"
    big.mkdir()
    block = b"\x5a" * MiB
    n = 0
    try:
        while True:
            with open(big / f"f{n}", "wb") as f:
                for _ in range(32):
                    f.write(block)
            n += 1
    except OSError:
        (big / f"f{n}").unlink(missing_ok=True)
    for i in range(0, n, 2):
        (big / f"f{i}").unlink()
    small = mnt / "trap-small"
    small.mkdir()
    for i in range(6000):
        (small / f"s{i}").write_bytes(SMALL)
    fsutil.run(["btrfs", "filesystem", "sync", str(mnt)])


def make_base(directory: Path) -> tuple[list[Path], dict, dict]:
    """The image before the run, the files' manifest, and the host's plan."""
    images = vmharness.make_disks(directory / "base", [SIZE])
    env = own_state(directory)
    with fsutil.LoopDevices(images) as loops:
        fsutil.mkfs(loops.devs, data="single", metadata="dup")
        with fsutil.mounted(loops.devs) as mnt:
            manifest = fsutil.fill_files(mnt, big_files=2, big_size=4 * MiB, small_files=30)
            make_trap(mnt)
            plan = fsutil.btrfsx_json("maintain", "plan", mnt, env=env)["maintain"]
    return images, manifest, plan


@pytest.fixture(scope="module")
def recorded(vm_ready, tmp_path_factory):
    directory = tmp_path_factory.mktemp("maintain-crash")
    try:
        images, manifest, plan = make_base(directory)
        with recorded_relocation(directory, images, manifest,
                                 "btrfsx --format json maintain run",
                                 "btrfsx --format json maintain plan", LOG_SIZE,
                                 "maintain", timeout=900) as rec:
            rec.extra["plan"] = plan
            yield rec
    finally:
        vmharness.remove_disks(list((directory / "base").glob("*.img")))


def maintain_doc(text: str) -> dict:
    start = text.find('{"__header"')
    assert start >= 0, text
    return json.JSONDecoder().raw_decode(text, start)[0]["maintain"]


@dataclass(frozen=True)
class State:
    resumed: bool            # a balance item on disk: the kernel went on with its chunk
    moved: int               # chunks the next run moved
    status: str


def check_state(images, manifest, env) -> State:
    """The checks of one crash state (module docstring)."""
    with checked_state(images, manifest) as (mnt, resumed):
        rc, out, err = fsutil.run_btrfsx("maintain", "run", mnt, fmt="json", check=False,
                                         env=env)
        run = maintain_doc(out)
        assert rc == 0 and run["status"] in DONE, (run, err)
        after = fsutil.btrfsx_json("maintain", "plan", mnt, env=env)["maintain"]
        assert after["status"] == "nothing-to-do", after
    return State(resumed, len(run.get("moved", [])), run["status"])


def test_the_recorded_run_meets_the_target(recorded):
    res = recorded.res
    assert recorded.extra["plan"]["status"] == "planned", recorded.extra["plan"]
    assert "mount_failed" not in res.results and "stuck" not in res.results, res.console[-12000:]
    rc, text = res.output("before")
    assert maintain_doc(text)["status"] == "planned", text
    rc, text = res.output("relocate")
    run = maintain_doc(text)
    assert rc == 0 and run["status"] == "target-met" and run["moved"], text
    rc, text = res.output("after")
    assert rc == 0 and maintain_doc(text)["status"] == "nothing-to-do", text
    assert res.output("check")[0] == 0, res.output("check")[1]


def test_power_loss_during_maintain_run(recorded, tmp_path):
    rc, text = recorded.res.output("relocate")
    assert rc == 0, text          # (the test above says more)
    env = own_state(tmp_path)
    states, entries, points, total = replay_relocation(
        recorded, tmp_path, DEFAULT_POINTS,
        lambda images: check_state(images, recorded.manifest, env))
    writes, flushes = counts(entries)
    resumed = [s for s in states if s.resumed]
    print(f"maintain run: log of {len(entries)} entries ({writes} writes, {flushes} "
          f"flushes); {len(points)} of {total} crash points replayed, {len(states)} distinct "
          f"states; the kernel resumed its balance in {len(resumed)}; states by the next "
          f"run's (status, chunks moved): "
          f"{dict(sorted(Counter((s.status, s.moved) for s in states).items()))}")
    assert states
