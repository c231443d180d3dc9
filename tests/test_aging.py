# SPDX-License-Identifier: GPL-2.0-or-later
"""The aging harness (tests/helpers/aging.py): a seed always gives the same past, the
seeds of a run cover every profile, hinted and unhinted, and an aged
filesystem really has a past (a clean ``btrfs check``, free space cut into
pieces inside its data block groups, partly used chunks)."""

from __future__ import annotations

import re

import pytest

from helpers import aging, fsutil


def test_a_seed_is_one_past():
    for seed in range(40):
        assert aging.make_spec(seed) == aging.make_spec(seed)
    assert aging.make_spec(1) != aging.make_spec(2)
    assert aging.make_spec(4, hinted=True).hinted and not aging.make_spec(4, hinted=False).hinted


def test_thirty_seeds_cover_the_profiles_and_the_workloads():
    specs = [aging.make_spec(seed) for seed in range(30)]
    assert {s.data for s in specs} == set(aging.DATA_PROFILES)
    assert {s.metadata for s in specs} == set(aging.META_PROFILES)
    ops = {step[0] for s in specs for step in s.steps}
    assert ops == {"small", "write", "snapshot", "delete", "overwrite", "reflink", "balance",
                   "add", "remove", "delsnap"}
    assert any(s.hinted for s in specs) and any(not s.hinted for s in specs)
    for s in specs:
        assert sum(s.sizes) <= aging.MAX_TOTAL
        assert len(s.sizes) >= max(aging.PROFILE_MIN[s.data], aging.PROFILE_MIN[s.metadata])


def test_seeds_follow_the_environment(monkeypatch):
    monkeypatch.setenv("BTRFSX_AGED", "500")
    monkeypatch.setenv("BTRFSX_AGED_SEED", "7")
    assert aging.seeds() == range(7, 507)


def _free_extents_per_data_group(dev: str) -> list[int]:
    """Free space extents of each data block group (btrfs-progs' free space tree dump)."""
    chunks = fsutil.run(["btrfs", "inspect-internal", "dump-tree", "-t", "chunk", dev]).stdout
    data = {int(m.group(1)) for m in re.finditer(
        r"CHUNK_ITEM (\d+)\).*\n.*type DATA", chunks)}
    fst = fsutil.run(["btrfs", "inspect-internal", "dump-tree", "-t", "10", dev]).stdout
    counts = {start: 0 for start in data}
    for m in re.finditer(r"key \((\d+) FREE_SPACE_EXTENT (\d+)\)", fst):
        start = int(m.group(1))
        group = max((g for g in data if g <= start), default=None)
        if group is not None:
            counts[group] += 1
    return list(counts.values())


@pytest.mark.root
def test_an_aged_filesystem_has_a_past(aged, tmp_path):
    fs = aged.get(1)
    assert "@@R age_write" in fs.log and "@@R age_overwrite" in fs.log
    images = fs.copy(tmp_path / "copy")
    try:
        with fsutil.LoopDevices(images, read_only=True) as loops:
            fsutil.run(["btrfs", "device", "scan", *loops.devs])
            fsutil.run(["btrfs", "check", "--readonly", loops.devs[0]])
            pieces = _free_extents_per_data_group(loops.devs[0])
            assert sum(pieces) > len(pieces), f"free space is not fragmented: {pieces}"
            with fsutil.mounted(loops.devs, options="ro") as mnt:
                files = list((mnt / "vol").iterdir())
                assert len(files) > 100
    finally:
        aging.remove_images(images)
    assert aged.get(1) is fs      # made once per session
