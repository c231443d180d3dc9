# SPDX-License-Identifier: GPL-2.0-or-later
"""Read policies on a kernel that has them (issue 33, part 1).

One guest of the ``readpolicy`` series (Debian's 6.1 with mainline's RAID1
read policies: round-robin[:<bytes>], devid[:<devid>], the module parameter
read_policy=) runs every check from one script, on a raid1c3 filesystem of
three disks and a single/dup one on a fourth, then a raid10 over all four:

* every ``read-policy`` subcommand and the ``read_policy`` property against
  the real ``/sys/fs/btrfs/<FSID>/read_policy``: every value form, ``get``
  matching the kernel's brackets after each;
* refusals: each value written straight to the sysfs file (the kernel's
  verdict) and through btrfsx, which must refuse whatever the kernel refuses,
  and also what the kernel takes but cannot live with (4 GiB and up: stored
  as 0, the next read divides by it);
* persistence: ``set --persistent``, then ``apply`` after a new mount, and
  the command of the shipped systemd unit (``apply --watch``) at each mount;
  the module parameter as the global default (btrfs reloaded with it), which
  ``get`` shows from /etc/modprobe.d and warns about when the kernel would
  refuse or crash on it;
* ``device io-stats`` shares that follow the policy: devid:N >= 95 % of the
  reads on N; round-robin even within 10 points on raid1c3 and raid10 with
  64 KiB direct reads.

The fake sysfs trees of tests/test_read_policy.py stay for the earlier
read_policies/ interface, which no kernel here has.
"""

from __future__ import annotations

import re
import shlex

import pytest

import vmharness

MiB = 1 << 20
SERIES = vmharness.READ_POLICY_SERIES
FRESH = "[pid] round-robin:262144 devid:1"

# request -> the active policy the kernel shows afterwards (in brackets)
ACCEPTED = {
    "pid": "pid",
    "round-robin": "round-robin:262144",
    "roundrobin": "round-robin:262144",
    "round-robin:4096": "round-robin:4096",
    "round-robin:64K": "round-robin:65536",
    "round-robin:64k": "round-robin:65536",
    "round-robin:1M": "round-robin:1048576",
    "round-robin:1MiB": "round-robin:1048576",
    "round-robin:1G": "round-robin:1073741824",
    "round-robin:262144": "round-robin:262144",
    "round-robin:3G": "round-robin:3221225472",
    "round-robin:4294963200": "round-robin:4294963200",
    "devid": "devid:1",
    "devid:1": "devid:1",
    "devid:2": "devid:2",
    "devid:3": "devid:3",
    "devid:0x2": "devid:2",
}

# Written straight to the sysfs file: accepted (True) or EINVAL (False).
# Never 4 GiB and up here: the kernel takes it, shows round-robin:0 and its
# next RAID1 read divides by zero (written once, to the single/dup filesystem).
KERNEL_VERDICTS = [
    ("pid", True), ("round-robin", True), ("round-robin:65536", True), ("devid:2", True),
    ("pid\n", True), ("round-robin:64k", True), ("round-robin:1M", True),
    ("devid:1 ", True), ("round-robin:65536 ", True), ("pid:5", True),
    ("round-robin:123", True),          # rounded up to 4096
    ("devid:9", False), ("devid:0", False), ("devid:", False), ("devid:abc", False),
    ("round-robin:0", False), ("round-robin:-1", False), ("round-robin:65536x", False),
    ("round-robin:1:2", False), ("round-robin:999999999999999999999", False),
    ("bogus", False), ("PID", False), ("Round-Robin", False), ("pid ", False),
    (" pid", False), ("pid\n\n", False), ("\n", False), ("x" * 40, False),
]

# btrfsx's refusals: exit code (2: the request does not parse; 1: this kernel
# or filesystem refuses it), words of the message. Beyond the kernel's own:
# what it takes and cannot live with (4 GiB and up), what it would round.
OURS = {
    "round-robin:4G": (1, "the size must be below 4GiB"),
    "round-robin:4294967296": (1, "the size must be below 4GiB"),
    "round-robin:8G": (1, "the size must be below 4GiB"),
    "round-robin:1T": (1, "the size must be below 4GiB"),
    "round-robin:123": (1, "123 is not a multiple of the sector size 4096"),
    "round-robin:6000": (1, "6000 is not a multiple of the sector size 4096"),
    "round-robin:4097": (1, "4097 is not a multiple of the sector size 4096"),
    "round-robin:0": (2, "the size must be greater than 0"),
    "round-robin:-4096": (2, "is not a size"),
    "round-robin:x": (2, "'x' is not a size"),
    "round-robin:": (2, "'' is not a size"),
    "round-robin:4k4": (2, "is not a size"),
    "devid:4": (1, "device 4 is not part of filesystem"),
    "devid:7": (1, "device 7 is not part of filesystem"),
    "devid:0": (2, "'0' is not a device id"),
    "devid:x": (2, "'x' is not a device id"),
    "pid:1": (2, "pid takes no argument"),
    "latency": (1, "unknown read policy 'latency' (this kernel offers: pid, round-robin, devid)"),
    "Round-Robin": (1, "unknown read policy 'Round-Robin'"),
    "": (2, "invalid read policy ''"),
    "round robin": (2, "invalid read policy 'round robin'"),
    ":4096": (2, "invalid read policy ':4096'"),
}

GUEST = r"""
export BTRFSX_CONFIG_DIR=/etc/btrfsx
RP=""
mnt3() { mount -o device=/dev/vdb,device=/dev/vdc /dev/vda /mnt/a; }
fsid_of() { btrfsx --format json read-policy get $1 | sed -n 's/.*"fsid": *"\([^"]*\)".*/\1/p'; }
# Waits (at most 30 s) for the read policy file to show $1.
wait_policy() {
	n=0
	while [ $n -lt 300 ] && ! grep -qF "$1" $RP; do sleep 0.1; n=$((n + 1)); done
}
# io-stats blocks SIGTERM once it has read the first counters.
wait_sampling() {
	n=0
	while [ $n -lt 600 ]; do
		blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' /proc/$1/status 2>/dev/null)
		[ -n "$blk" ] && [ $(( 0x$blk & 0x4000 )) -ne 0 ] && return 0
		sleep 0.05; n=$((n + 1))
	done
}
# io-stats around a direct read of $2 in 64 KiB requests (policy $3); its
# document comes back in the block io_$1.
shares() {
	btrfsx read-policy set $MNT $3 >/dev/null
	sync; echo 3 > /proc/sys/vm/drop_caches
	btrfsx --format json device io-stats -i 3600 $MNT > /tmp/io.out 2>&1 &
	job=$!
	wait_sampling $job
	dd if=$2 of=/dev/null bs=64k iflag=direct 2>/dev/null
	kill $job; wait $job; rc=$?
	echo "@@BEGIN io_$1"; cat /tmp/io.out; echo; echo "@@END io_$1 $rc"
}
mkdir -p /mnt/a /mnt/s /etc/modprobe.d
mnt3 || echo "@@R mount_failed"
mount /dev/vdd /mnt/s || echo "@@R mount_failed"
FSID=$(fsid_of /mnt/a)
RP=/sys/fs/btrfs/$FSID/read_policy
echo "@@R fsid $FSID"
capture fresh cat $RP
capture get_fresh btrfsx --format json read-policy get /mnt/a
capture single_get btrfsx --format json read-policy get /mnt/s
capture single_set btrfsx --format json read-policy set /mnt/s round-robin
capture tunables btrfsx --format json read-policy tunables /mnt/a
@ACCEPTED@
# a policy already active is not written again; without its argument it is
capture again_devid2 btrfsx --format json read-policy set /mnt/a devid:2
capture again_devid2_same btrfsx --format json read-policy set /mnt/a devid:2
capture again_devid btrfsx --format json read-policy set /mnt/a devid
capture again_kernel cat $RP
@KERNEL@
@OURS@
capture prop_set btrfsx --format json property set /mnt/a read_policy devid:2
capture prop_kernel cat $RP
capture prop_get btrfsx --format json property get /mnt/a read_policy
capture prop_refused btrfsx --format json property set /mnt/a read_policy round-robin:4G
capture prop_refused_6000 btrfsx --format json property set /mnt/a read_policy round-robin:6000
capture prop_kernel_after cat $RP
# What btrfsx refuses because the kernel takes it and dies, written straight:
# to the single/dup filesystem, whose reads never ask the read policy.
RPS=/sys/fs/btrfs/$(fsid_of /mnt/s)/read_policy
printf 'round-robin:4G' > $RPS; echo "@@R rr4g_rc $?"
capture rr4g_kernel cat $RPS
echo pid > $RPS
capture rr4g_after cat $RPS

# io-stats shares on raid1c3
dd if=/dev/urandom of=/mnt/a/f bs=1M count=24 2>/dev/null
sync
MNT=/mnt/a
shares devid1 /mnt/a/f devid:1
shares devid2 /mnt/a/f devid:2
shares devid3 /mnt/a/f devid:3
shares rr /mnt/a/f round-robin
shares rr64k /mnt/a/f round-robin:64k
shares pid /mnt/a/f pid

# recommend: measured, applied through the real file and recorded
btrfsx read-policy set /mnt/a pid >/dev/null
capture recommend btrfsx --format json read-policy recommend --apply --seconds 4.2 --readers 1 --pattern sequential /mnt/a
capture recommend_kernel cat $RP
capture recommend_single btrfsx --format json read-policy recommend /mnt/s

# persistence: a record, applied after a new mount
capture persist_set btrfsx --format json read-policy set --persistent /mnt/a round-robin:128K
capture persist_list btrfsx --format json read-policy list
umount /mnt/a; mnt3
capture persist_remounted cat $RP
capture persist_apply btrfsx --format json read-policy apply
capture persist_applied cat $RP
capture persist_apply_again btrfsx --format json read-policy apply /mnt/a
# the shipped unit's command, at every mount
@UNIT@ > /tmp/watch.out 2>&1 &
watcher=$!
wait_policy "[round-robin:131072]"
for i in 1 2; do
	umount /mnt/a; mnt3
	wait_policy "[round-robin:131072]"
	capture watch_mount$i cat $RP
done
kill $watcher; wait $watcher
capture watch_out cat /tmp/watch.out

# the module parameter: the global default at every mount
umount /mnt/a; umount /mnt/s
rmmod btrfs; echo "@@R rmmod $?"
insmod /lib/modules/btrfs.ko read_policy=bogus 2>/dev/null; echo "@@R insmod_bogus $?"
insmod /lib/modules/btrfs.ko read_policy=round-robin:0 2>/dev/null; echo "@@R insmod_rr0 $?"
insmod /lib/modules/btrfs.ko read_policy=round-robin:65536; echo "@@R insmod_rr $?"
echo "options btrfs read_policy=round-robin:65536" > /etc/modprobe.d/btrfs.conf
mnt3
capture module_kernel cat $RP
capture module_get btrfsx --format json read-policy get /mnt/a
capture module_apply btrfsx --format json read-policy apply /mnt/a
capture module_applied cat $RP
umount /mnt/a; rmmod btrfs
insmod /lib/modules/btrfs.ko read_policy=devid:3; echo "@@R insmod_devid $?"
echo "options btrfs read_policy=devid:3" > /etc/modprobe.d/btrfs.conf
capture forget btrfsx --format json read-policy forget $FSID
mnt3
capture module_devid cat $RP
capture module_devid_get btrfsx --format json read-policy get /mnt/a
# what the kernel would take and crash on: said by get, never loaded here
for bad in round-robin:1000 round-robin:4G bogus devid:9; do
	echo "options btrfs read_policy=$bad" > /etc/modprobe.d/btrfs.conf
	capture module_warn_$bad btrfsx --format json read-policy get /mnt/a
done
rm /etc/modprobe.d/btrfs.conf
umount /mnt/a; rmmod btrfs; insmod /lib/modules/btrfs.ko

# raid10 over the four disks: round-robin even, devid:N on its mirror pair
mkfs.btrfs -q -f -d raid10 -m raid10 /dev/vda /dev/vdb /dev/vdc /dev/vdd >/dev/null
mount -o device=/dev/vdb,device=/dev/vdc,device=/dev/vdd /dev/vda /mnt/a
dd if=/dev/urandom of=/mnt/a/f bs=1M count=24 2>/dev/null
sync
RP=/sys/fs/btrfs/$(fsid_of /mnt/a)/read_policy
capture r10_get btrfsx --format json read-policy get /mnt/a
shares r10_rr /mnt/a/f round-robin
shares r10_devid1 /mnt/a/f devid:1
shares r10_devid4 /mnt/a/f devid:4
umount /mnt/a
"""


def sh_quote(text: str) -> str:
    """A shell word holding @text exactly (newlines included), for printf '%s'."""
    return "'" + text.replace("'", "'\\''") + "'"


def guest_script() -> str:
    unit = (vmharness.REPO / "systemd" / "btrfsx-read-policy.service.in").read_text()
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
    accepted = "\n".join(
        f"capture set_{i} btrfsx --format json read-policy set /mnt/a {shlex.quote(v)}\n"
        f"capture kernel_{i} cat $RP\n"
        f"capture get_{i} btrfsx --format json read-policy get /mnt/a"
        for i, v in enumerate(ACCEPTED))
    kernel = "\n".join(
        f"echo pid > $RP; printf '%s' {sh_quote(v)} > $RP 2>/dev/null; "
        f"echo \"@@R kwrite {i} $?\"; capture kshows_{i} cat $RP\n"
        f"echo pid > $RP; capture ours_set_{i} btrfsx --format json read-policy set /mnt/a "
        f"{sh_quote(v)}; capture ours_shows_{i} cat $RP"
        for i, (v, _) in enumerate(KERNEL_VERDICTS))
    ours = "\n".join(
        f"echo pid > $RP; capture refuse_{i} btrfsx --format json read-policy set /mnt/a "
        f"{shlex.quote(v)}; capture refuse_kernel_{i} cat $RP"
        for i, v in enumerate(OURS))
    return (GUEST.replace("@ACCEPTED@", accepted).replace("@KERNEL@", kernel)
            .replace("@OURS@", ours).replace("@UNIT@", exec_start.replace("@bindir@", "/usr/bin")))


def active(shows: str) -> str:
    """The bracketed policy of a read_policy file's text."""
    return re.search(r"\[([^\]]+)\]", shows).group(1)


@pytest.fixture(scope="module")
def guest(vm_ready, tmp_path_factory):
    missing = vmharness.series_missing(SERIES)
    if missing:
        pytest.skip(missing)
    disks = vmharness.make_disks(tmp_path_factory.mktemp("rp"), [512 * MiB] * 4)
    vmharness.mkfs_images(disks[:3], data="raid1c3", metadata="raid1c3")
    vmharness.mkfs_images(disks[3:], data="single", metadata="dup")
    try:
        yield vmharness.Guest(SERIES).run(guest_script(), disks, timeout=600)
    finally:
        vmharness.remove_disks(disks)


def kernel_text(res, name: str) -> str:
    rc, text = res.output(name)
    assert rc == 0, text
    return text.strip()


def test_fresh_mount_shows_every_policy(guest):
    assert kernel_text(guest, "fresh") == FRESH
    rc, doc, text = guest.json("get_fresh")
    assert rc == 0, text
    assert doc["interface"] == "read_policy" and doc["kernel_shows"] == FRESH
    assert doc["policy"] == "pid" and doc["available"] == ["pid", "round-robin", "devid"]
    assert doc["mirrored"] == ["data/raid1c3", "metadata/raid1c3", "system/raid1c3"]
    assert doc["affects_reads"] is True and doc["persistent"] is None
    assert doc["module_default"] is None and "warnings" not in doc


def test_every_value_form(guest):
    """Each request goes through the real file; get's policy is the bracketed one."""
    for i, (request, shown) in enumerate(ACCEPTED.items()):
        rc, doc, text = guest.json(f"set_{i}")
        assert rc == 0, (request, text)
        kernel = kernel_text(guest, f"kernel_{i}")
        assert active(kernel) == shown, (request, kernel)
        assert doc["policy"] == shown, (request, doc)
        rc, got, text = guest.json(f"get_{i}")
        assert rc == 0, text
        assert got["policy"] == active(kernel) and got["kernel_shows"] == kernel
        names = [re.sub(r"[\[\]]|:.*", "", w) for w in kernel.split()]
        assert got["available"] == names


def test_set_writes_only_what_changes(guest):
    rc, doc, text = guest.json("again_devid2")
    rc, same, text = guest.json("again_devid2_same")
    assert rc == 0 and same["changed"] is False and same["policy"] == "devid:2", text
    rc, doc, text = guest.json("again_devid")    # the kernel picks its default devid again
    assert rc == 0 and doc["changed"] is True and doc["policy"] == "devid:1", text
    assert active(kernel_text(guest, "again_kernel")) == "devid:1"


def test_btrfsx_refuses_what_the_kernel_refuses(guest):
    """The kernel's verdict on each value, and btrfsx's: btrfsx never passes
    on a value the kernel refuses, and whatever it accepts is what the kernel
    then shows."""
    for i, (value, accepted) in enumerate(KERNEL_VERDICTS):
        index, rc = map(int, guest.results["kwrite"][i])
        assert index == i
        assert (rc == 0) == accepted, (value, rc)
        shows = kernel_text(guest, f"kshows_{i}")
        if not accepted:
            assert active(shows) == "pid", (value, shows)
        ours, doc, text = guest.json(f"ours_set_{i}")
        after = kernel_text(guest, f"ours_shows_{i}")
        if not accepted:
            assert ours in (1, 2), (value, text)
            assert active(after) == "pid", (value, after)
        elif ours == 0:
            assert doc["policy"] == active(after), (value, doc, after)
        else:
            # stricter than the kernel: spellings it tolerates, sizes it rounds
            assert value.strip() != value or value in ("round-robin:123", "pid:5"), (value, text)


def test_btrfsx_refuses_what_the_kernel_cannot_live_with(guest):
    for i, (value, (code, words)) in enumerate(OURS.items()):
        rc, doc, text = guest.json(f"refuse_{i}")
        assert rc == code and doc["error"]["exit_code"] == code, (value, text)
        assert words in doc["error"]["message"], (value, doc)
        assert active(kernel_text(guest, f"refuse_kernel_{i}")) == "pid"
    rc, doc, text = guest.json(f"refuse_{list(OURS).index('devid:7')}")
    assert doc["error"]["code"] == 22 and "(its devices: 1 2 3)" in doc["error"]["message"]
    # ... and the kernel really takes 4 GiB: stored in 32 bits, shown as 0
    assert guest.first("rr4g_rc") == ["0"]
    assert active(kernel_text(guest, "rr4g_kernel")) == "round-robin:0"
    assert active(kernel_text(guest, "rr4g_after")) == "pid"


def test_property(guest):
    rc, doc, text = guest.json("prop_set")
    assert rc == 0 and doc["read_policy"] == "devid:2", text
    assert active(kernel_text(guest, "prop_kernel")) == "devid:2"
    rc, doc, text = guest.json("prop_get")
    assert rc == 0 and doc == {"__header": doc["__header"], "read_policy": "devid:2"}, text
    rc, doc, text = guest.json("prop_refused")
    assert rc == 1 and "below 4GiB" in doc["error"]["message"], text
    rc, doc, text = guest.json("prop_refused_6000")
    assert rc == 1 and "not a multiple of the sector size" in doc["error"]["message"], text
    assert active(kernel_text(guest, "prop_kernel_after")) == "devid:2"


def test_other_subcommands(guest):
    rc, doc, text = guest.json("tunables")
    assert rc == 1 and "not with mainline" in doc["error"]["message"], text
    rc, doc, text = guest.json("single_get")
    assert rc == 0 and doc["affects_reads"] is False and doc["mirrored"] == [], text
    assert any("changes nothing" in w for w in doc["warnings"])
    rc, doc, text = guest.json("single_set")
    assert rc == 0 and doc["policy"] == "round-robin:262144", text
    assert any("changes nothing" in w for w in doc["warnings"])


def shares(guest, name: str) -> dict[int, float]:
    from helpers import json_schemas     # tests/: on the path under pytest

    rc, doc, text = guest.json(f"io_{name}")
    assert rc == 0, text
    json_schemas.validate(["device", "io-stats"], doc)
    [sample] = doc["samples"]
    assert sample["total"]["read_bytes"] >= 24 * MiB, sample
    return {d["devid"]: d["read_bytes_pct"] for d in sample["devices"]}


def test_io_stats_follow_the_policy_raid1c3(guest):
    for devid in (1, 2, 3):
        pct = shares(guest, f"devid{devid}")
        assert pct[devid] >= 95, (devid, pct)
    for name in ("rr", "rr64k"):
        pct = shares(guest, name)
        assert all(abs(p - 100 / 3) <= 10 for p in pct.values()), (name, pct)
    pct = shares(guest, "pid")     # one reader: one mirror
    assert max(pct.values()) >= 95, pct


def test_io_stats_follow_the_policy_raid10(guest):
    rc, doc, text = guest.json("r10_get")
    assert doc["mirrored"] == ["data/raid10", "metadata/raid10", "system/raid10"], text
    pct = shares(guest, "r10_rr")
    assert all(abs(p - 25) <= 10 for p in pct.values()), pct
    # devid:N reads N's mirror pair from N, the other pair from its first copy:
    # half the reads on N, half on one device of the other pair
    for devid in (1, 4):
        pct = shares(guest, f"r10_devid{devid}")
        _, second, third, _ = sorted(pct.values())
        assert pct[devid] >= 45 and third >= 45 and second <= 5, (devid, pct)


def test_recommend_applies_through_the_kernel(guest):
    fsid = guest.first("fsid")[0]
    rc, doc, text = guest.json("recommend")
    assert rc == 0, text
    rec = doc["recommended"]
    assert [c["policy"] for c in doc["candidates"]] == [
        "pid", "round-robin:65536", "round-robin:262144", "round-robin:1048576", "devid:1",
        "devid:2", "devid:3"]
    assert doc["offered"] is True and doc["applied"] is True and doc["persistent"] == rec
    assert doc["current"] == "pid" and doc["region"] == "data"
    assert all(d["probe_bytes"] > 0 and not d["disturbed"] for d in doc["devices"])
    assert active(kernel_text(guest, "recommend_kernel")) == rec
    rc, doc, text = guest.json("persist_list")      # recorded, then replaced by set -p
    assert doc["records"][0]["fsid"] == fsid
    rc, doc, text = guest.json("recommend_single")
    assert rc == 0 and doc["affects_reads"] is False and doc["recommended"] is None, text


def test_persistent_record_applied_at_mount(guest):
    fsid = guest.first("fsid")[0]
    rc, doc, text = guest.json("persist_set")
    assert rc == 0 and doc["persistent"] == "round-robin:131072", text
    rc, doc, text = guest.json("persist_list")
    assert doc["records"] == [{"fsid": fsid, "policy": "round-robin:131072", "mounted": True,
                               "mountpoint": "/mnt/a"}], text
    assert active(kernel_text(guest, "persist_remounted")) == "pid"   # the kernel forgot
    rc, doc, text = guest.json("persist_apply")
    assert rc == 0 and doc["filesystems"] == [
        {"fsid": fsid, "mountpoint": "/mnt/a", "policy": "round-robin:131072",
         "status": "applied"}], text
    assert active(kernel_text(guest, "persist_applied")) == "round-robin:131072"
    rc, doc, text = guest.json("persist_apply_again")
    assert doc["filesystems"][0]["status"] == "unchanged", text


def test_shipped_unit_applies_at_every_mount(guest):
    fsid = guest.first("fsid")[0]
    for i in (1, 2):
        assert active(kernel_text(guest, f"watch_mount{i}")) == "round-robin:131072"
    out = guest.output("watch_out")[1]
    # applied at start (already active: unchanged) and after each of the two mounts
    line = f"fsid {fsid} path /mnt/a policy round-robin:131072 status applied"
    assert out.count(line) == 2, out


def test_module_parameter_is_the_global_default(guest):
    assert guest.first("rmmod") == ["0"]
    assert guest.first("insmod_bogus") != ["0"]       # the kernel refuses the load
    assert guest.first("insmod_rr0") != ["0"]
    assert guest.first("insmod_rr") == ["0"]
    assert kernel_text(guest, "module_kernel") == "pid [round-robin:65536] devid:1"
    rc, doc, text = guest.json("module_get")
    assert rc == 0, text
    assert doc["policy"] == "round-robin:65536"
    assert doc["module_default"] == "round-robin:65536"
    assert doc["module_default_source"] == "/etc/modprobe.d/btrfs.conf"
    assert doc["persistent"] == "round-robin:131072"
    # the per-filesystem record wins over the module default
    rc, doc, text = guest.json("module_apply")
    assert doc["filesystems"][0]["status"] == "applied", text
    assert active(kernel_text(guest, "module_applied")) == "round-robin:131072"
    assert guest.first("insmod_devid") == ["0"]
    assert active(kernel_text(guest, "module_devid")) == "devid:3"
    rc, doc, text = guest.json("module_devid_get")
    assert doc["policy"] == "devid:3" and doc["module_default"] == "devid:3", text
    assert "warnings" not in doc, doc


@pytest.mark.parametrize("value, words", [
    ("round-robin:1000", "below the sector size 4096"),
    ("round-robin:4G", "4GiB or more"),
    ("bogus", "refuses to load"),
    ("devid:9", "no device 9"),
])
def test_module_parameter_the_kernel_cannot_live_with(guest, value, words):
    rc, doc, text = guest.json(f"module_warn_{value}")
    assert rc == 0, text
    assert doc["module_default"] == value
    assert any(words in w and f"read_policy={value}" in w for w in doc.get("warnings", [])), doc
