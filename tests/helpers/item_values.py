# SPDX-License-Identifier: GPL-2.0-or-later
"""Item values of ``btrfsx --format json inspect dump-tree`` against the text
of ``btrfs inspect-internal dump-tree --csum-items`` (btrfs-progs 6.2).

Entry point::

    stats, failures = compare_dump(devs)

Both tools dump every tree of the (unmounted) filesystem on ``devs``.  Each
leaf item progs prints is matched with ours by (leaf bytenr, slot) and the
values progs prints for it are parsed and compared with our decoded fields,
one comparer per item type (``COMPARERS``).  A leaf that progs prints but our
all-trees dump does not contain is dumped with ``-b``; a leaf shared by
snapshots is compared once.

``failures`` lists every difference as "(key) leaf L slot S: field: progs X
ours Y" (also: an item we lack, a decode_error of ours, progs text a comparer
does not understand, an item type progs prints values for but that has no
comparer).  ``stats`` counts the compared items by type name ('INODE_ITEM',
'EXTENT_CSUM', ...), the items skipped because progs prints no values for
them ('skipped:QGROUP_RELATION', ...), the individual values compared
('values') and a few notable kinds seen by the comparers ('EXTENT_DATA hole',
'EXTENT_ITEM tree block info', ...; see ``ItemCheck.note``).

Progs' text is parsed from its raw bytes, not line by line: names are printed
raw (``%.*s``), so a name may hold a newline, a tab, trailing blanks or bytes
that are not UTF-8.  A comparer reads the body of its item with a ``Body``
cursor, taking exactly ``name_len`` bytes for a name (progs prints the
length), and must consume the whole body.
"""

from __future__ import annotations

import locale
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from helpers import fsutil
from helpers import oracle

KT = oracle.KEY_TYPES
NAME_LEN_MAX = 255          # progs copies names and xattr values into char[255]

# ---------------------------------------------------------------------------
# progs' text: items with their raw body
# ---------------------------------------------------------------------------


@dataclass
class ProgsItem:
    key: tuple[int, int, int]
    leaf: int
    slot: int
    itemsize: int
    body: bytes                 # the raw lines after the item line, each with its "\n"

    @property
    def type(self) -> int:
        return self.key[1]

    def where(self) -> str:
        return f"{oracle.format_key(self.key)} leaf {self.leaf} slot {self.slot}"


_ITEM_RE = re.compile(rb"^\titem (\d+) key \((\S+) (\S+) (\S+)\) itemoff \d+ itemsize (\d+)$")
_LEAF_RE = re.compile(rb"^leaf (\d+) items (\d+) free space")
# Lines at column 0 that end an item's body; any other line there is the rest
# of a name that holds a newline.
_TOP_LEVEL_RE = re.compile(
    rb"^(?:(?:leaf|node) \d+ |fs uuid |chunk uuid |total bytes \d|bytes used \d"
    rb"|uuid [0-9a-f-]{36}$|btrfs-progs v|[a-z][a-z ]* tree(?: key \(.*\))?\s*$)")


def progs_raw_text(devs: Sequence[str]) -> bytes:
    """stdout of ``btrfs inspect-internal dump-tree --csum-items devs...`` as
    the bytes progs wrote (oracle decodes with surrogateescape; undo it)."""
    text = oracle.progs_dump_tree_text(list(devs), extra=["--csum-items"])
    return text.encode(locale.getpreferredencoding(False), "surrogateescape")


def parse_progs_items(raw: bytes) -> list[ProgsItem]:
    """Every leaf item of a dump-tree text, in print order, with its body.

    Raises oracle.OracleError when a leaf's item count differs from its
    header (a sign that the text was split in the wrong places)."""
    items: list[ProgsItem] = []
    bodies: list[list[bytes]] = []
    leaf = None                   # the leaf being printed, None outside leaves
    announced = parsed = 0
    body: list[bytes] | None = None

    def end_leaf():
        if leaf is not None and parsed != announced:
            raise oracle.OracleError(f"leaf {leaf}: header says {announced} items, "
                                     f"parsed {parsed}")

    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()                 # after the final newline
    for line in lines:
        m = _ITEM_RE.match(line)
        if m and leaf is not None:
            key = oracle.parse_key(*(g.decode() for g in m.group(2, 3, 4)))
            items.append(ProgsItem(key, leaf, int(m.group(1)), int(m.group(5)), b""))
            body = []
            bodies.append(body)
            parsed += 1
        elif _TOP_LEVEL_RE.match(line):
            body = None
            m = _LEAF_RE.match(line)
            if m or (line.startswith(b"node ") and b" level " in line):   # a block header
                end_leaf()
                leaf = int(m.group(1)) if m else None
                announced, parsed = (int(m.group(2)) if m else 0), 0
        elif body is not None:
            body.append(line + b"\n")
    end_leaf()
    for item, body_lines in zip(items, bodies):
        item.body = b"".join(body_lines)
    return items


class ProgsFormatError(ValueError):
    """The body does not look like what the comparer expects progs to print."""


class Body:
    """Cursor over the raw body of one item."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def _fail(self, what: str):
        raise ProgsFormatError(f"expected {what} at {self.data[self.pos:self.pos + 100]!r}")

    def match(self, pattern: bytes) -> tuple[str, ...]:
        """Consume ``pattern`` (a regex) here; its groups as str."""
        m = re.compile(pattern, re.S).match(self.data, self.pos)
        if not m:
            self._fail(repr(pattern))
        self.pos = m.end()
        return tuple(g.decode("utf-8", "surrogateescape") if g is not None else None
                     for g in m.groups())

    def literal(self, text: bytes) -> None:
        if not self.data.startswith(text, self.pos):
            self._fail(repr(text))
        self.pos += len(text)

    def take(self, n: int) -> bytes:
        """The next n raw bytes (a name)."""
        if self.pos + n > len(self.data):
            self._fail(f"{n} bytes")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def rest_of_item(self) -> bytes:
        """Everything up to the final newline (a name that ends the item)."""
        if not self.data.endswith(b"\n") or self.pos >= len(self.data):
            self._fail("a name ending the item")
        out = self.data[self.pos:-1]
        self.pos = len(self.data)
        return out

    def startswith(self, text: bytes) -> bool:
        return self.data.startswith(text, self.pos)

    def at_end(self) -> bool:
        return self.pos >= len(self.data)


# ---------------------------------------------------------------------------
# our JSON
# ---------------------------------------------------------------------------

def unescape_name(s: str) -> bytes:
    """The bytes behind one of our escaped strings: UTF-8 text with ``\\\\``
    for a backslash and ``\\xNN`` for any other byte."""
    out = bytearray()
    i = 0
    while i < len(s):
        if s[i] != "\\":
            out += s[i].encode()
            i += 1
        elif s.startswith("\\\\", i):
            out += b"\\"
            i += 2
        elif s.startswith("\\x", i) and re.fullmatch(r"[0-9a-f]{2}", s[i + 2:i + 4]):
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        else:
            raise ValueError(f"bad escape in {s!r}")
    return bytes(out)


def _blocks(doc: dict) -> Iterable[dict]:
    if "trees" in doc:
        for tree in doc["trees"]:
            yield from tree["blocks"]
    else:
        yield from doc.get("blocks", [])


def our_items(devs: Sequence[str], blocks: Sequence[int] = (),
              binary: str | None = None) -> dict[tuple[int, int], dict]:
    """{(leaf bytenr, slot): item} from ``btrfsx --format json inspect
    dump-tree [-b B]... devs`` (all trees when no block is given)."""
    args = [a for b in blocks for a in ("-b", str(b))]
    doc = fsutil.btrfsx_json("inspect", "dump-tree", *args, *devs, binary=binary)
    return {(b["bytenr"], it["slot"]): it for b in _blocks(doc) for it in b.get("items", [])}


def our_key(o: dict) -> tuple[int, int, int]:
    """(objectid, type, offset) of an item of ours, or of a key object."""
    k = o["key"] if "key" in o else o
    return (k["objectid"], k["type"], k["offset"])


# ---------------------------------------------------------------------------
# comparing one item
# ---------------------------------------------------------------------------

class ItemCheck:
    """Collects the differences found in one item."""

    def __init__(self, item: ProgsItem, stats: Counter, failures: list[str]):
        self.item = item
        self.key = item.key
        self.stats = stats
        self.failures = failures

    def eq(self, field: str, progs, ours) -> None:
        """One value: progs' (parsed from its text) against ours."""
        self.stats["values"] += 1
        if progs != ours:
            self.failures.append(f"{self.item.where()}: {field}: progs {progs!r} ours {ours!r}")

    def note(self, kind: str) -> None:
        """Count something notable the comparer saw ('EXTENT_DATA hole')."""
        self.stats[kind] += 1


Comparer = Callable[[Body, dict, ItemCheck], None]


def _ints(groups: Iterable[str]) -> tuple[int, ...]:
    return tuple(int(g) for g in groups)


def _time(body: Body, name: bytes) -> tuple[int, int]:
    """``\\t\\t<name> SEC.NSEC (local date)`` (nsec printed without padding)."""
    sec, nsec = body.match(rb"\t\t" + name + rb" (\d+)\.(\d+) \([^)\n]*\)\n")
    return int(sec), int(nsec)


def _our_time(t: dict) -> tuple[int, int]:
    return t["sec"], t["nsec"]


def _key(groups: Sequence[str]) -> tuple[int, int, int]:
    return oracle.parse_key(*groups)


_KEY = rb"key \((\S+) (\S+) (\S+)\)"
_UUID = rb"([0-9a-f-]{36})"

# -- fs trees ---------------------------------------------------------------

INODE_FLAG_NAMES = ["NODATASUM", "NODATACOW", "READONLY", "NOCOMPRESS", "PREALLOC", "SYNC",
                    "IMMUTABLE", "APPEND", "NODUMP", "NOATIME", "DIRSYNC", "COMPRESS"]


def cmp_inode_item(body: Body, o: dict, c: ItemCheck) -> None:
    g = body.match(rb"\t\tgeneration (\d+) transid (\d+) size (\d+) nbytes (\d+)\n"
                   rb"\t\tblock group (\d+) mode ([0-7]+) links (\d+) uid (\d+) gid (\d+)"
                   rb" rdev (\d+)\n"
                   rb"\t\tsequence (\d+) flags 0x([0-9a-f]+)\(([^)\n]*)\)\n")
    for name, value in zip(("generation", "transid", "size", "nbytes", "block_group"), g):
        c.eq(name, int(value), o[name])
    c.eq("mode", int(g[5], 8), o["mode"])
    for name, value in zip(("nlink", "uid", "gid", "rdev", "sequence"), g[6:11]):
        c.eq(name, int(value), o[name])
    c.eq("flags", int(g[11], 16), o["flags"])
    if not o["flags"] >> len(INODE_FLAG_NAMES):     # only flags progs has names for
        c.eq("flag_names", g[12], o["flag_names"])
    for t in ("atime", "ctime", "mtime", "otime"):
        c.eq(t, _time(body, t.encode()), _our_time(o[t]))


def _compare_refs(c: ItemCheck, progs: list[dict], ours: list[dict]) -> None:
    c.eq("number of refs", len(progs), len(ours))
    for i, (p, o) in enumerate(zip(progs, ours)):
        for field, value in p.items():
            c.eq(f"ref {i} {field}", value, unescape_name(o[field]) if field == "name"
                 else o.get(field))


def cmp_inode_ref(body: Body, o: dict, c: ItemCheck) -> None:
    """INODE_REF: ``index I namelen N name: <N bytes>`` per name."""
    refs = []
    while not body.at_end():
        index, name_len = _ints(body.match(rb"\t\tindex (\d+) namelen (\d+) name: "))
        name = body.take(min(name_len, NAME_LEN_MAX))
        body.literal(b"\n")
        refs.append({"index": index, "name_len": name_len, "name": name})
    _compare_refs(c, refs, o["inode_refs"])


def cmp_inode_extref(body: Body, o: dict, c: ItemCheck) -> None:
    """INODE_EXTREF: ``index I parent P namelen N name: <N bytes>`` per name."""
    refs = []
    while not body.at_end():
        index, parent, name_len = _ints(
            body.match(rb"\t\tindex (\d+) parent (\d+) namelen (\d+) name: "))
        name = body.take(min(name_len, NAME_LEN_MAX))
        body.literal(b"\n")
        refs.append({"index": index, "parent": parent, "name_len": name_len, "name": name})
    _compare_refs(c, refs, o["inode_refs"])


DIR_TYPES = {"FILE": 1, "DIR": 2, "CHRDEV": 3, "BLKDEV": 4, "FIFO": 5, "SOCK": 6,
             "SYMLINK": 7, "XATTR": 8}


def _dir_type(name: str) -> int:
    if name in DIR_TYPES:
        return DIR_TYPES[name]
    m = re.fullmatch(r"DIR_ITEM\.(\d+)", name)
    if not m:
        raise ProgsFormatError(f"unknown dir item type {name!r}")
    return int(m.group(1))


def _printed_data(ours: dict | None) -> bytes | None:
    """What progs prints of an xattr value: at most 255 bytes, up to a NUL."""
    if ours is None or "data" not in ours:
        return None
    return unescape_name(ours["data"])[:NAME_LEN_MAX].split(b"\0")[0]


def cmp_dir_item(body: Body, o: dict, c: ItemCheck) -> None:
    """DIR_ITEM, DIR_INDEX and XATTR_ITEM: location, type, transid, lengths,
    name and (when data_len > 0) the data, per entry.  Progs prints the data
    with %.*s, so a value is compared up to its first NUL."""
    ours = o["entries"]
    i = 0
    while not body.at_end():
        g = body.match(rb"\t\tlocation " + _KEY + rb" type (\S+)\n"
                       rb"\t\ttransid (\d+) data_len (\d+) name_len (\d+)\n\t\tname: ")
        transid, data_len, name_len = _ints(g[4:7])
        name = body.take(min(name_len, NAME_LEN_MAX))
        body.literal(b"\n")
        our = ours[i] if i < len(ours) else {}
        c.eq(f"entry {i} location", _key(g[:3]), our_key(our["location"]) if our else None)
        c.eq(f"entry {i} type", _dir_type(g[3]), our.get("type"))
        if g[3] in DIR_TYPES:
            c.eq(f"entry {i} type_name", g[3], our.get("type_name"))
        c.eq(f"entry {i} transid", transid, our.get("transid"))
        c.eq(f"entry {i} data_len", data_len, our.get("data_len"))
        c.eq(f"entry {i} name_len", name_len, our.get("name_len"))
        c.eq(f"entry {i} name", name, unescape_name(our["name"]) if our else None)
        if data_len:
            body.literal(b"\t\tdata ")
            want = _printed_data(our)
            if want is None or not body.startswith(want + b"\n"):
                # show progs' data up to the end of its line
                shown = body.data[body.pos:].split(b"\n")[0]
                c.eq(f"entry {i} data", shown, want)
                return
            c.eq(f"entry {i} data", body.take(len(want)), want)
            body.literal(b"\n")
            c.note(f"{oracle.KEY_TYPE_PRINTED[c.key[1]]} with data")
        i += 1
    c.eq("number of entries", i, len(ours))


def cmp_file_extent(body: Body, o: dict, c: ItemCheck) -> None:
    """EXTENT_DATA: inline (size, ram_bytes, compression), prealloc (disk
    range, offset, length) or regular (the same plus ram and compression)."""
    gen, etype, etype_name = body.match(rb"\t\tgeneration (\d+) type (\d+) \((\w+)\)\n")
    c.eq("generation", int(gen), o["generation"])
    c.eq("extent_type", int(etype), o["extent_type"])
    c.eq("extent_type_name", etype_name, o["extent_type_name"])
    if etype_name == "inline":
        g = body.match(rb"\t\tinline extent data size (\d+) ram_bytes (\d+)"
                       rb" compression (\d+) \((\S+)\)\n")
        c.eq("inline_size", int(g[0]), o["inline_size"])
        c.eq("ram_bytes", int(g[1]), o["ram_bytes"])
        c.eq("compression", int(g[2]), o["compression"])
        c.eq("compression_name", g[3], o["compression_name"])
        c.note("EXTENT_DATA inline")
        if int(g[2]):
            c.note("EXTENT_DATA compressed")
        return
    if etype_name == "prealloc":
        g = _ints(body.match(rb"\t\tprealloc data disk byte (\d+) nr (\d+)\n"
                             rb"\t\tprealloc data offset (\d+) nr (\d+)\n"))
        c.note("EXTENT_DATA prealloc")
    else:
        g = body.match(rb"\t\textent data disk byte (\d+) nr (\d+)\n"
                       rb"\t\textent data offset (\d+) nr (\d+) ram (\d+)\n"
                       rb"\t\textent compression (\d+) \((\S+)\)\n")
        c.eq("ram_bytes", int(g[4]), o["ram_bytes"])
        c.eq("compression", int(g[5]), o["compression"])
        c.eq("compression_name", g[6], o["compression_name"])
        c.note("EXTENT_DATA hole" if int(g[0]) == 0 else "EXTENT_DATA regular")
        if int(g[5]):
            c.note("EXTENT_DATA compressed")
        g = _ints(g[:4])
    for name, value in zip(("disk_bytenr", "disk_num_bytes", "offset", "num_bytes"), g):
        c.eq(name, value, o[name])


def cmp_dir_log(body: Body, o: dict, c: ItemCheck) -> None:
    (end,) = body.match(rb"\t\tdir log end (\d+)\n")
    c.eq("end", int(end), o["end"])


# -- checksum tree ----------------------------------------------------------

def cmp_extent_csum(body: Body, o: dict, c: ItemCheck) -> None:
    """EXTENT_CSUM: the range, and (--csum-items) every checksum with the
    logical address it covers."""
    start, end, length = _ints(body.match(rb"\t\trange start (\d+) end (\d+) length (\d+)\n"))
    c.eq("start", start, o["start"])
    c.eq("end", end, o["end"])
    c.eq("length", length, o["length"])
    progs = [(int(a), h.decode()) for a, h in
             re.findall(rb"\[(\d+)\] 0x([0-9a-f]+)", body.data[body.pos:])]
    if re.sub(rb"\[\d+\] 0x[0-9a-f]+|[ \t\n]", b"", body.data[body.pos:]):
        raise ProgsFormatError(f"unexpected text among checksums: {body.data[body.pos:][:100]!r}")
    body.pos = len(body.data)
    step = o["length"] // o["count"] if o["count"] else 0
    ours = [(o["start"] + i * step, h) for i, h in enumerate(o["csums"])]
    c.eq("number of checksums", len(progs), o["count"])
    mismatched = [(p, q) for p, q in zip(progs, ours) if p != q]
    c.stats["values"] += len(progs)
    if mismatched:
        c.eq(f"checksums ({len(mismatched)} differ, first)", mismatched[0][0], mismatched[0][1])


# -- root tree --------------------------------------------------------------

def cmp_root_item(body: Body, o: dict, c: ItemCheck) -> None:
    """ROOT_ITEM; the v2 part (uuids, transids, times) is printed when
    generation == generation_v2, which is how progs tells v2 items."""
    g = _ints(body.match(rb"\t\tgeneration (\d+) root_dirid (\d+) bytenr (\d+) byte_limit (\d+)"
                         rb" bytes_used (\d+)\n"))
    for name, value in zip(("generation", "root_dirid", "bytenr", "byte_limit", "bytes_used"), g):
        c.eq(name, value, o[name])
    generation = g[0]
    last, flags, names, refs = body.match(
        rb"\t\tlast_snapshot (\d+) flags 0x([0-9a-f]+)\((\w*)\) refs (\d+)\n")
    c.eq("last_snapshot", int(last), o["last_snapshot"])
    c.eq("flags", int(flags, 16), o["flags"])
    c.eq("flag RDONLY", names == "RDONLY", "RDONLY" in o["flag_names"].split("|"))
    c.eq("refs", int(refs), o["refs"])
    g = body.match(rb"\t\tdrop_progress " + _KEY + rb" drop_level (\d+)\n")
    c.eq("drop_progress", _key(g[:3]), our_key(o["drop_progress"]))
    c.eq("drop_level", int(g[3]), o["drop_level"])
    level, gen_v2 = _ints(body.match(rb"\t\tlevel (\d+) generation_v2 (\d+)\n"))
    c.eq("level", level, o["level"])
    c.eq("generation_v2", gen_v2, o.get("generation_v2", 0))   # progs zero-fills v1 items
    if generation != gen_v2:
        return
    c.note("ROOT_ITEM v2")
    for name in ("uuid", "parent_uuid", "received_uuid"):
        (u,) = body.match(rb"\t\t" + name.encode() + rb" " + _UUID + rb"\n")
        c.eq(name, u, o.get(name))
    g = _ints(body.match(rb"\t\tctransid (\d+) otransid (\d+) stransid (\d+) rtransid (\d+)\n"))
    for name, value in zip(("ctransid", "otransid", "stransid", "rtransid"), g):
        c.eq(name, value, o.get(name))
    for t in ("ctime", "otime", "stime", "rtime"):
        c.eq(t, _time(body, t.encode()), _our_time(o[t]) if t in o else None)


def cmp_root_ref(body: Body, o: dict, c: ItemCheck) -> None:
    """ROOT_REF / ROOT_BACKREF: dirid, sequence and the name (which ends the item)."""
    tag = "ref" if c.key[1] == KT["ROOT_REF"] else "backref"
    dirid, seq = _ints(body.match(rb"\t\troot " + tag.encode() +
                                  rb" key dirid (\d+) sequence (\d+) name "))
    c.eq("dirid", dirid, o["dirid"])
    c.eq("sequence", seq, o["sequence"])
    c.eq("name", body.rest_of_item(), unescape_name(o["name"]))


def cmp_free_space_header(body: Body, o: dict, c: ItemCheck) -> None:
    """(FREE_SPACE UNTYPED bg) of the v1 space cache: where the cache inode is."""
    if c.key[0] != oracle.OBJECTIDS["FREE_SPACE"]:
        raise ProgsFormatError("progs prints a body only for FREE_SPACE UNTYPED items")
    g = body.match(rb"\t\tlocation " + _KEY + rb"\n"
                   rb"\t\tcache generation (\d+) entries (\d+) bitmaps (\d+)\n")
    c.eq("location", _key(g[:3]), our_key(o["location"]))
    c.eq("generation", int(g[3]), o["generation"])
    c.eq("num_entries", int(g[4]), o["num_entries"])
    c.eq("num_bitmaps", int(g[5]), o["num_bitmaps"])


# -- extent tree ------------------------------------------------------------

EXTENT_FLAGS = {"DATA": 1, "TREE_BLOCK": 2, "FULL_BACKREF": 256}


def _flag_bits(names: str, table: dict[str, int]) -> int:
    """'DATA|RAID1' -> bits, by ``table`` (names case-insensitive)."""
    upper = {k.upper(): v for k, v in table.items()}
    bits = 0
    for n in filter(None, names.split("|")):
        if n.upper() not in upper:
            raise ProgsFormatError(f"unknown flag {n!r} in {names!r}")
        bits |= upper[n.upper()]
    return bits


def _name_set(names: str) -> set[str]:
    return {n.upper() for n in names.split("|") if n and n.lower() not in ("none", "single")}


def _inline_ref(body: Body) -> dict:
    """One inline backref line of an EXTENT_ITEM / METADATA_ITEM. btrfs-progs
    6.19 puts "(type 0xseq) " before each, and names roots; its owner ref
    line reads "\t(172 0x5) textent owner root 5" (an escape typo in its
    printf)."""
    if body.startswith(b"\t(172 "):
        (root,) = body.match(rb"\t\(172 0x[0-9a-f]+\) textent owner root (\d+)\n")
        return {"type": KT["EXTENT_OWNER_REF"], "root": int(root)}
    body.match(rb"\t\t(?:\(\d+ 0x[0-9a-f]+\) )?")
    if body.startswith(b"tree block backref root "):
        (root,) = body.match(rb"tree block backref root (\S+)\n")
        return {"type": KT["TREE_BLOCK_REF"], "root": oracle.parse_number(root)}
    if body.startswith(b"shared block backref parent "):
        (parent,) = body.match(rb"shared block backref parent (\d+)\n")
        return {"type": KT["SHARED_BLOCK_REF"], "parent": int(parent)}
    if body.startswith(b"extent data backref root "):
        root, objectid, offset, count = body.match(
            rb"extent data backref root (\S+) objectid (\d+) offset (\d+) count (\d+)\n")
        return {"type": KT["EXTENT_DATA_REF"], "root": oracle.parse_number(root),
                "objectid": int(objectid), "offset": int(offset), "count": int(count)}
    parent, count = body.match(rb"shared data backref parent (\d+) count (\d+)\n")
    return {"type": KT["SHARED_DATA_REF"], "parent": int(parent), "count": int(count)}


def cmp_extent_item(body: Body, o: dict, c: ItemCheck) -> None:
    """EXTENT_ITEM / METADATA_ITEM: refs, generation, flags, the tree block
    level (and key, for non-skinny EXTENT_ITEMs of tree blocks) and every
    inline backref."""
    refs, gen, flags = body.match(rb"\t\trefs (\d+) gen (\d+) flags (\S*)\n")
    c.eq("refs", int(refs), o["refs"])
    c.eq("generation", int(gen), o["generation"])
    c.eq("flags", _flag_bits(flags, EXTENT_FLAGS), o["flags"])
    c.eq("flag_names", _name_set(flags), _name_set(o["flag_names"]))
    if c.key[1] == KT["METADATA_ITEM"]:
        (level,) = body.match(rb"\t\ttree block skinny level (\d+)\n")
        c.eq("level", int(level), o["level"])
    elif o["flags"] & EXTENT_FLAGS["TREE_BLOCK"]:
        g = body.match(rb"\t\ttree block " + _KEY + rb" level (\d+)\n")
        c.eq("tree_block_key", _key(g[:3]), our_key(o["tree_block_key"]))
        c.eq("level", int(g[3]), o["level"])
        c.note("EXTENT_ITEM tree block info")
    progs = []
    while not body.at_end():
        progs.append(_inline_ref(body))
    ours = [{k: v for k, v in r.items() if k != "type_name"} for r in o["inline_refs"]]
    c.eq("number of inline refs", len(progs), len(ours))
    for i, (p, q) in enumerate(zip(progs, ours)):
        c.eq(f"inline ref {i}", p, q)
    for p in progs:
        c.note("inline " + oracle.KEY_TYPE_PRINTED[p["type"]])


def cmp_tree_block_ref(body: Body, o: dict, c: ItemCheck) -> None:
    """Keyed TREE_BLOCK_REF: progs prints a label; the root is the key offset."""
    body.literal(b"\t\ttree block backref\n")
    c.eq("root", c.key[2], o["root"])


def cmp_shared_block_ref(body: Body, o: dict, c: ItemCheck) -> None:
    """Keyed SHARED_BLOCK_REF: progs prints a label; the parent is the key offset."""
    body.literal(b"\t\tshared block backref\n")
    c.eq("parent", c.key[2], o["parent"])


def cmp_extent_data_ref(body: Body, o: dict, c: ItemCheck) -> None:
    root, objectid, offset, count = body.match(
        rb"\t\textent data backref root (\S+) objectid (\d+) offset (\d+) count (\d+)\n")
    c.eq("root", oracle.parse_number(root), o["root"])
    c.eq("objectid", int(objectid), o["objectid"])
    c.eq("offset", int(offset), o["offset"])
    c.eq("count", int(count), o["count"])


def cmp_shared_data_ref(body: Body, o: dict, c: ItemCheck) -> None:
    (count,) = body.match(rb"\t\tshared data backref count (\d+)\n")
    c.eq("count", int(count), o["count"])
    c.eq("parent", c.key[2], o["parent"])


BG_FLAGS = {"DATA": 1 << 0, "SYSTEM": 1 << 1, "METADATA": 1 << 2, "RAID0": 1 << 3,
            "RAID1": 1 << 4, "DUP": 1 << 5, "RAID10": 1 << 6, "RAID5": 1 << 7,
            "RAID6": 1 << 8, "RAID1C3": 1 << 9, "RAID1C4": 1 << 10, "single": 0}


def cmp_block_group(body: Body, o: dict, c: ItemCheck) -> None:
    used, chunk_objectid, flags = body.match(
        rb"\t\tblock group used (\d+) chunk_objectid (\d+) flags (\S+)\n")
    c.eq("used", int(used), o["used"])
    c.eq("chunk_objectid", int(chunk_objectid), o["chunk_objectid"])
    c.eq("flags", _flag_bits(flags, BG_FLAGS), o["flags"])
    c.eq("flag_names", _name_set(flags), _name_set(o["flag_names"]))


# -- free space tree --------------------------------------------------------

def cmp_free_space_info(body: Body, o: dict, c: ItemCheck) -> None:
    count, flags = _ints(body.match(rb"\t\tfree space info extent count (\d+) flags (\d+)\n"))
    c.eq("extent_count", count, o["extent_count"])
    c.eq("flags", flags, o["flags"])


# -- chunk and device trees -------------------------------------------------

def cmp_chunk_item(body: Body, o: dict, c: ItemCheck) -> None:
    g = body.match(rb"\t\tlength (\d+) owner (\d+) stripe_len (\d+) type (\S+)\n"
                   rb"\t\tio_align (\d+) io_width (\d+) sector_size (\d+)\n"
                   rb"\t\tnum_stripes (\d+) sub_stripes (\d+)\n")
    for name, value in zip(("length", "owner", "stripe_len"), g):
        c.eq(name, int(value), o[name])
    c.eq("type", _flag_bits(g[3], BG_FLAGS), o["type"])
    for name, value in zip(("io_align", "io_width", "sector_size", "num_stripes",
                            "sub_stripes"), g[4:]):
        c.eq(name, int(value), o[name])
    stripes = []
    while not body.at_end():
        i, devid, offset, uuid = body.match(rb"\t\t\tstripe (\d+) devid (\d+) offset (\d+)\n"
                                            rb"\t\t\tdev_uuid " + _UUID + rb"\n")
        stripes.append({"devid": int(devid), "offset": int(offset), "dev_uuid": uuid})
    c.eq("stripes", stripes, o["stripes"])


def cmp_dev_item(body: Body, o: dict, c: ItemCheck) -> None:
    g = body.match(rb"\t\tdevid (\d+) total_bytes (\d+) bytes_used (\d+)\n"
                   rb"\t\tio_align (\d+) io_width (\d+) sector_size (\d+) type (\d+)\n"
                   rb"\t\tgeneration (\d+) start_offset (\d+) dev_group (\d+)\n"
                   rb"\t\tseek_speed (\d+) bandwidth (\d+)\n"
                   rb"\t\tuuid " + _UUID + rb"\n\t\tfsid " + _UUID + rb"\n")
    names = ("devid", "total_bytes", "bytes_used", "io_align", "io_width", "sector_size",
             "type", "generation", "start_offset", "dev_group", "seek_speed", "bandwidth")
    for name, value in zip(names, g):
        c.eq(name, int(value), o[name])
    c.eq("uuid", g[12], o["uuid"])
    c.eq("fsid", g[13], o["fsid"])


def cmp_dev_extent(body: Body, o: dict, c: ItemCheck) -> None:
    g = body.match(rb"\t\tdev extent chunk_tree (\d+)\n"
                   rb"\t\tchunk_objectid (\d+) chunk_offset (\d+) length (\d+)\n"
                   rb"\t\tchunk_tree_uuid " + _UUID + rb"\n")
    for name, value in zip(("chunk_tree", "chunk_objectid", "chunk_offset", "length"), g):
        c.eq(name, int(value), o[name])
    c.eq("chunk_tree_uuid", g[4], o["chunk_tree_uuid"])


def cmp_persistent_item(body: Body, o: dict, c: ItemCheck) -> None:
    """(DEV_STATS PERSISTENT_ITEM devid): the five error counters."""
    objectid, devid = body.match(rb"\t\tpersistent item objectid (\S+) offset (\d+)\n")
    if objectid != "DEV_STATS":
        raise ProgsFormatError(f"persistent item {objectid} has no comparer")
    c.eq("devid", int(devid), o["devid"])
    g = _ints(body.match(rb"\t\tdevice stats\n\t\twrite_errs (\d+) read_errs (\d+)"
                         rb" flush_errs (\d+) corruption_errs (\d+) generation (\d+)\n"))
    for name, value in zip(("write_io_errs", "read_io_errs", "flush_io_errs",
                            "corruption_errs", "generation_errs"), g):
        c.eq(name, value, o.get(name))


# -- quota tree -------------------------------------------------------------

QGROUP_STATUS_FLAGS = {"ON": 1, "OFF": 0, "SCANNING": 2, "INCONSISTENT": 4, "SIMPLE_MODE": 8}


def _qgroupid(offset: int) -> str:
    return f"{offset >> 48}/{offset & ((1 << 48) - 1)}"


def cmp_qgroup_status(body: Body, o: dict, c: ItemCheck) -> None:
    """Progs 6.2 knows the ON, RESCAN (printed SCANNING) and INCONSISTENT bits;
    6.19 SIMPLE_MODE too, and the enable_gen of simple quotas."""
    version, gen, flags, scan, enable_gen = body.match(
        rb"\t\tversion (\d+) generation (\d+) flags (\S+) scan (\d+)(?: enable_gen (\d+))?\n")
    c.eq("version", int(version), o["version"])
    c.eq("generation", int(gen), o["generation"])
    shown = 15 if "SIMPLE_MODE" in flags or enable_gen else 7
    c.eq("flags", _flag_bits(flags, QGROUP_STATUS_FLAGS), o["flags"] & shown)
    c.eq("rescan", int(scan), o["rescan"])
    if enable_gen is not None:
        c.eq("enable_gen", int(enable_gen), o["enable_gen"])
        c.note("QGROUP_STATUS enable_gen")


def cmp_qgroup_info(body: Body, o: dict, c: ItemCheck) -> None:
    g = _ints(body.match(rb"\t\tgeneration (\d+)\n"
                         rb"\t\treferenced (\d+) referenced_compressed (\d+)\n"
                         rb"\t\texclusive (\d+) exclusive_compressed (\d+)\n"))
    for name, value in zip(("generation", "rfer", "rfer_cmpr", "excl", "excl_cmpr"), g):
        c.eq(name, value, o[name])
    c.eq("qgroupid", _qgroupid(c.key[2]), o["qgroupid"])


def cmp_qgroup_limit(body: Body, o: dict, c: ItemCheck) -> None:
    """Progs prints the flags in hex without 0x and the limits as signed."""
    g = body.match(rb"\t\tflags ([0-9a-f]+)\n"
                   rb"\t\tmax_referenced (-?\d+) max_exclusive (-?\d+)\n"
                   rb"\t\trsv_referenced (-?\d+) rsv_exclusive (-?\d+)\n")
    c.eq("flags", int(g[0], 16), o["flags"])
    for name, value in zip(("max_rfer", "max_excl", "rsv_rfer", "rsv_excl"), g[1:]):
        c.eq(name, int(value) % oracle.U64, o[name])
    c.eq("qgroupid", _qgroupid(c.key[2]), o["qgroupid"])
    if o["max_rfer"] or o["max_excl"]:
        c.note("QGROUP_LIMIT with a limit")


# -- uuid tree and the rest -------------------------------------------------

def cmp_uuid_item(body: Body, o: dict, c: ItemCheck) -> None:
    """UUID_KEY_*: the subvolume ids; the uuid is the key (two little-endian halves)."""
    ids = []
    while not body.at_end():
        ids.append(int(body.match(rb"\t\tsubvol_id (\d+)\n")[0]))
    c.eq("subvol_ids", ids, o["subvol_ids"])
    raw = c.key[0].to_bytes(8, "little") + c.key[2].to_bytes(8, "little")
    h = raw.hex()
    c.eq("uuid", f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}", o["uuid"])


def cmp_string_item(body: Body, o: dict, c: ItemCheck) -> None:
    body.literal(b"\t\titem data ")
    c.eq("string", body.rest_of_item(), unescape_name(o["string"]))


COMPARERS: dict[int, Comparer] = {
    KT["UNTYPED"]: cmp_free_space_header,
    KT["INODE_ITEM"]: cmp_inode_item,
    KT["INODE_REF"]: cmp_inode_ref,
    KT["INODE_EXTREF"]: cmp_inode_extref,
    KT["XATTR_ITEM"]: cmp_dir_item,
    KT["DIR_ITEM"]: cmp_dir_item,
    KT["DIR_INDEX"]: cmp_dir_item,
    KT["DIR_LOG_ITEM"]: cmp_dir_log,
    KT["DIR_LOG_INDEX"]: cmp_dir_log,
    KT["EXTENT_DATA"]: cmp_file_extent,
    KT["EXTENT_CSUM"]: cmp_extent_csum,
    KT["ROOT_ITEM"]: cmp_root_item,
    KT["ROOT_REF"]: cmp_root_ref,
    KT["ROOT_BACKREF"]: cmp_root_ref,
    KT["EXTENT_ITEM"]: cmp_extent_item,
    KT["METADATA_ITEM"]: cmp_extent_item,
    KT["TREE_BLOCK_REF"]: cmp_tree_block_ref,
    KT["SHARED_BLOCK_REF"]: cmp_shared_block_ref,
    KT["EXTENT_DATA_REF"]: cmp_extent_data_ref,
    KT["SHARED_DATA_REF"]: cmp_shared_data_ref,
    KT["BLOCK_GROUP_ITEM"]: cmp_block_group,
    KT["FREE_SPACE_INFO"]: cmp_free_space_info,
    KT["CHUNK_ITEM"]: cmp_chunk_item,
    KT["DEV_ITEM"]: cmp_dev_item,
    KT["DEV_EXTENT"]: cmp_dev_extent,
    KT["PERSISTENT_ITEM"]: cmp_persistent_item,
    KT["QGROUP_STATUS"]: cmp_qgroup_status,
    KT["QGROUP_INFO"]: cmp_qgroup_info,
    KT["QGROUP_LIMIT"]: cmp_qgroup_limit,
    KT["UUID_KEY_SUBVOL"]: cmp_uuid_item,
    KT["UUID_KEY_RECEIVED_SUBVOL"]: cmp_uuid_item,
    KT["STRING_ITEM"]: cmp_string_item,
}

#: What progs prints for items whose values it does not print (the key says
#: it all, or progs 6.2 does not decode the type): nothing to compare.
PROGS_PRINTS_NO_VALUES: dict[int, bytes] = {
    KT["ORPHAN_ITEM"]: b"\t\torphan item\n",
    KT["FREE_SPACE_EXTENT"]: b"\t\tfree space extent\n",
    KT["FREE_SPACE_BITMAP"]: b"\t\tfree space bitmap\n",
    KT["QGROUP_RELATION"]: b"",
    KT["DEV_REPLACE"]: b"",
    KT["VERITY_DESC_ITEM"]: b"",
    KT["VERITY_MERKLE_ITEM"]: b"",
}


def type_name(t: int) -> str:
    return oracle.KEY_TYPE_PRINTED.get(t, f"UNKNOWN.{t}")


def compare_item(item: ProgsItem, ours: dict, stats: Counter, failures: list[str]) -> None:
    """Compare one item (already matched by leaf and slot) and count it."""
    c = ItemCheck(item, stats, failures)
    c.eq("key", item.key, our_key(ours))
    if "decode_error" in ours:
        failures.append(f"{item.where()}: our decode_error: {ours['decode_error']}")
    name = type_name(item.type)
    if item.type == KT["UNTYPED"] and not item.body:
        stats[f"skipped:{name}"] += 1        # progs decodes only FREE_SPACE UNTYPED
        return
    comparer = COMPARERS.get(item.type)
    if comparer is None:
        if item.body == PROGS_PRINTS_NO_VALUES.get(item.type, b""):
            stats[f"skipped:{name}"] += 1
        else:
            failures.append(f"{item.where()}: progs prints values for {name} but "
                            f"item_values has no comparer: {item.body[:200]!r}")
        return
    body = Body(item.body)
    try:
        comparer(body, ours, c)
        if not body.at_end():
            raise ProgsFormatError(f"unparsed text left: {body.data[body.pos:][:200]!r}")
    except (ValueError, KeyError, IndexError, TypeError) as e:   # ProgsFormatError too
        failures.append(f"{item.where()}: {type(e).__name__}: {e} "
                        f"(progs body {item.body[:300]!r})")
        return
    stats[name] += 1


def compare_dump(devs: Sequence[str], binary: str | None = None) -> tuple[Counter, list[str]]:
    """Compare every leaf item of every tree of the filesystem on ``devs``
    (unmounted) between our JSON dump and progs' text.

    Returns (stats, failures): see the module docstring."""
    devs = [str(d) for d in devs]
    progs = parse_progs_items(progs_raw_text(devs))
    ours = our_items(devs, binary=binary)
    missing = sorted({it.leaf for it in progs if (it.leaf, it.slot) not in ours})
    for i in range(0, len(missing), 32):       # leaves our all-trees dump did not reach
        ours.update(our_items(devs, missing[i:i + 32], binary=binary))
    stats: Counter = Counter()
    failures: list[str] = []
    seen: set[tuple[int, int]] = set()
    for item in progs:
        where = (item.leaf, item.slot)
        if where in seen:                      # a leaf shared by snapshots
            continue
        seen.add(where)
        o = ours.get(where)
        if o is None:
            failures.append(f"{item.where()}: not in our dump")
            continue
        compare_item(item, o, stats, failures)
    return stats, failures
