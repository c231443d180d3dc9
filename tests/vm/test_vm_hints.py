# SPDX-License-Identifier: GPL-2.0-or-later
"""Online allocation hints on kernels that honour them (issue 21, part 1).

One guest per series, on Linux 6.1 and 6.12, on the same three-disk raid1
filesystem (made on the host by btrfs-progs): every value through btrfsx and
the real sysfs file, refusals, a read-only mount, the value after unmount and
mount, an offline set read back by the kernel, and the superblock copies and
chunk tree item checked afterwards on the host with btrfs-progs. The stock
module is the control: no sysfs file, set refused, get shows the stored value.
"""

from __future__ import annotations

import re
import subprocess

import pytest

import vmharness

MiB = 1 << 20
NAMES = ["data_preferred", "metadata_preferred", "metadata_only", "data_only", "none"]
KERNEL_NAME = {0: "DATA_PREFERRED", 1: "METADATA_PREFERRED", 2: "METADATA_ONLY", 3: "DATA_ONLY"}

GUEST_SCRIPT = r"""
mount -o device=/dev/vdb,device=/dev/vdc /dev/vda /mnt || echo "@@R mount_failed"
FS=$(ls /sys/fs/btrfs | grep -e -)
DI=/sys/fs/btrfs/$FS/devinfo/3
echo "@@R files $(ls $DI | tr '\n' ' ')"
kfile() { if [ -e $DI/allocation_hint ]; then cat $DI/allocation_hint; elif [ -e $DI/type ]; then cat $DI/type; else echo absent; fi; }
for v in NAMES; do
	capture set_$v btrfsx --format json device property set /dev/vdc allocation_hint $v
	capture get_$v btrfsx --format json device property get /dev/vdc allocation_hint
	capture kernel_$v kfile
done
for v in 5 7; do
	capture set_$v btrfsx --format json property set -f /dev/vdc allocation_hint $v
	capture get_$v btrfsx --format json device property get /dev/vdc allocation_hint
	capture kernel_$v kfile
done
capture set_8 btrfsx --format json property set -f /dev/vdc allocation_hint 8
if [ -e $DI/type ]; then
	echo 8 > $DI/type 2>/dev/null; echo "@@R raw_write_8 $?"
	echo 0x3 > $DI/type 2>/dev/null; echo "@@R raw_write_3 $?"
fi
# Set while the kernel rewrites the trees: nothing may be reported as a bad mirror.
( i=0; while [ $i -lt 400 ]; do dd if=/dev/zero of=/mnt/bg$((i % 8)) bs=16k count=4 conv=fsync 2>/dev/null; i=$((i+1)); done ) &
bg=$!
n=0
while [ $n -lt 12 ]; do
	btrfsx device property set /dev/vdc allocation_hint metadata_preferred >/dev/null 2>>/tmp/race.err
	btrfsx device property set /dev/vdc allocation_hint data_preferred >/dev/null 2>>/tmp/race.err
	btrfsx device property get /dev/vdc allocation_hint >/dev/null 2>>/tmp/race.err
	n=$((n+1))
done
kill $bg 2>/dev/null; wait $bg 2>/dev/null
capture race_stderr cat /tmp/race.err
capture set_before_ro btrfsx --format json device property set /dev/vdc allocation_hint metadata_only
mount -o remount,ro /mnt
capture set_ro btrfsx --format json device property set /dev/vdc allocation_hint data_only
capture kernel_ro kfile
mount -o remount,rw /mnt
umount /mnt
mount -o device=/dev/vdb,device=/dev/vdc /dev/vda /mnt
capture kernel_remount kfile
umount /mnt
capture set_offline btrfsx --format json device property set /dev/vdc allocation_hint data_only
mount -o device=/dev/vdb,device=/dev/vdc /dev/vda /mnt
capture kernel_after_offline kfile
capture get_after_offline btrfsx --format json device property get /dev/vdc allocation_hint
capture show_mounted btrfsx --format json filesystem show /mnt
capture list_mounted btrfsx --format json property list /dev/vdc
umount /mnt
"""


def kernel_hint(text: str) -> int | str:
    """The hint the sysfs file shows: V12's name, or the low bits of kakra's type."""
    text = text.strip()
    if text.startswith("0x"):
        return int(text, 16) & 7
    for value, name in KERNEL_NAME.items():
        if text == name:
            return value
    return text


def json_of(res, name):
    return res.json(name)


PATCHED = vmharness.matrix(["v12", "kakra"], newer=True)
EVERY = vmharness.matrix(["v12", "kakra", "stock"], newer=True)
LINES = sorted({vmharness.series_info(s).kernel for s in PATCHED})


@pytest.fixture(scope="module")
def guests(vm_ready, tmp_path_factory):
    """Runs the script once per series, two guests at a time; the disks stay
    for the host-side checks."""
    dirs = {series: tmp_path_factory.mktemp(series) for series in EVERY}  # not in threads

    def one(series):
        disks = vmharness.make_disks(dirs[series], [512 * MiB] * 3)
        vmharness.mkfs_images(disks)
        script = GUEST_SCRIPT.replace("NAMES", " ".join(NAMES))
        return vmharness.Guest(series).run(script, disks, timeout=400), disks
    return vmharness.per_series(EVERY, one)


@pytest.mark.parametrize("series", PATCHED)
def test_every_name_goes_through_the_kernel(guests, series):
    res, _ = guests[series]
    accepted = NAMES if vmharness.family(series) == "kakra" else NAMES[:4]
    for value, name in enumerate(NAMES):
        rc, doc, text = json_of(res, f"set_{name}")
        kernel = kernel_hint(res.output(f"kernel_{name}")[1])
        if name in accepted:
            assert rc == 0, text
            assert kernel == value, (name, kernel)
            _, got, gtext = json_of(res, f"get_{name}")
            assert got["hint_value"] == value and got["effective"] is True, gtext
        else:
            # V12's file takes four names: value 4 is refused and nothing changes.
            assert rc == 1, text
            assert kernel == NAMES.index("data_only"), text


@pytest.mark.parametrize("line", LINES)
def test_v12_refuses_raw_values_kakra_stores_them(guests, line):
    v12, _ = guests[f"v12-{line}"]
    kakra, _ = guests[f"kakra-{line}"]
    for v in (5, 7):
        rc, _, text = json_of(v12, f"set_{v}")
        assert rc == 1, text
        assert kernel_hint(v12.output(f"kernel_{v}")[1]) != v
        rc, _, text = json_of(kakra, f"set_{v}")
        assert rc == 0, text
        assert kernel_hint(kakra.output(f"kernel_{v}")[1]) == v
        _, got, gtext = json_of(kakra, f"get_{v}")
        assert got["hint_value"] == v, gtext
    for res in (v12, kakra):
        rc, _, text = json_of(res, "set_8")
        assert rc == 2 or rc == 1, text
        assert "3-bit" in text
    # The kernel itself: 8 and up EINVAL on kakra's type file, 0x3 taken.
    assert kakra.first("raw_write_8") == ["1"]
    assert kakra.first("raw_write_3") == ["0"]


@pytest.mark.parametrize("series", EVERY)
def test_no_torn_read_reported_while_the_kernel_writes(guests, series):
    res, _ = guests[series]
    rc, text = res.output("race_stderr")
    assert not re.search(r"mirror \d+ bad|checksum mismatch", text), text


@pytest.mark.parametrize("series", PATCHED)
def test_read_only_mount_refused_and_value_survives_remount(guests, series):
    res, _ = guests[series]
    rc, _, text = json_of(res, "set_before_ro")
    assert rc == 0, text
    rc, _, text = json_of(res, "set_ro")
    assert rc == 1 and "read-only" in text, text
    assert kernel_hint(res.output("kernel_ro")[1]) == 2
    assert kernel_hint(res.output("kernel_remount")[1]) == 2


@pytest.mark.parametrize("series", PATCHED)
def test_offline_set_is_what_the_kernel_reports(guests, series):
    res, _ = guests[series]
    rc, _, text = json_of(res, "set_offline")
    assert rc == 0, text
    assert kernel_hint(res.output("kernel_after_offline")[1]) == 3
    _, got, gtext = json_of(res, "get_after_offline")
    assert got["hint_value"] == 3 and got["effective"] is True, gtext


@pytest.mark.parametrize("series", EVERY)
def test_show_and_list_on_the_mounted_filesystem(guests, series):
    """filesystem show of the mount point reports each member's hint as the
    kernel has it (effective only where the kernel honours hints), and
    property list offers allocation_hint for a member device."""
    res, _ = guests[series]
    rc, doc, text = json_of(res, "show_mounted")
    assert rc == 0, text
    (fs,) = doc["filesystems"]
    assert fs["mounted"] is True and fs["mountpoint"] == "/mnt", text
    devs = {d["devid"]: d for d in fs["devices"]}
    assert sorted(devs) == [1, 2, 3], text
    assert devs[3]["hint"] == "data_only" and devs[3]["hint_value"] == 3, text
    assert devs[3]["effective"] is (vmharness.family(series) != "stock"), text
    assert all(devs[i]["hint_value"] == 0 for i in (1, 2)), text
    rc, doc, text = json_of(res, "list_mounted")
    assert rc == 0 and [p["name"] for p in doc["properties"]] == ["allocation_hint"], text


def super_types(disk) -> list[int]:
    """dev_item.type of every valid superblock copy (btrfs-progs' dump-super)."""
    out = subprocess.run(["btrfs", "inspect-internal", "dump-super", "-a", str(disk)],
                         capture_output=True, text=True, check=True).stdout
    return [int(v, 0) for v in re.findall(r"^dev_item\.type\s+(\S+)", out, re.M)]


def chunk_tree_type(disk, devid: int) -> int:
    out = subprocess.run(["btrfs", "inspect-internal", "dump-tree", "-t", "chunk", str(disk)],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(rf"DEV_ITEM {devid}\)[^\n]*\n\s*devid {devid} [^\n]*\n[^\n]*?type (\d+)", out)
    assert m, out
    return int(m.group(1))


@pytest.mark.parametrize("series", EVERY)
def test_every_copy_holds_the_last_value(guests, series):
    """After the guest: data_only (3) in both superblock copies of devid 3 and in
    its chunk-tree item, read by btrfs-progs (the stock kernel never wrote
    it online, the offline set did)."""
    _, disks = guests[series]
    assert super_types(disks[2]) == [3, 3]
    assert chunk_tree_type(disks[2], 3) == 3


@pytest.mark.parametrize("series", vmharness.matrix(["stock"], newer=True))
def test_stock_kernel_refuses_online_set_and_shows_the_stored_value(guests, series):
    res, _ = guests[series]
    assert res.first("files") == [] or "allocation_hint" not in res.first("files")
    rc, _, text = json_of(res, "set_metadata_only")
    assert rc == 1 and "no allocation hint support" in text, text
    _, got, gtext = json_of(res, "get_data_preferred")
    assert got["effective"] is False and got["hint_value"] == 0, gtext
    _, got, gtext = json_of(res, "get_after_offline")
    assert got["hint_value"] == 3 and got["effective"] is False, gtext
