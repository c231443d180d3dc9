# SPDX-License-Identifier: LGPL-2.1-or-later
"""Misplaced chunks and their relocation (``btrfsx filesystem misplaced``,
``btrfsx balance misplaced``)."""

from __future__ import annotations

import dataclasses
import enum
import threading
from typing import Callable, Optional

from . import _btrfsx
from ._common import (
    BtrfsxError, Path, Paths, _BlockGroupFlags, _U64_LIMIT, _c_fields, _c_options, _fsid,
    _invalid, _options, _path_list, _text_or_none)


class MisplacedClass(enum.IntEnum):
    """Why a chunk breaks the allocation hints."""
    FORBIDDEN = _btrfsx.MISPLACED_FORBIDDEN            #: a stripe where the hint excludes it
    OFF_PREFERENCE = _btrfsx.MISPLACED_OFF_PREFERENCE  #: a worse tier while a better has room


class RelocateStatus(enum.IntEnum):
    """How :func:`relocate_misplaced` ended."""
    DONE = _btrfsx.RELOCATE_DONE                        #: nothing (selected) misplaced is left
    LIMIT = _btrfsx.RELOCATE_LIMIT                      #: the chunk or byte limit was reached
    DRY_RUN = _btrfsx.RELOCATE_DRY_RUN
    CANCELLED = _btrfsx.RELOCATE_CANCELLED
    NO_ROOM = _btrfsx.RELOCATE_NO_ROOM                  #: the model has no room for a chunk
    ENOSPC = _btrfsx.RELOCATE_ENOSPC                    #: the kernel ran out of space
    MISPLACED_AGAIN = _btrfsx.RELOCATE_MISPLACED_AGAIN  #: a new chunk was placed no better
    FAILED = _btrfsx.RELOCATE_FAILED


@_c_fields(absorbs=("have_model",), nested=("devids", "offending", "model_devids"))
@dataclasses.dataclass(frozen=True)
class MisplacedChunk(_BlockGroupFlags):
    """A chunk whose devices break the allocation hints."""
    logical: int
    length: int                  #: logical bytes
    used: int                    #: logical bytes in use: what a relocation copies
    flags: int                   #: block group type and profile bits
    cls: MisplacedClass
    devids: list[int]            #: each stripe's device, in stripe order
    offending: list[int]         #: the devices breaking the hints
    model_flags: Optional[int]   #: a new chunk of this kind now; None: no room
    model_length: Optional[int]
    model_devids: list[int]      #: where the allocator model would put it now

    @classmethod
    def _from(cls, raw: dict) -> "MisplacedChunk":
        fields = dict(raw)
        have = fields.pop("have_model")
        fields.update(cls=MisplacedClass(raw["cls"]),
                      model_flags=raw["model_flags"] if have else None,
                      model_length=raw["model_length"] if have else None)
        return cls(**fields)


@_c_fields()
@dataclasses.dataclass(frozen=True)
class MisplacedTotals:
    """One class of misplaced chunks, summed."""
    chunks: int
    allocated: int               #: logical bytes
    used: int                    #: logical bytes: what a relocation copies
    estimate_seconds: Optional[float]   #: from the measured copy rate; None: unknown

    @classmethod
    def _from(cls, raw: dict) -> "MisplacedTotals":
        seconds = raw["estimate_seconds"]
        return cls(**dict(raw, estimate_seconds=seconds if seconds >= 0 else None))


@_c_fields(nested=("forbidden", "off_preference", "chunks"))
@dataclasses.dataclass(frozen=True)
class Misplaced:
    """The report of :func:`misplaced` (``btrfsx filesystem misplaced``)."""
    fsid: str
    mounted: bool
    path: str
    hints_effective: bool        #: new chunks follow the hints (the running kernel's support)
    chunks_checked: int
    copy_rate: Optional[float]   #: used bytes/s of earlier relocations; None: none measured
    forbidden: MisplacedTotals
    off_preference: MisplacedTotals
    chunks: list[MisplacedChunk]     #: forbidden first, then by used bytes
    kernel: str                  #: whose behaviour placement followed ("6.18"; "" unknown)
    kernel_running: bool         #: the running kernel's, not one asked for
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "Misplaced":
        return cls(**dict(raw, fsid=_fsid(raw["fsid"]), copy_rate=raw["copy_rate"] or None,
                          forbidden=MisplacedTotals._from(raw["forbidden"]),
                          off_preference=MisplacedTotals._from(raw["off_preference"]),
                          chunks=[MisplacedChunk._from(c) for c in raw["chunks"]]),
                   warnings=warnings)


@_c_fields()
@dataclasses.dataclass(frozen=True)
class RelocateProgress:
    """Handed to the progress callback of :func:`relocate_misplaced`."""
    chunks_done: int
    chunks_total: int            #: planned at the start
    bytes_done: int              #: used bytes moved
    bytes_total: int
    elapsed: float               #: seconds
    kernel_seconds: float        #: in the kernel's balance calls
    current: int                 #: logical address of the chunk being moved; 0: none
    current_used: int
    pausing: bool                #: waiting between chunks


@_c_fields(nested=("devids",))
@dataclasses.dataclass(frozen=True)
class RelocatedNewChunk:
    """A chunk the kernel created while one was moved."""
    logical: int
    flags: int
    length: int
    devids: list[int]
    as_modelled: bool            #: where the allocator model put it
    improves: bool               #: better placed than the chunk moved


@_c_fields(nested=("devids", "new_chunks"))
@dataclasses.dataclass(frozen=True)
class Relocated:
    """One chunk moved."""
    logical: int
    flags: int
    length: int
    used: int
    cls: MisplacedClass
    devids: list[int]            #: where it was
    seconds: float               #: in the kernel's balance call
    new_chunks: list[RelocatedNewChunk]   #: empty: packed into existing chunks
    as_modelled: bool

    @classmethod
    def _from(cls, raw: dict) -> "Relocated":
        return cls(**dict(raw, cls=MisplacedClass(raw["cls"]),
                          new_chunks=[RelocatedNewChunk(**n) for n in raw["new_chunks"]]))


@_c_fields(nested=("planned", "relocated"))
@dataclasses.dataclass(frozen=True)
class RelocateResult:
    """The outcome of :func:`relocate_misplaced`."""
    status: RelocateStatus
    reason: Optional[str]        #: why it stopped; None when done
    hints_effective: bool
    forced: bool
    fsid: str
    planned: list[MisplacedChunk]    #: what the run meant to move, in order
    planned_bytes: int
    relocated: list[Relocated]
    bytes_moved: int
    seconds: float
    kernel_seconds: float
    remaining_chunks: int        #: misplaced at the end (all, whatever was selected)
    remaining_bytes: int
    refused: Optional[str]       #: a dry run: what a real run would be refused for
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "RelocateResult":
        return cls(**dict(raw, status=RelocateStatus(raw["status"]),
                          reason=_text_or_none(raw["reason"]), fsid=_fsid(raw["fsid"]),
                          refused=_text_or_none(raw["refused"]),
                          planned=[MisplacedChunk._from(c) for c in raw["planned"]],
                          relocated=[Relocated._from(r) for r in raw["relocated"]]),
                   warnings=warnings)


def misplaced(paths: Paths, *, sysfs_root: Optional[Path] = None,
              state_dir: Optional[Path] = None, kernel: Optional[str] = None) -> Misplaced:
    """The chunks whose devices break the allocation hints (``btrfsx
    filesystem misplaced``).

    @paths: a mount point (needs root), or the member devices / image files
    of an unmounted filesystem. Forbidden chunks have a stripe on a device
    whose hint excludes their type; off-preference chunks a stripe on a worse
    tier while the allocator model would place a new chunk of that kind
    better now. The hints are the stored ones, also when the running kernel
    ignores them (``hints_effective`` False). @state_dir: where relocations
    recorded their copy rate (default /var/lib/btrfsx), for the estimates.
    @kernel ("6.1"): place as that kernel would, not the running one."""
    return Misplaced._from(*_btrfsx.misplaced_get(_path_list(paths), sysfs_root, state_dir,
                                                   kernel))


def _relocate_progress_adapter(progress: Optional[Callable[[RelocateProgress], object]]):
    if progress is None:
        return None
    return lambda raw: progress(RelocateProgress(**raw))


@_c_options(python_only=("progress", "cancel"))
def relocate_misplaced(path: Path, *, forbidden_only: bool = False, dry_run: bool = False,
                       force: bool = False, limit: int = 0, max_bytes: int = 0,
                       pause: float = 0.0,
                       progress: Optional[Callable[[RelocateProgress], object]] = None,
                       progress_interval: float = 0.5,
                       cancel: Optional[threading.Event] = None,
                       sysfs_root: Optional[Path] = None,
                       state_dir: Optional[Path] = None) -> RelocateResult:
    """Move the misplaced chunks of the filesystem mounted at @path, one kernel
    balance call per chunk (``btrfsx balance misplaced``): forbidden first,
    then off-preference (unless @forbidden_only).

    @limit: at most this many chunks; @max_bytes: at most this many used
    bytes (0: no limit); @pause: seconds between chunks; @dry_run: plan and
    check the room, move nothing; @force: move even when the running kernel
    ignores hints (pointless for placement). @progress is called about every
    @progress_interval seconds, also while a chunk moves, with a
    :class:`RelocateProgress`; a true return value, setting @cancel, an
    exception in @progress or Ctrl-C cancel the run through the kernel's
    balance control (CancelledError, whose ``result`` is the
    :class:`RelocateResult`). Do not call btrfsx from @progress.

    NoSpaceError (with ``result``) when the allocator model has no room for
    a planned chunk, the kernel ran out of space, or a new chunk was placed
    no better; BusyError when a balance runs or is paused; NotSupportedError
    when the kernel ignores hints and @force is not given. Running again
    resumes."""
    options = _options("relocate_misplaced", locals())
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable")
    if progress_interval <= 0:
        raise _invalid(f"progress_interval must be positive, not {progress_interval}")
    if not (0 <= limit < _U64_LIMIT and 0 <= max_bytes < _U64_LIMIT):
        raise _invalid("limit and max_bytes must be counts of 0 or more")
    if not pause >= 0:
        raise _invalid(f"pause must be 0 or more seconds, not {pause}")
    try:
        raw, warnings = _btrfsx.relocate_misplaced(
            path, options, _relocate_progress_adapter(progress), cancel)
    except BtrfsxError as e:
        if e.partial is not None:
            e.result = RelocateResult._from(e.partial, e.warnings)
        raise
    return RelocateResult._from(raw, warnings)
