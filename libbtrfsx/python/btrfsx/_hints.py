# SPDX-License-Identifier: LGPL-2.1-or-later
"""Allocation hints of member devices, online and offline, and the
superblocks of an unmounted filesystem."""

from __future__ import annotations

import dataclasses
import enum
from typing import Optional, Union

from . import _btrfsx
from ._common import (
    Hint, Path, Paths, _U64_LIMIT, _c_fields, _fsid, _hint, _invalid, _path_list, hint_name)


class HintInterface(enum.IntEnum):
    """Which kernel file carries the hint of a mounted filesystem."""
    NONE = _btrfsx.HINT_IFACE_NONE          #: not mounted, or the kernel ignores hints
    NAME = _btrfsx.HINT_IFACE_NAME          #: devinfo/<devid>/allocation_hint (V12)
    TYPE = _btrfsx.HINT_IFACE_TYPE          #: devinfo/<devid>/type (kakra's fork)


@_c_fields()
@dataclasses.dataclass(frozen=True)
class FsInfo:
    """What the superblocks of an unmounted filesystem say."""
    fsid: str
    metadata_uuid: str
    label: str
    generation: int
    num_devices: int
    total_bytes: int
    bytes_used: int
    nodesize: int
    sectorsize: int
    csum_type: int
    csum_name: str           #: "crc32c", "xxhash64", "sha256" or "blake2b"
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "FsInfo":
        return cls(**dict(raw, fsid=_fsid(raw["fsid"]),
                          metadata_uuid=_fsid(raw["metadata_uuid"])), warnings=warnings)


@_c_fields()
@dataclasses.dataclass(frozen=True)
class HintState:
    """The allocation hint of one member device."""
    devid: int
    path: str
    type: int                #: the whole device type field
    hint: Union[Hint, int]   #: its hint bits (an int when outside :class:`Hint`)
    mounted: bool
    interface: HintInterface
    effective: bool          #: the running kernel honours it
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> Optional[str]:
        """The hint's name, or None for a value without one."""
        return hint_name(self.hint)

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "HintState":
        return cls(**dict(raw, hint=_hint(raw["hint"]),
                          interface=HintInterface(raw["interface"])), warnings=warnings)


@dataclasses.dataclass(frozen=True)
class HintChange:
    """What :func:`hint_set` changed: the device before and after."""
    before: HintState
    after: HintState
    warnings: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the type field differs afterwards."""
        return self.before.type != self.after.type


def hint_parse(text: str, allow_number: bool = False) -> Union[Hint, int]:
    """Parse a hint name: any case, the kernel's spelling (METADATA_ONLY), the
    short forms d, m, donly, monly; with @allow_number also a number.

    Raises InvalidArgumentError for anything else."""
    return _hint(_btrfsx.hint_parse(text, allow_number))


def fs_info_offline(paths: Paths) -> FsInfo:
    """The identity of an unmounted filesystem from its superblocks.

    @paths: one or more member devices or image files; the other members are
    found by fsid."""
    return FsInfo._from(*_btrfsx.fs_info_offline(_path_list(paths)))


def hint_get(device: Path, *, sysfs_root: Optional[Path] = None) -> HintState:
    """The allocation hint of one member device (a block device or image).

    Mounted: read from sysfs when the kernel exposes hints, otherwise the
    stored value with ``effective`` False (and a warning). Unmounted: read
    from the device item."""
    return HintState._from(*_btrfsx.hint_get(sysfs_root, device))


def hint_set(device: Path, hint: Union[Hint, int, str], *, force: bool = False,
             sysfs_root: Optional[Path] = None) -> HintChange:
    """Set the allocation hint of one member device.

    @hint: a :class:`Hint`, its value, or a name :func:`hint_parse` takes
    (with @force also a number). @force allows values outside :class:`Hint`
    and turns the guard rails off.

    Mounted: written through the kernel's sysfs file and read back;
    NotSupportedError when the kernel ignores hints. Unmounted: the device
    items and every superblock copy are rewritten in a crash-safe order;
    BusyError when the filesystem is in use. InvalidArgumentError for a value
    that leaves a profile in use without enough devices to allocate a chunk
    (unless @force)."""
    if isinstance(hint, str):
        hint = hint_parse(hint, allow_number=force)
    elif not isinstance(hint, int) or isinstance(hint, bool):
        raise TypeError(f"hint must be a Hint, an int or a name, not {type(hint).__name__}")
    elif not 0 <= hint < _U64_LIMIT:
        raise _invalid(f"allocation hint {hint} is not a 64-bit unsigned value")
    flags = _btrfsx.HINT_SET_FORCE if force else 0
    (before, after), warnings = _btrfsx.hint_set(sysfs_root, device, int(hint), flags)
    return HintChange(HintState._from(before), HintState._from(after), warnings)
