# SPDX-License-Identifier: GPL-2.0-or-later
"""Power loss during `btrfsx balance misplaced`, at every crash point of one
run (issue 30).

The writer here is the kernel: `balance misplaced` moves each misplaced
chunk with a kernel balance of that chunk alone, so what a crash leaves is
what the kernel's relocation and its transactions leave, and what btrfsx must
cope with is a filesystem in the middle of that. The base images are made on
the host: raid1 on 256 + 256 + 768 + 768 MiB, made on devids 1 and 2 with
files, devids 3 and 4 added empty, hints set offline (1, 2 metadata_only;
3, 4 data_only): every data chunk sits on devids 1, 2, where the hints
forbid it. One guest with the v12 series (a kernel that honours hints)
mounts them with every member a slice of one `log-writes` device
(tests/vm/crashpoints.py) and runs `btrfsx balance misplaced` between two
marks: the data moves to devids 3, 4.

On the host the log is replayed onto fresh copies of the base images up to
each crash point (each write and each flush after the start mark; the
mount's own writes before it are in every prefix). Every distinct state
must:

* pass `btrfs check`, and mount read-only with every file intact;
* mount read-write, where the kernel resumes the balance whose item is on
  disk (the chunk being moved at the crash); once that has ended, the next
  `btrfsx balance misplaced` must move exactly the chunks still misplaced,
  finish, and leave nothing misplaced, every file intact and `btrfs check`
  clean. The host kernel ignores hints, so that run is forced; the layout is
  one where placing by free space puts data where the hints want it too
  (devids 3, 4 have the most room), so a forced run finishes.

The whole log replayed must give what the members held after the guest.
``BTRFSX_VM_CRASH_POINTS`` (default 8 here) bounds the states checked:
every commit is a flush point, so the flush points are spread over the run
first, then the first and the last write (crashpoints.crash_points);
``all`` checks every one.
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
SIZES = [256 * MiB, 256 * MiB, 768 * MiB, 768 * MiB]
HINTS = ["metadata_only", "metadata_only", "data_only", "data_only"]
LOG_SIZE = 512 * MiB
DEFAULT_POINTS = 8


def make_base(directory: Path) -> tuple[list[Path], dict]:
    """The images before the run, and the files' manifest."""
    images = vmharness.make_disks(directory / "base", SIZES)
    with fsutil.LoopDevices(images) as loops:
        fsutil.mkfs(loops.devs[:2], data="raid1", metadata="raid1")
        with fsutil.mounted(loops.devs[:2]) as mnt:
            manifest = fsutil.fill_files(mnt, big_files=3, big_size=8 * MiB, small_files=40)
            fsutil.run(["btrfs", "device", "add", "-K", *loops.devs[2:], str(mnt)])
        for dev, hint in zip(loops.devs, HINTS):
            fsutil.run_btrfsx("property", "set", dev, "allocation_hint", hint)
    return images, manifest


@pytest.fixture(scope="module")
def recorded(vm_ready, tmp_path_factory):
    directory = tmp_path_factory.mktemp("reloc-crash")
    try:
        images, manifest = make_base(directory)
        with recorded_relocation(directory, images, manifest,
                                 "btrfsx --format json balance misplaced --no-progress",
                                 "btrfsx --format json filesystem misplaced", LOG_SIZE,
                                 "relocation") as rec:
            yield rec
    finally:
        vmharness.remove_disks(list((directory / "base").glob("*.img")))


# ------------------------------------------------------------------ what a state must be

@dataclass(frozen=True)
class State:
    resumed: bool            # a balance item on disk: the kernel went on with its chunk
    moved: int               # by the next run: what was still misplaced once that ended


def check_state(images, manifest, env) -> State:
    """The checks of one crash state (module docstring)."""
    with checked_state(images, manifest) as (mnt, resumed):
        before = fsutil.btrfsx_json("filesystem", "misplaced", mnt, check=False,
                                    env=env)["misplaced"]["chunks"]
        rc, out, err = fsutil.run_btrfsx("balance", "misplaced", "--force", "--no-progress",
                                         mnt, fmt="json", check=False, env=env)
        run = json.loads(out)["balance"]
        assert rc == 0 and run["status"] == "finished", (run, err)
        assert {m["logical"] for m in run["moved"]} == {c["logical"] for c in before}, run
        after = fsutil.btrfsx_json("filesystem", "misplaced", mnt, env=env)
        assert after["misplaced"]["chunks"] == [], after
    return State(resumed, len(run["moved"]))


# ------------------------------------------------------------------ tests

def test_the_recorded_run_moves_every_misplaced_chunk(recorded):
    res = recorded.res
    assert "mount_failed" not in res.results and "stuck" not in res.results, res.console[-12000:]
    rc, doc, text = res.json("before")
    assert rc == 4, text
    planned = {c["logical"] for c in doc["misplaced"]["chunks"]}
    assert planned and {c["class"] for c in doc["misplaced"]["chunks"]} == {"forbidden"}
    rc, doc, text = res.json("relocate")
    assert rc == 0 and doc["balance"]["status"] == "finished", text
    assert {m["logical"] for m in doc["balance"]["moved"]} == planned
    assert all(n["as_modelled"] and n["improves"] for m in doc["balance"]["moved"]
               for n in m["new_chunks"]), doc
    assert res.json("after")[1]["misplaced"]["chunks"] == []
    assert res.output("check")[0] == 0, res.output("check")[1]


def test_power_loss_during_balance_misplaced(recorded, tmp_path):
    rc, text = recorded.res.output("relocate")
    assert rc == 0, text          # (the test above says more)
    env = {"BTRFSX_STATE_DIR": str(tmp_path / "state")}
    states, entries, points, total = replay_relocation(
        recorded, tmp_path, DEFAULT_POINTS,
        lambda images: check_state(images, recorded.manifest, env))
    writes, flushes = counts(entries)
    resumed = [s for s in states if s.resumed]
    print(f"balance misplaced: log of {len(entries)} entries ({writes} writes, {flushes} "
          f"flushes); {len(points)} of {total} crash points replayed, {len(states)} distinct "
          f"states; the kernel resumed its balance in {len(resumed)}; states by chunks the "
          f"next run moved: {dict(sorted(Counter(s.moved for s in states).items()))}")
    # the crash points fell inside the kernel's balance too, not only between chunks
    assert resumed, states

