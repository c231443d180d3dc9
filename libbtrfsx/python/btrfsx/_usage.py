# SPDX-License-Identifier: LGPL-2.1-or-later
"""Filesystem usage with the hint breakdown (``btrfsx filesystem usage``)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Optional, Union

from . import _btrfsx
from ._common import (
    Hint, Path, Paths, _BlockGroupFlags, _c_fields, _fsid, _hint, _path_list, profile_name)


class UsageWarning(enum.IntFlag):
    """Conditions :func:`usage` flags in :attr:`Usage.warning_flags`."""
    METADATA_LOW = _btrfsx.USAGE_W_METADATA_LOW            #: room < 50% of metadata used
    DATA_ON_META_DEVS = _btrfsx.USAGE_W_DATA_ON_META_DEVS  #: data may fill metadata devices
    HINTS_IGNORED = _btrfsx.USAGE_W_HINTS_IGNORED          #: the mounted kernel ignores hints


@_c_fields()
@dataclasses.dataclass(frozen=True)
class UsageClass:
    """The devices sharing one hint value (device bytes)."""
    hint: Union[Hint, int]
    devices: int
    size: int
    unallocated: int
    data_allocatable: int        #: what a data-only fill would take
    metadata_allocatable: int    #: what a metadata-only fill would take


@_c_fields()
@dataclasses.dataclass(frozen=True)
class UsageDevice:
    """One member device's space (device bytes)."""
    devid: int
    path: str                    #: "" when missing
    hint: Union[Hint, int]
    missing: bool
    size: int
    slack: int
    unallocated: int
    data: int
    metadata: int
    system: int


@_c_fields()
@dataclasses.dataclass(frozen=True)
class UsageSpace(_BlockGroupFlags):
    """One block group type and profile: a line of the Data/Metadata/System
    list (logical bytes)."""
    flags: int                   #: block group type and profile bits
    total_bytes: int
    used_bytes: int


@_c_fields()
@dataclasses.dataclass(frozen=True)
class UsageReclaim:
    """One kind's automatic reclaim by the kernel: its sysfs settings, the
    threshold of now, the block groups used below it (logical bytes, and
    what they take of the devices) and what it relocated since the mount."""
    known: bool                  #: the kernel shows this kind's settings
    on: bool                     #: it relocates now or as space runs low
    dynamic: bool
    periodic: bool
    threshold: int               #: percent of a block group's size; 0 off
    below_block_groups: int
    below_used: int
    below_size: int
    below_device_bytes: int
    reclaimed_block_groups: int  #: since the mount
    reclaimed_bytes: int
    reclaim_errors: int


@dataclasses.dataclass(frozen=True)
class Reclaim:
    """The kernel's automatic reclaim of a mounted filesystem, which the
    usage figures leave out (``reclaim`` of ``btrfsx filesystem usage``)."""
    data_chunk_size: int         #: the data chunk size its rules reckon with
    device_bytes_below_threshold: int
    data: Optional[UsageReclaim]  #: None where the kernel shows no settings
    metadata: Optional[UsageReclaim]
    system: Optional[UsageReclaim]

    @classmethod
    def _from(cls, raw: dict) -> Optional["Reclaim"]:
        if not raw["have_reclaim"]:
            return None
        kinds = [UsageReclaim(**k) if k["known"] else None for k in raw["reclaim"]]
        return cls(raw["reclaim_data_chunk_size"], raw["reclaim_device_bytes_below_threshold"],
                   *kinds)


_RECLAIM_FIELDS = ("have_reclaim", "reclaim_data_chunk_size",
                   "reclaim_device_bytes_below_threshold")


@_c_fields(absorbs=("have_statfs", "have_global_reserve") + _RECLAIM_FIELDS,
           nested=("classes", "devices", "spaces", "reclaim"))
@dataclasses.dataclass(frozen=True)
class Usage:
    """Every figure of ``btrfsx filesystem usage`` (bytes).

    The first group is btrfs-progs' overall section; the second the allocator
    model: ``free_estimated`` is the data still writable with the hints as the
    kernel treats them, ``free_strict`` the same with every preference strict,
    ``metadata_room`` the metadata still writable (``metadata_room_after_data``
    once data filled its room) and ``metadata_needed`` the warning threshold,
    50% of the metadata used."""
    fsid: str
    mounted: bool
    path: str                    #: the mount point, or the first device
    device_size: int
    device_allocated: int
    device_unallocated: int      #: negative when over-allocated
    device_missing: int
    device_slack: int
    used: int
    progs_free_estimated: int    #: btrfs-progs' "Free (estimated)"
    progs_free_min: int
    data_ratio: float
    metadata_ratio: float
    hints_honoured: bool
    mixed: bool                  #: mixed data+metadata block groups
    data_profile: int            #: block group flags of the next data chunk
    metadata_profile: int
    data_size: int
    data_used: int
    metadata_size: int
    metadata_used: int
    data_free_in_chunks: int
    free_estimated: int
    free_strict: int
    free_statfs: Optional[int]   #: what df shows; None when not mounted
    metadata_free_in_chunks: int
    metadata_room: int
    metadata_room_after_data: int
    metadata_needed: int
    data_on_metadata_devices: int
    warning_flags: UsageWarning
    global_reserve: Optional[int]        #: None when not mounted
    global_reserve_used: Optional[int]
    multiple_profiles: list[str]  #: the types with several profiles, e.g. ["data"]
    strict: bool                 #: the model ran with every preference strict
    data_new_chunks: int         #: logical bytes of the data chunks the model allocated
    kernel: str                  #: whose behaviour the model followed ("6.18"; "" unknown)
    kernel_running: bool         #: the running kernel's, not one asked for
    classes: list[UsageClass]    #: by hint value
    devices: list[UsageDevice]   #: by devid
    spaces: list[UsageSpace]     #: data, metadata, system; by profile
    reclaim: Optional[Reclaim]   #: None unmounted or on a kernel without it
    warnings: tuple[str, ...] = ()

    @property
    def data_profile_name(self) -> str:
        """``data_profile`` as a name ("single", "raid1", ...)."""
        return profile_name(self.data_profile)

    @property
    def metadata_profile_name(self) -> str:
        """``metadata_profile`` as a name."""
        return profile_name(self.metadata_profile)

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "Usage":
        fields = dict(raw)
        have_statfs = fields.pop("have_statfs")
        have_reserve = fields.pop("have_global_reserve")
        for name in _RECLAIM_FIELDS:
            fields.pop(name)
        fields.update(
            fsid=_fsid(raw["fsid"]),
            free_statfs=raw["free_statfs"] if have_statfs else None,
            global_reserve=raw["global_reserve"] if have_reserve else None,
            global_reserve_used=raw["global_reserve_used"] if have_reserve else None,
            multiple_profiles=[t for t in raw["multiple_profiles"].split(", ") if t],
            warning_flags=UsageWarning(raw["warning_flags"]),
            classes=[UsageClass(**dict(c, hint=_hint(c["hint"]))) for c in raw["classes"]],
            devices=[UsageDevice(**dict(d, hint=_hint(d["hint"]))) for d in raw["devices"]],
            spaces=[UsageSpace(**s) for s in raw["spaces"]],
            reclaim=Reclaim._from(raw))
        return cls(**fields, warnings=warnings)


def usage(paths: Paths, *, ignore_hints: bool = False, strict: bool = False,
          sysfs_root: Optional[Path] = None, kernel: Optional[str] = None) -> Usage:
    """Filesystem usage with the hint breakdown, mounted or not.

    @paths: a mount point (or any path on a mounted btrfs; needs root), or the
    member devices / image files of an unmounted filesystem (others are found
    by fsid). A device of a mounted filesystem is read through its mount
    point. @ignore_hints models the allocator as if no hints were set,
    @strict as if every preference were strict (``btrfsx filesystem usage
    --strict``). @kernel ("6.1"): model that kernel's behaviour, not the
    running one's (:func:`kernel_traits`)."""
    flags = (_btrfsx.USAGE_IGNORE_HINTS if ignore_hints else 0) | \
        (_btrfsx.USAGE_STRICT if strict else 0)
    return Usage._from(*_btrfsx.usage_get(_path_list(paths), sysfs_root, flags, kernel))
