# SPDX-License-Identifier: LGPL-2.1-or-later
"""The offline scrub (``btrfsx scrub start --offline``)."""

from __future__ import annotations

import dataclasses
import datetime
import threading
from typing import Callable, Optional

from . import _btrfsx
from ._common import BtrfsxError, Path, Paths, _c_fields, _fsid, _invalid, _path_list


@_c_fields()
@dataclasses.dataclass(frozen=True)
class ScrubCounters:
    """The kernel scrub's counters (same names and units) and two of btrfsx's."""
    data_extents_scrubbed: int
    tree_extents_scrubbed: int
    data_bytes_scrubbed: int
    tree_bytes_scrubbed: int
    read_errors: int
    csum_errors: int
    verify_errors: int
    no_csum: int
    csum_discards: int
    super_errors: int
    malloc_errors: int
    uncorrectable_errors: int
    unverified_errors: int
    corrected_errors: int
    last_physical: int
    parity_errors: int           #: RAID5/6 P/Q that disagreed
    super_corrected: int         #: superblock copies rewritten


@_c_fields(nested=("counters",))
@dataclasses.dataclass(frozen=True)
class ScrubDevice:
    """One member device's part of a scrub."""
    devid: int
    path: str                    #: "" when missing
    missing: bool
    bytes_to_scrub: int
    short_bytes: int             #: how much shorter than its device item (0: as long)
    counters: ScrubCounters

    @classmethod
    def _from(cls, raw: dict) -> "ScrubDevice":
        return cls(**dict(raw, counters=ScrubCounters(**raw["counters"])))


@_c_fields()
@dataclasses.dataclass(frozen=True)
class ScrubError:
    """One bad copy the scrub found."""
    what: str                    #: "data", "tree", "super", "parity"
    fault: str                   #: "read", "csum", "verify", "super", "parity"
    fix: str                     #: "corrected", "correctable", "uncorrectable"
    logical: int
    len: int
    devid: int
    physical: int
    mirror: int                  #: 1-based; 0 for superblocks and parity
    reason: str


@_c_fields()
@dataclasses.dataclass(frozen=True)
class ScrubFile:
    """A file holding uncorrectable data."""
    logical: int
    root: int
    inode: int
    offset: int
    path: str                    #: "" when it could not be resolved


@_c_fields(nested=("total",))
@dataclasses.dataclass(frozen=True)
class ScrubProgress:
    """Handed to the progress callback of :func:`scrub_offline`."""
    bytes_done: int
    bytes_total: int
    elapsed: float               #: seconds
    total: ScrubCounters         #: so far

    @classmethod
    def _from(cls, raw: dict) -> "ScrubProgress":
        return cls(**dict(raw, total=ScrubCounters(**raw["total"])))


@_c_fields(nested=("total", "devices", "errors", "files"))
@dataclasses.dataclass(frozen=True)
class ScrubResult:
    """The outcome of :func:`scrub_offline`."""
    fsid: str
    readonly: bool
    metadata_only: bool          #: superblocks and tree blocks only, data not read
    cancelled: bool
    degraded: bool               #: a member is missing; its copies were not scrubbed
    started: datetime.datetime
    duration: float              #: seconds
    bytes_to_scrub: int
    total: ScrubCounters
    devices: list[ScrubDevice]
    errors: list[ScrubError]     #: the first 4096
    errors_dropped: int
    files: list[ScrubFile]
    uncorrectable: bool          #: something is left bad (the command's exit 3)
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "ScrubResult":
        return cls(**dict(
            raw, fsid=_fsid(raw["fsid"]),
            started=datetime.datetime.fromtimestamp(raw["started"], datetime.timezone.utc),
            total=ScrubCounters(**raw["total"]),
            devices=[ScrubDevice._from(d) for d in raw["devices"]],
            errors=[ScrubError(**e) for e in raw["errors"]],
            files=[ScrubFile(**f) for f in raw["files"]]), warnings=warnings)


def _progress_adapter(progress: Optional[Callable[[ScrubProgress], object]]):
    if progress is None:
        return None
    return lambda raw: progress(ScrubProgress._from(raw))


def scrub_offline(paths: Paths, *, readonly: bool = False, readahead: bool = True,
                  progress: Optional[Callable[[ScrubProgress], object]] = None,
                  progress_interval: float = 0.5,
                  cancel: Optional[threading.Event] = None,
                  memory: int = 0, metadata_only: bool = False,
                  state_dir: Optional[Path] = None, io_timeout: int = 60) -> ScrubResult:
    """Verify (and unless @readonly, repair) every copy of every block of an
    unmounted filesystem.

    @paths: member devices or image files; the others are found by fsid,
    missing ones are allowed (``degraded``). @readahead: walk trees with
    forward readahead. @progress is called about every @progress_interval
    seconds (and once at the end) with a :class:`ScrubProgress`; a true
    return value cancels the scrub. Setting @cancel (a threading.Event, e.g.
    from another thread) cancels it at the next progress tick; one set before
    the call stops the scrub before it reads a block. @memory: bytes of read
    buffers in all (0: 48 MiB, 96 MiB for sha256 and blake2b, at least
    1 MiB); more reads faster on deep
    storage. @metadata_only: verify the superblocks and tree blocks only,
    not the data (``result.metadata_only``). A cancelled scrub raises
    CancelledError whose ``result`` is the partial :class:`ScrubResult`; an
    exception raised by @progress, and KeyboardInterrupt, stop the scrub and
    propagate. Do not call btrfsx from @progress: it runs inside the library
    call. The run is recorded in @state_dir (default /var/lib/btrfsx) as
    ``btrfsx scrub start`` records it: ``btrfsx scrub status`` and the
    monitor see it. @io_timeout: seconds a read or write of a device may
    take before the device counts as stalled and the scrub stops with
    :class:`BtrfsxIOError` (``--io-timeout``; 0: wait however long).

    Finding uncorrectable errors is not an exception: see
    ``result.uncorrectable``. MountedError when the kernel has the filesystem
    mounted, BusyError when another program holds a member."""
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable")
    if progress_interval <= 0:
        raise _invalid(f"progress_interval must be positive, not {progress_interval}")
    if not 0 <= memory < 1 << 64:
        raise _invalid(f"memory must be a byte count, not {memory}")
    if not 0 <= io_timeout < _btrfsx.IO_TIMEOUT_NONE:
        raise _invalid(f"io_timeout must be 0 or more seconds, not {io_timeout}")
    try:
        raw, warnings = _btrfsx.scrub_offline(_path_list(paths), readonly, not readahead,
                                              _progress_adapter(progress), cancel,
                                              float(progress_interval), int(memory),
                                              bool(metadata_only), state_dir,
                                              int(io_timeout) or _btrfsx.IO_TIMEOUT_NONE)
    except BtrfsxError as e:
        if e.partial is not None:
            e.result = ScrubResult._from(e.partial, e.warnings)
        raise
    return ScrubResult._from(raw, warnings)
