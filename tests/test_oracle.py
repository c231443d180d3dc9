# SPDX-License-Identifier: GPL-2.0-or-later
"""Tests of the test infrastructure itself: the btrfs-progs output parsers in
helpers/oracle.py against real filesystems, and the fsutil/conftest helpers.  They do
not need btrfsx."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from helpers import fsutil
from helpers import oracle
from helpers.fsutil import GiB, MiB, mounted, run
from helpers.oracle import KEY_TYPES as T, OBJECTIDS as O, U64

# ---------------------------------------------------------------------------
# pure parser tests (no root)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text,key", [
    ("key (DEV_ITEMS DEV_ITEM 1)", (1, 216, 1)),
    ("key (FIRST_CHUNK_TREE CHUNK_ITEM 22020096)", (256, 228, 22020096)),
    ("key (EXTENT_CSUM EXTENT_CSUM 13631488)", (U64 - 10, 128, 13631488)),
    ("key (FREE_SPACE UNTYPED 30408704)", (U64 - 11, 0, 30408704)),
    ("key (DEV_STATS PERSISTENT_ITEM 1)", (0, 249, 1)),
    ("key (0 DEV_REPLACE 0)", (0, 250, 0)),
    ("key (BALANCE TEMPORARY_ITEM 0)", (U64 - 4, 248, 0)),
    ("key (ORPHAN ORPHAN_ITEM 260)", (U64 - 5, 48, 260)),
    ("key (TREE_LOG ROOT_ITEM 5)", (U64 - 6, 132, 5)),
    ("key (LOG_FIXUP ROOT_ITEM 5)", (U64 - 7, 132, 5)),
    ("key (TREE_RELOC ROOT_ITEM FS_TREE)", (U64 - 8, 132, 5)),
    ("key (TREE_RELOC ROOT_ITEM 257)", (U64 - 8, 132, 257)),
    ("key (DATA_RELOC_TREE ROOT_ITEM 0)", (U64 - 9, 132, 0)),
    ("key (FREE_INO INODE_ITEM 0)", (U64 - 12, 1, 0)),
    ("key (MULTIPLE EXTENT_DATA 0)", (U64 - 255, 108, 0)),
    ("key (FS_TREE ROOT_ITEM 18446744073709551615)", (5, 132, U64 - 1)),
    ("key (257 DIR_INDEX -1)", (257, 96, U64 - 1)),
    ("key (-1 UNKNOWN.0 0)", (U64 - 1, 0, 0)),
    ("key (0 UNKNOWN.0 0)", (0, 0, 0)),
    ("key (256 UNKNOWN.201 7)", (256, 201, 7)),
    ("key (0 QGROUP_INFO 0/257)", (0, 242, 257)),
    ("key (0 QGROUP_LIMIT 1/100)", (0, 244, (1 << 48) | 100)),
    ("key (0/256 QGROUP_RELATION 1/0)", (256, 246, 1 << 48)),
    ("key (0x4a49e7c79b1020b7 UUID_KEY_SUBVOL 0xc73fb6cef72f2188)",
     (0x4a49e7c79b1020b7, 251, 0xc73fb6cef72f2188)),
    ("key (0x4438b0cd81362612 UUID_KEY_RECEIVED_SUBVOL 0x0000000000000001)",
     (0x4438b0cd81362612, 252, 1)),
    ("key (ROOT_TREE_DIR DIR_ITEM 2378154706)", (6, 84, 2378154706)),
    ("key (BLOCK_GROUP_TREE ROOT_ITEM 0)", (11, 132, 0)),
    ("key (464 INODE_EXTREF 3542897763)", (464, 13, 3542897763)),
    ("key (300 VERITY_DESC_ITEM 0)", (300, 36, 0)),
    ("key (300 VERITY_MERKLE_ITEM 0)", (300, 37, 0)),
    ("key (257 DIR_LOG_INDEX 2)", (257, 72, 2)),
    ("key (30408704 EXTENT_ITEM 16384)", (30408704, 168, 16384)),
    ("key (30408704 SHARED_BLOCK_REF 31408128)", (30408704, 182, 31408128)),
    ("key (1 STRING_ITEM 0)", (1, 253, 0)),
])
def test_parse_key_tokens(text, key):
    assert oracle.parse_key_text(text) == key


def test_key_tables_match_format():
    # the numbers the on-disk format fixes
    want = dict(INODE_ITEM=1, INODE_REF=12, INODE_EXTREF=13, XATTR_ITEM=24,
                VERITY_DESC_ITEM=36, VERITY_MERKLE_ITEM=37, ORPHAN_ITEM=48,
                DIR_LOG_ITEM=60, DIR_LOG_INDEX=72, DIR_ITEM=84, DIR_INDEX=96,
                EXTENT_DATA=108, EXTENT_CSUM=128, ROOT_ITEM=132, ROOT_BACKREF=144,
                ROOT_REF=156, EXTENT_ITEM=168, METADATA_ITEM=169, EXTENT_OWNER_REF=172,
                TREE_BLOCK_REF=176, EXTENT_DATA_REF=178, SHARED_BLOCK_REF=182,
                SHARED_DATA_REF=184, BLOCK_GROUP_ITEM=192, FREE_SPACE_INFO=198,
                FREE_SPACE_EXTENT=199, FREE_SPACE_BITMAP=200, DEV_EXTENT=204,
                DEV_ITEM=216, CHUNK_ITEM=228, QGROUP_STATUS=240, QGROUP_INFO=242,
                QGROUP_LIMIT=244, QGROUP_RELATION=246, TEMPORARY_ITEM=248,
                PERSISTENT_ITEM=249, DEV_REPLACE=250, UUID_KEY_SUBVOL=251,
                UUID_KEY_RECEIVED_SUBVOL=252, STRING_ITEM=253, UNTYPED=0)
    for k, v in want.items():
        assert T[k] == v, k
    assert O["DEV_ITEMS"] == 1 and O["ROOT_TREE"] == 1
    assert O["FIRST_CHUNK_TREE"] == 256
    assert O["DATA_RELOC_TREE"] == U64 - 9
    assert oracle.tree_id("free-space") == 10 and oracle.tree_id(-9) == U64 - 9
    assert oracle.tree_id("FS_TREE") == 5 and oracle.tree_id("256") == 256
    with pytest.raises(oracle.OracleError):
        oracle.parse_key_text("key (257 NO_SUCH_TYPE 0)")


SAMPLE_DUMP = textwrap.dedent("""\
    btrfs-progs v6.2
    root tree
    leaf 30523392 items 2 free space 15000 generation 9 owner ROOT_TREE
    leaf 30523392 flags 0x1(WRITTEN) backref revision 1
    fs uuid 015b2734-1409-44b7-aa17-28a6d2d8a852
    chunk uuid f6642e99-cf84-471c-8a96-da93249c9be2
    \titem 0 key (EXTENT_TREE ROOT_ITEM 0) itemoff 15844 itemsize 439
    \t\tgeneration 9 root_dirid 0 bytenr 30441472 byte_limit 0 bytes_used 16384
    \t\tdrop_progress key (0 UNKNOWN.0 0) drop_level 0
    \titem 1 key (ROOT_TREE_DIR DIR_ITEM 2378154706) itemoff 14672 itemsize 37
    \t\tlocation key (FS_TREE ROOT_ITEM -1) type DIR
    fs tree key (FS_TREE ROOT_ITEM 0)
    node 31686656 level 1 items 2 free space 491 generation 9 owner FS_TREE
    node 31686656 flags 0x1(WRITTEN) backref revision 1
    fs uuid 015b2734-1409-44b7-aa17-28a6d2d8a852
    chunk uuid f6642e99-cf84-471c-8a96-da93249c9be2
    \tkey (256 INODE_ITEM 0) block 30605312 gen 7
    \tkey (257 DIR_ITEM 1644795956) block 31391744 gen 8
    leaf 30605312 items 1 free space 100 generation 7 owner FS_TREE
    leaf 30605312 flags 0x1(WRITTEN) backref revision 1
    fs uuid 015b2734-1409-44b7-aa17-28a6d2d8a852
    chunk uuid f6642e99-cf84-471c-8a96-da93249c9be2
    \titem 0 key (256 INODE_ITEM 0) itemoff 16123 itemsize 160
    \t\tgeneration 3 transid 7 size 12 nbytes 16384
    leaf 31391744 items 1 free space 100 generation 8 owner FS_TREE
    leaf 31391744 flags 0x1(WRITTEN) backref revision 1
    fs uuid 015b2734-1409-44b7-aa17-28a6d2d8a852
    chunk uuid f6642e99-cf84-471c-8a96-da93249c9be2
    \titem 0 key (257 DIR_ITEM 1644795956) itemoff 16000 itemsize 40
    log tree key (TREE_LOG ROOT_ITEM 5)
    leaf 31653888 items 1 free space 15819 generation 10 owner TREE_LOG
    \titem 0 key (257 DIR_LOG_INDEX 2) itemoff 16275 itemsize 8
    \t\tdir log end 18446744073709551615
    total bytes 2147483648
    bytes used 14585856
    uuid 015b2734-1409-44b7-aa17-28a6d2d8a852
    """)


def test_parse_dump_tree_sample():
    d = oracle.parse_dump_tree(SAMPLE_DUMP)
    assert [i.key for i in d.items] == [
        (2, 132, 0), (6, 84, 2378154706), (256, 1, 0), (257, 84, 1644795956),
        (257, 72, 2)]
    assert [i.tree for i in d.items] == [1, 1, 5, 5, (U64 - 6, 5)]
    assert d.nodes == {31686656: 1}
    assert d.items[0].body[0].startswith("generation 9")
    assert d.items[2].fields()["size"] == "12"
    assert d.items[4].owner == U64 - 6
    # a leaf that announces more items than are printed is an error
    bad = SAMPLE_DUMP.replace("leaf 30605312 items 1", "leaf 30605312 items 2")
    with pytest.raises(oracle.OracleError):
        oracle.parse_dump_tree(bad)
    with pytest.raises(oracle.OracleError):
        oracle.parse_dump_tree(SAMPLE_DUMP.replace("(256 INODE_ITEM 0) itemoff",
                                                   "(256 BOGUS 0) itemoff"))


def test_parse_dump_super_flags_and_match():
    text = textwrap.dedent("""\
        superblock: bytenr=65536, device=/dev/loop0
        ---------------------------------------------------------
        csum_type\t\t0 (crc32c)
        csum\t\t\t0xd5784e22 [DON'T MATCH]
        flags\t\t\t0x1
        \t\t\t( WRITTEN )
        label\t\t\t
        log_root_transid (deprecated)\t0
        incompat_flags\t\t0x361
        \t\t\t( MIXED_BACKREF |
        \t\t\t  BIG_METADATA |
        \t\t\t  NO_HOLES )
        dev_item.fsid\t\t015b2734-1409-44b7-aa17-28a6d2d8a852 [match]
        sys_chunk_array[2048]:
        \titem 0 key (FIRST_CHUNK_TREE CHUNK_ITEM 22020096)
        \t\tlength 8388608 owner 2 stripe_len 65536 type SYSTEM|RAID1
        backup_roots[4]:
        \tbackup 0:
        \t\tbackup_tree_root:\t31653888\tgen: 9\tlevel: 0
        \t\tbackup_num_devices:\t4

        """)
    (d,) = oracle.parse_dump_super(text)
    assert d["_bytenr"] == "65536"
    assert d["csum"] == "0xd5784e22" and d["csum.match"] == "DON'T MATCH"
    assert d["flags.names"] == "WRITTEN"
    assert d["incompat_flags"] == "0x361"
    assert d["incompat_flags.names"] == "MIXED_BACKREF|BIG_METADATA|NO_HOLES"
    assert d["label"] == ""
    assert d["log_root_transid"] == "0"
    assert d["dev_item.fsid.match"] == "match"
    assert d["sys_chunk_array.keys"] == f"256 228 22020096"
    assert "SYSTEM|RAID1" in d["sys_chunk_array"]
    assert d["backup_roots.0.backup_tree_root"] == "31653888"
    assert d["backup_roots.0.backup_tree_root.gen"] == "9"
    assert d["backup_roots.0.backup_num_devices"] == "4"


def _fake_btrfsx(tmp_path: Path) -> str:
    p = tmp_path / "fake-btrfsx"
    p.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, sys
        args = sys.argv[1:]
        if args and args[-1] == "fail":
            print("btrfsx: fail: failed on purpose", file=sys.stderr)
            sys.exit(1)
        if args[:2] == ["--format", "json"]:
            print(json.dumps({{"argv": args}}))
        else:
            print(" ".join(args))
        """))
    p.chmod(0o755)
    return str(p)


def test_run_btrfsx_helper(tmp_path, monkeypatch):
    fake = _fake_btrfsx(tmp_path)
    monkeypatch.setenv("BTRFSX", fake)
    assert fsutil.btrfsx_path() == fake
    rc, out, err = fsutil.run_btrfsx("inspect", "dump-tree", "-t", "chunk", "/dev/x")
    assert (rc, out.strip(), err) == (0, "inspect dump-tree -t chunk /dev/x", "")
    # --format is a global option, before the group
    j = fsutil.btrfsx_json("inspect", "dump-tree", "-t", "chunk", "/dev/x")
    assert j["argv"] == ["--format", "json", "inspect", "dump-tree", "-t", "chunk", "/dev/x"]
    rc, _, err = fsutil.run_btrfsx("x", "fail", check=1)
    assert rc == 1 and "failed on purpose" in err
    assert fsutil.run_btrfsx("fail", check=False)[0] == 1
    assert fsutil.run_btrfsx("fail", rc=1)[0] == 1
    with pytest.raises(AssertionError):
        fsutil.run_btrfsx("fail")
    with pytest.raises(AssertionError):
        fsutil.run_btrfsx("ok", check=2)


def test_make_images_sparse(tmp_path):
    imgs = fsutil.make_images(tmp_path, ["300M", 512 * MiB])
    assert [p.stat().st_size for p in imgs] == [300 * MiB, 512 * MiB]
    assert all(p.stat().st_blocks == 0 for p in imgs)
    assert fsutil.parse_size("1G") == GiB and fsutil.parse_size("4KiB") == 4096


# ---------------------------------------------------------------------------
# independent superblock reader, to check the dump-super parser
# ---------------------------------------------------------------------------

def raw_super(dev: str, bytenr: int = 0x10000) -> dict:
    with open(dev, "rb") as f:
        f.seek(bytenr)
        b = f.read(4096)
    u64 = lambda o: struct.unpack_from("<Q", b, o)[0]
    u32 = lambda o: struct.unpack_from("<I", b, o)[0]
    di = 0xc9
    return {
        "fsid": str(uuid.UUID(bytes=b[0x20:0x30])),
        "bytenr": u64(0x30), "generation": u64(0x48), "root": u64(0x50),
        "chunk_root": u64(0x58), "total_bytes": u64(0x70), "bytes_used": u64(0x78),
        "num_devices": u64(0x88), "sectorsize": u32(0x90), "nodesize": u32(0x94),
        "sys_array_size": u32(0xa0), "chunk_root_generation": u64(0xa4),
        "compat_ro_flags": u64(0xb4), "incompat_flags": u64(0xbc),
        "csum_type": struct.unpack_from("<H", b, 0xc4)[0],
        "dev_item.devid": u64(di), "dev_item.total_bytes": u64(di + 8),
        "dev_item.bytes_used": u64(di + 16), "dev_item.type": u64(di + 36),
        "dev_item.uuid": str(uuid.UUID(bytes=b[di + 66:di + 82])),
        "label": b[0x12b:0x12b + 256].split(b"\0")[0].decode(),
        "uuid_tree_generation": u64(0x233),
    }


def check_super_against_raw(d: dict, dev: str, bytenr: int = 0x10000) -> None:
    r = raw_super(dev, bytenr)
    assert d["fsid"] == r["fsid"]
    assert d["label"] == r["label"]
    for k in ("bytenr", "generation", "root", "chunk_root", "total_bytes", "bytes_used",
              "num_devices", "sectorsize", "nodesize", "sys_array_size",
              "chunk_root_generation", "dev_item.devid", "dev_item.total_bytes",
              "dev_item.bytes_used", "dev_item.type", "uuid_tree_generation"):
        assert int(d[k]) == r[k], k
    for k in ("compat_ro_flags", "incompat_flags"):
        assert int(d[k], 16) == r[k], k
    assert int(d["csum_type"].split()[0]) == r["csum_type"]
    assert d["dev_item.uuid"] == r["dev_item.uuid"]
    assert d["csum.match"] == "match" and d["magic"] == "_BHRfS_M"


# ---------------------------------------------------------------------------
# against real filesystems
# ---------------------------------------------------------------------------

ALLOWED_TYPES = {
    "chunk": {"DEV_ITEM", "CHUNK_ITEM"},
    "dev": {"DEV_EXTENT", "PERSISTENT_ITEM", "DEV_REPLACE"},
    "extent": {"EXTENT_ITEM", "METADATA_ITEM", "BLOCK_GROUP_ITEM", "TREE_BLOCK_REF",
               "SHARED_BLOCK_REF", "EXTENT_DATA_REF", "SHARED_DATA_REF"},
    "csum": {"EXTENT_CSUM"},
    "free-space": {"FREE_SPACE_INFO", "FREE_SPACE_EXTENT", "FREE_SPACE_BITMAP"},
    "uuid": {"UUID_KEY_SUBVOL", "UUID_KEY_RECEIVED_SUBVOL"},
    "quota": {"QGROUP_STATUS", "QGROUP_INFO", "QGROUP_LIMIT", "QGROUP_RELATION"},
}
TREES = ["root", "chunk", "dev", "extent", "csum", "fs", "free-space", "uuid", "data-reloc"]


def check_tree_dump(devs, tree) -> list:
    """Every item parses, leaf counts match, keys strictly ascending (which also
    checks that the name tables give the right numbers), types fit the tree."""
    keys = oracle.progs_dump_tree_keys(devs, tree)
    assert keys == sorted(keys) and len(set(keys)) == len(keys), f"tree {tree} not in key order"
    allowed = ALLOWED_TYPES.get(tree)
    if allowed:
        names = {oracle.KEY_TYPE_PRINTED[t] for _, t, _ in keys}
        assert names <= allowed, (tree, names - allowed)
    return keys


def check_all_trees(devs) -> dict:
    """The default (all-trees) dump parses and each section is in key order."""
    sections = oracle.progs_dump_tree_sections(devs)
    for tid, keys in sections.items():
        assert tid is not None
        assert keys == sorted(keys), f"section {tid} not in key order"
    return sections


def check_consistency(devs) -> None:
    """chunk items, block groups and dev extents describe the same chunks."""
    chunks = oracle.progs_chunks(devs)
    bgs = {k[0]: k[2] for k in oracle.progs_dump_tree_keys(devs, "extent")
           if k[1] == T["BLOCK_GROUP_ITEM"]}
    assert {c["logical"]: c["length"] for c in chunks} == bgs
    dev_ext = sorted((k[0], k[2]) for k in oracle.progs_dump_tree_keys(devs, "dev")
                     if k[1] == T["DEV_EXTENT"])
    stripes = sorted((s[0], s[1]) for c in chunks for s in c["stripes"])
    assert dev_ext == stripes
    dev_items = oracle.progs_dev_items(devs)
    assert len(dev_items) == len(devs)
    for c in chunks:
        assert c["num_stripes"] == len(c["stripes"])


CACHED = [
    pytest.param(("single", "dup", "crc32c"), id="single-dup"),
    pytest.param(("raid1", "raid1", "crc32c"), id="raid1"),
    pytest.param(("raid10", "raid1c4", "xxhash"), id="raid10-raid1c4-xxhash"),
    pytest.param(("raid5", "raid1c3", "sha256"), id="raid5-raid1c3-sha256"),
    pytest.param(("raid6", "raid6", "blake2"), id="raid6-blake2"),
    pytest.param(("raid0", "dup", "crc32c"), id="raid0-dup"),
]


@pytest.mark.root
@pytest.mark.parametrize("prof", CACHED)
def test_progs_trees_parse(fs_cache, prof):
    data, meta, csum = prof
    fs = fs_cache.get(data, meta, csum)
    for tree in TREES:
        check_tree_dump(fs.devs, tree)
    sections = check_all_trees(fs.devs)
    assert {1, 2, 3, 4, 5, 7, 9, 10, U64 - 9} <= set(sections)
    check_consistency(fs.devs)
    # block group profile names as progs prints them
    # (progs 6.2 prints single as "DATA|single", the others upper case: "METADATA|DUP")
    types = {c["type"] for c in oracle.progs_chunks(fs.devs)}
    prof_name = lambda p: "|single" if p == "single" else "|" + p.upper()
    assert f"DATA{prof_name(data)}" in types
    assert f"METADATA{prof_name(meta)}" in types
    # file data present: checksums unless nodatasum, inline extents in fs tree
    assert oracle.progs_dump_tree_keys(fs.devs, "csum")


@pytest.mark.root
@pytest.mark.parametrize("prof", CACHED[:3])
def test_progs_dump_super_vs_raw(fs_cache, prof):
    fs = fs_cache.get(*prof)
    for dev in fs.devs:
        d = oracle.progs_dump_super(dev)
        check_super_against_raw(d, dev)
        assert d["fsid"] == fs.fsid
        num, name, size = oracle.CSUM_TYPES[prof[2]]
        assert d["csum_type"] == f"{num} ({name})" and d["csum_size"] == str(size)
        assert d["dev_item.fsid.match"] == "match"
        assert int(d["sys_chunk_array.size"]) == int(d["sys_array_size"]) or \
            int(d["sys_chunk_array.size"]) == 2048
        sys_keys = [tuple(map(int, k.split())) for k in d["sys_chunk_array.keys"].split(";")]
        chunk_keys = [k for k in oracle.progs_dump_tree_keys(fs.devs, "chunk")
                      if k[1] == T["CHUNK_ITEM"]]
        sys_chunks = [(256, 228, c["logical"]) for c in oracle.progs_chunks(fs.devs)
                      if c["type"].startswith("SYSTEM")]
        assert sys_keys == sys_chunks and set(sys_keys) <= set(chunk_keys)
        gens = [int(d[f"backup_roots.{i}.backup_tree_root.gen"]) for i in range(4)]
        assert int(d["generation"]) in gens
        alls = oracle.progs_dump_super(dev, all=True)
        assert list(alls) == [65536, 64 * MiB]          # 512 MiB devices: 2 copies
        for bytenr, c in alls.items():
            check_super_against_raw(c, dev, bytenr)


@pytest.mark.root
def test_progs_super_three_copies(loopdevs, tmp_path):
    devs = loopdevs(1, size=257 * GiB)                 # sparse
    fsutil.mkfs(devs, extra=["-L", "three"])
    alls = oracle.progs_dump_super(devs[0], all=True)
    assert list(alls) == [65536, 64 * MiB, 256 * GiB]
    for bytenr, c in alls.items():
        check_super_against_raw(c, devs[0], bytenr)
        assert c["label"] == "three" and c["bytenr"] == str(bytenr)


@pytest.mark.root
def test_progs_rich_filesystem(loopdevs):
    """Subvolumes, snapshots, send/receive, xattrs, hardlinks (extrefs),
    special files, quota with a level-1 qgroup, an orphan, a paused balance,
    reflinks and a fragmented free space tree, on raid1 over 4 devices; then
    every tree, and the all-trees dump, must parse."""
    devs = loopdevs(4, size="512M")
    fsutil.mkfs(devs, data="raid1", metadata="raid1c3")
    with mounted(devs, options="compress=zstd") as m:
        fsutil.fill_files(m, big_files=1, small_files=20)
        run(["btrfs", "subvolume", "create", f"{m}/sv"])
        (m / "sv" / "nested").mkdir()
        run(["btrfs", "subvolume", "create", f"{m}/sv/nested/sv2"])
        for i in range(100):
            (m / "sv" / f"f{i}").write_bytes(os.urandom(3000))
        for i in range(3):
            run(["btrfs", "subvolume", "snapshot", f"{m}/sv", f"{m}/snap{i}"])
            (m / f"snap{i}" / f"f{i}").write_bytes(b"changed")
        run(["btrfs", "subvolume", "snapshot", "-r", f"{m}/sv", f"{m}/ro"])
        (m / "recv").mkdir()
        send = subprocess.Popen(["btrfs", "send", "-q", f"{m}/ro"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        subprocess.run(["btrfs", "receive", "-q", f"{m}/recv"], stdin=send.stdout,
                       check=True, capture_output=True)
        assert send.wait() == 0
        os.setxattr(m / "empty", "user.test", b"v" * 100)
        (m / "ext").mkdir()
        (m / "ext" / "t").write_text("t")
        for i in range(120):                         # long names: INODE_EXTREF
            os.link(m / "ext" / "t", m / "ext" / ("L" * 200 + str(i)))
        os.symlink("target", m / "sym")
        os.mkfifo(m / "fifo")
        (m / "rl").write_bytes(os.urandom(256 * 1024))
        for i in range(40):
            run(["cp", "--reflink=always", str(m / "rl"), str(m / f"rl{i}")])
        (m / "frag").mkdir()
        for i in range(600):
            (m / "frag" / str(i)).write_bytes(b"z" * 12288)
        run(["sync"])
        for i in range(0, 600, 2):
            (m / "frag" / str(i)).unlink()
        run(["btrfs", "quota", "enable", str(m)])
        run(["btrfs", "quota", "rescan", "-w", str(m)])
        run(["btrfs", "qgroup", "create", "1/100", str(m)])
        run(["btrfs", "qgroup", "assign", "--no-rescan", "0/256", "1/100", str(m)], check=False)
        run(["btrfs", "qgroup", "limit", "10M", "1/100", str(m)])
        run(["btrfs", "subvolume", "create", f"{m}/delme"])
        run(["btrfs", "subvolume", "delete", "-c", f"{m}/delme"])
        run(["sync"])
    for tree in TREES + ["quota"]:
        check_tree_dump(devs, tree)
    for sub in (256, 257):
        check_tree_dump(devs, sub)
    sections = check_all_trees(devs)
    keys = {k for v in sections.values() for k in v}
    types = {t for _, t, _ in keys}
    for name in ("INODE_EXTREF", "XATTR_ITEM", "UUID_KEY_RECEIVED_SUBVOL", "QGROUP_RELATION",
                 "QGROUP_LIMIT", "PERSISTENT_ITEM", "ROOT_REF", "ROOT_BACKREF",
                 "FREE_SPACE_EXTENT", "EXTENT_CSUM", "METADATA_ITEM"):
        assert T[name] in types, name
    assert (256, T["QGROUP_RELATION"], (1 << 48) | 100) in keys
    assert ((1 << 48) | 100, T["QGROUP_RELATION"], 256) in keys
    assert (0, T["PERSISTENT_ITEM"], 4) in keys          # DEV_STATS for devid 4
    check_consistency(devs)


@pytest.mark.root
def test_progs_balance_orphan_replace(loopdevs):
    """(BALANCE TEMPORARY_ITEM 0) from a paused balance, (ORPHAN ORPHAN_ITEM id)
    from a deleted subvolume not yet cleaned, (0 DEV_REPLACE 0) after replace."""
    devs = loopdevs(3, size="1G")
    fsutil.mkfs(devs[:2], data="single", metadata="raid1")
    with mounted(devs[:2]) as m:
        for i in range(6):
            (m / f"f{i}").write_bytes(os.urandom(32 * MiB))
        run(["sync"])
        run(["btrfs", "balance", "start", "--bg", "-d", str(m)])
        time.sleep(0.2)
        run(["btrfs", "balance", "pause", str(m)], check=False)
    root = oracle.progs_dump_tree_keys(devs[:2], "root")
    if (O["BALANCE"], T["TEMPORARY_ITEM"], 0) not in root:
        pytest.skip("balance finished before it could be paused")
    check_all_trees(devs[:2])
    with mounted(devs[:2], options="skip_balance") as m:
        run(["btrfs", "balance", "cancel", str(m)], check=False)
        run(["btrfs", "replace", "start", "-f", "-B", "1", devs[2], str(m)])
    members = [devs[1], devs[2]]
    dev = check_tree_dump(members, "dev")
    assert (0, T["DEV_REPLACE"], 0) in dev
    check_all_trees(members)


@pytest.mark.root
def test_progs_log_tree_and_orphans(loopdevs, tmp_path):
    """A copy of the backing image taken while mounted after fsync has a log
    tree ("log root tree" / "log tree key (TREE_LOG ROOT_ITEM 5)") and orphan
    items; the dump of that copy parses."""
    devs = loopdevs(1, size="512M")
    fsutil.mkfs(devs)
    img = devs.images[0]
    with mounted(devs, options="commit=300") as m:
        fsutil.fill_files(m, big_files=1, small_files=4)
        run(["btrfs", "filesystem", "sync", str(m)])
        fd = os.open(m / "orphan", os.O_CREAT | os.O_RDWR)
        try:
            os.write(fd, b"x" * 100000)
            os.unlink(m / "orphan")
            run(["btrfs", "subvolume", "create", f"{m}/delme"])
            run(["btrfs", "filesystem", "sync", str(m)])
            run(["btrfs", "subvolume", "delete", "-c", f"{m}/delme"])
            (m / "logd").mkdir()
            for i in range(10):
                with open(m / "logd" / f"x{i}", "wb") as f:
                    f.write(os.urandom(5000))
                    os.fsync(f.fileno())
            snap = tmp_path / "snap.img"
            shutil.copyfile(img, snap)      # the backing file, not the block device
        finally:
            os.close(fd)
    items = oracle.parse_dump_tree(oracle.progs_dump_tree_text(
        [str(snap)], None, extra=["--noscan"])).items
    trees = {i.tree for i in items}
    assert O["TREE_LOG"] in trees and (O["TREE_LOG"], 5) in trees
    keys = {i.key for i in items}
    assert any(k[0] == O["ORPHAN"] and k[1] == T["ORPHAN_ITEM"] for k in keys)
    assert (O["TREE_LOG"], T["ROOT_ITEM"], 5) in keys


@pytest.mark.root
def test_progs_v1_space_cache_and_noskinny(loopdevs):
    """(FREE_SPACE UNTYPED bg) items of the v1 space cache (only for block
    groups >= 100 MiB, hence a 4 GiB sparse image), and EXTENT_ITEMs for tree
    blocks without skinny metadata."""
    devs = loopdevs(1, size="4G")
    fsutil.mkfs(devs, extra=["-R", "^free-space-tree", "-O", "^skinny-metadata"])
    with mounted(devs, options="space_cache=v1") as m:
        fsutil.fill_files(m, big_files=2, small_files=8)
    root = check_tree_dump(devs, "root")
    assert any(k[0] == O["FREE_SPACE"] and k[1] == 0 for k in root)
    ext = check_tree_dump(devs, "extent")
    assert T["METADATA_ITEM"] not in {k[1] for k in ext}
    items = oracle.progs_dump_tree_items(devs, "extent")
    assert any(any(l.startswith("tree block key (") for l in i.body) for i in items)
    check_all_trees(devs)
    check_consistency(devs)


@pytest.mark.root
def test_progs_dump_super_bad_copies(loopdevs):
    devs = loopdevs(1, size="300M")
    fsutil.mkfs(devs, csum="blake2")
    with open(devs[0], "r+b") as f:                 # bad csum in copy 1
        f.seek(64 * MiB + 0x100)
        f.write(b"XXXX")
    alls = oracle.progs_dump_super(devs[0], all=True)
    assert alls[65536]["csum.match"] == "match"
    assert alls[64 * MiB]["csum.match"] == "DON'T MATCH"
    with open(devs[0], "r+b") as f:                 # bad magic in copy 1
        f.seek(64 * MiB + 0x40)
        f.write(b"XXXX")
    with pytest.raises(oracle.OracleError, match="bad magic"):
        oracle.progs_dump_super(devs[0], all=True)
    alls = oracle.progs_dump_super(devs[0], all=True, force=True)
    assert alls[64 * MiB]["magic.match"] == "DON'T MATCH"
    assert oracle.progs_dump_super(devs[0])["magic.match"] == "match"


@pytest.mark.root
def test_progs_mixed_block_groups(loopdevs):
    devs = loopdevs(1, size="512M")
    fsutil.mkfs(devs, data="single", metadata="single", extra=["-M"])
    with mounted(devs) as m:
        fsutil.fill_files(m, big_files=1, small_files=8)
    check_all_trees(devs)
    types = {c["type"] for c in oracle.progs_chunks(devs)}
    assert "DATA|METADATA|single" in types
    check_consistency(devs)


# ---------------------------------------------------------------------------
# helpers: cleanup, manifests
# ---------------------------------------------------------------------------

@pytest.mark.root
def test_mounted_cleans_up_on_error(loopdevs):
    devs = loopdevs(2, size="300M")
    fsid = fsutil.mkfs(devs, data="raid1", metadata="raid1")
    assert fsid == fsutil.read_fsid(devs[1])
    # one member is enough: progs scans for the others
    assert oracle.progs_dump_tree_keys(devs[0], "chunk") == \
        oracle.progs_dump_tree_keys(devs, "chunk")
    # progs exits 0 but prints ERROR for a tree that is not there
    with pytest.raises(oracle.OracleError):
        oracle.progs_dump_tree_keys(devs, "block-group")
    assert oracle.progs_dump_tree_keys(devs, 999) == []
    mnt = None
    with pytest.raises(RuntimeError, match="boom"):
        with mounted(devs) as mnt:
            manifest = fsutil.fill_files(mnt, big_files=1, small_files=6)
            assert fsutil.verify_manifest(mnt, manifest) == []
            raise RuntimeError("boom")
    assert not mnt.exists()
    assert not any(fsutil._findmnt_targets(d) for d in devs)
    # content survives a remount
    with mounted(devs, options="ro") as m2:
        assert fsutil.verify_manifest(m2, manifest) == []
        kinds = {v["kind"] for v in manifest.values()}
        assert {"big", "inline", "small", "deep", "sparse", "nodatasum", "empty"} <= kinds
        flags = run(["lsattr", "-d", str(m2 / "nodatasum.bin")]).stdout.split()[0]
        assert "C" in flags


@pytest.mark.root
def test_loop_devices_context(tmp_path):
    imgs = fsutil.make_images(tmp_path, ["300M"])
    with fsutil.LoopDevices(imgs) as devs:
        dev = devs[0]
        assert dev.startswith("/dev/loop")
        out = run(["losetup", "-j", str(imgs[0])]).stdout
        assert dev in out
    assert run(["losetup", "-j", str(imgs[0])]).stdout.strip() == ""


@pytest.mark.root
def test_cached_fs_is_read_only_and_inline(fs_cache):
    fs = fs_cache.get()
    assert run(["blockdev", "--getro", fs.dev]).stdout.strip() == "1"
    items = oracle.progs_dump_tree_items(fs.devs, "fs")
    inline = [i for i in items if i.type == T["EXTENT_DATA"]
              and any("type 0 (inline)" in l for l in i.body)]
    n_inline = sum(1 for v in fs.manifest.values() if v["kind"] == "inline")
    assert len(inline) >= n_inline
    nodatasum = [i for i in items if i.type == T["INODE_ITEM"]
                 and any("NODATASUM" in l for l in i.body)]
    assert nodatasum


@pytest.mark.root
def test_fs_cache_lru(tmp_path):
    cache = fsutil.FsCache(tmp_path, max_attached=1)
    try:
        a = cache.get("single", "single", ndevs=1, size="300M")
        a_fsid = a.fsid
        assert a.attached and a.fsid == fsutil.read_fsid(a.dev)
        b = cache.get("single", "single", ndevs=2, size="300M")
        assert b.attached and not a.attached and len(b.devs) == 2
        assert cache.get("single", "single", ndevs=1, size="300M") is a
        assert a.attached and not b.attached
        assert fsutil.read_fsid(a.dev) == a_fsid
        assert run(["blockdev", "--getro", a.dev]).stdout.strip() == "1"
        copies = a.copy_images(tmp_path / "copy")
        assert fsutil.read_fsid(copies[0]) == a_fsid
    finally:
        cache.close()
    assert not a.attached and not b.attached
