# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx filesystem usage: the Overall section against btrfs-progs, the
unmounted reader against the mounted one, the preference breakdown with
hints (expected figures worked out from the device table), the warnings,
the per-device table and the errors."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from helpers import fsutil
from helpers import misplaced_oracle
from helpers import oracle
from helpers import usage_fill
from helpers.fsutil import GiB, MiB
from helpers.tables import parse_table

pytestmark = pytest.mark.root

OVERALL_LABELS = ["Device size", "Device allocated", "Device unallocated", "Device missing",
                  "Device slack", "Used", "Free (estimated)", "Free (statfs, df)", "Data ratio",
                  "Metadata ratio", "Global reserve", "Multiple profiles"]

#: Overall labels -> our JSON keys (value, and the parenthesised one if any)
OVERALL_KEYS = {
    "Device size": ("device_size",), "Device allocated": ("device_allocated",),
    "Device unallocated": ("device_unallocated",), "Device missing": ("device_missing",),
    "Device slack": ("device_slack",), "Used": ("used",),
    "Free (estimated)": ("free_estimated_by_ratio", "free_estimated_by_ratio_min"),
    "Free (statfs, df)": ("free_statfs",), "Data ratio": ("data_ratio",),
    "Metadata ratio": ("metadata_ratio",), "Global reserve": ("global_reserve",
                                                             "global_reserve_used"),
}

TOP_KEYS = {"free_estimated", "free_strict", "free_statfs", "metadata_room",
            "metadata_room_after_data", "classes", "devices", "overall", "spaces", "model",
            "fsid", "mountpoint", "mounted"}
CLASS_KEYS = {"hint", "hint_value", "devices", "size", "unallocated", "data_allocatable",
              "metadata_allocatable"}


def overall_section(text: str) -> dict[str, str]:
    """'Label: value' lines of an Overall: section, whitespace normalised."""
    section = text.split("Overall:", 1)[1].split("\n\n", 1)[0]
    fields = {}
    for line in section.splitlines():
        label, sep, value = line.strip().partition(":")
        if sep:
            fields[label] = " ".join(value.split())
    return fields


def progs_overall(mnt) -> dict[str, str]:
    return overall_section(fsutil.run(["btrfs", "filesystem", "usage", "-b", str(mnt)]).stdout)


def numbers(value: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?", value)


def make_fs(loopdevs, sizes, data, metadata, extra=()):
    loops = loopdevs(sizes=sizes)
    fsutil.mkfs(loops.devs, data=data, metadata=metadata, extra=extra)
    return loops


def put_data(mnt, prealloc=300 * MiB):
    fsutil.fill_files(mnt, big_files=2, small_files=16)
    if prealloc:
        with open(Path(mnt) / "prealloc", "wb") as f:
            os.posix_fallocate(f.fileno(), 0, prealloc)
    fsutil.run(["sync"])


# ---------------------------------------------------------------- vs btrfs-progs

CASES = [
    # sizes, data, metadata, mkfs extra
    (["1G"], "single", "dup", ()),
    (["1G", "3G"], "raid1", "raid1", ()),
    (["1G", "2G", "3G", "6G"], "raid0", "raid1", ()),
    (["1G", "2G", "3G", "6G"], "raid10", "raid1c3", ()),
    (["1G", "2G", "3G", "6G"], "raid5", "raid1", ()),
    (["1G", "2G", "3G", "6G"], "raid6", "raid1c3", ()),
    (["1G", "2G", "3G"], "raid1c3", "raid1c3", ()),
    (["768M", "1G"], "single", "single", ("--mixed",)),
]


@pytest.mark.parametrize("sizes,data,metadata,extra", CASES,
                         ids=[f"{c[1]}-{c[2]}{'-mixed' if c[3] else ''}" for c in CASES])
def test_overall_equals_progs(loopdevs, run_btrfsx, btrfsx_json, sizes, data, metadata, extra):
    loops = make_fs(loopdevs, sizes, data, metadata, extra)
    with fsutil.mounted(loops.devs) as mnt:
        put_data(mnt, prealloc=0 if extra else 300 * MiB)
        progs = progs_overall(mnt)
        rc, out, err = run_btrfsx("filesystem", "usage", "-b", mnt)
        doc = btrfsx_json("filesystem", "usage", mnt)
    ours = overall_section(out)
    for label in OVERALL_LABELS:
        assert ours[label] == progs[label], (label, ours[label], progs[label])
    ov = doc["overall"]
    for label, keys in OVERALL_KEYS.items():
        want = numbers(progs[label])
        got = [ov[k] for k in keys]
        assert [f"{g:.2f}" if isinstance(g, float) else str(g) for g in got] == want, label
    assert ov["multiple_profiles"] is False and progs["Multiple profiles"] == "no"
    # the per-type lines, like progs' "Data,RAID10: Size:..., Used:... (..%)"
    for s in doc["spaces"]:
        assert f"Size:{s['size']}, Used:{s['used']}" in out


def test_mixed_unmounted_says_the_reserve_is_not_subtracted(loopdevs, btrfsx_json):
    """Regression (issue 32): with mixed block groups a mounted filesystem's
    free space (and btrfs-progs') has the unused global reserve taken off;
    unmounted it is not known, is not taken off, and a warning says so."""
    loops = make_fs(loopdevs, ["768M", "1G"], "single", "single", ("--mixed",))
    with fsutil.mounted(loops.devs) as mnt:
        put_data(mnt, prealloc=0)
        fsutil.run(["sync"])
        on = btrfsx_json("filesystem", "usage", mnt)
    off = btrfsx_json("filesystem", "usage", *loops.devs)
    reserve = on["overall"]["global_reserve"] - on["overall"]["global_reserve_used"]
    assert reserve > 0 and "warnings" not in on, on.get("warnings")
    assert off["free_estimated"] - on["free_estimated"] == reserve
    assert off["overall"]["free_estimated_by_ratio"] - \
        on["overall"]["free_estimated_by_ratio"] == reserve
    assert any("global reserve is not known" in w for w in off["warnings"]), off["warnings"]


UNIT_OPTIONS = [(), ("-h",), ("--human-readable",), ("-H",), ("--si",), ("--iec",), ("-k",),
                ("-m",), ("-g",), ("-t",), ("--si", "-m"), ("-H", "--iec"), ("--raw",), ("-b",)]


def test_units_and_rounding_equal_progs(loopdevs, run_btrfsx):
    """Every unit option of btrfs-progs, with its rounding, field by field (text output)."""
    loops = make_fs(loopdevs, ["1G", "3G"], "raid1", "raid1")
    with fsutil.mounted(loops.devs) as mnt:
        put_data(mnt, prealloc=37 * MiB + 12345)
        for opts in UNIT_OPTIONS:
            progs = fsutil.run(["btrfs", "filesystem", "usage", *opts, str(mnt)]).stdout
            rc, out, err = run_btrfsx("filesystem", "usage", *opts, mnt)
            ours = overall_section(out)
            for label, value in overall_section(progs).items():
                assert ours[label] == value, (opts, label)
            for line in progs.splitlines():
                if ": Size:" in line:
                    assert line + "\n" in out, (opts, line)


def test_offline_equals_mounted(loopdevs, btrfsx_json):
    """The unmounted reader (dev tree, block group items) gives the ioctls' figures."""
    loops = make_fs(loopdevs, ["1G", "2G", "3G", "6G"], "raid10", "raid1c3")
    with fsutil.mounted(loops.devs) as mnt:
        put_data(mnt)
        on = btrfsx_json("filesystem", "usage", mnt)
    off = btrfsx_json("filesystem", "usage", *loops.devs)
    assert on["mounted"] is True and off["mounted"] is False
    assert off["free_statfs"] is None and off["overall"]["global_reserve"] is None
    for key in ("free_statfs", "global_reserve", "global_reserve_used"):
        on["overall"].pop(key), off["overall"].pop(key)
    assert off["overall"] == on["overall"]
    for key in ("spaces", "classes", "devices", "model", "free_estimated", "free_strict",
                "metadata_room", "metadata_room_after_data"):
        assert off[key] == on[key], key
    # one member is enough: the others are found by fsid
    assert btrfsx_json("filesystem", "usage", loops.devs[2])["free_estimated"] == \
        on["free_estimated"]


def test_device_of_mounted_fs_is_read_through_the_mount(loopdevs, btrfsx_json):
    loops = make_fs(loopdevs, ["1G", "2G"], "single", "raid1")
    with fsutil.mounted(loops.devs) as mnt:
        doc = btrfsx_json("filesystem", "usage", loops.devs[1])
        assert doc["mounted"] is True and doc["mountpoint"] == str(mnt)
        assert doc["free_statfs"] > 0 and doc["overall"]["global_reserve"] > 0


def test_relative_mount_point_is_shown_absolute(loopdevs, btrfsx_json, monkeypatch):
    """A mount point given relative to the working directory ("mnt") is reported
    as the absolute path of the mount point (issue 32)."""
    loops = make_fs(loopdevs, ["1G"], "single", "dup")
    with fsutil.mounted(loops.devs) as mnt:
        monkeypatch.chdir(mnt.parent)
        assert btrfsx_json("filesystem", "usage", mnt.name)["mountpoint"] == str(mnt)
        assert btrfsx_json("device", "usage", mnt.name)["filesystems"][0]["mountpoint"] == \
            str(mnt)
        assert btrfsx_json("filesystem", "plan", mnt.name, "--add", "1G")["mountpoint"] == \
            str(mnt)
        doc = btrfsx_json("filesystem", "misplaced", mnt.name)["misplaced"]
        assert doc["mountpoint"] == str(mnt)


@pytest.mark.parametrize("command", [["misplaced"], ["plan", "--add", "1G"]])
def test_short_unit_options_as_on_usage(loopdevs, run_btrfsx, btrfsx_json, command):
    """filesystem misplaced and plan take -b -k -m -g -t (and -h, -H) as usage
    does. A metadata chunk on a device made data_only gives misplaced sizes
    to show."""
    loops = make_fs(loopdevs, ["1G", "1G", "1G"], "single", "raid1")
    devices = btrfsx_json("filesystem", "usage", *loops.devs)["devices"]
    devid = next(d["devid"] for d in devices if d["metadata"])
    run_btrfsx("property", "set", loops.devs[devid - 1], "allocation_hint", "data_only")
    outs = {}
    for short, long in [("-b", "--raw"), ("-k", "--kbytes"), ("-m", "--mbytes"),
                        ("-g", "--gbytes"), ("-t", "--tbytes"), ("-h", "--human-readable")]:
        outs[short] = run_btrfsx("filesystem", command[0], short, *loops.devs, *command[1:],
                                 check=False)[1]
        assert outs[short] == run_btrfsx("filesystem", command[0], long, *loops.devs,
                                         *command[1:], check=False)[1], short
    assert len(set(outs.values())) == len(outs)
    assert run_btrfsx("filesystem", command[0], "-H", *loops.devs, *command[1:],
                      check=False)[1] != outs["-h"]


def test_json_shape_and_model_figures(loopdevs, btrfsx_json):
    """No hints: free_estimated is what df shows for single data (all free
    space, data chunks included), free_strict the same."""
    loops = make_fs(loopdevs, ["1G", "2G", "3G"], "single", "raid1")
    with fsutil.mounted(loops.devs) as mnt:
        doc = btrfsx_json("filesystem", "usage", mnt)
    assert TOP_KEYS <= set(doc)
    assert len(doc["classes"]) == 1 and set(doc["classes"][0]) == CLASS_KEYS
    cl = doc["classes"][0]
    assert cl["hint"] == "data_preferred" and cl["devices"] == 3 and cl["size"] == 6 * GiB
    # single data takes every hole: all unallocated bytes above the first MiB
    holes = sum(d["unallocated"] - MiB for d in doc["devices"])
    assert cl["unallocated"] == holes == cl["data_allocatable"]
    model = doc["model"]
    assert doc["free_estimated"] == model["data_free_in_chunks"] + model["data_new_chunks"]
    assert model["data_new_chunks"] == holes
    assert doc["free_strict"] == doc["free_estimated"] == doc["free_statfs"]
    assert doc["metadata_room"] > doc["metadata_room_after_data"] == \
        model["metadata_free_in_chunks"]
    assert doc["model"]["hints_honoured"] is True and "warnings" not in doc
    for d in doc["devices"]:
        assert d["hint"] == "data_preferred"
        assert d["size"] == d["unallocated"] + d["data"] + d["metadata"] + d["system"]


# ---------------------------------------------------------------- hints

def hinted_fs(loopdevs, run_btrfsx, hints):
    """3 devices (2, 4, 4 GiB), single data, dup metadata, hints set offline."""
    loops = make_fs(loopdevs, ["2G", "4G", "4G"], "single", "dup")
    for dev, hint in zip(loops.devs, hints):
        if hint != "data_preferred":
            run_btrfsx("property", "set", dev, "allocation_hint", hint)
    return loops


def holes(doc, devid):
    """A device's free bytes the allocator can use (all but the first MiB)."""
    d = next(d for d in doc["devices"] if d["devid"] == devid)
    return d["unallocated"] - MiB


def test_hints_only(loopdevs, run_btrfsx, btrfsx_json):
    loops = hinted_fs(loopdevs, run_btrfsx, ["metadata_only", "data_only", "data_only"])
    doc = btrfsx_json("filesystem", "usage", *loops.devs)
    model = doc["model"]
    assert model["hints_honoured"] is True
    h1, h2, h3 = holes(doc, 1), holes(doc, 2), holes(doc, 3)
    # data: only devids 2 and 3, single chunks take their holes completely
    assert doc["free_estimated"] == model["data_free_in_chunks"] + h2 + h3
    assert doc["free_strict"] == doc["free_estimated"]
    # metadata: dup on devid 1 only, half of its hole (MiB aligned, so exact)
    assert doc["metadata_room"] == model["metadata_free_in_chunks"] + h1 // 2
    assert doc["metadata_room_after_data"] == doc["metadata_room"]
    classes = {c["hint"]: c for c in doc["classes"]}
    assert list(classes) == ["metadata_only", "data_only"]
    assert classes["metadata_only"] == {
        "hint": "metadata_only", "hint_value": 2, "devices": 1, "size": 2 * GiB,
        "unallocated": h1, "data_allocatable": 0, "metadata_allocatable": h1}
    assert classes["data_only"] == {
        "hint": "data_only", "hint_value": 3, "devices": 2, "size": 8 * GiB,
        "unallocated": h2 + h3, "data_allocatable": h2 + h3, "metadata_allocatable": 0}
    assert "warnings" not in doc


def test_hints_preferred_strict_and_warning(loopdevs, run_btrfsx, btrfsx_json):
    loops = hinted_fs(loopdevs, run_btrfsx,
                      ["metadata_preferred", "data_preferred", "data_preferred"])
    doc = btrfsx_json("filesystem", "usage", *loops.devs)
    model = doc["model"]
    h1, h2, h3 = holes(doc, 1), holes(doc, 2), holes(doc, 3)
    # preferred is not strict: data falls back to devid 1 once 2 and 3 are full
    assert doc["free_estimated"] == model["data_free_in_chunks"] + h1 + h2 + h3
    # strict: metadata_preferred becomes metadata_only
    assert doc["free_strict"] == model["data_free_in_chunks"] + h2 + h3
    # metadata: dup, devid 1 first, then the others
    assert doc["metadata_room"] == model["metadata_free_in_chunks"] + (h1 + h2 + h3) // 2
    # a data fill takes every hole: only the free space in metadata chunks stays
    assert doc["metadata_room_after_data"] == model["metadata_free_in_chunks"]
    meta = next(c for c in doc["classes"] if c["hint"] == "metadata_preferred")
    assert meta["data_allocatable"] == h1 == meta["metadata_allocatable"]
    assert len(doc["warnings"]) == 1
    assert "metadata_preferred devices' unallocated space" in doc["warnings"][0]
    rc, out, err = run_btrfsx("filesystem", "usage", *loops.devs)
    assert "btrfsx: warning: data chunks can take" in err
    assert "hints honoured" in out

    # --strict models every preference as strict: the warning goes away
    strict = btrfsx_json("filesystem", "usage", "--strict", *loops.devs)
    assert strict["model"]["strict"] is True and "warnings" not in strict
    assert strict["free_estimated"] == strict["free_strict"] == doc["free_strict"]
    assert strict["metadata_room"] == model["metadata_free_in_chunks"] + h1 // 2


def fake_sysfs(root: Path, fsid: str, hints: dict[int, str]) -> dict:
    for devid, name in hints.items():
        d = root / "fs" / "btrfs" / fsid / "devinfo" / str(devid)
        d.mkdir(parents=True)
        (d / "allocation_hint").write_text(name.upper() + "\n")
    return {"BTRFSX_SYSFS_ROOT": str(root)}


def test_mounted_hints(tmp_path, loopdevs, run_btrfsx, btrfsx_json):
    hints = ["metadata_only", "data_only", "data_only"]
    loops = hinted_fs(loopdevs, run_btrfsx, hints)
    offline = btrfsx_json("filesystem", "usage", *loops.devs)
    fsid = fsutil.read_fsid(loops.devs[0])
    with fsutil.mounted(loops.devs) as mnt:
        # This kernel ignores hints: the model runs without them, and says so.
        plain = btrfsx_json("filesystem", "usage", mnt)
        assert plain["model"]["hints_honoured"] is False
        assert any("ignores allocation hints" in w for w in plain["warnings"])
        assert [c["hint"] for c in plain["classes"]] == ["metadata_only", "data_only"]
        assert plain["free_estimated"] > offline["free_estimated"]
        assert plain["free_strict"] == offline["free_strict"]
        # --strict models hints this kernel ignores: nothing changes, and it says so.
        strict = btrfsx_json("filesystem", "usage", "--strict", mnt)
        assert strict["free_estimated"] == plain["free_estimated"]
        assert any("--strict changes nothing" in w for w in strict["warnings"])
        # A kernel with hint support (sysfs faked): the same figures as offline.
        env = fake_sysfs(tmp_path / "sys", fsid, {i + 1: h for i, h in enumerate(hints)})
        live = btrfsx_json("filesystem", "usage", mnt, env=env)
    assert live["model"]["hints_honoured"] is True and "warnings" not in live
    for key in ("free_estimated", "free_strict", "metadata_room", "metadata_room_after_data",
                "classes"):
        assert live[key] == offline[key], key


# ---------------------------------------------------------------- warnings

def test_metadata_room_when_data_took_everything(loopdevs, btrfsx_json):
    """Metadata first, then data until ENOSPC: no unallocated space is left, so
    the room is what the metadata chunks still hold; the 50% warning follows it
    (its exact threshold is checked in tests/unit/test_usage.c)."""
    loops = make_fs(loopdevs, ["512M"], "single", "single", extra=("--nodesize", "4096"))
    with fsutil.mounted(loops.devs) as mnt:
        for i in range(3000):
            (Path(mnt) / f"s{i}").write_bytes(b"y" * 2000)
        fsutil.run(["sync"])
        usage_fill.fill_until_enospc(mnt)
        fsutil.run(["sync"])
        doc = btrfsx_json("filesystem", "usage", mnt)
    model = doc["model"]
    used = next(s["used"] for s in doc["spaces"] if s["type"] == "metadata")
    assert model["data_new_chunks"] == 0 and doc["free_estimated"] < 1 * MiB
    assert doc["metadata_room"] == doc["metadata_room_after_data"] == \
        model["metadata_free_in_chunks"]
    assert model["metadata_needed"] == used // 2
    low = any("50% growth of the metadata" in w for w in doc.get("warnings", []))
    assert low == (doc["metadata_room"] < used // 2)


# ---------------------------------------------------------------- text, options, errors

def test_table_and_units(loopdevs, run_btrfsx, btrfsx_json):
    loops = hinted_fs(loopdevs, run_btrfsx, ["metadata_only", "data_only", "data_only"])
    rc, out, err = run_btrfsx("filesystem", "usage", "-T", "--raw", *loops.devs)
    doc = btrfsx_json("filesystem", "usage", *loops.devs)
    assert out.startswith("Overall:\n    Device size:")
    assert "Allocation hint classes (device bytes; Unallocated: above each device's first MiB, " \
        "which is never allocated):" in out
    # unmounted: the stored hints are modelled; this kernel would ignore them
    assert "Allocator model (new data single, metadata DUP; hints honoured, which the " \
        "running kernel does not):" in out
    # The model's figure is labelled apart from btrfs-progs' ratio shortcut (issue 32).
    assert f"    Free (model):            {doc['free_estimated']}\n" in out
    assert out.count("Free (estimated):") == 1
    assert f"    Free (estimated):        {doc['overall']['free_estimated_by_ratio']} " in out
    assert "    Free (statfs, df):       - (not mounted)\n" in out
    names, rows = parse_table(out)
    assert names[:3] == ["Id", "Path", "Hint"]
    assert names[-3:] == ["Unallocated", "Total", "Slack"]
    assert [r["Path"] for r in rows[-2:]] == ["Total", "Used"]
    for row, d in zip(rows, doc["devices"]):
        assert [row["Id"], row["Path"], row["Hint"], row["Unallocated"], row["Total"]] == [
            str(d["devid"]), d["device"], d["hint"], str(d["unallocated"]), str(d["size"])]
        assert sum(int(row[n]) for n in names[3:-3] if row[n] != "-") == \
            d["data"] + d["metadata"] + d["system"]
    assert rows[0]["Hint"] == "metadata_only"
    classes = parse_table(out.split("Allocation hint classes", 1)[1], first="Hint")[1]
    assert [(r["Hint"], r["Devices"], r["Allocatable Data"]) for r in classes] == [
        (c["hint"], str(c["devices"]), str(c["data_allocatable"])) for c in doc["classes"]]
    rc, out, err = run_btrfsx("filesystem", "usage", *loops.devs)
    assert "Id Path" not in out and "GiB" in out
    rc, out, err = run_btrfsx("filesystem", "usage", "-m", *loops.devs)
    assert re.search(r"Device size:\s+10240\.00MiB", out)


def test_errors(tmp_path, run_btrfsx):
    junk = tmp_path / "junk.img"
    junk.write_bytes(bytes(2 * MiB))
    rc, out, err = run_btrfsx("filesystem", "usage", junk, check=1)
    assert str(junk) in err
    rc, out, err = run_btrfsx("filesystem", "usage", check=2)
    assert "not enough arguments" in err
    rc, out, err = run_btrfsx("filesystem", "usage", "--bogus", junk, check=2)
    rc, out, err = run_btrfsx("filesystem", "usage", str(tmp_path), check=1)
    assert "not on a mounted btrfs" in err
    doc = json.loads(run_btrfsx("--format", "json", "filesystem", "usage", junk,
                                check=1)[1])
    assert doc["error"]["code"] > 0


# --------------------------------------------------------------------------- damaged images

def test_usage_refuses_device_item_larger_than_device(run_btrfsx, tmp_path):
    """A device item claiming 4 EiB on a 256 MiB image (found by fuzz_item,
    corpus regress-usage-huge-device-item): refused as the kernel refuses to
    mount it; the allocator model used to simulate chunks up to that size."""
    from helpers.base_images import DEV_ITEM, base_image, bximage

    img = base_image("00-single-crc32c")
    patches = bximage.patch_items(
        img, DEV_ITEM, lambda body, oid, off: body[:8] + (1 << 62).to_bytes(8, "little") + body[16:])
    members = img.write(patches, tmp_path)
    rc, out, err = run_btrfsx("filesystem", "usage", *map(str, members), check=1)
    assert "device item claims 4611686018427387904 bytes" in err, err


def test_usage_block_groups_used_beyond_their_size(run_btrfsx, tmp_path):
    """Block groups of a RAID5 filesystem claiming 2^64 - 1 bytes used (found
    by fuzz_item, regress-usage-double-overflow): the figures progs computes
    in doubles saturate instead of converting out of range (undefined)."""
    from helpers.base_images import BLOCK_GROUP_ITEM, base_image, bximage

    img = base_image("32-raid5-crc32c")
    patches = bximage.patch_items(
        img, BLOCK_GROUP_ITEM, lambda body, oid, off: b"\xff" * 8 + body[8:])
    members = img.write(patches, tmp_path)
    rc, out, err = run_btrfsx("filesystem", "usage", *map(str, members), check=0)
    assert "runtime error" not in err and "Sanitizer" not in err, err


# ---------------------------------------------------------------- misplaced chunks

MISPLACED_HINTS = ["metadata_only", "metadata_preferred", "data_preferred", "data_preferred"]


def test_misplaced_report_equals_the_chunk_tree(loopdevs, run_btrfsx, btrfsx_json):
    """mkfs.btrfs puts metadata, system and the first data chunk on devids 3
    and 4, the kernel the next data chunk on 1 and 2; under the hints data on
    1 is forbidden, metadata on 3 and 4 off-preference (1 and 2 rank better)."""
    loops = loopdevs(4, size="512M")
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    with fsutil.mounted(loops.devs) as mnt:
        put_data(mnt, prealloc=150 * MiB)
    for dev, hint in zip(loops.devs, MISPLACED_HINTS):
        if hint != "data_preferred":
            run_btrfsx("property", "set", dev, "allocation_hint", hint)
    chunks = misplaced_oracle.chunk_tree(oracle.progs_dump_tree_text(loops.devs, "chunk"))
    want = misplaced_oracle.expected(chunks, MISPLACED_HINTS)
    assert set(want.values()) == {"forbidden", "off-preference"}, want
    used = misplaced_oracle.block_group_used(oracle.progs_dump_tree_text(loops.devs, "extent"))

    doc = btrfsx_json("filesystem", "misplaced", *loops.devs, check=4)["misplaced"]
    assert doc["mounted"] is False and doc["hints_effective"] is True
    assert doc["chunks_checked"] == len(chunks)
    assert {c["logical"]: c["class"] for c in doc["chunks"]} == want
    for c in doc["chunks"]:
        assert c["used"] == used[c["logical"]] and c["devids"] == chunks[c["logical"]][1]
        assert c["model"]["devids"] and set(c["offending"]) <= set(c["devids"])
    for cls, key in (("forbidden", "forbidden"), ("off-preference", "off_preference")):
        mine = [c for c in doc["chunks"] if c["class"] == cls]
        assert doc[key]["chunks"] == len(mine)
        assert doc[key]["used"] == sum(c["used"] for c in mine)
        assert doc[key]["allocated"] == sum(c["size"] for c in mine)
        assert doc[key]["estimate_seconds"] is None     # nothing measured yet
    assert doc["copy_rate"] is None

    # mounted under a kernel that ignores hints: the same chunks, and it says so
    with fsutil.mounted(loops.devs) as mnt:
        live = btrfsx_json("filesystem", "misplaced", mnt, check=4)
    assert live["misplaced"]["hints_effective"] is False
    assert {c["logical"]: c["class"] for c in live["misplaced"]["chunks"]} == want
    assert any("ignores allocation hints" in w for w in live["warnings"])


def test_misplaced_none_and_errors(loopdevs, run_btrfsx, btrfsx_json, tmp_path):
    loops = loopdevs(1)
    fsutil.mkfs(loops.devs)
    doc = btrfsx_json("filesystem", "misplaced", loops.devs[0])["misplaced"]
    assert doc["chunks"] == [] and doc["forbidden"]["chunks"] == 0
    junk = tmp_path / "junk.img"
    junk.write_bytes(b"\0" * (4 * MiB))
    rc, out, err = run_btrfsx("filesystem", "misplaced", junk, check=1)
    assert "btrfs" in err
    run_btrfsx("filesystem", "misplaced", tmp_path / "nothing", check=1)
    run_btrfsx("filesystem", "misplaced", check=2)
    run_btrfsx("filesystem", "misplaced", "--bogus", junk, check=2)
