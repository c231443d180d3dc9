# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx property ... allocation_hint (and btrfsx device property): offline on
real filesystems checked with btrfs-progs and the kernel, crash safety at
every write, the two kernel sysfs interfaces on fake trees, the real kernel
(which has no hint support), and bad input.  read_policy is covered by
test_read_policy.py."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import crashutil
from helpers import fsutil
from helpers import oracle

pytestmark = pytest.mark.root

TESTS = Path(__file__).resolve().parent
NAMES = ["data_preferred", "metadata_preferred", "metadata_only", "data_only", "none"]


def progs_dev_type(devs, devid):
    return int(oracle.progs_dev_items(devs)[devid]["type"])


def progs_super_types(dev):
    return [int(copy["dev_item.type"]) for copy in oracle.progs_dump_super(dev, all=True).values()]


def progs_check(devs):
    p = subprocess.run(["btrfs", "check", "--readonly", devs[0]], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def get_hint(btrfsx_json, dev):
    return btrfsx_json("property", "get", dev, "allocation_hint")


@pytest.fixture
def three_devs(loopdevs):
    """Single data, raid1 metadata on three devices: any one device may take any hint."""
    loops = loopdevs(3)
    fsutil.mkfs(loops.devs, data="single", metadata="raid1")
    return loops


@pytest.mark.parametrize("value", range(5))
def test_set_each_value_offline(three_devs, run_btrfsx, btrfsx_json, value):
    devs = three_devs.devs
    rc, out, err = run_btrfsx("property", "set", devs[2], "allocation_hint", NAMES[value])
    assert f"allocation_hint data_preferred -> {NAMES[value]}" in out
    assert progs_dev_type(devs, 3) == value
    assert progs_super_types(devs[2]) == [value, value]
    assert progs_dev_type(devs, 1) == 0 and progs_super_types(devs[0]) == [0, 0]
    progs_check(devs)
    # The kernel mounts it, writes, and carries the field over.
    with fsutil.mounted(devs) as mnt:
        fsutil.fill_files(mnt, small_files=4, big_files=1)
    progs_check(devs)
    assert progs_dev_type(devs, 3) == value
    doc = get_hint(btrfsx_json, devs[2])
    assert doc["allocation_hint"] == NAMES[value] and doc["hint_value"] == value
    assert doc["devid"] == 3 and doc["device"] == devs[2]
    assert doc["effective"] is False and doc["mounted"] is False


def test_get_without_a_name_gives_the_details(three_devs, btrfsx_json):
    """property get <dev> (every property) carries the same details as with the name."""
    dev = three_devs.devs[2]
    named = btrfsx_json("property", "get", dev, "allocation_hint")
    every = btrfsx_json("device", "property", "get", dev)
    for key in ("allocation_hint", "devid", "device", "hint_value", "dev_item_type", "mounted",
                "kernel_interface", "effective"):
        assert every[key] == named[key], key


def test_device_property_grammar_and_spellings(three_devs, run_btrfsx, btrfsx_json):
    dev = three_devs.devs[1]
    for spelling, value in [("METADATA_ONLY", 2), ("Data_Only", 3), ("m", 1), ("monly", 2),
                            ("donly", 3), ("d", 0), ("none", 4)]:
        run_btrfsx("device", "property", "set", dev, "allocation_hint", spelling)
        assert btrfsx_json("device", "property", "get", dev, "allocation_hint")["hint_value"] == value
    rc, out, err = run_btrfsx("dev", "prop", "get", dev, "allocation_hint")
    assert out == "allocation_hint=none\n"


def test_unknown_values(three_devs, run_btrfsx, btrfsx_json):
    dev = three_devs.devs[1]
    rc, out, err = run_btrfsx("property", "set", dev, "allocation_hint", "fast", check=2)
    assert "unknown allocation hint 'fast'" in err and "metadata_only" in err
    rc, out, err = run_btrfsx("property", "set", dev, "allocation_hint", "5", check=2)
    assert "unknown allocation hint '5'" in err
    rc, out, err = run_btrfsx("property", "set", "-f", dev, "allocation_hint", "9", check=2)
    assert "does not fit the 3-bit hint field" in err
    rc, out, err = run_btrfsx("property", "set", "--force", dev, "allocation_hint", "5")
    assert "writing unknown allocation hint value 5" in err
    assert progs_dev_type(three_devs.devs, 2) == 5
    rc, out, err = run_btrfsx("property", "get", dev, "allocation_hint")
    assert out == "allocation_hint=unknown(5)\n"
    assert "unknown allocation hint value 5" in err


def test_guard_rails(loopdevs, run_btrfsx):
    one = loopdevs(1)
    fsutil.mkfs(one.devs, data="single", metadata="dup")
    rc, out, err = run_btrfsx("property", "set", one.devs[0], "allocation_hint", "data_only",
                              check=1)
    assert "0 devices would allow metadata" in err and "--force" in err
    rc, out, err = run_btrfsx("property", "set", one.devs[0], "allocation_hint", "metadata_only",
                              check=1)
    assert "0 devices would allow data" in err
    assert progs_dev_type(one.devs, 1) == 0
    two = loopdevs(2)
    fsutil.mkfs(two.devs, data="raid1", metadata="raid1")
    rc, out, err = run_btrfsx("property", "set", two.devs[0], "allocation_hint", "data_only",
                              check=1)
    assert "1 device would allow metadata, but raid1" in err
    run_btrfsx("property", "set", "--force", two.devs[0], "allocation_hint", "data_only")
    assert progs_dev_type(two.devs, 1) == 3


CRASH_LAYOUTS = {
    # One device, dup metadata: two leaf copies, two superblock copies.
    "dup": dict(sizes=["256M"], data="single", metadata="dup", devid=1),
    # The hint set on a device larger than 256 GiB (sparse): three superblock
    # copies; raid1c3 metadata: three leaf copies, one on each device.
    "raid1c3": dict(sizes=["260G", "256M", "256M"], data="single", metadata="raid1c3", devid=1),
}


@pytest.mark.parametrize("layout", sorted(CRASH_LAYOUTS))
def test_crash_at_every_write(loopdevs, run_btrfsx, tmp_path, layout):
    """Stop after the N-th write for every N, with and without losing the
    writes not yet flushed: every 4 KiB of every image holds its old or its
    new content, btrfs check passes, the kernel mounts it with every file
    intact, and every copy that is read holds the old or the new hint."""
    lay = CRASH_LAYOUTS[layout]
    loops = loopdevs(sizes=lay["sizes"])
    devs, images, devid = loops.devs, loops.images, lay["devid"]
    fsutil.mkfs(devs, data=lay["data"], metadata=lay["metadata"])
    with fsutil.mounted(devs) as mnt:
        manifest = fsutil.fill_files(mnt, big_files=1, small_files=6)
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    for img in images:
        crashutil.copy_sparse(img, old / img.name)
    pristine = crashutil.Snapshot(images)
    run_btrfsx("property", "set", devs[devid - 1], "allocation_hint", "metadata_preferred")
    for img in images:
        crashutil.copy_sparse(img, new / img.name)
    seen = set()

    def reset():
        pristine.restore()

    def run(env):
        rc, out, err = run_btrfsx("property", "set", devs[devid - 1], "allocation_hint",
                                  "metadata_preferred", check=False, env=env)
        return rc, err

    def verify(point):
        state = tuple(fsutil.images_state(images))
        if state in seen:
            return      # the same bytes as a state already checked
        seen.add(state)
        for img in images:
            assert not crashutil.mixed_blocks(img, old / img.name, new / img.name), point
        assert progs_dev_type(devs, devid) in (0, 1), point
        assert set(progs_super_types(devs[devid - 1])) <= {0, 1}, point
        progs_check(devs)
        with fsutil.mounted(devs) as mnt:
            assert not fsutil.verify_manifest(mnt, manifest), point

    tally = crashutil.sweep(reset, run, verify)
    nr_leaf_copies = 2 if layout == "dup" else 3
    assert tally.writes == nr_leaf_copies + len(progs_super_types(devs[devid - 1]))
    # Every write is flushed before the next one: only ever one to lose.
    assert tally.max_unflushed == 1
    assert tally.points == 2 * tally.writes - 1
    # Losing the one unflushed write is stopping one write earlier.
    assert len(seen) == tally.writes
    print(f"property set {layout}: {tally}")
    # Run again after a stop anywhere, the change completes on every copy.
    for n in range(1, tally.writes):
        reset()
        run(crashutil.Point(n).env())
        run_btrfsx("property", "set", devs[devid - 1], "allocation_hint", "metadata_preferred")
        assert fsutil.images_state(images) == fsutil.images_state(
            [new / img.name for img in images]), n


def test_same_value_writes_nothing(three_devs, run_btrfsx, btrfsx_json):
    """Setting the hint a device already has leaves the device alone: the first write
    would stop the run (fault injection), so exit 0 means nothing was written."""
    crashutil.require_fault_injection()
    dev = three_devs.devs[1]
    run_btrfsx("property", "set", dev, "allocation_hint", "metadata_only")
    stop = {"BTRFSX_FAULT_AFTER_WRITES": "1", "BTRFSX_FAULT_DROP_UNFLUSHED": "all"}
    rc, out, err = run_btrfsx("property", "set", dev, "allocation_hint", "monly", env=stop)
    assert "metadata_only -> metadata_only" in out
    rc, out, err = run_btrfsx("property", "set", dev, "allocation_hint", "data_only", env=stop,
                              check=1)
    assert "fault injection" in err


def test_mounted_without_kernel_support(loopdevs, run_btrfsx, btrfsx_json):
    """The running kernel has no allocation hint support."""
    loops = loopdevs(2)
    fsutil.mkfs(loops.devs, data="single", metadata="raid1")
    run_btrfsx("property", "set", loops.devs[1], "allocation_hint", "metadata_preferred")
    with fsutil.mounted(loops.devs) as mnt:
        rc, out, err = run_btrfsx("property", "set", loops.devs[1], "allocation_hint", "data_only",
                                  check=1)
        assert "no allocation hint support" in err and "unmount" in err
        rc, out, err = run_btrfsx("property", "get", loops.devs[1], "allocation_hint")
        assert out == "allocation_hint=metadata_preferred\n"
        assert "has no effect" in err
        doc = get_hint(btrfsx_json, loops.devs[1])
        assert doc["mounted"] is True and doc["effective"] is False
        assert doc["kernel_interface"] is None
    assert progs_dev_type(loops.devs, 2) == 1


class FakeSysfs:
    """A fake /sys for one (unmounted) filesystem: BTRFSX_SYSFS_ROOT makes it look mounted."""

    def __init__(self, root: Path, fsid: str, devid: int, iface: str, content: str):
        self.root = root
        self.dir = root / "fs" / "btrfs" / fsid / "devinfo" / str(devid)
        self.dir.mkdir(parents=True)
        self.file = self.dir / iface
        self.file.write_text(content)
        self.env = {"BTRFSX_SYSFS_ROOT": str(root)}


@pytest.fixture
def fake_fs(loopdevs, tmp_path):
    def make(iface, content):
        loops = loopdevs(3)
        fsid = fsutil.mkfs(loops.devs, data="single", metadata="raid1")
        return loops.devs, FakeSysfs(tmp_path / "sys", fsid, 3, iface, content)
    return make


@pytest.fixture(scope="module")
def preload(tmp_path_factory):
    out = tmp_path_factory.mktemp("preload") / "fake_sysfs_write.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(out),
                    str(TESTS / "helpers" / "fake_sysfs_write.c"), "-ldl"], check=True)
    return out


def test_v12_name_interface(fake_fs, run_btrfsx, btrfsx_json):
    devs, fake = fake_fs("allocation_hint", "DATA_PREFERRED\n")
    doc = btrfsx_json("property", "get", devs[2], "allocation_hint", env=fake.env)
    assert doc["effective"] is True and doc["kernel_interface"] == "allocation_hint"
    for name, shown in [("metadata_only", "METADATA_ONLY"), ("DATA_ONLY", "DATA_ONLY"),
                        ("m", "METADATA_PREFERRED")]:
        run_btrfsx("property", "set", devs[2], "allocation_hint", name, env=fake.env)
        assert fake.file.read_text() == shown
    rc, out, err = run_btrfsx("property", "set", devs[2], "allocation_hint", "none",
                              env=fake.env, check=1)
    assert "takes only data_preferred, metadata_preferred, metadata_only and data_only" in err
    fake.file.write_text("<UNKNOWN>\n")
    rc, out, err = run_btrfsx("property", "get", devs[2], "allocation_hint", env=fake.env,
                              check=1)
    assert "<UNKNOWN>" in err
    # Nothing went to the disk: the online path never writes device items.
    assert progs_dev_type(devs, 3) == 0


@pytest.mark.parametrize("errno_, message", [(22, "the kernel rejected 'METADATA_ONLY'"),
                                             (30, "mounted read-only"),
                                             (1, "the kernel refused the change")])
def test_v12_kernel_errors(fake_fs, run_btrfsx, preload, errno_, message):
    devs, fake = fake_fs("allocation_hint", "DATA_PREFERRED\n")
    env = dict(fake.env, LD_PRELOAD=preload, FAKE_SYSFS_EINVAL="/allocation_hint",
               FAKE_SYSFS_ERRNO=errno_, FAKE_SYSFS_SHOW="DATA_PREFERRED\n")
    rc, out, err = run_btrfsx("property", "set", devs[2], "allocation_hint", "metadata_only",
                              env=env, check=1)
    assert message in err


def test_read_back_disagrees(fake_fs, run_btrfsx, preload):
    devs, fake = fake_fs("allocation_hint", "DATA_PREFERRED\n")
    env = dict(fake.env, LD_PRELOAD=preload, FAKE_SYSFS_IGNORE="/allocation_hint",
               FAKE_SYSFS_SHOW="DATA_PREFERRED\n")
    rc, out, err = run_btrfsx("property", "set", devs[2], "allocation_hint", "data_only",
                              env=env, check=1)
    assert "reports data_preferred afterwards" in err


def test_fork_type_interface(fake_fs, run_btrfsx, btrfsx_json):
    devs, fake = fake_fs("type", "0x00000100\n")
    doc = btrfsx_json("property", "get", devs[2], "allocation_hint", env=fake.env)
    assert doc["kernel_interface"] == "type" and doc["dev_item_type"] == 0x100
    run_btrfsx("property", "set", devs[2], "allocation_hint", "none", env=fake.env)
    assert fake.file.read_text() == "0x104"
    run_btrfsx("property", "set", devs[2], "allocation_hint", "metadata_only", env=fake.env)
    assert fake.file.read_text() == "0x102"
    # Guard rails apply online too: raid1 metadata needs two devices that allow it.
    subprocess.run([os.environ.get("BTRFSX", fsutil.btrfsx_path()), "property", "set",
                    devs[1], "allocation_hint", "data_only"], check=True, capture_output=True)
    rc, out, err = run_btrfsx("property", "set", devs[2], "allocation_hint", "data_only",
                              env=fake.env, check=1)
    assert "1 device would allow metadata" in err


def test_fork_device_roles_refused(fake_fs, run_btrfsx):
    devs, fake = fake_fs("type", "0x00000014\n")
    rc, out, err = run_btrfsx("property", "set", devs[2], "allocation_hint", "data_only",
                              env=fake.env, check=1)
    assert "device-roles encoding" in err
    assert fake.file.read_text() == "0x00000014\n"


# ---- bad input ----

def test_bad_objects(run_btrfsx, tmp_path, loopdevs):
    zero = tmp_path / "zero.img"
    zero.write_bytes(bytes(1 << 20))
    rc, out, err = run_btrfsx("property", "set", zero, "allocation_hint", "d", check=1)
    assert "not a btrfs filesystem" in err
    assert zero.read_bytes() == bytes(1 << 20)
    rc, out, err = run_btrfsx("property", "get", tmp_path / "nope", "allocation_hint", check=1)
    assert "No such file" in err
    rc, out, err = run_btrfsx("property", "set", "/dev/null", "allocation_hint", "d", check=1)
    assert "not a mount point, block device or image file" in err
    rc, out, err = run_btrfsx("property", "set", tmp_path, "allocation_hint", "d", check=2)
    assert "does not apply to a filesystem object" in err


def test_missing_member_refused(loopdevs, run_btrfsx):
    loops = loopdevs(3)
    fsutil.mkfs(loops.devs, data="single", metadata="raid1")
    before = fsutil.images_state(loops.images)
    subprocess.run(["losetup", "-d", loops.devs[2]], check=True)
    rc, out, err = run_btrfsx("property", "set", loops.devs[0], "allocation_hint", "m", check=1)
    assert "missing device (devid 3)" in err
    assert fsutil.images_state(loops.images) == before


def test_image_file_attached_or_read_only(loopdevs, run_btrfsx, tmp_path):
    loops = loopdevs(1)
    fsutil.mkfs(loops.devs, data="single", metadata="dup")
    before = fsutil.images_state(loops.images)
    rc, out, err = run_btrfsx("property", "set", loops.images[0], "allocation_hint", "m", check=1)
    assert f"attached to {loops.devs[0]}" in err
    ro = fsutil.attach_loop(loops.images[0], read_only=True)
    try:
        rc, out, err = run_btrfsx("property", "set", ro, "allocation_hint", "m", check=1)
    finally:
        fsutil.detach_loop(ro)
    assert "cannot open" in err and ro in err
    assert fsutil.images_state(loops.images) == before


def test_filesystem_show(three_devs, run_btrfsx, btrfsx_json):
    devs = three_devs.devs
    run_btrfsx("property", "set", devs[0], "allocation_hint", "metadata_only")
    run_btrfsx("property", "set", devs[2], "allocation_hint", "data_only")
    doc = btrfsx_json("filesystem", "show", devs[1])
    fs, = doc["filesystems"]
    assert fs["num_devices"] == 3 and fs["mountpoint"] is None and fs["mounted"] is False
    assert [(d["devid"], d["device"], d["hint"]) for d in fs["devices"]] == \
        [(1, devs[0], "metadata_only"), (2, devs[1], "data_preferred"), (3, devs[2], "data_only")]
    items = oracle.progs_dev_items(devs)
    assert [d["size"] for d in fs["devices"]] == [int(items[i]["total_bytes"]) for i in (1, 2, 3)]
    assert [d["allocated"] for d in fs["devices"]] == [int(items[i]["bytes_used"]) for i in (1, 2, 3)]
    rc, out, err = run_btrfsx("filesystem", "show", "--raw", devs[0])
    assert f"devid 1 size {items[1]['total_bytes']} used" in out and "metadata_only" in out
    with fsutil.mounted(devs) as mnt:
        doc = btrfsx_json("filesystem", "show", mnt)
        fs, = doc["filesystems"]
        assert fs["mountpoint"] == str(mnt)
        assert [d["hint"] for d in fs["devices"]] == \
            ["metadata_only", "data_preferred", "data_only"]
        assert all(d["effective"] is False for d in fs["devices"])


def test_filesystem_show_mounted_equals_progs(three_devs, run_btrfsx, btrfsx_json):
    """Label and FS bytes used as btrfs-progs shows them, by mount point and by device;
    the warning that the kernel ignores hints once, not once per device; -m is --mounted."""
    devs = three_devs.devs
    fsutil.run(["btrfs", "filesystem", "label", devs[0], "tank"])
    run_btrfsx("property", "set", devs[2], "allocation_hint", "data_only")
    with fsutil.mounted(devs) as mnt:
        fsutil.fill_files(mnt, big_files=1, small_files=4)
        fsutil.run(["sync"])
        progs = fsutil.run(["btrfs", "filesystem", "show", str(mnt)]).stdout.splitlines()[:2]
        for obj in (str(mnt), devs[1]):
            rc, out, err = run_btrfsx("filesystem", "show", obj)
            lines = out.splitlines()
            assert lines[0] == progs[0], obj
            assert lines[1].startswith(progs[1] + "  mounted at "), obj
            assert err.count("warning:") == 1, err
        rc, out, err = run_btrfsx("filesystem", "show", "-m")
        assert progs[0] in out
        rc, out, err = run_btrfsx("filesystem", "show", "--mounted", "--raw")
        assert progs[0] in out and "MiB" not in out
    rc, out, err = run_btrfsx("filesystem", "show", "-m")
    assert progs[0] not in out
    rc, out, err = run_btrfsx("filesystem", "show", "-m", devs[0], check=2)


def test_image_file_members(run_btrfsx, btrfsx_json, tmp_path):
    """Image files are not found by fsid: show with every member named, and get on a
    single member (its superblock's device item), report no missing device."""
    imgs = fsutil.make_images(tmp_path, ["1G", "1G", "1G"])
    run_btrfsx("mkfs", "-d", "raid1", "-m", "raid1", imgs[0], f"{imgs[1]}:monly", imgs[2])
    rc, out, err = run_btrfsx("filesystem", "show", *imgs)
    assert "missing" not in out + err and "warning" not in err, out + err
    fs, = btrfsx_json("filesystem", "show", *imgs)["filesystems"]
    assert [(d["device"], d["hint"]) for d in fs["devices"]] == \
        [(str(imgs[0]), "data_preferred"), (str(imgs[1]), "metadata_only"),
         (str(imgs[2]), "data_preferred")]
    for img, want in zip(imgs, ["data_preferred", "metadata_only", "data_preferred"]):
        rc, out, err = run_btrfsx("device", "property", "get", img)
        assert out == f"allocation_hint={want}\n" and not err, (img, err)


def test_busy_device_refused(three_devs, run_btrfsx):
    """A member another program holds open exclusively is not written."""
    before = fsutil.images_state(three_devs.images)
    fd = os.open(three_devs.devs[1], os.O_RDONLY | os.O_EXCL)
    try:
        rc, out, err = run_btrfsx("property", "set", three_devs.devs[0], "allocation_hint", "m",
                                  check=1)
    finally:
        os.close(fd)
    assert f"{three_devs.devs[1]}: is in use by pid {os.getpid()} (" in err
    assert fsutil.images_state(three_devs.images) == before


def test_short_member_refused_as_readers_refuse(run_btrfsx, btrfsx_json, tmp_path):
    """Issue 39, defect 4: a member truncated below the size its device item claims.
    The readers (usage, plan, misplaced) refuse it, so the offline writer refuses it
    with the same message and writes nothing; filesystem show warns."""
    imgs = fsutil.make_images(tmp_path, ["512M", "512M", "512M"])
    run_btrfsx("mkfs", "-q", "-d", "raid1", "-m", "raid1", *imgs)
    os.truncate(imgs[1], 300 << 20)
    _, _, reader = run_btrfsx("filesystem", "usage", *imgs, check=1)
    claim = f"devid 2: the device item claims {512 << 20} bytes, but {imgs[1]} has {300 << 20}"
    assert claim in reader, reader
    before = fsutil.images_state(imgs)
    _, out, err = run_btrfsx("device", "property", "set", imgs[1], "allocation_hint",
                             "data_only", check=1)
    assert claim in err and not out, err
    assert fsutil.images_state(imgs) == before
    # Another member named: the filesystem is refused, not just the short device.
    _, _, err = run_btrfsx("property", "set", imgs[0], "allocation_hint", "m", check=1)
    assert claim in err, err
    assert fsutil.images_state(imgs) == before
    _, out, err = run_btrfsx("filesystem", "show", *imgs)
    assert f"warning: {claim}" in err, err
    doc = btrfsx_json("filesystem", "show", *imgs)
    assert any(claim in w for w in doc["warnings"]), doc


def test_filesystem_show_says_hints_need_root(three_devs, run_btrfsx):
    """Issue 39, defect 8: as a user who cannot read the member devices, filesystem show
    says that reading the hints needs root, not 'allocation_hint -' alone."""
    with fsutil.mounted(three_devs.devs) as mnt:
        os.chmod(mnt, 0o755)
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        p = subprocess.run([*as_nobody, fsutil.btrfsx_path(), "filesystem", "show", str(mnt)],
                           capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("allocation_hint -") == 3, p.stdout
    assert "reading the allocation hints needs root" in p.stderr, p.stderr
    assert p.stderr.count("warning:") == 1, p.stderr
