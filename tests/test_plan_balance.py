# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx filesystem plan --balance and --resume against the running kernel
(issue 30, item 2): a usage-filtered balance and a conversion resumed after
a pause, planned, then made for real on loop devices.

* Seeded young filesystems (tests/helpers/plan_check.py: profiles, uneven
  devices, partly used chunks) and aged ones (the suite's ``aged``
  filesystems, tests/helpers/aging.py), one ``--balance dusage=U,musage=U``
  each, made with ``btrfs balance start -dusage=U -musage=U``: the plan's
  verdict is the kernel's, the chunks it moves are the block groups the
  kernel relocated (the filter asked as the balance reaches each chunk),
  and the after-state (every device's allocated bytes, free_strict and
  metadata_room against `filesystem usage` after the balance, free_estimated
  or metadata_room against a fill to ENOSPC) is within 1 %.
  ``BTRFSX_BALANCE_CASES`` (young, default 3) and ``BTRFSX_BALANCE_AGED``
  (aged, default 3: the last of the suite's aged seeds, which
  tests/test_plan.py asked for last, so the session's cache still holds
  them) choose how many; ``pytest -s`` prints each case and the table.
* raid1 -> single/dup paused (``btrfs balance pause``), unmounted
  (interrupted: its item on disk) and mounted with skip_balance: ``--resume``
  planned offline and mounted alike, then ``btrfs balance resume``: the
  chunks the plan rewrites are those that went (the converted ones stay:
  the kernel's soft filter on resume), and the after-state is the kernel's
  to 1 %.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import test_plan
from helpers import aging, fsutil
from helpers import plan_check
from helpers.fsutil import MiB
from test_transition import chunk_profiles, pause_a_conversion

pytestmark = pytest.mark.root

CASES = int(os.environ.get("BTRFSX_BALANCE_CASES", "3"))
AGED = int(os.environ.get("BTRFSX_BALANCE_AGED", "3"))


def _check(outcomes: list[plan_check.Outcome]) -> None:
    for o in outcomes:
        plan_check.settle_moves(o)
    print("\n" + plan_check.report(outcomes) + "\n\n" + plan_check.table(outcomes))
    bad = [o for o in outcomes if o.problems]
    assert not bad, (f"{len(bad)} of {len(outcomes)} balance plans differ from the kernel:\n" +
                     plan_check.report(bad))


def test_young_balances_against_the_kernel(tmp_path, aged):
    """Young seeded filesystems, one usage-filtered balance each."""
    outcomes = []
    for seed in range(CASES):
        case = plan_check.make_case("balance", seed, test_plan.SIZES, ["balance"], [0],
                                    ["data", "meta"])
        case.changes = case.changes[:1]
        case.after_state = case.cache_first = True
        workdir = tmp_path / f"case{seed}"
        workdir.mkdir()
        outcomes.append(test_plan.outcome_of(case, workdir, aged.path_env))
    _check(outcomes)
    assert any(o.plan and o.plan["changes"][0]["moved_chunks"] for o in outcomes), \
        "no case moved a chunk"


def test_aged_balances_against_the_kernel(tmp_path, aged):
    """Filesystems with a past, one usage-filtered balance each."""
    outcomes = []
    # The last ones test_plan.py asked for: still in the session's cache.
    for seed in list(aging.seeds())[-AGED:]:
        fs = aged.get(seed)
        case = plan_check.aged_case(fs, "host", ["balance"])
        case.cache_first = True
        workdir = tmp_path / f"aged{seed}"
        outcomes.append(test_plan.outcome_of(case, workdir, aged.path_env,
                                             fs.copy(workdir / "dev")))
    _check(outcomes)


def _fill(mnt, path_env: str) -> int:
    """Data bytes written to ENOSPC (tests/vm/guest-fill.c)."""
    p = subprocess.run(["guest-fill", "data", str(mnt)], capture_output=True, text=True,
                       env=dict(os.environ, PATH=path_env), check=True)
    return int(p.stdout.split()[2])


def test_resume_a_paused_conversion(loopdevs, btrfsx_json, aged):
    """raid1 -> single/dup paused, unmounted and mounted with skip_balance:
    --resume planned (offline and mounted give the same plan), then the real
    `btrfs balance resume`."""
    loops = loopdevs(sizes=["1G", "1G", "1536M"])
    devs = loops.devs
    fsutil.mkfs(devs, data="raid1", metadata="raid1")
    with fsutil.mounted(devs) as mnt:
        test_plan._fallocate_files(mnt, "f", 14, 32 * MiB)
        for i in range(0, 14, 3):
            (mnt / f"f{i}").unlink()
        os.sync()
        pause_a_conversion(mnt, "-dconvert=single", "-mconvert=dup")
    offline = btrfsx_json("filesystem", "plan", *devs, "--resume", "--remove", "3",
                          check=False)
    with fsutil.mounted(devs, options="skip_balance") as mnt:
        plan = btrfsx_json("filesystem", "plan", mnt, "--resume")
        assert plan["possible"], plan["changes"]
        assert offline["changes"][0]["moved_bytes"] == plan["changes"][0]["moved_bytes"]
        # after the resume the balance is over: the remove is not refused
        assert offline["changes"][1]["status"] != "impossible" or \
            "exclusive operation" not in offline["changes"][1]["reason"]
        before = chunk_profiles(devs)
        fsutil.run(["btrfs", "balance", "resume", str(mnt)])
        aging.settle(mnt, aged.path_env)
        after = chunk_profiles(devs)
        # the raid1 chunks left are rewritten, those converted already stay
        gone = sorted(lg for lg, t in before.items() if lg not in after and "RAID1" in t)
        planned = sorted(c["logical"] for c in plan["moved"] if c["existed"])
        assert planned == gone, (planned, gone, before, after)
        assert all("RAID1" not in t for t in after.values()), after
        real = btrfsx_json("filesystem", "usage", mnt)
        out = plan_check.Outcome(plan_check.Case(0, "host", [], [], "raid1", "raid1"))
        plan_check._after_state(out, plan["after"], real)
        written = _fill(mnt, aged.path_env)
        if plan_check.off(plan["after"]["free_estimated"], written):
            out.problems.append(f"free_estimated {plan['after']['free_estimated']} against a "
                                f"fill of {written}")
        print(f"\nresume: {'; '.join(out.notes)}; free_estimated "
              f"{plan['after']['free_estimated'] // MiB} MiB, filled {written // MiB} MiB")
        assert not out.problems, out.problems


def test_balance_on_the_command_line(loopdevs, run_btrfsx, btrfsx_json):
    """Text and JSON; a paused balance refuses a new one; bad filters exit 2."""
    loops = loopdevs(2, size="1G")
    fsutil.mkfs(loops.devs, data="single", metadata="raid1")
    _, out, _ = run_btrfsx("filesystem", "plan", *loops.devs, "--balance",
                           "-dusage=50,-musage=10..90")
    assert "1. balance data chunks below 50 % used and metadata and system chunks 10 % to " \
        "90 % used" in out
    doc = btrfsx_json("filesystem", "plan", *loops.devs, "--balance", "musage=0")
    assert doc["changes"][0]["change"] == "balance" and doc["possible"]
    for bad, words in (("dusage=101", "the usage '101' of 'dusage=101'"),
                       ("dusage=60..20", "MIN at most MAX"),
                       ("usage=5", "'usage=5' is not a filter"),
                       ("dusage=5,dusage=6", "data is filtered twice")):
        _, out, err = run_btrfsx("filesystem", "plan", *loops.devs, "--balance", bad, check=2)
        assert words in err and not out, err
    _, _, err = run_btrfsx("filesystem", "plan", *loops.devs, "--resume", check=2)
    assert "no paused or interrupted balance to resume" in err


@pytest.fixture(autouse=True)
def _room(tmp_path):
    """Each case fills its devices (up to 2 GiB written): gone when the test ends."""
    yield
    shutil.rmtree(tmp_path, ignore_errors=True)
