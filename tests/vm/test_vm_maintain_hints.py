# SPDX-License-Identifier: GPL-2.0-or-later
"""`btrfsx maintain run` puts a hinted array back in place after a failed
SSD (issue 37), on the kernels that honour hints.

One guest per patched series, six 1 GiB disks: vda and vdb the SSDs
(metadata_only), vdc and vdd the HDDs (data_only), raid1 data and metadata
on those four, a full balance so that every chunk sits where the hints want
it; vde an HDD for the repair, vdf a new SSD. Then, as after a failure:

  1. the SSD vda gone: mounted degraded without it, files written;
  2. repaired with the HDD vde in its place (`btrfs replace` of the missing
     devid 1; the replacement keeps devid 1, not the hint), vde data_only;
  3. the new SSD vdf added (devid 5), metadata_only.

The metadata chunks that had a stripe on vda now have it on an HDD, where
the hints forbid it. `maintain run`, by itself (no options, the default
policy), must move exactly those chunks and no other, say so (each action's
reason "misplaced"), and leave every chunk where the hints want it (the
chunk tree read by btrfs-progs against the hints), the files unchanged and
`btrfs check` clean. Placement is why it runs here: the metadata room is
far above its target, so nothing moves for room.
"""

from __future__ import annotations

import pytest

import vmharness
from helpers.misplaced_oracle import METADATA, SYSTEM, chunk_tree, expected

# by devid, after the repair and the new SSD: 1 is the HDD that replaced the SSD
HINTS = ["data_only", "metadata_only", "data_only", "data_only", "metadata_only"]

SCRIPT = r"""
hint() { btrfsx property set -f $1 allocation_hint $2 >/dev/null 2>/tmp/h.err ||
	echo "@@R hint_failed $1 $2 $(head -1 /tmp/h.err)"; }
files() {	# $1: directory
	mkdir -p /mnt/$1
	for i in 1 2 3; do dd if=/dev/urandom of=/mnt/$1/big$i bs=1M count=12 2>/dev/null; done
	i=0
	while [ $i -lt 400 ]; do head -c 3000 /dev/urandom > /mnt/$1/s$i; i=$((i + 1)); done
}
mkfs.btrfs -q -f -d raid1 -m raid1 /dev/vda /dev/vdb /dev/vdc /dev/vdd >/dev/null 2>&1 ||
	echo "@@R mkfs_failed"
hint /dev/vda metadata_only; hint /dev/vdb metadata_only
hint /dev/vdc data_only; hint /dev/vdd data_only
mount -o device=/dev/vdb,device=/dev/vdc,device=/dev/vdd /dev/vda /mnt || echo "@@R mount_failed"
files a
btrfs balance start --full-balance /mnt >/dev/null 2>&1 || echo "@@R balance_failed"
sync
capture placed btrfsx --format json filesystem misplaced /mnt
umount /mnt
# 1. the SSD vda is gone: forgotten and wiped, the array run degraded
btrfs device scan --forget /dev/vda >/dev/null 2>&1
wipefs -a -q /dev/vda
mount -o degraded,device=/dev/vdc,device=/dev/vdd /dev/vdb /mnt || echo "@@R degraded_failed"
files b
sync
# 2. the HDD vde in its place
btrfs replace start -B -f 1 /dev/vde /mnt >/tmp/r.out 2>&1 || { echo "@@R replace_failed"; cat /tmp/r.out; }
# 3. a new SSD
btrfs device add -f /dev/vdf /mnt >/dev/null 2>&1 || echo "@@R add_failed"
umount /mnt
hint /dev/vde data_only; hint /dev/vdf metadata_only
mount -o device=/dev/vdb,device=/dev/vdc,device=/dev/vdd,device=/dev/vdf /dev/vde /mnt ||
	echo "@@R remount_failed"
(cd /mnt && find . -type f | sort | xargs sha256sum) > /tmp/sums.before
sync
capture chunks_before btrfs inspect-internal dump-tree -t chunk /dev/vde
capture report btrfsx --format json filesystem misplaced /mnt
capture plan btrfsx --format json maintain plan /mnt
capture run btrfsx --format json maintain run /mnt
capture report_after btrfsx --format json filesystem misplaced /mnt
(cd /mnt && find . -type f | sort | xargs sha256sum) > /tmp/sums.after
cmp -s /tmp/sums.before /tmp/sums.after && echo "@@R sums_equal yes $(wc -l < /tmp/sums.after)" ||
	echo "@@R sums_equal no"
sync
capture chunks_after btrfs inspect-internal dump-tree -t chunk /dev/vde
umount /mnt
capture check btrfs check --readonly /dev/vde
"""

SERIES = vmharness.matrix(["v12", "kakra"])
FAILURES = ("mkfs_failed", "hint_failed", "mount_failed", "balance_failed", "degraded_failed",
            "replace_failed", "add_failed", "remount_failed")


@pytest.fixture(scope="module")
def guests(vm_ready, tmp_path_factory):
    """Each series' guest, run on first use (one at a time)."""
    runs = {}

    def get(series):
        if series not in runs:
            disks = vmharness.make_disks(tmp_path_factory.mktemp(f"maint-{series}"),
                                         [1 << 30] * 6)
            try:
                runs[series] = vmharness.Guest(series).run(SCRIPT, disks, timeout=1200)
            finally:
                vmharness.remove_disks(disks)
        res = runs[series]
        failed = [f for f in FAILURES if f in res.results]
        assert not failed, (failed, res.console[-8000:])
        return res
    return get


def doc(res, name, key, rc=0) -> dict:
    got_rc, document, text = res.json(name)
    assert got_rc == rc and document, text
    return document[key]


@pytest.mark.parametrize("series", SERIES)
def test_maintain_puts_the_repaired_array_back(guests, series):
    res = guests(series)
    assert doc(res, "placed", "misplaced")["chunks"] == []
    before = chunk_tree(res.output("chunks_before")[1])
    wrong = expected(before, HINTS)
    # the repair left metadata (and system) stripes on the HDD that took devid 1
    assert wrong and all(before[c][0] & (METADATA | SYSTEM) and 1 in before[c][1]
                         for c in wrong), wrong
    report = doc(res, "report", "misplaced", rc=4)
    assert {c["logical"] for c in report["chunks"]} == set(wrong), report
    plan = doc(res, "plan", "maintain")
    assert plan["status"] == "planned", plan
    run = doc(res, "run", "maintain")
    assert run["status"] == "target-met", run
    # those chunks, no other, and it says why
    assert {m["logical"] for m in run["moved"]} == set(wrong), run
    assert {m["reason"] for m in run["moved"]} == {"misplaced"}, run
    print(f"\n{series}: after the repair {len(wrong)} chunks misplaced "
          f"({', '.join(sorted(m['type'] for m in run['moved']))}); maintain moved "
          f"{run['chunks_moved']} ({run['bytes_moved']} bytes) in {run['seconds']} s")
    assert run["final"]["misplaced"] == 0, run
    assert doc(res, "report_after", "misplaced")["chunks"] == []
    after = chunk_tree(res.output("chunks_after")[1])
    assert expected(after, HINTS) == {}, after
    # the data chunks stayed where they were
    data_before = {c: v for c, v in before.items() if not v[0] & (METADATA | SYSTEM)}
    assert {c: after.get(c) for c in data_before} == data_before
    assert res.first("sums_equal")[0] == "yes"
    rc, text = res.output("check")
    assert rc == 0, text
