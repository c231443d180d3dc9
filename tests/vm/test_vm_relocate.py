# SPDX-License-Identifier: GPL-2.0-or-later
"""Misplaced chunks found and moved on kernels that honour hints (issue 16).

Each patched series gets one guest on four 1 GiB disks (raid1 data and
metadata) whose chunks were allocated under other hints first:

  phase A  hints 1 metadata_only, 2 data_only, 3 metadata_only, 4 data_only,
           a full balance: data on devids 2+4, metadata and system on 1+3;
  phase B  (v12) hints swapped (1 data_only, 2 metadata_only, ...) and a
           full balance again: data on 1+3, metadata and system on 2+4;
  phase C  the final hints: 1 metadata_only, 2 metadata_preferred,
           3 data_only, 4 data_preferred (kakra: 4 none, value 4).

Then, mounted: the report (JSON) against an independent reading of the
chunk tree (btrfs-progs' dump-tree: forbidden = a stripe the hint excludes,
off-preference = the best two tiers would be better), the used bytes
against the block group items; the offline report the same; the relocation
(v12: first interrupted by SIGINT while the kernel balances a chunk, then
resumed; kakra: first stopped by a data fill during --pause, then resumed);
after it the report is empty, every chunk sits where the hints want it,
every new chunk where the model said, the files' checksums are unchanged and
btrfs check is clean. A balance already running is refused.

The stock module (the control) ignores hints: the report still lists what
breaks the stored hints, the relocation refuses without --force.
"""

from __future__ import annotations

import json

import pytest

import vmharness
from helpers.misplaced_oracle import DATA, block_group_used, chunk_tree, expected


FINAL_HINTS = {
    "v12": ["metadata_only", "metadata_preferred", "data_only", "data_preferred"],
    "kakra": ["metadata_only", "metadata_preferred", "data_only", "none"],
    "stock": ["metadata_only", "metadata_preferred", "data_only", "data_preferred"],
}
SETUP = r"""
DEVS="/dev/vda /dev/vdb /dev/vdc /dev/vdd"
mnt() { mount -o device=/dev/vdb,device=/dev/vdc,device=/dev/vdd /dev/vda /mnt; }
set_hints() {
	i=0
	for d in $DEVS; do
		i=$((i + 1))
		h=$(echo "$@" | cut -d' ' -f$i)
		btrfsx property set -f $d allocation_hint $h >/dev/null 2>/tmp/h.err ||
			echo "@@R hint_failed $d $h $(head -1 /tmp/h.err)"
	done
}
write_files() {	# $1: name prefix, $2: MiB per large file
	mkdir -p /mnt/$1
	for i in 1 2; do dd if=/dev/urandom of=/mnt/$1/big$i bs=1M count=$2 2>/dev/null; done
	i=0
	while [ $i -lt 150 ]; do head -c 2500 /dev/urandom > /mnt/$1/s$i; i=$((i + 1)); done
}
wait_for() {	# until file $1 holds $2 (at most a minute); prints the polls
	n=0
	while [ $n -lt 600 ] && ! grep -q "$2" $1 2>/dev/null; do sleep 0.1; n=$((n + 1)); done
	echo $n
}
mkfs.btrfs -q -f -d raid1 -m raid1 $DEVS >/dev/null 2>&1 || echo "@@R mkfs_failed"
"""

PHASES = r"""
mnt; write_files a 10; umount /mnt
set_hints metadata_only data_only metadata_only data_only
mnt; btrfs balance start --full-balance /mnt >/dev/null 2>&1 || echo "@@R balance_a_failed"
write_files b 10; umount /mnt
if [ "$SERIES" = v12 ]; then
	set_hints data_only metadata_only data_only metadata_only
	mnt; btrfs balance start --full-balance /mnt >/dev/null 2>&1 || echo "@@R balance_b_failed"
	umount /mnt
fi
"""

REPORTS = r"""
set_hints $FINAL
mnt
(cd /mnt && find . -type f | sort | xargs sha256sum) > /tmp/sums.before
sync
capture chunks_before btrfs inspect-internal dump-tree -t chunk /dev/vda
capture block_groups sh -c "btrfs inspect-internal dump-tree -t extent /dev/vda | grep -A1 BLOCK_GROUP_ITEM"
capture report btrfsx --format json filesystem misplaced /mnt
capture dry_run btrfsx --format json balance misplaced --dry-run /mnt
umount /mnt
capture report_offline btrfsx --format json filesystem misplaced $DEVS
mnt
"""

# v12: SIGINT once the first chunk is being moved, then run again. (With
# --format json the progress is a JSON line on stderr: wait for its fields.)
INTERRUPT_V12 = r"""
btrfsx --format json balance misplaced --progress /mnt > /tmp/int.out 2>/tmp/int.err &
pid=$!
echo "@@R waited $(wait_for /tmp/int.err '"current": [1-9]')"
kill -INT $pid
wait $pid
echo "@@R interrupted $?"
capture interrupt_out cat /tmp/int.out
capture report_interrupted btrfsx --format json filesystem misplaced /mnt
"""

# kakra: a data fill during the pause after the first chunk; the run stops
# cleanly; the fill goes, the empty data chunks too, and the run resumes.
FILL_KAKRA = r"""
btrfsx --format json balance misplaced --progress --pause 30 /mnt > /tmp/fill.out 2>/tmp/fill.err &
pid=$!
echo "@@R waited $(wait_for /tmp/fill.err '"chunks_done": 1,')"
mkdir -p /mnt/fill
guest-fill data /mnt/fill | sed "s/^@@R fill_data/@@R filled/"
wait $pid
echo "@@R fill_stopped $?"
capture fill_out cat /tmp/fill.out
rm -rf /mnt/fill; sync
btrfs balance start -dusage=0 /mnt >/dev/null 2>&1
"""

FINISH = r"""
capture relocate btrfsx --format json balance misplaced --no-progress /mnt
capture report_after btrfsx --format json filesystem misplaced /mnt
(cd /mnt && find . -type f | sort | xargs sha256sum) > /tmp/sums.after
cmp -s /tmp/sums.before /tmp/sums.after && echo "@@R sums_equal yes $(wc -l < /tmp/sums.after)" ||
	echo "@@R sums_equal no"
sync
capture chunks_after btrfs inspect-internal dump-tree -t chunk /dev/vda
# A balance of the kernel's beside it: started, then cancelled; the umount
# waits for its process to go (it holds /mnt open until it exits).
btrfs balance start --full-balance /mnt >/dev/null 2>&1 &
balance=$!
n=0
while [ $n -lt 600 ] && ! btrfs balance status /mnt 2>/dev/null | grep -q "is running"; do
	sleep 0.1; n=$((n + 1))
done
capture busy btrfsx balance misplaced /mnt
btrfs balance cancel /mnt >/dev/null 2>&1
wait $balance
umount /mnt
capture check btrfs check --readonly /dev/vda
capture report_after_offline btrfsx --format json filesystem misplaced $DEVS
"""

STOCK = r"""
mnt; write_files a 10; umount /mnt
set_hints $FINAL
mnt; sync
capture chunks_before btrfs inspect-internal dump-tree -t chunk /dev/vda
capture report btrfsx --format json filesystem misplaced /mnt
capture refused btrfsx balance misplaced /mnt
capture forced btrfsx --format json balance misplaced --dry-run --force /mnt
umount /mnt
"""


def script_for(series: str) -> str:
    series = vmharness.family(series)
    head = f'SERIES={series}\nFINAL="{" ".join(FINAL_HINTS[series])}"\n' + SETUP
    if series == "stock":
        return head + STOCK
    middle = INTERRUPT_V12 if series == "v12" else FILL_KAKRA
    return head + PHASES + REPORTS + middle + FINISH


@pytest.fixture(scope="module")
def guests(vm_ready, tmp_path_factory):
    def one(series):
        disks = vmharness.make_disks(tmp_path_factory.mktemp(f"reloc-{series}"), [1 << 30] * 4)
        try:
            return vmharness.Guest(series).run(script_for(series), disks, timeout=900)
        finally:
            vmharness.remove_disks(disks)
    return vmharness.per_series(vmharness.matrix(["v12", "kakra", "stock"]), one)


# ------------------------------------------------------------------ helpers

def report_of(res, name, rc=4) -> dict:
    got_rc, doc, text = res.json(name)
    assert got_rc == rc, text
    return doc["misplaced"]


def classes(report: dict) -> dict[int, str]:
    return {c["logical"]: c["class"] for c in report["chunks"]}


# ------------------------------------------------------------------ tests

@pytest.mark.parametrize("series", vmharness.matrix(["v12", "kakra"]))
def test_report_equals_the_chunk_tree(guests, series):
    res = guests[series]
    assert "mkfs_failed" not in res.results and "hint_failed" not in res.results, res.results
    for step in ("balance_a_failed", "balance_b_failed"):
        assert step not in res.results, res.console[-4000:]
    chunks = chunk_tree(res.output("chunks_before")[1])
    want = expected(chunks, FINAL_HINTS[vmharness.family(series)])
    report = report_of(res, "report")
    assert report["hints_effective"] is True
    assert classes(report) == want
    # both classes and both kinds of chunk occur
    assert {"forbidden", "off-preference"} <= set(want.values()), want
    assert {chunks[l][0] & DATA for l in want} == {0, DATA}, want
    assert report["chunks_checked"] == len(chunks)
    used = block_group_used(res.output("block_groups")[1])
    for c in report["chunks"]:
        assert c["used"] == used[c["logical"]], c
        assert c["devids"] == chunks[c["logical"]][1]
        assert c["model"] is not None
    forbidden = [c for c in report["chunks"] if c["class"] == "forbidden"]
    assert report["forbidden"]["chunks"] == len(forbidden)
    assert report["forbidden"]["used"] == sum(c["used"] for c in forbidden)
    # forbidden first, then by used bytes
    order = [(c["class"] != "forbidden", c["used"]) for c in report["chunks"]]
    assert order == sorted(order)
    # offline: the same chunks and classes (unmounted, the next kernel is assumed to honour hints)
    assert classes(report_of(res, "report_offline")) == want


@pytest.mark.parametrize("series", vmharness.matrix(["v12", "kakra"]))
def test_dry_run_plans_every_misplaced_chunk(guests, series):
    res = guests[series]
    rc, doc, text = res.json("dry_run")
    assert rc == 0, text
    plan = doc["balance"]
    assert plan["status"] == "dry run"
    assert [c["logical"] for c in plan["planned"]] == \
        [c["logical"] for c in report_of(res, "report")["chunks"]]
    assert plan["moved"] == []


def run_doc(res, name) -> dict:
    text = res.output(name)[1]
    return json.JSONDecoder().raw_decode(text, text.find('{"__header"'))[0]["balance"]


def test_sigint_while_the_kernel_balances_cancels_cleanly(guests):
    res = guests["v12"]
    assert int(res.first("waited")[0]) < 600, res.console[-3000:]
    assert int(res.first("interrupted")[0]) == 1, res.output("interrupt_out")
    doc = run_doc(res, "interrupt_out")
    assert doc["status"] == "cancelled"
    # cancelled inside the kernel's balance of the first chunk, which stays misplaced
    first = doc["planned"][0]["logical"]
    assert doc["reason"].startswith(f"cancelled while moving chunk {first}"), doc
    assert doc["moved"] == []
    assert first in classes(report_of(res, "report_interrupted"))


def test_fill_during_the_pause_stops_the_run_cleanly(guests):
    res = guests["kakra"]
    assert int(res.first("waited")[0]) < 600, res.console[-3000:]
    assert int(res.first("fill_stopped")[0]) == 1, res.output("fill_out")
    doc = run_doc(res, "fill_out")
    # at least the first chunk moved before the fill; the stop came before the kernel was asked
    assert doc["moved"] and doc["moved"][0]["logical"] == doc["planned"][0]["logical"], doc
    assert doc["status"] in ("no room", "out of space", "placed no better"), doc
    assert "preferred devices" in doc["reason"] or "out of space" in doc["reason"], doc


@pytest.mark.parametrize("series", vmharness.matrix(["v12", "kakra"]))
def test_after_the_relocation_nothing_is_misplaced(guests, series):
    res = guests[series]
    rc, doc, text = res.json("relocate")
    assert rc == 0, text
    run = doc["balance"]
    assert run["status"] == "finished", run
    assert report_of(res, "report_after", rc=0)["chunks"] == []
    assert report_of(res, "report_after_offline", rc=0)["chunks"] == []
    after = chunk_tree(res.output("chunks_after")[1])
    assert expected(after, FINAL_HINTS[vmharness.family(series)]) == {}
    # every chunk moved, over all runs; every new chunk where the model said
    runs = [run] + [run_doc(res, n) for n in ("interrupt_out", "fill_out") if n in res.outputs]
    moved = {m["logical"] for r in runs for m in r["moved"]}
    start = set(classes(report_of(res, "report")))
    # every chunk misplaced at the start; others only if the kernel made them later
    # (kakra: the fill's metadata chunks, with devid 2 full, went on 1 and 4)
    assert start <= moved and all(m > max(chunk_tree(res.output("chunks_before")[1]))
                                  for m in moved - start), (moved, runs)
    for r in runs:
        for m in r["moved"]:
            assert m["as_modelled"], m
            for n in m["new_chunks"]:
                assert n["as_modelled"] and n["improves"], m
    for m in run["moved"]:
        for n in m["new_chunks"]:
            assert after[n["logical"]][1] == n["devids"], (n, after)
    assert res.first("sums_equal")[0] == "yes"
    rc, text = res.output("check")
    assert rc == 0, text


@pytest.mark.parametrize("series", vmharness.matrix(["v12", "kakra"]))
def test_a_running_balance_is_refused(guests, series):
    rc, text = guests[series].output("busy")
    assert rc == 1 and "a running balance holds the kernel's exclusive operation" in text, text
    assert "until the balance ends ('btrfs balance status')" in text, text


def test_stock_kernel_reports_stored_hints_and_refuses_to_move(guests):
    res = guests["stock"]
    chunks = chunk_tree(res.output("chunks_before")[1])
    want = expected(chunks, FINAL_HINTS["stock"])
    report = report_of(res, "report", rc=4 if want else 0)
    assert report["hints_effective"] is False
    assert classes(report) == want and want
    rc, text = res.output("refused")
    assert rc == 1 and "ignores allocation hints" in text, text
    rc, doc, text = res.json("forced")
    assert rc == 0 and doc["balance"]["status"] == "dry run", text
