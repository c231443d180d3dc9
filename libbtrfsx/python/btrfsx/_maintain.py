# SPDX-License-Identifier: LGPL-2.1-or-later
"""Keeping metadata room and placement by moving the fewest bytes
(``btrfsx maintain plan|run``)."""

from __future__ import annotations

import dataclasses
import enum
import threading
from typing import Optional

from . import _btrfsx
from ._common import BtrfsxError, Path, _c_fields, _fsid, profile_name, _text_or_none, type_name


class MaintainReason(enum.IntEnum):
    """Why a chunk moves."""
    ROOM = _btrfsx.MAINTAIN_ROOM            #: metadata room below the target
    EMPTY = _btrfsx.MAINTAIN_EMPTY          #: an empty or nearly empty block group
    MISPLACED = _btrfsx.MAINTAIN_MISPLACED  #: the hints want it elsewhere


class MaintainStatus(enum.IntEnum):
    """How :func:`maintain` ended."""
    NOTHING = _btrfsx.MAINTAIN_NOTHING      #: the target is met already
    PLANNED = _btrfsx.MAINTAIN_PLANNED      #: the actions meet it (a plan)
    MET = _btrfsx.MAINTAIN_MET              #: the run met it
    CANNOT = _btrfsx.MAINTAIN_CANNOT        #: moving data cannot (device_needed would)
    STOPPED = _btrfsx.MAINTAIN_STOPPED      #: the run stopped before it
    FAILED = _btrfsx.MAINTAIN_FAILED


@_c_fields()
@dataclasses.dataclass(frozen=True)
class MaintainChunk:
    """A chunk to move (planned) or moved."""
    logical: int
    length: int
    used: int                    #: what the kernel copies
    type: int                    #: block group type and profile bits
    seconds: Optional[float]     #: planned: at the copy rate (None unknown); moved: taken
    reason: MaintainReason

    @property
    def kind(self) -> str:
        """"data", "metadata", "system" or "data+metadata"."""
        return type_name(self.type)

    @property
    def profile(self) -> str:
        """"single", "dup", "raid1", ..."""
        return profile_name(self.type)

    @classmethod
    def _from(cls, raw: dict) -> "MaintainChunk":
        return cls(**dict(raw, reason=MaintainReason(raw["reason"]),
                          seconds=raw["seconds"] if raw["seconds"] >= 0 else None))


@_c_fields()
@dataclasses.dataclass(frozen=True)
class MaintainState:
    """A filesystem's state, now or predicted."""
    metadata_room: int
    metadata_used: int
    unallocated: int             #: device bytes in no chunk, writable devices
    days_left: Optional[float]   #: at the pace; None unknown, inf when none is used
    misplaced: int               #: chunks breaking the hints

    @classmethod
    def _from(cls, raw: dict) -> "MaintainState":
        return cls(**dict(raw, days_left=raw["days_left"] if raw["days_left"] >= 0 else None))


@_c_fields(nested=("before", "after", "final", "actions", "moved"))
@dataclasses.dataclass(frozen=True)
class MaintainResult:
    """The result of :func:`maintain`."""
    status: MaintainStatus
    fsid: str
    path: str                    #: the mount point
    refused: Optional[str]       #: a plan: what a real run would be refused for
    reason: Optional[str]        #: cannot meet, stopped, failed: why
    target_met: bool
    target: int                  #: metadata room wanted; 0 none
    target_why: str
    room_below: bool
    placement_wanted: bool
    before: MaintainState
    after: MaintainState         #: predicted
    final: MaintainState         #: read after a run (a plan: predicted)
    actions: list[MaintainChunk]
    bytes_planned: int
    seconds_planned: Optional[float]
    chunks_created: int
    device_needed: int           #: cannot meet: a device of at least this would
    copy_rate: float             #: used bytes a second measured before; 0 none
    moved: list[MaintainChunk]
    bytes_moved: int
    seconds: float
    kernel_seconds: float
    paused_seconds: float
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "MaintainResult":
        return cls(**dict(
            raw, status=MaintainStatus(raw["status"]), fsid=_fsid(raw["fsid"]),
            refused=_text_or_none(raw["refused"]), reason=_text_or_none(raw["reason"]),
            before=MaintainState._from(raw["before"]), after=MaintainState._from(raw["after"]),
            final=MaintainState._from(raw["final"]),
            seconds_planned=raw["seconds_planned"] if raw["seconds_planned"] >= 0 else None,
            actions=[MaintainChunk._from(c) for c in raw["actions"]],
            moved=[MaintainChunk._from(c) for c in raw["moved"]]), warnings=warnings)


def maintain(path: Path, *, plan_only: bool = False, policy_file: Optional[Path] = None,
             pace: Optional[float] = None, sysfs_root: Optional[Path] = None,
             state_dir: Optional[Path] = None,
             cancel: Optional[threading.Event] = None) -> MaintainResult:
    """Plan (@plan_only: writes nothing) or run maintenance on the filesystem
    mounted at @path (``btrfsx maintain plan|run``): the fewest chunks moved
    that keep its metadata room at the target of the policy (@policy_file,
    default /etc/btrfsx/maintain.conf when there) and its chunks where the
    hints want them. @pace: metadata bytes a day (for a target in days);
    None unknown. Setting @cancel (from another thread: the call holds this
    one) stops the run as SIGTERM stops ``btrfsx maintain run``: the chunk
    moving now finishes, no other starts, and the result says ``STOPPED``.

    BusyError beside a balance, replace, resize, device add or remove, scrub
    or another relocation; PermissionDeniedError on a read-only mount;
    MissingDeviceError degraded; InvalidArgumentError for a bad policy file.
    A failure after the start carries the :class:`MaintainResult` as
    ``result``."""
    try:
        raw, warnings = _btrfsx.maintain(path, plan_only, policy_file,
                                         -1.0 if pace is None else float(pace),
                                         sysfs_root, state_dir, cancel)
    except BtrfsxError as e:
        if e.partial is not None:
            e.result = MaintainResult._from(e.partial, e.warnings)
        raise
    return MaintainResult._from(raw, warnings)
