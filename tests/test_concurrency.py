# SPDX-License-Identifier: GPL-2.0-or-later
"""Concurrent use: two btrfsx writers on one filesystem, and btrfsx offline
against the kernel mounting the same devices.

Every offline writer (property set, mkfs) and the offline scrub claim each
member they open: block devices O_EXCL, image files with an exclusive flock.
A writer is held mid-run by BTRFSX_FAULT_PAUSE_BEFORE_WRITE=1 (it stops
itself with every member claimed, before its first write) while the second
writer, the readers and the kernel's mount are tried; SIGCONT lets it
finish."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import crashutil
from helpers import fsutil

pytestmark = pytest.mark.root

WRITERS = ["property", "mkfs", "scrub"]


def writer_args(kind, devs):
    if kind == "property":
        return ["property", "set", devs[0], "allocation_hint", "metadata_preferred"]
    if kind == "mkfs":
        return ["mkfs", "-f", "-q", *devs]
    return ["scrub", "start", "--offline", "-B", *devs]


def damage_backup_super(image):
    """A bad superblock copy at 64 MiB: the scrub has one repair to write."""
    with open(image, "r+b") as f:
        f.seek((64 << 20) + 0x200)
        f.write(b"\xff" * 16)


@pytest.fixture
def state_env(tmp_path):
    return {"BTRFSX_STATE_DIR": str(tmp_path / "state")}


class Paused:
    """A btrfsx writer stopped before its first write, every member claimed."""

    def __init__(self, btrfsx, args, env):
        crashutil.require_fault_injection()
        e = dict(os.environ, BTRFSX_FAULT_PAUSE_BEFORE_WRITE="1", **env)
        self.proc = subprocess.Popen([btrfsx, *map(str, args)], env=e, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while self.state() != "T":
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.time() < deadline, "the writer never paused"
            time.sleep(0.02)

    def state(self) -> str:
        try:
            stat = Path(f"/proc/{self.proc.pid}/stat").read_text()
        except OSError:
            return ""
        return stat.rsplit(")", 1)[1].split()[0]

    def resume(self) -> tuple[int, str, str]:
        os.kill(self.proc.pid, signal.SIGCONT)
        out, err = self.proc.communicate(timeout=300)
        return self.proc.returncode, out, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def paused(btrfsx):
    started = []

    def _start(args, env=None):
        p = Paused(btrfsx, args, env or {})
        started.append(p)
        return p
    yield _start
    for p in started:
        p.kill()


def make_fs(devs, images, kind):
    """A filesystem where @kind has something to write."""
    fsutil.mkfs(devs, data="single", metadata="dup" if len(devs) == 1 else "raid1")
    if kind == "scrub":
        damage_backup_super(images[-1])


@pytest.mark.parametrize("holder", WRITERS)
def test_second_writer_refused_image_files(images, run_btrfsx, paused, state_env, holder):
    """Image files: the flock of the first writer refuses every second writer,
    naming it; readers go on."""
    imgs = [str(i) for i in images(["256M"])]
    make_fs(imgs, imgs, holder)
    first = paused(writer_args(holder, imgs), state_env)
    before = fsutil.images_state(imgs)
    for second in WRITERS:
        rc, out, err = run_btrfsx(*writer_args(second, imgs), check=1, env=state_env)
        assert f"{imgs[0]}: is in use by pid {first.proc.pid} (btrfsx)" in err, (second, err)
    rc, out, err = run_btrfsx("scrub", "start", "--offline", "-B", "-r", *imgs, check=1,
                              env=state_env)
    assert f"in use by pid {first.proc.pid}" in err
    assert fsutil.images_state(imgs) == before
    if holder != "mkfs":
        run_btrfsx("inspect", "dump-super", imgs[0])
        run_btrfsx("property", "get", imgs[0], "allocation_hint")
    rc, out, err = first.resume()
    assert rc == 0, err
    run_btrfsx(*writer_args("property", imgs))


@pytest.mark.parametrize("holder", WRITERS)
def test_held_devices_refuse_writers_and_mount(loopdevs, run_btrfsx, paused, state_env,
                                               holder):
    """Loop devices of a two-device filesystem: while one writer holds them
    (O_EXCL), a second writer is refused naming it, the kernel's mount fails,
    readers go on; once it is done, the kernel mounts the result."""
    loops = loopdevs(2, size="256M")
    devs = loops.devs
    make_fs(devs, loops.images, holder)
    first = paused(writer_args(holder, devs), state_env)
    for second in WRITERS:
        rc, out, err = run_btrfsx(*writer_args(second, devs), check=1, env=state_env)
        assert "is in use by" in err and f"pid {first.proc.pid} (btrfsx)" in err, (second, err)
    fsutil.device_scan(devs)
    with pytest.raises(RuntimeError):
        with fsutil.mounted(devs):
            pass
    assert not any(fsutil._findmnt_targets(d) for d in devs)
    if holder != "mkfs":
        run_btrfsx("inspect", "dump-super", devs[1])
    rc, out, err = first.resume()
    assert rc == 0, err
    fsutil.device_scan(devs)
    with fsutil.mounted(devs) as mnt:
        (Path(mnt) / "after").write_text("x")
    p = subprocess.run(["btrfs", "check", "--readonly", devs[0]], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_mounted_filesystem_refuses_offline_writers(loopdevs, run_btrfsx, state_env):
    """btrfsx started after the kernel mounted the filesystem: the offline
    writers are refused naming the mount, through either member; property
    set takes the online path, which this kernel does not have; nothing is
    written."""
    loops = loopdevs(2, size="256M")
    devs = loops.devs
    fsutil.mkfs(devs, data="single", metadata="raid1")
    with fsutil.mounted(devs) as mnt:
        # what the mount itself leaves dirty is written now, not during the checks (a
        # transaction commit 30 s later on a loaded host changed the images)
        fsutil.run(["sync", "-f", str(mnt)])
        before = fsutil.images_state(loops.images)
        for dev in devs:
            rc, out, err = run_btrfsx("mkfs", "-f", dev, check=1)
            assert f"{dev}: is " in err and f"mounted at {mnt}" in err, err
            rc, out, err = run_btrfsx("scrub", "start", "--offline", "-B", dev, check=1,
                                      env=state_env)
            assert f"mounted at {mnt}" in err, err
            rc, out, err = run_btrfsx("property", "set", dev, "allocation_hint", "m", check=1)
            assert "no allocation hint support" in err and "unmount" in err, err
        rc, out, err = run_btrfsx("mkfs", "-f", *devs, check=1)
        assert f"mounted at {mnt}" in err
        assert fsutil.images_state(loops.images) == before
        # Readers are not refused.
        run_btrfsx("inspect", "dump-super", devs[1])
        run_btrfsx("property", "get", devs[1], "allocation_hint")
