"""Filesystems in transition (issue 30): what usage, plan and the read-only
commands say about a filesystem in the middle of a change.

- A conversion paused or interrupted: while its balance item exists the
  kernel gives every new chunk of a kind it converts the target profile
  (not the most redundant profile in use); usage, plan and misplaced model
  the same, mounted (BTRFS_IOC_BALANCE_PROGRESS) and unmounted (the balance
  item), and the kernel's next chunks prove it.
"""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from helpers import fsutil
from helpers import oracle
from helpers.fsutil import MiB

pytestmark = pytest.mark.root


def balance_status(mnt) -> str:
    return subprocess.run(["btrfs", "balance", "status", str(mnt)], capture_output=True,
                          text=True).stdout


def pause_a_conversion(mnt, *filters) -> None:
    """Starts `btrfs balance start -f FILTERS` and pauses it once it runs. A
    balance that finished first (its chunks moved before the pause came) is
    converted back and tried again."""
    for _ in range(3):
        p = subprocess.Popen(["btrfs", "balance", "start", "-f", *filters, str(mnt)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None and "running" not in balance_status(mnt):
            time.sleep(0.01)
        paused = subprocess.run(["btrfs", "balance", "pause", str(mnt)],
                                capture_output=True).returncode == 0
        p.wait(timeout=300)
        if paused and "paused" in balance_status(mnt):
            return
        fsutil.run(["btrfs", "balance", "start", "-f", "-dconvert=raid1", "-mconvert=raid1",
                    str(mnt)])
    pytest.fail("the conversion finished before it could be paused, three times")


def chunk_profiles(devs) -> dict[int, str]:
    """logical -> 'TYPE|PROFILE' of every chunk (btrfs-progs)."""
    subprocess.run(["sync"], check=True)
    return {c["logical"]: c["type"] for c in
            oracle.parse_chunks(oracle.progs_dump_tree_text(devs, "chunk"))}


def model_of(btrfsx_json, *paths) -> tuple[dict, list]:
    doc = btrfsx_json("filesystem", "usage", *paths)
    return doc["model"], doc.get("warnings", [])


def test_a_paused_conversion_gives_new_chunks_its_target(loopdevs, btrfsx_json):
    """Issue 30: raid1 -> single / dup paused (mounted), then unmounted
    (interrupted: the item on disk) and mounted with skip_balance: the model
    says new data is single and new metadata dup, as the kernel then
    allocates them; cancelled, raid1 again."""
    loops = loopdevs(3, size="1G")
    devs = loops.devs
    fsutil.mkfs(devs, data="raid1", metadata="raid1")
    with fsutil.mounted(devs) as mnt:
        for i in range(14):
            with open(mnt / f"f{i}", "wb") as f:
                os.posix_fallocate(f.fileno(), 0, 32 * MiB)
        os.sync()
        before, _ = model_of(btrfsx_json, mnt)
        assert (before["data_profile"], before["balance"]) == ("raid1", None)
        pause_a_conversion(mnt, "-dconvert=single", "-mconvert=dup")
        model, warnings = model_of(btrfsx_json, mnt)
        assert (model["data_profile"], model["metadata_profile"]) == ("single", "dup")
        assert model["balance"] == "paused"
        assert any("paused balance converts data to single, metadata to dup" in w
                   for w in warnings), warnings
        # both profiles are in use: without the balance raid1 would be the answer
        spaces = btrfsx_json("filesystem", "usage", mnt)["spaces"]
        assert {(s["type"], s["profile"]) for s in spaces} >= {("data", "raid1"),
                                                                 ("data", "single")}
        plan = btrfsx_json("filesystem", "plan", mnt, "--add", "1G")
        assert (plan["before"]["data_profile"], plan["after"]["data_profile"]) == ("single",) * 2
        # the paused balance holds the kernel's exclusive operation: a remove is refused
        plan = btrfsx_json("filesystem", "plan", mnt, "--remove", "3", check=5)
        assert plan["possible"] is False
        assert "paused balance holds the kernel's exclusive operation, which refuses a " \
            "device remove" in plan["changes"][0]["reason"], plan["changes"]
        p = subprocess.run(["btrfs", "device", "remove", "3", str(mnt)], capture_output=True,
                           text=True)
        assert p.returncode != 0 and "in progress" in p.stderr, p.stderr
    model, warnings = model_of(btrfsx_json, *devs)
    assert (model["data_profile"], model["metadata_profile"], model["balance"]) == \
        ("single", "dup", "interrupted")
    assert any("interrupted balance converts" in w for w in warnings), warnings
    with fsutil.mounted(devs, options="skip_balance") as mnt:
        assert "paused" in balance_status(mnt)
        assert model_of(btrfsx_json, mnt)[0]["data_profile"] == "single"
        old = chunk_profiles(devs)
        with open(mnt / "new", "wb") as f:
            os.posix_fallocate(f.fileno(), 0, 300 * MiB)
        new = {lg: t for lg, t in chunk_profiles(devs).items() if lg not in old}
        assert new and set(new.values()) == {"DATA|single"}, new
        fsutil.run(["btrfs", "balance", "cancel", str(mnt)])
        model, warnings = model_of(btrfsx_json, mnt)
        assert (model["data_profile"], model["balance"]) == ("raid1", None)
        assert not any("balance converts" in w for w in warnings)
    oracle.run_progs(["check", "--readonly", devs[0]])
