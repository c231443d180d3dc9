# SPDX-License-Identifier: GPL-2.0-or-later
"""The allocator model chunk by chunk against kernels that honour hints
(issue 21, part 2).

Seeded random layouts: 2 to 6 devices of uneven sizes (loop devices on
sparse files in the guest's tmpfs), every data and metadata profile the
device count allows, a random hint per device (kakra's series also 4,
none), some mounted with metadata_ratio so metadata chunks are allocated
between the data chunks. In the guest, for each layout: mkfs.btrfs, the
hints written offline by btrfsx, the chunk state dumped, a fill to ENOSPC
through the kernel, the state dumped again, and tests/helpers/usage_replay.c
replays every chunk the kernel created through the allocator model in the
kernel's order (type, stripe size, devices, physical offsets) and checks
that the model has no room for another data chunk either. The stock module
ignores hints: its layouts are replayed as if none were set (the control).

BTRFSX_VM_LAYOUTS sets the layouts per series (default on Linux 6.1: 10 on
the patched series, 4 on the stock control, whose allocator the host tests
replay too; on 6.12: 2 on each patched series, the first 2 of the 6.1
layouts, both series' guests at once, and the stock control only with
BTRFSX_VM_MATRIX=full, which gives 6.12 the 6.1 counts); a failure
prints each mismatch with its layout seed (BTRFSX_VM_SEED offsets them).
"""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import vmharness

MiB = 1 << 20
SIZES = [256 * MiB, 384 * MiB, 512 * MiB, 768 * MiB, 1024 * MiB, 1536 * MiB, 2048 * MiB]
# profile -> fewest devices
DATA_PROFILES = {"single": 1, "dup": 1, "raid0": 2, "raid1": 2, "raid1c3": 3, "raid1c4": 4,
                 "raid10": 2, "raid5": 2, "raid6": 3}
METADATA_PROFILES = {"single": 1, "dup": 1, "raid1": 2, "raid1c3": 3, "raid1c4": 4,
                     "raid10": 2}
HINTS = {"v12": [0, 1, 2, 3], "kakra": [0, 1, 2, 3, 4], "stock": [0, 1, 2, 3]}
PER_GUEST = 13

GUEST_FUNCTIONS = r"""
run_layout() {
	seed=$1; data=$2; meta=$3; ratio=$4; flags=$5; shift 5
	devs=""; i=0
	for spec in "$@"; do
		truncate -s ${spec%:*} /tmp/l$i.img
		losetup /dev/loop$i /tmp/l$i.img
		devs="${devs:+$devs }/dev/loop$i"
		i=$((i + 1))
	done
	if mkfs.btrfs -q -f -d $data -m $meta $devs >/tmp/mkfs.out 2>&1; then
		i=0
		for spec in "$@"; do
			h=${spec#*:}
			if [ "$h" != 0 ]; then
				btrfsx property set -f /dev/loop$i allocation_hint $h >/dev/null 2>/tmp/hint.err ||
					echo "@@R hint_failed $seed $i $(head -1 /tmp/hint.err)"
			fi
			i=$((i + 1))
		done
		usage_replay dump $devs >/tmp/before
		first=${devs%% *}
		opts=$(echo $devs | sed 's# #,device=#g; s#^#device=#')
		[ "$ratio" != 0 ] && opts="$opts,metadata_ratio=$ratio"
		mount -o $opts $first /mnt || echo "@@R mount_failed $seed"
		guest-fill data /mnt | sed "s/^@@R fill_data/@@R filled $seed/"
		umount /mnt
		usage_replay dump $devs >/tmp/after
		usage_replay replay $flags /tmp/before /tmp/after >/tmp/replay 2>&1
		rc=$?
		grep -E "^(MISMATCH|enospc)" /tmp/replay | sed "s/^/@@R detail $seed /"
		echo "@@R layout $seed $rc $(tail -1 /tmp/replay)"
		grep "^dev " /tmp/after | tr '\n' ' ' | sed "s/^/@@R hints_after $seed /"; echo
	else
		echo "@@R layout $seed mkfs_failed $(grep -i error /tmp/mkfs.out | head -1)"
	fi
	i=0
	for spec in "$@"; do losetup -d /dev/loop$i; rm -f /tmp/l$i.img; i=$((i + 1)); done
}
"""


def make_layout(series: str, seed: int) -> dict:
    """Layout @seed of @series; the same on every kernel line."""
    series = vmharness.family(series)
    rng = random.Random(f"{series}-{seed}")
    n = rng.randint(2, 6)
    data = rng.choice([p for p, k in DATA_PROFILES.items() if k <= n])
    meta = rng.choice([p for p, k in METADATA_PROFILES.items() if k <= n])
    return {
        "seed": seed,
        "data": data,
        "metadata": meta,
        "ratio": rng.choice([0, 0, 1, 3]),
        "sizes": [rng.choice(SIZES) for _ in range(n)],
        "hints": [rng.choice(HINTS[series]) for _ in range(n)],
    }


def guest_line(series: str, layout: dict) -> str:
    stock = vmharness.family(series) == "stock"
    flags = "--data-enospc " + ("--ignore-hints" if stock else "--hint-kernel")
    specs = " ".join(f"{s}:{h}" for s, h in zip(layout["sizes"], layout["hints"]))
    return (f"run_layout {layout['seed']} {layout['data']} {layout['metadata']} "
            f"{layout['ratio']} '{flags}' {specs}")


def run_batch(series: str, layouts: list[dict]) -> vmharness.GuestResult:
    script = GUEST_FUNCTIONS + "\n".join(guest_line(series, l) for l in layouts) + "\n"
    return vmharness.Guest(series).run(script, [], timeout=60 + 25 * len(layouts))


def check_layouts(series: str, count: int) -> list[str]:
    """Runs layouts of @series until @count were filled (a layout mkfs.btrfs
    refuses, e.g. raid1c3 on devices too small, does not count); the
    problems, each naming its seed."""
    base = int(os.environ.get("BTRFSX_VM_SEED", "0"))
    layouts = [make_layout(series, base + i) for i in range(count + count // 5 + 1)]
    batches = [layouts[i:i + PER_GUEST] for i in range(0, len(layouts), PER_GUEST)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda b: run_batch(series, b), batches))
    problems, chunks, filled, refused = [], 0, 0, 0
    for batch, res in zip(batches, results):
        done = {int(w[0]): w[1:] for w in res.results.get("layout", [])}
        details = {}
        for w in res.results.get("detail", []):
            details.setdefault(int(w[0]), []).append(" ".join(w[1:]))
        for w in res.results.get("mount_failed", []):
            problems.append(f"seed {w[0]}: mount failed; console:\n{res.console[-3000:]}")
        for w in res.results.get("hint_failed", []):
            problems.append(f"seed {w[0]}: hint on device {w[1]} not written: {' '.join(w[2:])}")
        for layout in batch:
            seed = layout["seed"]
            words = done.get(seed)
            desc = (f"seed {seed}: {layout['data']}/{layout['metadata']} ratio "
                    f"{layout['ratio']} sizes {[s // MiB for s in layout['sizes']]} "
                    f"hints {layout['hints']}")
            if words is None:
                problems.append(f"{desc}: no result")
            elif words[0] == "mkfs_failed":
                refused += 1
            elif words[0] != "0":
                problems.append(f"{desc}: {' '.join(words[1:])}\n  "
                                + "\n  ".join(details.get(seed, [])))
            else:
                chunks += int(words[2])
                filled += 1
    print(f"{series}: {filled} layouts filled ({refused} refused by mkfs.btrfs), {chunks} "
          f"chunks replayed, {len(problems)} problems")
    if filled < count:
        problems.append(f"only {filled} of {count} layouts were filled")
    return problems


def layouts_per_series(series: str) -> int:
    if "BTRFSX_VM_LAYOUTS" in os.environ:
        return int(os.environ["BTRFSX_VM_LAYOUTS"])
    if vmharness.newer(series) and not vmharness.full_matrix():
        return 2
    return 4 if vmharness.family(series) == "stock" else 10


SERIES = vmharness.matrix(["v12", "kakra"], newer=True) + vmharness.matrix(["stock"])
NEWER = [s for s in SERIES if vmharness.newer(s)]


@pytest.fixture(scope="module")
def newer_problems(vm_ready):
    """The 6.12 series' layouts, their guests at once (one each: the two cores)."""
    return vmharness.per_series(NEWER, lambda s: check_layouts(s, layouts_per_series(s)))


@pytest.mark.parametrize("series", SERIES)
def test_model_places_every_chunk_where_the_kernel_does(vm_ready, request, series):
    if vmharness.newer(series):
        problems = request.getfixturevalue("newer_problems")[series]
    else:
        problems = check_layouts(series, layouts_per_series(series))
    assert not problems, "\n".join(problems)


def test_layouts_are_seeded():
    assert make_layout("v12", 7) == make_layout("v12", 7)
    assert make_layout("v12", 7) != make_layout("kakra", 7)
