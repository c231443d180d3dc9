# SPDX-License-Identifier: GPL-2.0-or-later
"""Many small filesystems in one guest disk, each member a device-mapper
device, so that faults come from the block layer.

A guest has a handful of virtio disks; the fault tests need dozens of
members, fresh for every case. The host lays the members' image files end to
end in one sparse disk image (a ``Pack``), 1 MiB aligned. In the guest each
member is a dm device over its slice of that disk (``/dev/vda``): ``linear``
where it is healthy, and over chosen ranges one of the targets the kernel's
own test suites use:

* ``error``: the sectors fail every read and write (a dying disk's bad spot);
  reloading the table without it "remaps" them;
* ``delay``: every request waits (a device that stalls);
* ``flakey``: with ``error_writes`` writes fail, with ``drop_writes`` they
  are acknowledged and lost, reads pass;
* ``log-writes``: every write is recorded on a log device, for replay.

After the guest, the host reads each member back out of the pack.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from helpers import fsutil

SECTOR = 512
ALIGN = 1 << 20

# Shell functions for the guest scripts; dm tables come on stdin. There is
# no udev in the guests: no udev sync, and the /dev/mapper nodes are made here.
DM_FUNCTIONS = r"""
dm_create() { dmsetup create --noudevsync "$1" && dmsetup mknodes "$1"; }
# The switch does not write back the device's page cache first (--nolockfs): a
# writer's pending writes meet the new table.
dm_reload() { dmsetup load "$1" && dmsetup resume --nolockfs --noudevsync "$1"; }
dm_remove() { dmsetup remove --noudevsync "$1"; }
# elapsed seconds since boot, for timings
now() { cut -d' ' -f1 /proc/uptime; }
"""


@dataclass
class Member:
    name: str          # the dm device: /dev/mapper/<name> in the guest
    offset: int        # where its bytes are in the pack
    size: int

    @property
    def dev(self) -> str:
        return f"/dev/mapper/{self.name}"


@dataclass
class Fault:
    """Bytes [start, start + length) of a member behind another dm target.
    ``target`` is its table text after the sector count, with ``{disk}`` and
    ``{sector}`` standing for the pack disk and the range's first sector in it:
    ``"error"``, ``"delay {disk} {sector} 3600000"``,
    ``"flakey {disk} {sector} 0 3600 1 drop_writes"``."""
    start: int
    length: int
    target: str = "error"


class Pack:
    """Member images laid end to end in one sparse disk image."""

    def __init__(self, path: Path, disk: str = "/dev/vda"):
        self.path = Path(path)
        self.disk = disk
        self.end = 0
        self.path.write_bytes(b"")

    def _place(self, name: str, size: int) -> Member:
        member = Member(name, self.end, size)
        self.end += -(-size // ALIGN) * ALIGN
        with open(self.path, "r+b") as f:
            f.truncate(self.end)
        return member

    def add(self, name: str, image: str | os.PathLike) -> Member:
        """Copies @image (its data ranges: the images are sparse) into the pack."""
        member = self._place(name, os.path.getsize(image))
        with open(image, "rb") as src, open(self.path, "r+b") as dst:
            for start, stop in fsutil.data_ranges(image):
                src.seek(start)
                dst.seek(member.offset + start)
                while start < stop:
                    chunk = src.read(min(stop - start, 8 << 20))
                    dst.write(chunk)
                    start += len(chunk)
        return member

    def add_blank(self, name: str, size: int) -> Member:
        return self._place(name, size)

    def extract(self, member: Member, dest: str | os.PathLike) -> Path:
        """The member's bytes as a sparse image file @dest."""
        dest = Path(dest)
        with open(self.path, "rb") as src, open(dest, "wb") as dst:
            dst.truncate(member.size)
            for start, stop in fsutil.data_ranges(self.path):
                lo, hi = max(start, member.offset), min(stop, member.offset + member.size)
                pos = lo
                while pos < hi:
                    src.seek(pos)
                    chunk = src.read(min(hi - pos, 8 << 20))
                    if chunk.strip(b"\0"):
                        dst.seek(pos - member.offset)
                        dst.write(chunk)
                    pos += len(chunk)
        return dest

    def digest(self, member: Member) -> str:
        """sha256 of the member's bytes."""
        h = hashlib.sha256()
        with open(self.path, "rb") as f:
            f.seek(member.offset)
            left = member.size
            while left:
                chunk = f.read(min(left, 8 << 20))
                h.update(chunk)
                left -= len(chunk)
        return h.hexdigest()

    def read(self, member: Member, offset: int, length: int) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(member.offset + offset)
            return f.read(length)

    def table(self, member: Member, faults: list[Fault] = ()) -> str:
        """The dm table of @member: linear over its slice, @faults where they are."""
        lines, pos = [], 0
        for fault in sorted(faults, key=lambda f: f.start):
            assert fault.start % SECTOR == 0 and fault.length % SECTOR == 0, fault
            assert pos <= fault.start and fault.start + fault.length <= member.size, fault
            if fault.start > pos:
                lines.append(self._linear(member, pos, fault.start - pos))
            sector = (member.offset + fault.start) // SECTOR
            target = fault.target.format(disk=self.disk, sector=sector)
            lines.append(f"{fault.start // SECTOR} {fault.length // SECTOR} {target}")
            pos = fault.start + fault.length
        if pos < member.size:
            lines.append(self._linear(member, pos, member.size - pos))
        return "\n".join(lines)

    def _linear(self, member: Member, start: int, length: int) -> str:
        return (f"{start // SECTOR} {length // SECTOR} linear {self.disk} "
                f"{(member.offset + start) // SECTOR}")

    def create(self, member: Member, faults: list[Fault] = ()) -> str:
        """Guest script lines creating @member's dm device."""
        return f"dm_create {member.name} <<'TABLE'\n{self.table(member, faults)}\nTABLE\n"

    def reload(self, member: Member, faults: list[Fault] = ()) -> str:
        """Guest script lines switching @member's device to a new table."""
        return f"dm_reload {member.name} <<'TABLE'\n{self.table(member, faults)}\nTABLE\n"
