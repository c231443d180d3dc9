# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx device io-stats: per-device read share from the block devices' stat.

On a real raid1 mount a large file is read with O_DIRECT (no page cache)
while io-stats samples; the reads show up on the devices and the figures add
up. A fake sysfs tree checks the arithmetic exactly.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers import fsutil

pytestmark = pytest.mark.root

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def raid1(tmp_path_factory):
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    tmp = tmp_path_factory.mktemp("io-stats")
    loops = fsutil.LoopDevices(fsutil.make_images(tmp / "images", ["400M", "400M"]))
    loops.attach()
    mnt = None
    try:
        fsutil.mkfs(list(loops), data="raid1", metadata="raid1")
        mnt = fsutil.mount(list(loops))
        big = mnt / "big.bin"
        with open(big, "wb") as f:
            for i in range(48):
                f.write(os.urandom(MiB))
        subprocess.run(["sync"], check=True)
        yield mnt, list(loops), big
    finally:
        if mnt is not None:
            fsutil.umount(mnt)
            with contextlib.suppress(OSError):
                os.rmdir(mnt)
        loops.detach()


def check_sums(sample):
    devs = sample["devices"]
    total = sample["total"]
    assert sum(d["reads"] for d in devs) == total["reads"]
    assert sum(d["read_bytes"] for d in devs) == total["read_bytes"]
    for key, pct in (("reads", "reads_pct"), ("read_bytes", "read_bytes_pct")):
        if total[key]:
            assert abs(sum(d[pct] for d in devs) - 100.0) < 0.05
            for d in devs:
                assert abs(d[pct] - 100.0 * d[key] / total[key]) < 0.006
        else:
            assert all(d[pct] == 0 for d in devs)


def direct_read(path: Path):
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M", "iflag=direct",
                    "status=none"], check=True)


def sampling(pid: int) -> bool:
    """Whether io-stats has taken its first counters: it blocks SIGTERM (and waits
    for it) from then on."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return bool(int(line.split()[1], 16) & (1 << (15 - 1)))
    return False


def start_io_stats(btrfsx, *args) -> subprocess.Popen:
    proc = subprocess.Popen([btrfsx, "--format", "json", "device", "io-stats", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not sampling(proc.pid):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    return proc


def test_reading_a_file_shows_reads(raid1, btrfsx):
    """A sample as long as the read: started before it, ended by SIGTERM after it."""
    mnt, devs, big = raid1
    proc = start_io_stats(btrfsx, "-i", "600", mnt)
    direct_read(big)
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["mountpoint"] == str(mnt)
    assert doc["read_policy"] == "pid"
    assert doc["interval"] == 600.0
    [sample] = doc["samples"]
    assert sample["sample"] == 1 and sample["seconds"] < 600
    assert [d["devid"] for d in sample["devices"]] == [1, 2]
    assert [d["device"] for d in sample["devices"]] == devs
    assert all(d["stats_available"] for d in sample["devices"])
    check_sums(sample)
    # 48MiB read directly from the devices (the pid policy keeps one reader
    # mostly on one mirror: 89 % on the host's 6.18)
    assert sample["total"]["read_bytes"] >= 40 * MiB
    assert sample["total"]["reads"] > 0
    assert max(d["read_bytes_pct"] for d in sample["devices"]) > 50


def test_a_signal_ends_the_samples(raid1, btrfsx):
    """SIGINT ends the sample under way, prints it, and takes no further one."""
    mnt, devs, big = raid1
    proc = start_io_stats(btrfsx, "-i", "0.05", "-c", "1000000", mnt)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    samples = json.loads(out)["samples"]
    assert 1 <= len(samples) < 1000000
    assert [s["sample"] for s in samples] == list(range(1, len(samples) + 1))
    for s in samples:
        check_sums(s)


def test_text_and_count(raid1, run_btrfsx):
    mnt, devs, big = raid1
    rc, out, err = run_btrfsx("device", "io-stats", "-i", "0.2", "-c", "2", "--raw", mnt)
    lines = out.splitlines()
    assert any(l.startswith("read_policy") and l.split()[-1] == "pid" for l in lines)
    assert sum(1 for l in lines if l.startswith("sample ")) == 2
    for dev in devs:
        assert sum(1 for l in lines if f"device {dev} reads " in l) == 2
    assert sum(1 for l in lines if l.strip().startswith("total reads ")) == 2


def test_unit_options_are_the_shared_ones(raid1, run_btrfsx):
    """io-stats takes every unit option of btrfs-progs' device usage, -h and -H included."""
    mnt, devs, big = raid1
    for opts, unit in ((["--kbytes"], "KiB"), (["-k", "--si"], "kB"), (["-H"], "B"),
                       (["-h"], "B"), (["--mbytes"], "MiB"), (["-b"], "")):
        rc, out, err = run_btrfsx("device", "io-stats", "-i", "0.1", *opts, mnt)
        total = [l for l in out.splitlines() if l.strip().startswith("total reads ")][0]
        assert total.split()[-1].endswith(unit), (opts, total)
        assert not out.startswith("usage:"), opts


def test_json_count(raid1, btrfsx_json):
    mnt, devs, big = raid1
    doc = btrfsx_json("device", "io-stats", "-i", "0.1", "-c", "3", mnt)
    assert [s["sample"] for s in doc["samples"]] == [1, 2, 3]
    for s in doc["samples"]:
        check_sums(s)


def dev_numbers(dev: str) -> str:
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


STAT = "{reads} 0 {sectors} 10 0 0 0 0 0 20 30 0 0 0 0 0 0\n"


def test_share_arithmetic_on_fake_stats(raid1, btrfsx, tmp_path):
    mnt, devs, big = raid1
    root = tmp_path / "sys"
    stats = []
    for dev in devs:
        p = root / "dev" / "block" / dev_numbers(dev) / "stat"
        p.parent.mkdir(parents=True)
        p.write_text(STAT.format(reads=1000, sectors=50000))
        stats.append(p)

    def bump():
        time.sleep(0.6)
        stats[0].write_text(STAT.format(reads=1100, sectors=50000 + 800))
        stats[1].write_text(STAT.format(reads=1300, sectors=50000 + 2400))

    t = threading.Thread(target=bump)
    t.start()
    p = subprocess.run([btrfsx, "--format", "json", "device", "io-stats", "-i", "1.5", str(mnt)],
                       env=dict(os.environ, BTRFSX_SYSFS_ROOT=str(root)),
                       capture_output=True, text=True, timeout=30)
    t.join()
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["read_policy"] is None          # no fs/btrfs/ in this tree
    [s] = doc["samples"]
    d1, d2 = s["devices"]
    assert (d1["reads"], d1["read_bytes"], d1["reads_pct"], d1["read_bytes_pct"]) == \
        (100, 800 * 512, 25.0, 25.0)
    assert (d2["reads"], d2["read_bytes"], d2["reads_pct"], d2["read_bytes_pct"]) == \
        (300, 2400 * 512, 75.0, 75.0)
    assert s["total"] == {"reads": 400, "read_bytes": 3200 * 512}


def test_device_without_stats(raid1, btrfsx_json, tmp_path):
    mnt, devs, big = raid1
    root = tmp_path / "sys"
    p = root / "dev" / "block" / dev_numbers(devs[0]) / "stat"
    p.parent.mkdir(parents=True)
    p.write_text(STAT.format(reads=5, sectors=5))
    doc = btrfsx_json("device", "io-stats", "-i", "0.1", mnt, env={"BTRFSX_SYSFS_ROOT": root})
    d1, d2 = doc["samples"][0]["devices"]
    assert d1["stats_available"] is True and d2["stats_available"] is False
    assert d2["reads"] == 0 and d2["read_bytes"] == 0
    assert any(f"device 2 ({devs[1]}) has no block device statistics" in w
               for w in doc["warnings"])


def test_unparsable_stat(raid1, run_btrfsx, tmp_path):
    mnt, devs, big = raid1
    root = tmp_path / "sys"
    p = root / "dev" / "block" / dev_numbers(devs[0]) / "stat"
    p.parent.mkdir(parents=True)
    p.write_text("garbage\n")
    rc, out, err = run_btrfsx("device", "io-stats", "-i", "0.1", mnt,
                              env={"BTRFSX_SYSFS_ROOT": root}, check=1)
    assert "cannot parse the block device statistics" in err


@pytest.mark.parametrize("args, message", [
    (["-i", "0"], "invalid interval '0'"),
    (["-i", "-1"], "invalid interval"),
    (["-i", "abc"], "invalid interval 'abc'"),
    (["-c", "0"], "invalid count '0'"),
    (["-c", "x"], "invalid count 'x'"),
    (["--bogus"], "unknown option '--bogus'"),
])
def test_usage_errors(run_btrfsx, args, message):
    rc, out, err = run_btrfsx("device", "io-stats", *args, "/", check=2)
    assert message in err


def test_not_btrfs(run_btrfsx, tmp_path):
    rc, out, err = run_btrfsx("device", "io-stats", "-i", "0.1", tmp_path, check=1)
    assert "not on a mounted btrfs filesystem" in err


def test_error_counters_are_btrfs_device_stats(raid1, btrfsx_json):
    """After the samples, each device's error counters: what btrfs-progs'
    `device stats` prints for the same devices."""
    mnt, devs, big = raid1
    doc = btrfsx_json("device", "io-stats", "-i", "0.05", mnt)
    progs = fsutil.run(["btrfs", "device", "stats", str(mnt)]).stdout
    want = {}
    for line in progs.splitlines():
        name, value = line.split()
        dev, counter = name[1:].split("].")
        want.setdefault(dev, {})[counter] = int(value)
    assert [e["device"] for e in doc["errors"]] == devs
    for e in doc["errors"]:
        assert {k: v for k, v in e.items() if k not in ("devid", "device")} == want[e["device"]]
