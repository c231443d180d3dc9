# SPDX-License-Identifier: GPL-2.0-or-later
"""Oracles: parse what btrfs-progs (6.2) prints, to compare btrfsx against it.

Everything here only *reads* a filesystem (``btrfs inspect-internal dump-tree`` /
``dump-super``); run it on unmounted devices or image files.

Main entry points:

* ``progs_dump_tree_keys(devs, tree=None)`` -> list of ``(objectid, type, offset)``
  ints, one per leaf item, in the order btrfs-progs prints them.
* ``progs_dump_tree_items(devs, tree=None)`` -> list of ``Item`` (key, itemoff,
  itemsize, body lines, tree id of the section it was printed in).
* ``progs_dump_tree_sections(devs)`` -> ``{tree_id: [keys]}`` from the all-trees dump.
* ``progs_chunks(devs)`` / ``progs_dev_items(devs)`` -> parsed chunk / device items.
* ``progs_dump_super(dev, all=False)`` -> dict field -> value string (see there).

The name tables mirror btrfs-progs' ``print_objectid()``/``print_key_type()``/
``btrfs_print_key()`` (btrfs-progs kernel-shared/print-tree.c) and were checked against real
output of btrfs-progs v6.2 (see test_oracle.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Iterable, Sequence

U64 = 1 << 64
U64_MAX = U64 - 1


def _neg(n: int) -> int:
    """The u64 value of the C constant -n ULL."""
    return U64 - n


# ---------------------------------------------------------------------------
# name tables
# ---------------------------------------------------------------------------

#: key type name -> number (btrfs on-disk format).  Several numbers have two
#: names in the headers; btrfs-progs prints the first one of each pair listed in
#: KEY_TYPE_PRINTED below.
KEY_TYPES: dict[str, int] = {
    "UNTYPED": 0,                 # only printed for (FREE_SPACE UNTYPED x) keys
    "INODE_ITEM": 1,
    "INODE_REF": 12,
    "INODE_EXTREF": 13,
    "XATTR_ITEM": 24,
    "VERITY_DESC_ITEM": 36,
    "VERITY_MERKLE_ITEM": 37,
    "ORPHAN_ITEM": 48,
    "DIR_LOG_ITEM": 60,
    "DIR_LOG_INDEX": 72,
    "DIR_ITEM": 84,
    "DIR_INDEX": 96,
    "EXTENT_DATA": 108,
    "CSUM_ITEM": 120,             # obsolete
    "EXTENT_CSUM": 128,
    "ROOT_ITEM": 132,
    "ROOT_BACKREF": 144,
    "ROOT_REF": 156,
    "EXTENT_ITEM": 168,
    "METADATA_ITEM": 169,
    "EXTENT_OWNER_REF": 172,      # newer progs only
    "TREE_BLOCK_REF": 176,
    "EXTENT_DATA_REF": 178,
    "EXTENT_REF_V0": 180,         # obsolete
    "SHARED_BLOCK_REF": 182,
    "SHARED_DATA_REF": 184,
    "BLOCK_GROUP_ITEM": 192,
    "FREE_SPACE_INFO": 198,
    "FREE_SPACE_EXTENT": 199,
    "FREE_SPACE_BITMAP": 200,
    "DEV_EXTENT": 204,
    "DEV_ITEM": 216,
    "CHUNK_ITEM": 228,
    "RAID_STRIPE": 230,           # newer progs only
    "QGROUP_STATUS": 240,
    "QGROUP_INFO": 242,
    "QGROUP_LIMIT": 244,
    "QGROUP_RELATION": 246,
    "TEMPORARY_ITEM": 248,
    "BALANCE_ITEM": 248,          # alias (old name of TEMPORARY_ITEM)
    "PERSISTENT_ITEM": 249,
    "DEV_STATS": 249,             # alias (old name of PERSISTENT_ITEM)
    "DEV_REPLACE": 250,
    "UUID_KEY_SUBVOL": 251,
    "UUID_KEY_RECEIVED_SUBVOL": 252,
    "STRING_ITEM": 253,
}

#: number -> the name btrfs-progs prints (inverse of KEY_TYPES without aliases).
KEY_TYPE_PRINTED: dict[int, str] = {}
for _n, _v in KEY_TYPES.items():
    if _n in ("BALANCE_ITEM", "DEV_STATS"):
        continue
    KEY_TYPE_PRINTED.setdefault(_v, _n)

#: objectid name -> number.  btrfs-progs prints these names wherever an objectid
#: (or a ROOT_ITEM offset of a TREE_RELOC root, or a backref root) is shown.
OBJECTIDS: dict[str, int] = {
    "DEV_STATS": 0,               # only for PERSISTENT_ITEM keys
    "ROOT_TREE": 1,
    "DEV_ITEMS": 1,               # only for DEV_ITEM keys
    "EXTENT_TREE": 2,
    "CHUNK_TREE": 3,
    "DEV_TREE": 4,
    "FS_TREE": 5,
    "ROOT_TREE_DIR": 6,
    "CSUM_TREE": 7,
    "QUOTA_TREE": 8,
    "UUID_TREE": 9,
    "FREE_SPACE_TREE": 10,
    "BLOCK_GROUP_TREE": 11,
    "RAID_STRIPE_TREE": 12,       # newer progs only
    "FIRST_CHUNK_TREE": 256,      # only for CHUNK_ITEM keys
    "BALANCE": _neg(4),
    "ORPHAN": _neg(5),
    "TREE_LOG": _neg(6),
    "LOG_FIXUP": _neg(7),         # what progs prints for TREE_LOG_FIXUP
    "TREE_LOG_FIXUP": _neg(7),    # alias
    "TREE_RELOC": _neg(8),
    "DATA_RELOC_TREE": _neg(9),
    "EXTENT_CSUM": _neg(10),
    "FREE_SPACE": _neg(11),
    "FREE_INO": _neg(12),
    "MULTIPLE": _neg(255),
    "-1": U64_MAX,
}

#: Well known tree names accepted by the helpers here (and by ``-t`` of progs,
#: which we always call with the number to avoid its own name parsing).
TREE_IDS: dict[str, int] = {
    "root": 1, "extent": 2, "chunk": 3, "dev": 4, "device": 4, "fs": 5,
    "csum": 7, "checksum": 7, "quota": 8, "uuid": 9,
    "free-space": 10, "free_space": 10, "free-space-tree": 10,
    "block-group": 11, "block_group": 11, "block-group-tree": 11,
    "raid-stripe": 12,
    "tree-log": _neg(6), "tree_log": _neg(6), "log": _neg(6),
    "tree-log-fixup": _neg(7), "tree-reloc": _neg(8), "tree_reloc": _neg(8),
    "data-reloc": _neg(9), "data_reloc": _neg(9),
}

_QGROUP_TYPES = {KEY_TYPES["QGROUP_INFO"], KEY_TYPES["QGROUP_LIMIT"],
                 KEY_TYPES["QGROUP_RELATION"]}


#: mkfs --csum name -> (csum_type number, name dump-super prints in
#: "csum_type N (name)", checksum size in bytes)
CSUM_TYPES: dict[str, tuple[int, str, int]] = {
    "crc32c": (0, "crc32c", 4),
    "xxhash": (1, "xxhash64", 8),
    "sha256": (2, "sha256", 32),
    "blake2": (3, "blake2", 32),
}


class OracleError(RuntimeError):
    """btrfs-progs failed or printed something we cannot parse."""


def qgroupid(level: int, subvolid: int) -> int:
    return (level << 48) | subvolid


def tree_id(tree: int | str) -> int:
    """Tree name ('root', 'fs', 'free-space', ...), objectid name ('FS_TREE') or
    number (negative numbers are taken as u64, -9 -> DATA_RELOC_TREE)."""
    if isinstance(tree, int):
        return tree % U64
    t = str(tree).strip()
    if t.lower() in TREE_IDS:
        return TREE_IDS[t.lower()]
    if t.upper() in OBJECTIDS and t.upper() not in ("DEV_ITEMS", "DEV_STATS"):
        return OBJECTIDS[t.upper()]
    try:
        return int(t, 0) % U64
    except ValueError:
        raise OracleError(f"unknown tree {tree!r}") from None


# ---------------------------------------------------------------------------
# token parsers
# ---------------------------------------------------------------------------

_QG_RE = re.compile(r"^(\d+)/(\d+)$")


def parse_number(tok: str) -> int:
    """Decimal, 0x hex, '-1' (u64 max), 'level/id' qgroup, or an objectid name."""
    if tok in OBJECTIDS:
        return OBJECTIDS[tok]
    m = _QG_RE.match(tok)
    if m:
        return qgroupid(int(m.group(1)), int(m.group(2)))
    if tok.startswith(("0x", "0X")):
        return int(tok, 16)
    if re.fullmatch(r"-?\d+", tok):
        return int(tok) % U64
    raise OracleError(f"cannot parse number/objectid {tok!r}")


def parse_key_type(tok: str) -> int:
    if tok in KEY_TYPES:
        return KEY_TYPES[tok]
    m = re.fullmatch(r"UNKNOWN\.(\d+)", tok)
    if m:
        return int(m.group(1))
    if tok.isdigit():
        return int(tok)
    raise OracleError(f"unknown key type {tok!r}")


def parse_key(objectid: str, type_: str, offset: str) -> tuple[int, int, int]:
    """Turn the three tokens of a printed ``key (A B C)`` into integers."""
    return parse_number(objectid), parse_key_type(type_), parse_number(offset)


_KEY_IN_TEXT_RE = re.compile(r"key \((\S+) (\S+) (\S+)\)")


def parse_key_text(text: str) -> tuple[int, int, int]:
    """Parse the first ``key (A B C)`` found in ``text``."""
    m = _KEY_IN_TEXT_RE.search(text)
    if not m:
        raise OracleError(f"no key in {text!r}")
    return parse_key(*m.groups())


def format_key(key: tuple[int, int, int]) -> str:
    """Debug helper: (objectid type offset) with the type name."""
    o, t, f = key
    return f"({o} {KEY_TYPE_PRINTED.get(t, t)} {f})"


# ---------------------------------------------------------------------------
# dump-tree
# ---------------------------------------------------------------------------

_ITEM_RE = re.compile(
    r"^\titem (\d+) key \((\S+) (\S+) (\S+)\) itemoff (\d+) itemsize (\d+)\s*$")
_LEAF_RE = re.compile(r"^leaf (\d+) items (\d+) free space (-?\d+) generation (\d+) owner (\S+)")
_NODE_RE = re.compile(r"^node (\d+) level (\d+) items (\d+) free space (\d+) generation (\d+) owner (\S+)")
_SECTION_RE = re.compile(r"^([a-z][a-z ]*?) tree(?: key \((\S+) (\S+) (\S+)\))?\s*$")

#: Sections printed without a key.
_SECTION_NAMES = {"root": 1, "chunk": 3, "log root": _neg(6)}


@dataclass
class Item:
    key: tuple[int, int, int]
    itemoff: int
    itemsize: int
    slot: int
    leaf: int                      # bytenr of the leaf
    tree: int | tuple | None       # tree id of the section it was printed in:
                                   # the root item's objectid, (TREE_LOG, subvolid)
                                   # for "log tree key (TREE_LOG ROOT_ITEM 5)",
                                   # TREE_LOG for "log root tree", None if unknown
    owner: int | None              # header owner of the leaf
    body: list[str] = field(default_factory=list)   # the item's lines, stripped

    @property
    def objectid(self) -> int:
        return self.key[0]

    @property
    def type(self) -> int:
        return self.key[1]

    @property
    def offset(self) -> int:
        return self.key[2]

    def fields(self) -> dict[str, str]:
        """'name value' pairs of the body (``devid 1 total_bytes 5`` ->
        {'devid': '1', 'total_bytes': '5'}); later repeats win."""
        out: dict[str, str] = {}
        for line in self.body:
            toks = line.split()
            for i in range(0, len(toks) - 1, 2):
                out[toks[i]] = toks[i + 1]
        return out


@dataclass
class TreeDump:
    items: list[Item]
    leaves: dict[int, int]         # leaf bytenr -> items count from its header
    nodes: dict[int, int]          # node bytenr -> level
    sections: list[tuple[str, int | tuple | None]]   # (header line, tree id)
    text: str


def parse_dump_tree(text: str) -> TreeDump:
    """Parse the text of ``btrfs inspect-internal dump-tree``.

    Raises OracleError if a line that looks like a leaf item cannot be parsed,
    or if the number of items seen for a leaf differs from its header."""
    items: list[Item] = []
    leaves: dict[int, int] = {}
    nodes: dict[int, int] = {}
    sections: list[tuple[str, int | tuple | None]] = []
    cur_tree: int | tuple | None = None
    cur_leaf: int | None = None
    cur_owner: int | None = None
    expect = 0          # items announced by the current leaf header
    got = 0             # items parsed in the current leaf
    in_leaf = False

    def check_leaf():
        if in_leaf and got != expect:
            raise OracleError(f"leaf {cur_leaf}: header says {expect} items, parsed {got}")

    cur_item: Item | None = None
    for line in text.splitlines():
        if not line:
            continue
        if line[0] not in "\t ":
            cur_item = None
            m = _SECTION_RE.match(line)
            if m and not line.startswith(("leaf ", "node ")):
                check_leaf()
                name = m.group(1)
                if m.group(2) is not None:
                    tid = parse_number(m.group(2))
                    if tid in (OBJECTIDS["TREE_LOG"], OBJECTIDS["TREE_RELOC"]):
                        # per-subvolume log / reloc trees: (TREE_LOG, subvolid)
                        tid = (tid, parse_number(m.group(4)))
                else:
                    tid = _SECTION_NAMES.get(name)
                sections.append((line.strip(), tid))
                cur_tree = tid
                in_leaf = False
                continue
            m = _LEAF_RE.match(line)
            if m:
                check_leaf()
                cur_leaf = int(m.group(1))
                leaves[cur_leaf] = expect = int(m.group(2))
                got = 0
                cur_owner = parse_number(m.group(5))
                in_leaf = True
                continue
            m = _NODE_RE.match(line)
            if m:
                check_leaf()
                nodes[int(m.group(1))] = int(m.group(2))
                in_leaf = False
                continue
            continue
        if line.startswith("\titem ") and in_leaf:
            m = _ITEM_RE.match(line)
            if not m:
                raise OracleError(f"unparsable item line: {line!r}")
            try:
                key = parse_key(m.group(2), m.group(3), m.group(4))
            except OracleError as e:
                raise OracleError(f"{e} in line {line!r}") from None
            assert cur_leaf is not None
            cur_item = Item(key=key, itemoff=int(m.group(5)), itemsize=int(m.group(6)),
                            slot=int(m.group(1)), leaf=cur_leaf, tree=cur_tree,
                            owner=cur_owner)
            items.append(cur_item)
            got += 1
            continue
        if cur_item is not None and line.startswith("\t\t"):
            cur_item.body.append(line.strip())
    check_leaf()
    return TreeDump(items=items, leaves=leaves, nodes=nodes, sections=sections, text=text)


def _as_list(devs: str | Sequence[str]) -> list[str]:
    if isinstance(devs, (str, bytes)) or hasattr(devs, "__fspath__"):
        return [str(devs)]
    return [str(d) for d in devs]


# The btrfs binary every function here runs: Debian's (6.2) unless using_progs()
# names another (tests/helpers/progs_619.py builds 6.19).
PROGS = "btrfs"


@contextlib.contextmanager
def using_progs(binary: str | os.PathLike):
    """Within the block, the parsers run @binary's dump-tree and dump-super."""
    global PROGS
    saved, PROGS = PROGS, str(binary)
    try:
        yield
    finally:
        PROGS = saved


def run_progs(args: Sequence[str], check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([PROGS, *args], capture_output=True, text=True,
                       errors="surrogateescape")
    # btrfs-progs scans every block device; one that is being torn down by
    # someone else ("cannot scan /dev/loopN") says nothing about ours.
    errors = [line for line in p.stderr.splitlines()
              if "ERROR:" in line and "cannot scan" not in line]
    if check and (p.returncode != 0 or errors):
        raise OracleError(f"btrfs {' '.join(args)} failed rc={p.returncode}: {p.stderr.strip()}")
    return p


def progs_dump_tree_text(devs: str | Sequence[str], tree: int | str | None = None,
                         extra: Iterable[str] = (), scan: bool | None = None) -> str:
    """Raw stdout of ``btrfs inspect-internal dump-tree [-t ID] dev...``.

    All given devices are passed.  scan=None first tries ``--noscan`` (only
    the given devices: immune to other loop devices coming and going, and to
    image copies with the same fsid) and, if that fails (members missing from
    ``devs``), lets progs scan for the others; scan=True/False forces one way.
    Raises OracleError when progs fails or prints ERROR (it exits 0 after some
    errors, e.g. asking for a block group tree that does not exist)."""
    extra = list(extra)
    args = ["inspect-internal", "dump-tree", *extra]
    if tree is not None:
        args += ["-t", str(tree_id(tree))]
    args += _as_list(devs)
    if "--noscan" not in extra:
        if scan is None:
            try:
                return run_progs(args[:2] + ["--noscan"] + args[2:]).stdout
            except OracleError:
                pass
        elif scan is False:
            args.insert(2, "--noscan")
    return run_progs(args).stdout


def progs_dump_tree_items(devs: str | Sequence[str], tree: int | str | None = None) -> list[Item]:
    return parse_dump_tree(progs_dump_tree_text(devs, tree)).items


def progs_dump_tree_keys(devs: str | Sequence[str],
                         tree: int | str | None = None) -> list[tuple[int, int, int]]:
    """Keys (objectid, type, offset) of every leaf item of ``tree`` as printed by
    ``btrfs inspect-internal dump-tree -t <tree>`` (or of every tree when
    ``tree`` is None: the default dump, root tree, chunk tree, then each tree in
    the root tree).  A tree that does not exist gives []."""
    return [it.key for it in progs_dump_tree_items(devs, tree)]


def progs_dump_tree_sections(devs: str | Sequence[str]) -> dict:
    """All-trees dump split by the tree each item was printed under:
    {tree id: [keys]} (root tree 1, chunk tree 3, fs tree 5, subvolumes 256+,
    data reloc tree 2**64-9; a log root tree under 2**64-6 and the per-subvolume
    log trees under (2**64-6, subvolid)).  Leaves shared by snapshots are
    printed (and listed) once per tree that uses them."""
    out: dict = {}
    for it in progs_dump_tree_items(devs, None):
        out.setdefault(it.tree, []).append(it.key)
    return out


def _int_field(f: dict[str, str], name: str) -> int:
    return int(f[name])


def progs_chunks(devs: str | Sequence[str]) -> list[dict]:
    """Chunk items of the chunk tree: [{logical, length, owner, stripe_len, type
    (progs' string, e.g. 'DATA|RAID1'), num_stripes, sub_stripes, io_align,
    io_width, sector_size, stripes: [(devid, physical, dev_uuid)]}]."""
    return parse_chunks(progs_dump_tree_text(devs, "chunk"))


def parse_chunks(text: str) -> list[dict]:
    """progs_chunks() from the text of ``dump-tree -t chunk`` (e.g. run elsewhere)."""
    out = []
    for it in parse_dump_tree(text).items:
        if it.type != KEY_TYPES["CHUNK_ITEM"]:
            continue
        c: dict = {"logical": it.offset, "stripes": []}
        for line in it.body:
            toks = line.split()
            if toks[0] == "stripe":
                c["stripes"].append([int(toks[3]), int(toks[5]), None])
            elif toks[0] == "dev_uuid":
                c["stripes"][-1][2] = toks[1]
            else:
                for i in range(0, len(toks) - 1, 2):
                    c[toks[i]] = toks[i + 1]
        for k in ("length", "owner", "stripe_len", "io_align", "io_width", "sector_size",
                  "num_stripes", "sub_stripes"):
            c[k] = int(c[k])
        c["stripes"] = [tuple(s) for s in c["stripes"]]
        out.append(c)
    return out


def progs_dev_items(devs: str | Sequence[str]) -> dict[int, dict]:
    """DEV_ITEMs of the chunk tree: {devid: {total_bytes, bytes_used, type, ...}}
    (numbers as int, uuid/fsid as strings)."""
    out = {}
    for it in progs_dump_tree_items(devs, "chunk"):
        if it.type != KEY_TYPES["DEV_ITEM"]:
            continue
        f = it.fields()
        d = {k: (v if k in ("uuid", "fsid") else int(v)) for k, v in f.items()}
        out[it.offset] = d
    return out


# ---------------------------------------------------------------------------
# dump-super
# ---------------------------------------------------------------------------

_SB_HEAD_RE = re.compile(r"^superblock: bytenr=(\d+), device=(.*)$")
_MATCH_RE = re.compile(r"^(.*?)\s*\[(match|DON'T MATCH)\]$")
_BACKUP_RE = re.compile(r"^\s*(\w+):\s+(\d+)\s+gen:\s+(\d+)\s+level:\s+(\d+)\s*$")
_BACKUP_VAL_RE = re.compile(r"^\s*(\w+):\s+(\S+)\s*$")


def parse_dump_super(text: str) -> list[dict[str, str]]:
    """Parse ``dump-super -f`` (with or without ``-a``) into one dict per copy.

    Keys and values (all values are strings as printed):

    * ``_bytenr``, ``_device``: from the "superblock: bytenr=..., device=..." head;
    * every "name<TAB>value" line: ``csum_type`` -> '0 (crc32c)', ``generation``
      -> '12', ``label`` -> '' ...;  " (deprecated)" is dropped from names
      (``leafsize``, ``log_root_transid``);
    * a trailing " [match]" / " [DON'T MATCH]" is split off into ``<name>.match``
      ('match' / "DON'T MATCH"): ``csum``, ``magic``, ``dev_item.fsid``...;
    * flag fields: ``<name>`` is the hex value, ``<name>.names`` the names in
      parentheses joined by '|' ('' when none), e.g. ``incompat_flags.names``;
    * ``dev_item.*`` as printed;
    * ``sys_chunk_array`` -> the text of the array (lines joined with \\n,
      without the "sys_chunk_array[2048]:" head), ``sys_chunk_array.size`` ->
      '2048', ``sys_chunk_array.keys`` -> 'o t off;o t off' as integers;
    * backup roots: ``backup_roots.N.<name>`` -> bytenr / value, and for the
      "root: bytenr gen: G level: L" lines also ``.gen`` and ``.level``
      (names as printed: backup_tree_root, backup_chunk_root,
      backup_extent_root, backup_fs_root, backup_dev_root, csum_root,
      backup_total_bytes, backup_bytes_used, backup_num_devices).
    """
    copies: list[dict[str, str]] = []
    cur: dict[str, str] | None = None
    mode = "fields"
    last_field: str | None = None
    backup_idx: int | None = None
    sys_lines: list[str] = []
    sys_keys: list[str] = []

    def finish_sys():
        if cur is not None and sys_lines:
            cur["sys_chunk_array"] = "\n".join(sys_lines)
            cur["sys_chunk_array.keys"] = ";".join(sys_keys)

    for raw in text.splitlines():
        line = raw.rstrip("\n")
        m = _SB_HEAD_RE.match(line)
        if m:
            finish_sys()
            cur = {"_bytenr": m.group(1), "_device": m.group(2)}
            copies.append(cur)
            mode = "fields"
            sys_lines, sys_keys = [], []
            last_field = None
            continue
        if cur is None or not line.strip() or line.startswith("-----"):
            continue
        if line.startswith("sys_chunk_array["):
            cur["sys_chunk_array.size"] = line[len("sys_chunk_array["):].split("]")[0]
            mode = "sys"
            continue
        if line.startswith("backup_roots["):
            finish_sys()
            sys_lines, sys_keys = [], []
            mode = "backup"
            continue
        if mode == "sys":
            if line.startswith("\t"):
                sys_lines.append(line[1:])
                if line.startswith("\titem "):
                    sys_keys.append("%d %d %d" % parse_key_text(line))
                continue
            mode = "fields"
        if mode == "backup":
            s = line.strip()
            mb = re.match(r"^backup (\d+):$", s)
            if mb:
                backup_idx = int(mb.group(1))
                continue
            if backup_idx is None:
                continue
            p = f"backup_roots.{backup_idx}."
            mb = _BACKUP_RE.match(line)
            if mb:
                cur[p + mb.group(1)] = mb.group(2)
                cur[p + mb.group(1) + ".gen"] = mb.group(3)
                cur[p + mb.group(1) + ".level"] = mb.group(4)
                continue
            mb = _BACKUP_VAL_RE.match(line)
            if mb:
                cur[p + mb.group(1)] = mb.group(2)
                continue
            # unknown line inside the backups: fall through to fields
            mode = "fields"
        # flag continuation lines: "\t\t\t( A |" / "\t\t\t  B )"
        if line.startswith("\t") and last_field is not None:
            txt = line.strip().replace("(", " ").replace(")", " ")
            names = [n.strip() for n in txt.split("|") if n.strip()]
            key = last_field + ".names"
            cur[key] = "|".join(([cur[key]] if cur.get(key) else []) + names)
            continue
        parts = re.split(r"\t+", line, maxsplit=1)
        name = parts[0].strip()
        value = parts[1].strip() if len(parts) > 1 else ""
        if name.endswith(" (deprecated)"):
            name = name[: -len(" (deprecated)")]
        mm = _MATCH_RE.match(value)
        if mm:
            value = mm.group(1)
            cur[name + ".match"] = mm.group(2)
        cur[name] = value
        last_field = name
        if name.endswith("flags") and value.startswith("0x"):
            cur.setdefault(name + ".names", "")
    finish_sys()
    return copies


def progs_dump_super(dev: str, all: bool = False, force: bool = False,
                     extra: Iterable[str] = ()):
    """``btrfs inspect-internal dump-super -f [-a] [-F] dev`` (-f is --full).

    all=False: one dict (the primary copy at 64 KiB), see parse_dump_super.
    all=True: {bytenr (int): dict} for every copy that exists on the device
    (65536, 67108864, 274877906944 when the device is big enough).
    A copy with a bad checksum is printed (``csum.match`` == "DON'T MATCH");
    one with a bad magic makes progs fail (OracleError) unless force=True (-F),
    which dumps it anyway (``magic.match`` == "DON'T MATCH")."""
    args = ["inspect-internal", "dump-super", "-f", *extra]
    if all:
        args.append("-a")
    if force:
        args.append("-F")
    args.append(str(dev))
    p = run_progs(args)
    copies = parse_dump_super(p.stdout)
    if not copies:
        raise OracleError(f"dump-super printed no superblock for {dev}: {p.stderr.strip()}")
    if all:
        return {int(c["_bytenr"]): c for c in copies}
    return copies[0]


def parse_progs_scrub(text: str) -> dict[int, dict[str, int]]:
    """``btrfs scrub start -B -R -d`` output: {devid: {counter: value}} (a
    device printed without a path, i.e. missing, is left out)."""
    out: dict[int, dict[str, int]] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"Scrub device (.*) \(id (\d+)\)", line)
        if m:
            cur = out.setdefault(int(m.group(2)), {}) if m.group(1).strip() else None
            continue
        m = re.match(r"\s+(\w+): (\d+)$", line)
        if m and cur is not None:
            cur[m.group(1)] = int(m.group(2))
    return out


def super_fields_differ(ours: dict, theirs: dict) -> tuple[int, list[str]]:
    """Our ``inspect dump-super`` JSON superblock against progs' parsed one
    (progs_dump_super): (fields compared, the fields that differ)."""
    compared, differ = 0, []
    theirs = dict(theirs)
    if theirs.get("metadata_uuid") == theirs.get("fsid") and \
            not int(theirs["incompat_flags"].split()[0], 16) & (1 << 10):
        # btrfs-progs before 6.19 printed the fsid where the field is unused (zeros)
        theirs["metadata_uuid"] = "00000000-0000-0000-0000-000000000000"
    for name, value in ours.items():
        pairs = [(f"{name}.{k}", v) for k, v in value.items()] if isinstance(value, dict) \
            else [(name, value)]
        for field_name, val in pairs:
            if field_name not in theirs or field_name == "magic":
                continue
            want = (theirs[field_name].split() or [""])[0]
            if isinstance(val, int) and not want.startswith("0x"):
                want = int(want)
            elif isinstance(val, int):
                want = int(want, 16)
            elif field_name == "csum":
                want = want.removeprefix("0x")
            if val != want:
                differ.append(f"{field_name}: ours {val!r}, progs {want!r}")
            compared += 1
    if ours["magic"] != int.from_bytes(theirs["magic"].encode(), "little"):
        differ.append("magic")
    return compared, differ
