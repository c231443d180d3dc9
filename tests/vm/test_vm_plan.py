# SPDX-License-Identifier: GPL-2.0-or-later
"""The what-if planner on kernels that honour hints (issue 17).

Seeded random plans (tests/helpers/plan_check.py) on hinted filesystems: hint
changes, ``--relocate`` (``btrfsx balance misplaced``), and adds, removes,
resizes, converts and replaces among hinted devices, made for real in the
guests and filled to ENOSPC. Per plan: an impossible change really fails
(at that change, with ENOSPC where the kernel relocates), a possible one
succeeds; the chunks the plan moves are those the kernel relocated and
their used bytes agree within 1 %; free_estimated, free_strict or
metadata_room (by turns) within 1 % of the fill. 4 plans per series
(``BTRFSX_VM_PLANS``), up to four per
guest, small devices: the VM part of the suite stays short. Mismatches
print their seed.

On the stock kernel of the newest line (``stock-7.3``; every stock series
with ``BTRFSX_VM_MATRIX=full``) the aged plans of the host's test
(tests/test_plan.py, tests/test_plan_balance.py) run without hints: one
shrink, remove, convert, replace or add-then-remove per aged filesystem
(``BTRFSX_VM_STOCK_AGED``, default 5: each kind once; 10 with the full
matrix), and a usage-filtered balance on the first of them
(``BTRFSX_VM_STOCK_BALANCES``, default 2; 3 with the full matrix), held to
what the host holds them to.
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
PLANS = int(os.environ.get("BTRFSX_VM_PLANS", "4"))
#: aged filesystems tried per series (those with a hint value the series
#: lacks are left out: kakra takes every one, v12 all but 4)
AGED_PLANS = int(os.environ.get("BTRFSX_VM_AGED", "8"))
AGED_KINDS = ["remove", "resize", "convert", "replace", "add"]
#: of those, the first few also get a `balance misplaced` of their own
AGED_RELOCATE = int(os.environ.get("BTRFSX_VM_AGED_RELOCATE", "3"))
AGED_CASE_S = 420       # a guest's time per aged case (TCG, on a loaded host)
FIRST_SEED = int(os.environ.get("BTRFSX_PLAN_SEED", "0"))
MAX_DISKS = 20     # virtio disks a guest takes
STOCK_AGED = int(os.environ.get("BTRFSX_VM_STOCK_AGED", "10" if vmharness.full_matrix() else "5"))
STOCK_KINDS = ["remove", "resize", "convert", "replace", "add"]
STOCK_BALANCES = int(os.environ.get("BTRFSX_VM_STOCK_BALANCES",
                                    "3" if vmharness.full_matrix() else "2"))


def cases(series: str) -> list[plan_check.Case]:
    series = vmharness.family(series)     # the same cases on every kernel line
    return [plan_check.make_case(series, seed, SIZES, OPS, HINTS[series],
                                 ["data", "strict", "data", "meta", "strict"],
                                 fill=(0.1, 0.35), small_files=(0, 200))
            for seed in range(FIRST_SEED, FIRST_SEED + PLANS)]


def _kind(case: plan_check.Case) -> str:
    """An aged case's kind: "a" (one change of AGED_KINDS), "r" (a `balance
    misplaced`), "b" (a usage-filtered balance); "" for a young one. A seed's
    captures are named after it: its cases of two kinds go to two guests."""
    if not case.devids:
        return ""
    return {"relocate": "r", "balance": "b"}.get(case.changes[0][0] if case.changes else "", "a")


def case_dir(workdir, series: str, case: plan_check.Case):
    return workdir / f"{series}-{case.seed}{_kind(case)}"


def aged_cases(series: str, aged, workdir) -> list[tuple[plan_check.Case, list]]:
    """Hinted aged filesystems (tests/helpers/aging.py, small ones: the guests
    relocate under TCG), one change each, with the hints this series takes,
    and the first AGED_RELOCATE a `balance misplaced` too (a case of its own);
    each copied at once (the cache keeps only the last few it made)."""
    family = vmharness.family(series)
    out = []
    for seed in range(FIRST_SEED, FIRST_SEED + AGED_PLANS):
        fs = aged.get(seed, hinted=True, small=True)
        if any(h not in HINTS[family] for h in fs.spec.hints):
            continue
        case = plan_check.aged_case(fs, family, AGED_KINDS)
        out.append((case, fs.copy(case_dir(workdir, series, case))))
        if seed < FIRST_SEED + AGED_RELOCATE:
            case = plan_check.aged_case(fs, family, ["relocate"])
            if case.changes:
                out.append((case, fs.copy(case_dir(workdir, series, case))))
    return out


def stock_cases(series: str, aged, workdir) -> list[tuple[plan_check.Case, list]]:
    """Unhinted aged filesystems (small ones), one change of STOCK_KINDS each,
    the first STOCK_BALANCES a usage-filtered balance too (a case of its
    own, every block group read in first, as on the host)."""
    out = []
    for seed in range(FIRST_SEED, FIRST_SEED + STOCK_AGED):
        fs = aged.get(seed, hinted=False, small=True)
        case = plan_check.aged_case(fs, "stock", STOCK_KINDS)
        out.append((case, fs.copy(case_dir(workdir, series, case))))
        if seed < FIRST_SEED + STOCK_BALANCES:
            case = plan_check.aged_case(fs, "stock", ["balance"])
            case.cache_first = True
            out.append((case, fs.copy(case_dir(workdir, series, case))))
    # The balances after the others: a guest takes two cases of one kind.
    return sorted(out, key=lambda pair: _kind(pair[0]))


def run_series(series: str, workdir, todo) -> list[plan_check.Outcome]:
    """@todo: (case, the aged images it is made on or None) pairs."""
    batches: list[list[plan_check.Case]] = [[]]
    images = {}
    for case, copied in todo:
        disks = sum(len(c.sizes) + len(c.spares) for c in batches[-1])
        # An aged case relocates hundreds of MiB under TCG: two to a guest.
        per_guest = 2 if case.devids else 4
        # A seed's captures are named after it: its two aged cases in two guests.
        if batches[-1] and (disks + len(case.sizes) + len(case.spares) > MAX_DISKS or
                            len(batches[-1]) >= per_guest or
                            _kind(batches[-1][0]) != _kind(case)):
            batches.append([])
        batches[-1].append(case)
        images[id(case)] = copied

    def one(batch):
        script, disks = plan_check.FUNCTIONS, []
        for case in batch:
            names = {}
            where = case_dir(workdir, series, case)
            sizes = [(f"dev{i}", s) for i, s in enumerate(case.sizes)]
            made = list(images[id(case)]) if case.devids else \
                vmharness.make_disks(where, [s for _, s in sizes])
            spares = [(f"spare{i}", s) for i, s in enumerate(case.spares)]
            made += vmharness.make_disks(where / "spares", [s for _, s in spares])
            for (name, _), path in zip(sizes + spares, made):
                names[name] = vmharness.guest_dev(len(disks))
                disks.append(path)
            script += plan_check.script(case, names)
        try:
            res = vmharness.Guest(series).run(
                script, disks, timeout=120 + sum(AGED_CASE_S if c.devids else 120 for c in batch))
        finally:
            vmharness.remove_disks(disks)
        return [plan_check.compare(case, res) for case in batch]

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return [o for outcomes in pool.map(one, batches) for o in outcomes]


@pytest.fixture(scope="module", params=vmharness.matrix(["v12", "kakra"]))
def outcomes(request, vm_ready, tmp_path_factory, aged):
    series, workdir = request.param, tmp_path_factory.mktemp(f"plan-{request.param}")
    todo = [(case, None) for case in cases(series)] + aged_cases(series, aged, workdir)
    result = run_series(series, workdir, todo)
    print(f"\n{request.param}:\n" + plan_check.report(result) + "\n\n" +
          plan_check.table([o for o in result if o.case.devids]))
    return request.param, result


def test_aged_plans_agree_with_the_kernel(outcomes):
    """The aged cases alone, held to what the host's aged test holds them
    to: the verdict, every device's allocated bytes, free_strict and
    metadata_room against `usage` after the change, free_estimated against
    a fill, each within 1 %."""
    series, result = outcomes
    aged = [o for o in result if o.case.devids]
    assert len(aged) >= min(10, AGED_PLANS), f"{series}: only {len(aged)} aged plans"
    bad = [o for o in aged if o.problems]
    assert not bad, f"{series}: {len(bad)} of {len(aged)} aged plans differ:\n" + \
        plan_check.report(bad) + "\n\n" + plan_check.table(aged)


def test_plans_agree_with_the_kernel(outcomes):
    series, result = outcomes
    result = [o for o in result if not o.case.devids]
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


@pytest.fixture(scope="module", params=vmharness.stock_matrix())
def stock_outcomes(request, vm_ready, tmp_path_factory, aged):
    series, workdir = request.param, tmp_path_factory.mktemp(f"plan-{request.param}")
    result = run_series(series, workdir, stock_cases(series, aged, workdir))
    for o in result:
        if _kind(o.case) == "b":
            plan_check.settle_moves(o)
    print(f"\n{series}:\n" + plan_check.report(result) + "\n\n" + plan_check.table(result))
    return series, result


def test_unhinted_aged_plans_agree_with_the_kernel(stock_outcomes):
    """The host's aged plans on a stock kernel of another line: the verdict,
    every device's allocated bytes, free_strict and metadata_room against
    `usage` after the change, free_estimated against a fill, each within
    1 %; a balance's moved chunks may differ where its after-state agrees
    (plan_check.MOVED)."""
    series, result = stock_outcomes
    assert len(result) == STOCK_AGED + min(STOCK_AGED, STOCK_BALANCES), f"{series}: {len(result)}"
    bad = [o for o in result if o.problems]
    assert not bad, f"{series}: {len(bad)} of {len(result)} aged plans differ:\n" + \
        plan_check.report(bad) + "\n\n" + plan_check.table(result)
