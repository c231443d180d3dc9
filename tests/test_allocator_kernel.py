# SPDX-License-Identifier: GPL-2.0-or-later
"""The allocator model without hints against the running kernel.

Filesystems on uneven loop devices (1, 2, 3 and 6 GiB, and a wider second
set) are filled with data until ENOSPC (fallocate: data chunks are allocated,
no bytes are written, the images stay sparse). Then:

* every chunk the kernel created during the fill is replayed through the
  model (tests/helpers/usage_replay.c, built against libbtrfsx_core): same type,
  stripe size, devices and physical offsets, in the kernel's order;
* ``btrfsx filesystem usage`` taken before the fill predicted the data
  capacity (``free_estimated``) within 1% of the bytes actually allocated.
"""
from __future__ import annotations

import pytest

from helpers import fsutil
from helpers import usage_fill

pytestmark = pytest.mark.root

PROFILES = ["single", "raid0", "raid1", "raid1c3", "raid10", "raid5", "raid6"]


@pytest.fixture(scope="module")
def replay_exe(tmp_path_factory):
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    exe = usage_fill.build_replay(tmp_path_factory.mktemp("replay"))
    if exe is None:
        pytest.skip("libbtrfsx_core.a not built")
    return exe


def check_fill(res: usage_fill.FillResult) -> None:
    assert res.written > 0
    assert res.replay_ok, res.replay_out
    assert res.replay.startswith("replayed ") and " 0 mismatches, 0 removed" in res.replay
    # The estimate is taken before the fill and counts free space in data
    # chunks exactly: it may only be above what fits by a few partial stripes.
    assert abs(res.error(res.ours)) < 0.01, (res.ours, res.written)
    assert res.ours >= res.written


@pytest.mark.parametrize("data", PROFILES)
def test_fill_uneven_devices(tmp_path, btrfsx, replay_exe, data):
    metadata = "raid1c3" if data in ("raid1c3", "raid6") else "raid1"
    res = usage_fill.fill_run(tmp_path, btrfsx, replay_exe, data, metadata)
    check_fill(res)
    # No hints: the strict figure is the same allocator.
    assert res.ours_strict == res.ours


@pytest.mark.slow
@pytest.mark.parametrize("data", ["single", "raid1", "raid10", "raid5", "raid6"])
def test_fill_wider_uneven_set(tmp_path, btrfsx, replay_exe, data):
    """Six devices, more chunks per fill, devices levelling down one by one."""
    res = usage_fill.fill_run(tmp_path, btrfsx, replay_exe, data, "raid1",
                              sizes=("1G", "1536M", "2G", "3G", "5G", "7G"))
    check_fill(res)


def test_replay_detects_a_wrong_prediction(tmp_path, replay_exe):
    """The replay helper fails when the kernel's chunk differs from the model's."""
    before = tmp_path / "before.txt"
    after = tmp_path / "after.txt"
    before.write_text("dev 1 1073741824 0\ndev 2 2147483648 0\n")
    # A single data chunk: 10% of the 3 GiB filesystem (322122547 bytes),
    # rounded up to 16 MiB: 320 MiB, on devid 2 (most free) at 1 MiB.
    after.write_text(before.read_text() +
                     "ext 1 1048576 335544320 13631488\n"
                     "chunk 13631488 1 335544320 1 1 1048576\n")
    p = fsutil.run([str(replay_exe), "replay", str(before), str(after)], check=False)
    assert p.returncode == 1 and "MISMATCH" in p.stdout and "1 mismatches" in p.stdout
    after.write_text(before.read_text() +
                     "ext 2 1048576 335544320 13631488\n"
                     "chunk 13631488 1 335544320 1 2 1048576\n")
    p = fsutil.run([str(replay_exe), "replay", str(before), str(after)], check=False)
    assert p.returncode == 0, p.stdout
    assert p.stdout.splitlines() == [
        "ok chunk 13631488 type 0x1 kernel: ss 335544320 2@1048576",
        "replayed 1 chunks, 0 mismatches, 0 removed"]


def test_replay_honours_the_dumped_hints(tmp_path, replay_exe):
    """With devid 2 metadata_only the data chunk belongs on devid 1; a kernel
    without hint support (--ignore-hints) would have used devid 2."""
    before = tmp_path / "before.txt"
    after = tmp_path / "after.txt"
    before.write_text("dev 1 1073741824 0\ndev 2 2147483648 2\n")
    after.write_text(before.read_text() +
                     "ext 1 1048576 335544320 13631488\n"
                     "chunk 13631488 1 335544320 1 1 1048576\n")
    p = fsutil.run([str(replay_exe), "replay", str(before), str(after)], check=False)
    assert p.returncode == 0, p.stdout
    p = fsutil.run([str(replay_exe), "replay", "--ignore-hints", str(before), str(after)],
                   check=False)
    assert p.returncode == 1 and "MISMATCH" in p.stdout, p.stdout


def test_replay_frees_a_removed_chunk_the_kernel_reused(tmp_path, replay_exe):
    """The kernel's cleaner deleted data chunk A (emptied during the fill) and
    the next chunk took its place: the plain replay, with A still allocated,
    puts it in the hole between A and B; with A freed, that hole starts at
    A and the model agrees (the largest hole, first fit)."""
    mib = 1 << 20
    size = 320 * mib
    devs = "dev 1 1073741824 0\ndev 2 2147483648 0\n"

    def chunk(logical, devid, physical):
        return f"ext {devid} {physical} {size} {logical}\nchunk {logical} 1 {size} 1 {devid} {physical}\n"

    a, b, c = 13631488, 13631488 + size, 13631488 + 2 * size
    before = tmp_path / "before.txt"
    after = tmp_path / "after.txt"
    end = 2048 * mib - size
    before.write_text(devs + chunk(a, 2, mib) + chunk(b, 2, end))
    after.write_text(devs + chunk(b, 2, end) + chunk(c, 2, mib))
    p = fsutil.run([str(replay_exe), "replay", str(before), str(after)], check=False)
    assert p.returncode == 0, p.stdout
    assert f"MISMATCH chunk {c}" in p.stdout, p.stdout
    assert "ok with the removed chunks freed before new chunk #0" in p.stdout
    assert p.stdout.splitlines()[-1] == "replayed 1 chunks, 0 mismatches, 1 removed"
    # A chunk where neither state would put it stays a mismatch.
    after.write_text(devs + chunk(b, 2, end) + chunk(c, 1, mib))
    p = fsutil.run([str(replay_exe), "replay", str(before), str(after)], check=False)
    assert p.returncode == 1 and p.stdout.splitlines()[-1] == (
        "replayed 1 chunks, 1 mismatches, 1 removed"), p.stdout
