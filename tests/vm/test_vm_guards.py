# SPDX-License-Identifier: GPL-2.0-or-later
"""Guard rails and mkfs on kernels that honour hints (issue 21, parts 4 and 5).

Guard rails: on raid1 data and metadata over three 512 MiB disks, btrfsx
refuses hint sets after which some chunk type cannot be allocated. Each
refused set is then forced (-f) and the kernel shows it: the fill of that
type stops with ENOSPC while unallocated space remains, and no new chunk
of that type appears. Accepted sets allocate new chunks as needed.

mkfs: ``btrfsx mkfs`` with metadata_only and data_only devices; the patched
kernel fills it (data, and metadata chunks forced by metadata_ratio=1),
every chunk lands where the hints say, and ``btrfs check`` is clean.
"""

from __future__ import annotations

import re
import subprocess

import pytest

import vmharness

MiB = 1 << 20
NAMES = ["data_preferred", "metadata_preferred", "metadata_only", "data_only", "none"]
# hints of devid 1, 2, 3 -> the chunk type the guard refuses them for (None: accepted)
CASES = [
    ([2, 2, 0], "data"),        # one device left for raid1 data
    ([3, 3, 0], "metadata"),    # one device left for raid1 metadata
    ([2, 0, 0], None),
    ([3, 1, 0], None),
    ([1, 1, 3], None),
]

GUARD_SCRIPT = r"""
guard_case() {
	n=$1; h1=$2; h2=$3; h3=$4
	mkfs.btrfs -q -f -d raid1 -m raid1 /dev/vda /dev/vdb /dev/vdc >/dev/null 2>&1
	refused=0; i=1
	for h in $h1 $h2 $h3; do
		d=/dev/vd$(echo abc | cut -c$i)
		if [ $h != 0 ] && ! btrfsx property set $d allocation_hint $h >/dev/null 2>/tmp/g.err; then
			refused=1
			echo "@@R guard_msg $n $(head -1 /tmp/g.err)"
			btrfsx property set -f $d allocation_hint $h >/dev/null
		fi
		i=$((i + 1))
	done
	echo "@@R refused $n $refused"
	mount -o device=/dev/vdb,device=/dev/vdc /dev/vda /mnt
	capture before_$n btrfs filesystem usage -b /mnt
	guest-fill data /mnt | sed "s/^@@R fill_data/@@R data $n/"
	capture mid_$n btrfs filesystem usage -b /mnt
	guest-fill meta /mnt 400000000 | sed "s/^@@R fill_meta/@@R meta $n/"
	sync
	capture after_$n btrfs filesystem usage -b /mnt
	umount /mnt
}
"""

MKFS_SCRIPT = r"""
capture mkfs btrfsx mkfs -f -d raid1 -m raid1 /dev/vda:monly /dev/vdb:monly /dev/vdc:donly /dev/vdd:donly
mount -o metadata_ratio=1,device=/dev/vdb,device=/dev/vdc,device=/dev/vdd /dev/vda /mnt
guest-fill data /mnt
guest-fill meta /mnt 100000000
umount /mnt
capture check btrfs check --readonly /dev/vda
"""


def size_of(usage: str, kind: str) -> int:
    m = re.search(rf"^{kind},\S+: Size:(\d+)", usage, re.M)
    assert m, usage
    return int(m.group(1))


def unallocated(usage: str) -> int:
    return int(re.search(r"Device unallocated:\s+(\d+)", usage).group(1))


@pytest.fixture(scope="module", params=vmharness.matrix(["v12", "kakra"]))
def guard_run(request, vm_ready, tmp_path_factory):
    series = request.param
    disks = vmharness.make_disks(tmp_path_factory.mktemp(f"guard-{series}"), [512 * MiB] * 3)
    lines = [f"guard_case {n} " + " ".join(NAMES[x] if x else "0" for x in h)
             for n, (h, _) in enumerate(CASES)]
    try:
        res = vmharness.Guest(series).run(GUARD_SCRIPT + "\n".join(lines) + "\n", disks,
                                          timeout=600)
    finally:
        vmharness.remove_disks(disks)
    return series, res


@pytest.mark.parametrize("case", range(len(CASES)))
def test_guard_rails_agree_with_the_kernel(guard_run, case):
    series, res = guard_run
    hints, refused_for = CASES[case]
    refused = dict((int(w[0]), w[1]) for w in res.results["refused"])[case] == "1"
    before = res.output(f"before_{case}")[1]
    mid = res.output(f"mid_{case}")[1]      # after the data fill
    after = res.output(f"after_{case}")[1]  # after the metadata fill
    data_end = dict((int(w[0]), w) for w in res.results["data"])[case]
    meta_end = dict((int(w[0]), w) for w in res.results["meta"])[case]
    assert refused == (refused_for is not None), (series, hints)
    if refused_for == "data":
        # The kernel cannot place a raid1 data chunk either: ENOSPC with space left.
        assert data_end[2] == "28"
        assert size_of(mid, "Data") == size_of(before, "Data")
        assert unallocated(mid) > 256 * MiB, mid
    elif refused_for == "metadata":
        assert meta_end[3] in ("28", "5"), meta_end   # ENOSPC, or the abort it causes
        assert size_of(after, "Metadata") == size_of(mid, "Metadata")
        assert unallocated(after) > 128 * MiB, after
    else:
        assert size_of(mid, "Data") > size_of(before, "Data"), mid


def chunk_devids(disk) -> list[tuple[str, set[int]]]:
    """(type, devids) of every chunk, from btrfs-progs' dump of the chunk tree."""
    out = subprocess.run(["btrfs", "inspect-internal", "dump-tree", "-t", "chunk", str(disk)],
                         capture_output=True, text=True, check=True).stdout
    chunks = []
    for block in out.split("CHUNK_ITEM")[1:]:
        kind = re.search(r"type (\S+)", block).group(1).split("|")[0]
        chunks.append((kind, {int(d) for d in re.findall(r"stripe \d+ devid (\d+)", block)}))
    return chunks


@pytest.mark.parametrize("series", vmharness.matrix(["v12", "kakra"]))
def test_mkfs_hints_guide_the_kernel(vm_ready, tmp_path, series):
    disks = vmharness.make_disks(tmp_path, [512 * MiB, 512 * MiB, 1024 * MiB, 1024 * MiB])
    res = vmharness.Guest(series).run(MKFS_SCRIPT, disks, timeout=600)
    rc, text = res.output("mkfs")
    assert rc == 0, text
    rc, text = res.output("check")
    assert rc == 0, text
    chunks = chunk_devids(disks[0])
    kinds = {k for k, _ in chunks}
    assert {"DATA", "METADATA", "SYSTEM"} <= kinds, chunks
    assert sum(1 for k, _ in chunks if k == "DATA") > 2, chunks
    assert sum(1 for k, _ in chunks if k == "METADATA") > 1, chunks
    for kind, devids in chunks:
        want = {3, 4} if kind == "DATA" else {1, 2}
        assert devids == want, (kind, devids, chunks)
