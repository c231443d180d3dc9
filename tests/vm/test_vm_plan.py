"""The what-if planner on kernels that honour hints (issue 17).

Seeded random plans (tests/helpers/plan_check.py) on hinted filesystems: hint
changes, ``--relocate`` (``btrfsx balance misplaced``), and adds, removes,
resizes, converts and replaces among hinted devices, made for real in the
guests and filled to ENOSPC. Per plan: an impossible change really fails
(at that change, with ENOSPC where the kernel relocates), a possible one
succeeds; the chunks the plan moves are those the kernel relocated and
their used bytes agree within 1 %; free_estimated, free_strict or
metadata_room (by turns) within 1 % of the fill. 8 plans per series
(``BTRFSX_VM_PLANS``; with the host's 30 that is 46 a run), up to four per
guest, small devices: the VM part of the suite stays short. Mismatches
print their seed.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import plan_check
import vmharness

MiB = 1 << 20
# Small devices and moderate content: the guests run under TCG.
SIZES = [256 * MiB, 384 * MiB]
# Hints and relocation first; the rest is covered on the host too (a replace's
# copy costs most under TCG).
OPS = ["hint", "hint", "hint", "relocate", "relocate", "add", "remove", "resize", "convert",
       "hint", "relocate", "add", "remove", "replace"]
HINTS = {"v12": [0, 1, 2, 3], "kakra": [0, 1, 2, 3, 4]}
PLANS = int(os.environ.get("BTRFSX_VM_PLANS", "8"))
FIRST_SEED = int(os.environ.get("BTRFSX_PLAN_SEED", "0"))
MAX_DISKS = 20     # virtio disks a guest takes


def cases(series: str) -> list[plan_check.Case]:
    return [plan_check.make_case(series, seed, SIZES, OPS, HINTS[series],
                                 ["data", "strict", "data", "meta", "strict"],
                                 fill=(0.1, 0.35), small_files=(0, 200))
            for seed in range(FIRST_SEED, FIRST_SEED + PLANS)]


def run_series(series: str, workdir) -> list[plan_check.Outcome]:
    batches: list[list[plan_check.Case]] = [[]]
    for case in cases(series):
        disks = sum(len(c.sizes) + len(c.spares) for c in batches[-1])
        if batches[-1] and (disks + len(case.sizes) + len(case.spares) > MAX_DISKS or
                            len(batches[-1]) == 4):
            batches.append([])
        batches[-1].append(case)

    def one(batch):
        script, disks = plan_check.FUNCTIONS, []
        for case in batch:
            names = {}
            sizes = [(f"dev{i}", s) for i, s in enumerate(case.sizes)]
            sizes += [(f"spare{i}", s) for i, s in enumerate(case.spares)]
            made = vmharness.make_disks(workdir / f"{series}-{case.seed}", [s for _, s in sizes])
            for (name, _), path in zip(sizes, made):
                names[name] = vmharness.guest_dev(len(disks))
                disks.append(path)
            script += plan_check.script(case, names)
        try:
            res = vmharness.Guest(series).run(script, disks, timeout=120 + 120 * len(batch))
        finally:
            vmharness.remove_disks(disks)
        return [plan_check.compare(case, res) for case in batch]

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return [o for outcomes in pool.map(one, batches) for o in outcomes]


@pytest.fixture(scope="module", params=["v12", "kakra"])
def outcomes(request, vm_ready, tmp_path_factory):
    result = run_series(request.param, tmp_path_factory.mktemp(f"plan-{request.param}"))
    print(f"\n{request.param}:\n" + plan_check.report(result))
    return request.param, result


def test_plans_agree_with_the_kernel(outcomes):
    series, result = outcomes
    bad = [o for o in result if o.problems]
    assert not bad, f"{series}: {len(bad)} of {len(result)} plans differ:\n" + \
        plan_check.report(bad)
    assert sum(1 for o in result if o.tolerated) <= len(result) // 5, plan_check.report(result)


def test_plans_cover_hints_and_relocation(outcomes):
    _, result = outcomes
    ops = {op for o in result for op, _ in o.case.changes}
    assert {"hint", "relocate"} <= ops
    assert any(o.plan and o.plan["moved"] and any(op == "relocate" for op, _ in o.case.changes)
               for o in result), "no plan relocated misplaced chunks"
