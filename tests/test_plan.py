# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx filesystem plan: the what-if planner against the running (mainline)
kernel on loop devices, and its command line.

* Seeded random plans (tests/helpers/plan_check.py: add, remove, resize, convert,
  replace; no hints, which this kernel ignores) made for real and filled to
  ENOSPC: every change the plan calls impossible fails at that change with
  the kernel's ENOSPC and every possible one succeeds; the chunks the plan
  moves are those that went away, their used bytes within 1 %;
  free_estimated and metadata_room within 1 % of the fill.
  ``BTRFSX_PLAN_CASES`` (default 12: the aged plans below take the rest of
  the time these had) and ``BTRFSX_PLAN_SEED`` (first seed) choose them;
  mismatches are printed with their seed.
* The same on filesystems with a past (tests/helpers/aging.py; 24 of them,
  ``BTRFSX_AGED``), one change each, every device's allocated bytes and the
  space figures held to 1 %; and the issue 30 reproduction.
* The command: text and JSON, mounted and unmounted alike, exit codes, and
  bad input (exit 2 with a message naming the problem).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import fsutil
from helpers import plan_check
from helpers.fsutil import GiB, MiB

sys.path.insert(0, str(Path(__file__).resolve().parent / "vm"))
import vmharness  # noqa: E402  (parse_console: the script's output format)

pytestmark = pytest.mark.root

SIZES = [384 * MiB, 512 * MiB, 768 * MiB, 1024 * MiB]
OPS = ["add", "remove", "remove", "resize", "convert", "convert", "replace"]
CASES = int(os.environ.get("BTRFSX_PLAN_CASES", "12"))
FIRST_SEED = int(os.environ.get("BTRFSX_PLAN_SEED", "0"))


@pytest.fixture(scope="module")
def tools(tmp_path_factory, btrfsx):
    """A PATH with btrfsx and the helpers of tests/vm/guest-fill.c and
    guest-age.c (built here)."""
    from helpers import aging

    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    return aging.build_tools(tmp_path_factory.mktemp("plan-bin"), btrfsx)


def run_case(case: plan_check.Case, workdir: Path, path_env: str,
             images: list[Path] | None = None) -> plan_check.Outcome:
    """@case made for real; on @images (an aged filesystem's copies) when given."""
    images = images or fsutil.make_images(workdir / "dev", case.sizes, prefix="dev")
    spares = fsutil.make_images(workdir / "spare", case.spares, prefix="spare") \
        if case.spares else []
    mnt = workdir / "mnt"
    mnt.mkdir()
    with fsutil.LoopDevices(images + spares) as loops:
        disks = {f"dev{i}": loops[i] for i in range(len(images))}
        disks.update({f"spare{i}": loops[len(images) + i] for i in range(len(spares))})
        text = plan_check.FUNCTIONS + plan_check.script(case, disks, str(mnt))
        try:
            p = subprocess.run(["bash", "-c", text], capture_output=True, text=True,
                               env=dict(os.environ, PATH=path_env), timeout=600)
        finally:
            fsutil.umount_devices(loops.devs)
        res = vmharness.parse_console(p.stdout + p.stderr)
    return plan_check.compare(case, res)


def outcome_of(case: plan_check.Case, workdir: Path, path_env: str,
               images: list[Path] | None = None) -> plan_check.Outcome:
    """run_case(), its failure an outcome too; @workdir goes at the end: a case
    fills its devices with written bytes (up to 2 GiB), two dozen would hold
    tens of GiB of the machine's disk until pytest's next runs."""
    try:
        return run_case(case, workdir, path_env, images)
    except AssertionError as e:
        outcome = plan_check.Outcome(case)
        outcome.problems.append(f"no result: {str(e)[-1500:]}")
        return outcome
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_random_plans_against_the_kernel(tmp_path, tools):
    outcomes = []
    for seed in range(FIRST_SEED, FIRST_SEED + CASES):
        case = plan_check.make_case("host", seed, SIZES, OPS, [0], ["data", "data", "meta"])
        workdir = tmp_path / f"case{seed}"
        workdir.mkdir()
        outcomes.append(outcome_of(case, workdir, tools))
    print("\n" + plan_check.report(outcomes))
    impossible = sum(1 for o in outcomes if o.plan and not o.plan["possible"])
    bad = [o for o in outcomes if o.problems]
    assert not bad, (f"{len(bad)} of {len(outcomes)} plans differ from the kernel "
                     f"({impossible} impossible):\n" + plan_check.report(bad))
    # Failures the plan only warned about ("tight") stay the exception.
    tolerated = sum(1 for o in outcomes if o.tolerated)
    assert tolerated <= len(outcomes) // 5, plan_check.report(outcomes)
    # The cases cover both verdicts and every change.
    assert 0 < impossible < len(outcomes)
    ops = {op for o in outcomes for op, _ in o.case.changes}
    assert {"add", "remove", "resize", "convert", "replace"} <= ops


AGED_KINDS = ["remove", "resize", "replace", "convert", "add"]


def test_aged_plans_against_the_kernel(aged, tmp_path):
    """Plans on filesystems with a past (tests/helpers/aging.py), one change
    each, made for real: the verdict is the kernel's (a change it fails or
    aborts is impossible, or tight with a reason), every device's allocated
    bytes, free_strict and metadata_room within 1 % of `filesystem usage`
    after the change, free_estimated within 1 % of a fill to ENOSPC.
    ``pytest -s`` prints the table per change kind."""
    from helpers import aging

    outcomes = []
    for seed in aging.seeds():
        fs = aged.get(seed)
        case = plan_check.aged_case(fs, "host", AGED_KINDS)
        workdir = tmp_path / f"aged{seed}"
        outcomes.append(outcome_of(case, workdir, aged.path_env, fs.copy(workdir / "dev")))
    print("\n" + plan_check.report(outcomes) + "\n\n" + plan_check.table(outcomes))
    bad = [o for o in outcomes if o.problems]
    assert not bad, (f"{len(bad)} of {len(outcomes)} aged plans differ from the kernel:\n" +
                     plan_check.report(bad) + "\n\n" + plan_check.table(outcomes))
    # A change the kernel failed where the plan only warned ("tight", with
    # the reason) stays the exception.
    tolerated = sum(1 for o in outcomes if o.tolerated)
    assert tolerated <= len(outcomes) // 10, plan_check.report(outcomes)


def _fallocate_files(directory: Path, prefix: str, count: int, size: int) -> None:
    for i in range(count):
        fsutil.run(["fallocate", "-l", str(size), str(directory / f"{prefix}{i}")])


def test_issue_30_remove_on_a_refilled_raid1(loopdevs, btrfsx_json, tools):
    """The issue's reproduction: raid1 on 1, 1, 1.5, 1.5 and 2 GiB filled with
    64 MiB files to about 1.2 GiB short of full, every other one deleted,
    320 MiB written back in 8 MiB files; then --remove 5 planned and made.
    The plan said +17 % free and +183 % metadata room (the kernel allocated
    data chunks it did not model), and once called an ENOSPC abort possible.
    Now: a remove the kernel makes leaves what the plan said (every device's
    allocated bytes, metadata_room and free_strict against `usage`,
    free_estimated against a fill, each within 1 %); one it fails (ENOSPC,
    or a transaction abort) was called impossible, or tight with a warning
    that says why."""
    loops = loopdevs(sizes=["1G", "1G", "1536M", "1536M", "2G"])
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    with fsutil.mounted(loops.devs) as mnt:
        # 3.5 GiB of raid1 room: 36 files of 64 MiB leave about 1.2 GiB.
        _fallocate_files(mnt, "f", 36, 64 * MiB)
        fsutil.run(["sync"])
        for i in range(0, 36, 2):
            (mnt / f"f{i}").unlink()
        fsutil.run(["sync"])
        _fallocate_files(mnt, "g", 40, 8 * MiB)
        fsutil.run(["sync"])
        plan = btrfsx_json("filesystem", "plan", str(mnt), "--remove", "5", check=False)
        step = plan["changes"][0]
        p = fsutil.run(["btrfs", "device", "remove", "5", str(mnt)], check=False)
        if p.returncode:
            assert "No space left" in p.stderr or "Read-only" in p.stderr, p.stderr
            assert step["status"] == "impossible" or (
                step["tight"] and any("may abort the transaction" in w
                                      for w in plan.get("warnings", []))), plan
            return
        assert step["status"] == "possible", step
        real = btrfsx_json("filesystem", "usage", str(mnt))
        out = plan_check.Outcome(plan_check.Case(30, "host", [], [], "raid1", "raid1"))
        plan_check._after_state(out, plan["after"], real)
        fill = subprocess.run(["guest-fill", "data", str(mnt)], capture_output=True, text=True,
                              env=dict(os.environ, PATH=tools), check=True)
        written = int(fill.stdout.split()[2])
        if plan_check.off(plan["after"]["free_estimated"], written):
            out.problems.append(f"free_estimated {plan['after']['free_estimated']} against a "
                                f"fill of {written}")
        assert not out.problems, out.problems


def test_a_plan_right_after_deletions(loopdevs, btrfsx_json, run_btrfsx):
    """Issue 39, defect 0: raid1 data, raid1c3 metadata on 1, 1, 1.5 and 2 GiB, mounted
    commit=300; 26 files of 64 MiB synced, 8 deleted; at once `plan --remove 1` read the
    last commit (IMPOSSIBLE, exit 5) where `btrfs device remove 1`, which commits first,
    succeeded. The plan starts where the remove starts: committed, the same plan as after
    `btrfs filesystem sync`. A deleted subvolume the kernel has not cleaned up yet is a
    warning of the reader, so usage, plan and misplaced say it alike."""
    loops = loopdevs(sizes=["1G", "1G", "1536M", "2G"])
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1c3")
    with fsutil.mounted(loops.devs, "commit=300") as mnt:
        _fallocate_files(mnt, "f", 26, 64 * MiB)
        fsutil.run(["sync"])
        for i in range(8):
            (mnt / f"f{i}").unlink()
        at_once = btrfsx_json("filesystem", "plan", str(mnt), "--remove", "1", check=False)
        fsutil.run(["btrfs", "filesystem", "sync", str(mnt)])
        synced = btrfsx_json("filesystem", "plan", str(mnt), "--remove", "1", check=False)
        fsutil.run(["btrfs", "subvolume", "create", str(mnt / "sub")])
        _fallocate_files(mnt / "sub", "s", 2, 16 * MiB)
        fsutil.run(["btrfs", "filesystem", "sync", str(mnt)])
        fsutil.run(["btrfs", "subvolume", "delete", str(mnt / "sub")])
        _, _, usage_err = run_btrfsx("filesystem", "usage", str(mnt))
    assert at_once["possible"] is synced["possible"] is True
    for side in ("before", "after"):
        for key in ("free_estimated", "free_strict", "metadata_room", "used"):
            assert at_once[side][key] == synced[side][key], (side, key)
    # usage commits nothing, so the cleaner has not started (commit=300); a plan's commit
    # wakes it, and a subvolume this small is gone before the plan reads the root tree
    assert "1 deleted subvolume is not cleaned up yet" in usage_err, usage_err
    assert f"'btrfs subvolume sync {mnt}' waits for it" in usage_err


# ----------------------------------------------------------------- the command

@pytest.fixture(scope="module")
def small_fs(tmp_path_factory):
    """Three devices (1, 2, 3 GiB), raid1, 1 GiB of data; unmounted."""
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    images = fsutil.make_images(tmp_path_factory.mktemp("plan-fs"), ["1G", "2G", "3G"])
    with fsutil.LoopDevices(images) as loops:
        fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
        with fsutil.mounted(loops.devs) as mnt:
            fsutil.run(["fallocate", "-l", "700M", str(mnt / "a")])
            fsutil.run(["fallocate", "-l", "300M", str(mnt / "b")])
        yield loops


def test_mounted_and_unmounted_agree(small_fs, btrfsx_json):
    args = ["--remove", "1", "--add", "2G", "--convert", "metadata=raid1c3"]
    offline = btrfsx_json("filesystem", "plan", *small_fs.devs, *args)
    with fsutil.mounted(small_fs.devs) as mnt:
        online = btrfsx_json("filesystem", "plan", str(mnt), *args)
    assert not offline["mounted"] and online["mounted"]
    assert offline["mountpoint"] is None and online["mountpoint"] == str(mnt)
    for doc in (offline, online):
        for dev in doc["before"]["devices"]:
            assert dev["device"] and dev["missing"] is False
            assert (dev["hint"], dev["hint_value"]) == ("data_preferred", 0)
        added = [d for d in doc["after"]["devices"] if d["devid"] == 4]
        assert added[0]["device"] is None and added[0]["missing"] is False
    for side in ("before", "after"):
        for key in ("free_estimated", "free_strict", "metadata_room", "metadata_room_after_data",
                    "device_size", "used"):
            assert offline[side][key] == online[side][key], (side, key)
    assert [c["moved_bytes"] for c in offline["changes"]] == \
        [c["moved_bytes"] for c in online["changes"]]
    assert offline["possible"] is True
    assert [c["status"] for c in offline["changes"]] == ["possible"] * 3
    assert offline["changes"][1]["devid"] == 4
    assert {d["devid"] for d in offline["after"]["devices"]} == {2, 3, 4}
    assert offline["after"]["metadata_profile"] == "raid1c3"


def test_json_lists_what_moves(small_fs, btrfsx_json):
    doc = btrfsx_json("filesystem", "plan", *small_fs.devs, "--remove", "1")
    step = doc["changes"][0]
    moved = [c for c in doc["moved"] if c["change"] == 1]
    assert step["moved_chunks"] == len(moved) > 0
    assert step["moved_bytes"] == sum(c["used"] for c in moved)
    assert all(1 in c["devids"] for c in moved)
    assert all(1 not in c["devids"] for c in doc["created"])
    assert doc["after"]["data_used"] == doc["before"]["data_used"]


def test_commands_and_estimates(small_fs, btrfsx_json, run_btrfsx, tmp_path):
    """Each change names the command that makes it; with a copy rate measured
    (the state directory's record, as balance misplaced writes it) the
    estimate is what the change copies at that rate, else null."""
    args = ["--add", "1G:metadata_only", "--remove", "1", "--resize", "2=1500M",
            "--hint", "3=data_only", "--convert", "data=raid1c3", "--convert", "metadata=dup",
            "--replace", "2=4G", "--balance", "dusage=10..50,musage=5", "--relocate"]
    state = tmp_path / "state"
    doc = btrfsx_json("filesystem", "plan", *small_fs.devs, *args,
                      env={"BTRFSX_STATE_DIR": str(state)}, check=False)
    assert doc["copy_rate"] is None
    assert [c["command"] for c in doc["changes"]] == [
        "btrfs device add <new-device> <mountpoint> && btrfsx device property set "
        "<new-device> allocation_hint metadata_only",
        "btrfs device remove 1 <mountpoint>",
        f"btrfs filesystem resize 2:{1500 * 1024 * 1024} <mountpoint>",
        f"btrfsx device property set {small_fs.devs[2]} allocation_hint data_only",
        "btrfs balance start -dconvert=raid1c3 <mountpoint>",
        "btrfs balance start -mconvert=dup <mountpoint>",
        "btrfs replace start 2 <new-device> <mountpoint>",
        "btrfs balance start -dusage=10..50 -musage=5 <mountpoint>",
        "btrfsx balance misplaced <mountpoint>"]
    assert all(c["estimate_seconds"] is None for c in doc["changes"])
    fsid = fsutil.read_fsid(small_fs.devs[0])
    (state / "relocate").mkdir(parents=True)
    (state / "relocate" / f"{fsid}.json").write_text(
        json.dumps({"bytes": 100 * 1024 * 1024, "seconds": 4.0}))
    with fsutil.mounted(small_fs.devs) as mnt:
        doc = btrfsx_json("filesystem", "plan", str(mnt), "--remove", "1",
                          env={"BTRFSX_STATE_DIR": str(state)})
        _, text, _ = run_btrfsx("filesystem", "plan", str(mnt), "--remove", "1")
    rate = doc["copy_rate"]
    assert rate == 25 * 1024 * 1024
    step = doc["changes"][0]
    assert step["command"] == f"btrfs device remove 1 {mnt}"
    assert step["estimate_seconds"] == pytest.approx(
        (step["moved_bytes"] + step["copied_bytes"]) / rate, abs=0.05)
    assert f"command: btrfs device remove 1 {mnt}" in text


def test_text_side_by_side(small_fs, run_btrfsx):
    _, out, _ = run_btrfsx("filesystem", "plan", *small_fs.devs, "--add", "1G", "--remove", "1")
    assert "possible" in out.splitlines()[0]
    assert "1. add a 1.00GiB device: devid 4" in out
    assert "2. remove devid 1: moves" in out
    header = next(line for line in out.splitlines() if "Before" in line)
    assert header.split() == ["Before", "After", "Change"]
    for label in ("Free (estimated):", "Free (strict):", "Metadata room:",
                  "Metadata after data:"):
        assert label in out
    assert "data_preferred -> removed" in out and "new, data_preferred" in out


def test_one_chunk_breaking_the_hints_is_one(tmp_path, run_btrfsx, btrfsx_json):
    """raid1 on three devices (mkfs puts every chunk on two of them): one of
    them made metadata_only leaves the data chunk alone breaking the hints:
    "1 chunk ... breaks", and balance misplaced "moves it" (issue 32)."""
    images = fsutil.make_images(tmp_path, ["1G", "1G", "1G"])
    with fsutil.LoopDevices(images) as loops:
        fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
        counts = {}
        for d in btrfsx_json("filesystem", "usage", *loops.devs)["devices"]:
            if not d["data"]:
                continue
            change = ("--hint", f"{d['devid']}=metadata_only")
            doc = btrfsx_json("filesystem", "plan", *loops.devs, *change)
            counts[change] = doc["misplaced"]["chunks"]
        change = next(c for c, n in counts.items() if n == 1)
        _, _, err = run_btrfsx("filesystem", "plan", *loops.devs, *change)
    assert "1 chunk (0.00B used) breaks the hints after the plan; 'btrfsx balance misplaced' " \
        "moves it" in err


def test_convert_a_kernel_without_hints_makes(tmp_path, run_btrfsx, btrfsx_json):
    """Issue 39, defect 1: raid1 on three devices, one metadata_only, mounted on a kernel
    that ignores hints; data to raid1c3 needs all three. The plan called it impossible
    ("the guard rails refuse the convert") and the kernel made it. The verdict is the
    kernel's now: possible, the hint it breaks a warning with its reason."""
    images = fsutil.make_images(tmp_path, ["1G", "1G", "1G"])
    with fsutil.LoopDevices(images) as loops:
        run_btrfsx("mkfs", "-q", "-d", "raid1", "-m", "raid1", loops.devs[0], loops.devs[1],
                   f"{loops.devs[2]}:monly")
        with fsutil.mounted(loops.devs) as mnt:
            if btrfsx_json("filesystem", "usage", str(mnt))["model"]["kernel_honours_hints"]:
                pytest.skip("the running kernel honours allocation hints")
            fsutil.run(["fallocate", "-l", "100M", str(mnt / "a")])
            fsutil.run(["sync"])
            _, out, err = run_btrfsx("filesystem", "plan", str(mnt), "--convert",
                                     "data=raid1c3")
            doc = btrfsx_json("filesystem", "plan", str(mnt), "--convert", "data=raid1c3")
            fsutil.run(["btrfs", "balance", "start", "-dconvert=raid1c3", str(mnt)])
            df = fsutil.run(["btrfs", "filesystem", "df", str(mnt)]).stdout
    assert "IMPOSSIBLE" not in out and "guard rails refuse" not in out
    assert "the convert breaks the allocation hints" in err
    assert "this kernel ignores the hints and makes it" in err
    assert doc["possible"] is True and doc["changes"][0]["status"] == "possible"
    assert doc["after"]["data_profile"] == "raid1c3" and "Data, RAID1C3" in df, df


def test_impossible_remove_exits_5(small_fs, run_btrfsx, btrfsx_json):
    """The 3 GiB device holds a copy of every raid1 chunk: 1 and 2 GiB cannot take them."""
    rc, out, _ = run_btrfsx("filesystem", "plan", *small_fs.devs, "--remove", "3",
                            "--add", "1G", check=5)
    assert "IMPOSSIBLE" in out.splitlines()[0]
    line = next(line for line in out.splitlines() if "impossible:" in line)
    assert "the other devices cannot take the chunks of devid 3" in line
    assert "raid1 is short by" in out and "[not-reached]" in out
    # issue 39, defect 6: the After column of an impossible plan says what it is
    assert "After: where the kernel stops, at change 1; what it moved stays moved" in out
    doc = btrfsx_json("filesystem", "plan", *small_fs.devs, "--remove", "3", check=5)
    shorts = doc["changes"][0]["short"]
    assert shorts and doc["possible"] is False
    for short in shorts:
        assert short["profile"] == "raid1" and short["missing_bytes"] > 0 and short["chunks"] > 0
        assert {d["devid"] for d in short["devices"]} == {1, 2}


@pytest.mark.parametrize("args, words", [
    ([], "no change to plan"),
    (["--remove", "9"], "devid 9 is not in the filesystem"),
    (["--remove", "1", "--remove", "1"], "devid 1 is removed by an earlier change"),
    (["--remove", "1", "--remove", "2"], "leaves 1 device, but"),
    (["--convert", "data=raid1c4"], "raid1c4 needs at least 4 devices"),
    (["--convert", "data=single", "--convert", "data=raid1"], "converted twice"),
    (["--resize", "2=100M"], "at least 256.00MiB"),
    (["--replace", "3=1G"], "smaller than devid 3"),
    (["--add", "1Q"], "is not a size"),
    (["--add", "1G:fast"], "unknown allocation hint 'fast'"),
    (["--hint", "2"], "is not DEVID=HINT"),
    (["--convert", "system=raid1"], "neither data nor metadata"),
    (["--convert", "data=raid7"], "unknown profile 'raid7'"),
    (["--remove", "x"], "'x' is not a devid"),
])
def test_bad_input_exit_2(small_fs, run_btrfsx, args, words):
    _, out, err = run_btrfsx("filesystem", "plan", *small_fs.devs, *args, check=2)
    assert words in err and not out


def test_not_btrfs_and_missing(tmp_path, run_btrfsx):
    junk = tmp_path / "junk.img"
    junk.write_bytes(b"\0" * (1 << 20))
    _, _, err = run_btrfsx("filesystem", "plan", str(junk), "--remove", "1", check=1)
    assert "junk.img" in err
    _, _, err = run_btrfsx("filesystem", "plan", str(tmp_path / "nope"), "--remove", "1",
                           check=1)
    assert "nope" in err


def test_resize_to_max(tmp_path, run_btrfsx, btrfsx_json):
    """Issue 39, defect 2: '--resize DEVID=max' as btrfs filesystem resize takes it: the
    size of the device itself (an image file: its length); refused for a device the plan
    adds, whose size is the one --add gives."""
    img = tmp_path / "grown.img"
    with open(img, "wb") as f:
        f.truncate(400 * MiB)
    fsutil.run(["mkfs.btrfs", "-q", "-f", "-b", str(300 * MiB), str(img)])
    doc = btrfsx_json("filesystem", "plan", str(img), "--resize", "1=max")
    assert doc["possible"] is True
    assert doc["changes"][0]["description"] == "resize devid 1 to its device's size (max)"
    assert doc["before"]["device_size"] == 300 * MiB
    assert doc["after"]["device_size"] == 400 * MiB
    assert doc["changes"][0]["command"].startswith("btrfs filesystem resize 1:max "), doc
    _, _, err = run_btrfsx("filesystem", "plan", str(img), "--add", "1G", "--resize", "2=max",
                           check=2)
    assert "devid 2=max: the plan adds devid 2" in err, err
    _, _, err = run_btrfsx("filesystem", "plan", str(img), "--resize", "1=maximum", check=2)
    assert "'maximum' is not a size" in err, err
