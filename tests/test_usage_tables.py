# SPDX-License-Identifier: GPL-2.0-or-later
"""The tables of filesystem usage -T and device usage against btrfs-progs 6.2.

Fixed layouts (1, 3 and 12 devices; data mid-convert from single to RAID1;
image files under a long directory name), every unit option: each column
btrfs-progs' `filesystem usage -T` has (Path, each type/profile,
Unallocated, Total, Slack) must hold the same cell in btrfsx's table, row by
row (devices by Id, then the Total and Used rows); btrfsx adds the Hint
column. `device usage` is compared line by line with `btrfs device usage`.
"""
from __future__ import annotations

import contextlib
import os
import re

import pytest

from helpers import fsutil
from helpers.tables import parse_table

pytestmark = pytest.mark.root

MiB = 1024 * 1024
UNIT_OPTIONS = [(), ("-b",), ("--raw",), ("-h",), ("-H",), ("--iec",), ("--si",), ("-k",),
                ("-m",), ("-g",), ("-t",), ("--si", "-m"), ("--iec", "-g")]


def row_key(row: dict[str, str]) -> str:
    return row["Id"] or row["Path"]


def compare_with_progs(progs_text: str, ours_text: str, skip=("Id",)) -> None:
    """Every column of btrfs-progs' table, cell by cell, in btrfsx's table."""
    progs_names, progs_rows = parse_table(progs_text)
    names, rows = parse_table(ours_text)
    assert "Hint" in names
    assert set(progs_names) <= set(names), (progs_names, names)
    ours = {row_key(r): r for r in rows}
    assert [row_key(r) for r in rows] == [row_key(r) for r in progs_rows]
    for progs_row in progs_rows:
        row = ours[row_key(progs_row)]
        for name in progs_names:
            if name not in skip:
                assert row[name] == progs_row[name], (row_key(row), name, ours_text, progs_text)


def aligned(text: str) -> None:
    """No trailing blanks, and every size ends where its column ends."""
    lines = text.splitlines()
    assert all(l == l.rstrip() for l in lines)
    r = next(i for i, l in enumerate(lines) if re.fullmatch(r"-+( -+)+", l))
    spans = [m.span() for m in re.finditer(r"-+", lines[r])]
    for line in lines[r + 1:]:
        if not line.strip():
            break
        for start, end in spans[3:]:
            cell = line[start:end]
            assert not cell.strip() or cell.endswith(cell.strip()), line


def progs(*args) -> str:
    return fsutil.run(["btrfs", *map(str, args)]).stdout


@contextlib.contextmanager
def layout(tmp_path, sizes, data, metadata, fill_mib=0, directory="images"):
    loops = fsutil.LoopDevices(fsutil.make_images(tmp_path / directory, sizes))
    loops.attach()
    try:
        fsutil.mkfs(list(loops), data=data, metadata=metadata)
        with fsutil.mounted(list(loops)) as mnt:
            for i in range(fill_mib // 8):
                (mnt / f"f{i}").write_bytes(os.urandom(8 * MiB))
            fsutil.run(["sync"])
            yield loops, mnt
    finally:
        loops.detach()


def check_every_unit(run_btrfsx, mnt) -> None:
    for units in UNIT_OPTIONS:
        ours = run_btrfsx("filesystem", "usage", "-T", *units, mnt)[1]
        compare_with_progs(progs("filesystem", "usage", "-T", *units, mnt), ours)
        aligned(ours)


def test_one_device(tmp_path, run_btrfsx):
    with layout(tmp_path, ["1G"], "single", "dup", fill_mib=40) as (loops, mnt):
        check_every_unit(run_btrfsx, mnt)


def test_three_devices_raid1(tmp_path, run_btrfsx):
    with layout(tmp_path, ["1G", "1G", "2G"], "raid1", "raid1", fill_mib=200) as (loops, mnt):
        check_every_unit(run_btrfsx, mnt)


def test_twelve_devices(tmp_path, run_btrfsx):
    with layout(tmp_path, ["300M"] * 12, "raid10", "raid1c3", fill_mib=64) as (loops, mnt):
        ours = run_btrfsx("filesystem", "usage", "-T", mnt)[1]
        compare_with_progs(progs("filesystem", "usage", "-T", mnt), ours)
        assert len(parse_table(ours)[1]) == 14


def test_mid_convert(tmp_path, run_btrfsx):
    """Data in single and RAID1 chunks at once: a column for each."""
    with layout(tmp_path, ["1G", "1G"], "single", "raid1", fill_mib=600) as (loops, mnt):
        fsutil.run(["btrfs", "balance", "start", "-dconvert=raid1,limit=1", mnt])
        ours = run_btrfsx("filesystem", "usage", "-T", "--raw", mnt)[1]
        names = parse_table(ours)[0]
        assert "Data single" in names and "Data RAID1" in names
        check_every_unit(run_btrfsx, mnt)


def test_long_paths_offline(tmp_path, run_btrfsx):
    """Image files under a long directory: the Path column widens, the other
    columns still equal btrfs-progs' on the mounted filesystem."""
    directory = "d" * 200
    with layout(tmp_path, ["1G", "1G"], "raid1", "raid1", fill_mib=48,
                directory=directory) as (loops, mnt):
        mounted_progs = progs("filesystem", "usage", "-T", "--raw", mnt)
        images = [tmp_path / directory / f"img{i}.raw" for i in range(2)]
    ours = run_btrfsx("filesystem", "usage", "-T", "--raw", *images)[1]
    aligned(ours)
    rows = parse_table(ours)[1]
    assert [r["Path"] for r in rows[:2]] == [str(p) for p in images]
    compare_with_progs(mounted_progs, ours, skip=("Id", "Path"))


def parse_device_usage(text: str) -> dict[str, dict[str, str]]:
    """'<path>, ID: n' blocks of 'Label:  value' lines -> {path: {label: value}}."""
    blocks = {}
    for block in text.strip().split("\n\n"):
        head, *lines = block.splitlines()
        path = head.split(",")[0]
        blocks[path] = dict(re.match(r"\s*(.+?:)\s+(.*?)\s*$", l).groups() for l in lines)
    return blocks


def test_device_usage_against_progs(tmp_path, run_btrfsx, btrfsx_json):
    with layout(tmp_path, ["1G", "1G", "2G"], "raid1", "raid1", fill_mib=100) as (loops, mnt):
        for units in UNIT_OPTIONS:
            theirs = parse_device_usage(progs("device", "usage", *units, mnt))
            ours = parse_device_usage(run_btrfsx("device", "usage", *units, mnt)[1])
            assert ours.keys() == theirs.keys()
            for path, lines in theirs.items():
                assert {k: ours[path][k] for k in lines} == lines, (path, units)
                assert ours[path]["Hint:"] == "data_preferred"
        table = run_btrfsx("device", "usage", "-T", "--raw", mnt)[1]
        compare_with_progs(progs("filesystem", "usage", "-T", "--raw", mnt), table)
        doc = btrfsx_json("device", "usage", mnt)
    (fs,) = doc["filesystems"]
    assert fs["mounted"] and fs["mountpoint"] == str(mnt)
    rows = {r["Id"]: r for r in parse_table(table)[1]}
    for d in fs["devices"]:
        row = rows[str(d["devid"])]
        assert row["Allocatable Data"] == str(d["data_allocatable"])
        assert row["Allocatable Metadata"] == str(d["metadata_allocatable"])
        assert sum(a["size"] for a in d["allocations"]) + d["unallocated"] == d["size"]
        assert d["data_allocatable"] <= d["unallocated"]
        assert d["metadata_allocatable"] <= d["unallocated"]
