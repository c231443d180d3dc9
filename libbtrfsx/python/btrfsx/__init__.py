# SPDX-License-Identifier: LGPL-2.1-or-later
"""btrfs allocation hints, usage, read policies, offline scrub and the monitor
history for Python.

The ``btrfsx`` module wraps libbtrfsx, the library behind the ``btrfsx``
command: every call here is one library call with the same semantics.

Results are frozen dataclasses. Sizes are in bytes, filesystem ids are
canonical UUID strings. Every result a function returns carries the
library's warnings for that call as ``warnings``, a tuple of strings (e.g.
"the running kernel ignores allocation hints"); nested objects inside a
result carry none. Warnings are never sent through Python's ``warnings``
module, so nothing is printed behind a script's back.

Failures raise a subclass of :class:`BtrfsxError`, whose ``code`` is the
library's error code as :class:`ErrorCode` and whose ``message`` names the
object and the reason. Several subclasses also derive from the matching
built-in exception (``InvalidArgumentError`` is a ``ValueError``,
``PermissionDeniedError`` a ``PermissionError``, ``NotFoundError`` a
``FileNotFoundError``), so ordinary ``except`` clauses work.

Paths may be ``str``, ``bytes`` or path-like objects. ``sysfs_root`` (default
``/sys``) and ``config_dir`` (default ``<sysconfdir>/btrfsx``) exist for tests
and for chroots. The calls release the GIL while the library works, so other
Python threads keep running; the functions are thread-safe on different
filesystems.

Example::

    import btrfsx
    u = btrfsx.usage("/mnt")
    print(f"metadata room {u.metadata_room} bytes, needed {u.metadata_needed}")
    btrfsx.hint_set("/dev/sdc", btrfsx.Hint.METADATA_ONLY)   # unmounted filesystem
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import os
import threading
import uuid
from typing import Callable, Optional, Sequence, Union

from . import _btrfsx

__version__ = f"{_btrfsx.VERSION_MAJOR}.{_btrfsx.VERSION_MINOR}.{_btrfsx.VERSION_PATCH}"

Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
Paths = Union[Path, Sequence[Path]]

__all__ = [
    "ApplyReport", "ApplyResult", "ApplyStatus", "BtrfsxError", "BtrfsxIOError", "BusyError",
    "CancelledError", "CorruptedError", "ErrorCode", "FsInfo", "Hint", "HintChange",
    "HintInterface", "HintState", "InvalidArgumentError", "IoStats", "IoStatsSample",
    "Misplaced", "MisplacedChunk", "MisplacedClass", "MisplacedTotals",
    "MissingDeviceError", "MonitorProjection", "MonitorSample", "MonitorTrend", "MountedError",
    "NoMemoryError", "NoSpaceError", "NotBtrfsError", "NotFoundError",
    "KernelTrait", "KernelTraits",
    "Plan", "PlanChange", "PlanChunk", "PlanOp", "PlanShort", "PlanShortDevice", "PlanStatus",
    "PlanStep",
    "NotMountedError", "NotSupportedError", "PermissionDeniedError", "ReadPolicy",
    "RecommendCandidate", "RecommendDevice", "RecommendWorkload", "Recommendation",
    "RelocateProgress", "RelocateResult", "RelocateStatus", "Relocated", "RelocatedNewChunk",
    "ReadPolicyChange", "ReadPolicyInterface", "ScrubCounters", "ScrubDevice", "ScrubError",
    "ScrubFile", "ScrubProgress", "ScrubResult", "Usage", "UsageClass", "UsageDevice",
    "UsageSpace", "UsageWarning", "fs_info_offline", "hint_get", "hint_name", "hint_parse",
    "hint_set", "io_stats_sample", "kernel_traits", "misplaced", "monitor_history",
    "monitor_projections",
    "profile_name", "read_policy_apply", "read_policy_get", "read_policy_recommend",
    "read_policy_set",
    "plan", "relocate_misplaced", "scrub_offline", "strerror", "type_name", "usage",
]


# --------------------------------------------------------------------------- enums

class ErrorCode(enum.IntEnum):
    """``enum btrfsx_error``: what went wrong, as the library reports it."""
    OK = _btrfsx.OK
    NO_MEMORY = _btrfsx.ERROR_NO_MEMORY
    INVALID_ARGUMENT = _btrfsx.ERROR_INVALID_ARGUMENT
    NOT_BTRFS = _btrfsx.ERROR_NOT_BTRFS
    CORRUPTED = _btrfsx.ERROR_CORRUPTED
    IO = _btrfsx.ERROR_IO
    MISSING_DEVICE = _btrfsx.ERROR_MISSING_DEVICE
    BUSY = _btrfsx.ERROR_BUSY
    PERMISSION = _btrfsx.ERROR_PERMISSION
    NOT_FOUND = _btrfsx.ERROR_NOT_FOUND
    OTHER = _btrfsx.ERROR_OTHER
    NOT_SUPPORTED = _btrfsx.ERROR_NOT_SUPPORTED
    NOT_MOUNTED = _btrfsx.ERROR_NOT_MOUNTED
    MOUNTED = _btrfsx.ERROR_MOUNTED
    CANCELLED = _btrfsx.ERROR_CANCELLED
    NO_SPACE = _btrfsx.ERROR_NO_SPACE


class Hint(enum.IntEnum):
    """``enum btrfsx_hint``: the allocation hint values btrfsx knows.

    Values 0-3 are the V12 kernel patch set's, 4 (``none``) is kakra's fork's.
    Functions return a plain ``int`` for a stored value outside this set."""
    DATA_PREFERRED = _btrfsx.HINT_DATA_PREFERRED
    METADATA_PREFERRED = _btrfsx.HINT_METADATA_PREFERRED
    METADATA_ONLY = _btrfsx.HINT_METADATA_ONLY
    DATA_ONLY = _btrfsx.HINT_DATA_ONLY
    NONE = _btrfsx.HINT_NONE

    def __str__(self) -> str:
        return hint_name(self)


class HintInterface(enum.IntEnum):
    """Which kernel file carries the hint of a mounted filesystem."""
    NONE = _btrfsx.HINT_IFACE_NONE          #: not mounted, or the kernel ignores hints
    NAME = _btrfsx.HINT_IFACE_NAME          #: devinfo/<devid>/allocation_hint (V12)
    TYPE = _btrfsx.HINT_IFACE_TYPE          #: devinfo/<devid>/type (kakra's fork)


class UsageWarning(enum.IntFlag):
    """Conditions :func:`usage` flags in :attr:`Usage.warning_flags`."""
    METADATA_LOW = _btrfsx.USAGE_W_METADATA_LOW            #: room < 50% of metadata used
    DATA_ON_META_DEVS = _btrfsx.USAGE_W_DATA_ON_META_DEVS  #: data may fill metadata devices
    HINTS_IGNORED = _btrfsx.USAGE_W_HINTS_IGNORED          #: the mounted kernel ignores hints


class ReadPolicyInterface(enum.IntEnum):
    """Which kernel file carries the read policy."""
    NONE = _btrfsx.READ_POLICY_IFACE_NONE          #: no file: the kernel always uses pid
    MAINLINE = _btrfsx.READ_POLICY_IFACE_MAINLINE  #: /sys/fs/btrfs/<FSID>/read_policy
    EARLIER = _btrfsx.READ_POLICY_IFACE_EARLIER    #: .../read_policies/policy


class ApplyStatus(enum.IntEnum):
    """What :func:`read_policy_apply` did for one filesystem."""
    APPLIED = _btrfsx.APPLY_APPLIED
    UNCHANGED = _btrfsx.APPLY_UNCHANGED
    FAILED = _btrfsx.APPLY_FAILED
    NO_RECORD = _btrfsx.APPLY_NO_RECORD
    NOT_MOUNTED = _btrfsx.APPLY_NOT_MOUNTED   #: recorded, not mounted now


class MisplacedClass(enum.IntEnum):
    """Why a chunk breaks the allocation hints."""
    FORBIDDEN = _btrfsx.MISPLACED_FORBIDDEN            #: a stripe where the hint excludes it
    OFF_PREFERENCE = _btrfsx.MISPLACED_OFF_PREFERENCE  #: a worse tier while a better has room


class PlanOp(enum.IntEnum):
    """A kind of change :func:`plan` takes (``enum btrfsx_plan_op``)."""
    ADD = _btrfsx.PLAN_ADD
    REMOVE = _btrfsx.PLAN_REMOVE
    RESIZE = _btrfsx.PLAN_RESIZE
    HINT = _btrfsx.PLAN_HINT
    CONVERT = _btrfsx.PLAN_CONVERT
    REPLACE = _btrfsx.PLAN_REPLACE
    RELOCATE = _btrfsx.PLAN_RELOCATE
    BALANCE = _btrfsx.PLAN_BALANCE      #: usage-filtered balance (flags: the kinds)
    RESUME = _btrfsx.PLAN_RESUME        #: the paused or interrupted balance resumed


class PlanStatus(enum.IntEnum):
    """Whether a change of a plan would succeed."""
    POSSIBLE = _btrfsx.PLAN_POSSIBLE
    IMPOSSIBLE = _btrfsx.PLAN_IMPOSSIBLE          #: the kernel would fail or refuse it
    NOT_REACHED = _btrfsx.PLAN_NOT_REACHED        #: an earlier change is impossible


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


# --------------------------------------------------------------------------- exceptions

class BtrfsxError(Exception):
    """A libbtrfsx call failed.

    Attributes:
        code: the library's error code (:class:`ErrorCode`; a plain int for a
            code this module does not know).
        message: the library's message naming the object and the reason.
        warnings: warnings the failing call recorded.
        result: what the library filled despite the error, or None: the
            :class:`ScrubResult` of a cancelled scrub, the
            :class:`ApplyReport` of a partly failed :func:`read_policy_apply`.
    """

    def __init__(self, code: int, message: str = "", warnings: Sequence[str] = ()):
        try:
            self.code: Union[ErrorCode, int] = ErrorCode(code)
        except ValueError:
            self.code = code
        self.message: str = message or strerror(code)
        self.warnings: tuple[str, ...] = tuple(warnings)
        self.result = None
        self.partial = None     # the raw form of result, set by the C module
        super().__init__(self.message)


class NoMemoryError(BtrfsxError, MemoryError):
    """The library ran out of memory."""


class InvalidArgumentError(BtrfsxError, ValueError):
    """An argument was rejected: an unknown hint or policy, a guard rail, no path."""


class NotBtrfsError(BtrfsxError):
    """The device or file holds no btrfs filesystem."""


class CorruptedError(BtrfsxError):
    """A filesystem structure failed its checks."""


class BtrfsxIOError(BtrfsxError, OSError):
    """Reading or writing a device failed."""


class MissingDeviceError(BtrfsxError):
    """A member device the operation needs is missing."""


class BusyError(BtrfsxError):
    """A device is held by another program (or the kernel)."""


class PermissionDeniedError(BtrfsxError, PermissionError):
    """The operation needs more privileges (usually root)."""


class NotFoundError(BtrfsxError, FileNotFoundError):
    """A path, device or filesystem does not exist."""


class NotSupportedError(BtrfsxError):
    """The running kernel or this filesystem lacks the feature."""


class NotMountedError(BtrfsxError):
    """The operation needs a mounted filesystem."""


class MountedError(BtrfsxError):
    """The operation needs an unmounted filesystem."""


class CancelledError(BtrfsxError):
    """The caller cancelled the operation; ``result`` holds what was done."""


class NoSpaceError(BtrfsxError):
    """The devices lack room, e.g. the preferred tier is full; the message
    says which devices lack how much."""


_ERROR_CLASSES = {
    ErrorCode.NO_MEMORY: NoMemoryError,
    ErrorCode.INVALID_ARGUMENT: InvalidArgumentError,
    ErrorCode.NOT_BTRFS: NotBtrfsError,
    ErrorCode.CORRUPTED: CorruptedError,
    ErrorCode.IO: BtrfsxIOError,
    ErrorCode.MISSING_DEVICE: MissingDeviceError,
    ErrorCode.BUSY: BusyError,
    ErrorCode.PERMISSION: PermissionDeniedError,
    ErrorCode.NOT_FOUND: NotFoundError,
    ErrorCode.NOT_SUPPORTED: NotSupportedError,
    ErrorCode.NOT_MOUNTED: NotMountedError,
    ErrorCode.MOUNTED: MountedError,
    ErrorCode.CANCELLED: CancelledError,
    ErrorCode.NO_SPACE: NoSpaceError,
}


def _make_error(code: int, message: str, warnings: tuple[str, ...]) -> BtrfsxError:
    return _ERROR_CLASSES.get(code, BtrfsxError)(code, message, warnings)


_btrfsx._set_error_factory(_make_error)


_U64_LIMIT = 1 << 64


def _invalid(message: str) -> InvalidArgumentError:
    return InvalidArgumentError(ErrorCode.INVALID_ARGUMENT, message)


# --------------------------------------------------------------------------- conversions

_DATA, _SYSTEM, _METADATA = 1 << 0, 1 << 1, 1 << 2
_PROFILES = [(1 << 3, "raid0"), (1 << 4, "raid1"), (1 << 5, "dup"), (1 << 6, "raid10"),
             (1 << 7, "raid5"), (1 << 8, "raid6"), (1 << 9, "raid1c3"), (1 << 10, "raid1c4")]


def profile_name(flags: int) -> str:
    """The profile of block group @flags: "single", "dup", "raid1", ..."""
    for bit, name in _PROFILES:
        if flags & bit:
            return name
    return "single"


def type_name(flags: int) -> str:
    """The block group type of @flags: "data", "metadata", "system" or
    "data+metadata" (mixed)."""
    data, metadata = flags & _DATA, flags & _METADATA
    if data and metadata:
        return "data+metadata"
    if data or metadata:
        return "data" if data else "metadata"
    return "system" if flags & _SYSTEM else "unknown"


def _fsid(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))


def _hint(value: int) -> Union[Hint, int]:
    try:
        return Hint(value)
    except ValueError:
        return value


def _text_or_none(text: str) -> Optional[str]:
    return text or None


def _path_list(paths: Paths) -> list:
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [paths]
    return list(paths)


# --------------------------------------------------------------------------- results

def _c_fields(*, absorbs: Sequence[str] = (), nested: Sequence[str] = ()):
    """Checks a result class against the C module's table of the same name
    (``_btrfsx.FIELDS``, made from the engine's field list): its fields are
    the table's, less those it @absorbs into others (``have_statfs`` makes
    ``free_statfs`` None), plus the @nested objects and lists the C module
    adds. A field added to the C side without a place here stops the import."""
    def check(cls):
        table = set(_btrfsx.FIELDS[cls.__name__])
        ours = {f.name for f in dataclasses.fields(cls)} - {"warnings"}
        stale = (set(absorbs) - table) | (set(nested) - ours)
        missing, extra = table - set(absorbs) - ours, ours - set(nested) - table
        if stale or missing or extra:
            raise ImportError(f"btrfsx.{cls.__name__} does not match the C table "
                              f"{cls.__name__}: not in the class {sorted(missing)}, not in "
                              f"the table {sorted(extra)}, declared but absent {sorted(stale)}")
        return cls
    return check


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


class _BlockGroupFlags:
    """Names of the block group ``flags`` of a result."""
    flags: int

    @property
    def type(self) -> str:
        """"data", "metadata", "system" or "data+metadata"."""
        return type_name(self.flags)

    @property
    def profile(self) -> str:
        """"single", "dup", "raid1", ..."""
        return profile_name(self.flags)


@_c_fields()
@dataclasses.dataclass(frozen=True)
class UsageSpace(_BlockGroupFlags):
    """One block group type and profile: a line of the Data/Metadata/System
    list (logical bytes)."""
    flags: int                   #: block group type and profile bits
    total_bytes: int
    used_bytes: int


@_c_fields(absorbs=("have_statfs", "have_global_reserve"), nested=("classes", "devices", "spaces"))
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
        fields.update(
            fsid=_fsid(raw["fsid"]),
            free_statfs=raw["free_statfs"] if have_statfs else None,
            global_reserve=raw["global_reserve"] if have_reserve else None,
            global_reserve_used=raw["global_reserve_used"] if have_reserve else None,
            multiple_profiles=[t for t in raw["multiple_profiles"].split(", ") if t],
            warning_flags=UsageWarning(raw["warning_flags"]),
            classes=[UsageClass(**dict(c, hint=_hint(c["hint"]))) for c in raw["classes"]],
            devices=[UsageDevice(**dict(d, hint=_hint(d["hint"]))) for d in raw["devices"]],
            spaces=[UsageSpace(**s) for s in raw["spaces"]])
        return cls(**fields, warnings=warnings)


@_c_fields(absorbs=("mirrored_known",), nested=("offered", "mirrored"))
@dataclasses.dataclass(frozen=True)
class ReadPolicy:
    """The read policy of a mounted filesystem (RAID1-family reads only)."""
    fsid: str
    interface: ReadPolicyInterface
    active: str                  #: canonical: "pid", "round-robin:262144", "devid:2"
    offered: list[str]           #: as the kernel names them
    raw: str                     #: the policy file as read
    recorded: Optional[str]      #: the persistent record, None if there is none
    #: the mirrored block groups the policy acts on ("data/raid1", ...; empty:
    #: it changes nothing here), None when they could not be listed
    mirrored: Optional[list[str]]
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "ReadPolicy":
        fields = dict(raw)
        known = fields.pop("mirrored_known")
        fields.update(interface=ReadPolicyInterface(raw["interface"]),
                      recorded=_text_or_none(raw["recorded"]),
                      mirrored=raw["mirrored"] if known else None)
        return cls(**fields, warnings=warnings)


@dataclasses.dataclass(frozen=True)
class ReadPolicyChange:
    """What :func:`read_policy_set` did."""
    policy: ReadPolicy           #: the state read back afterwards
    changed: bool                #: whether anything was written
    warnings: tuple[str, ...] = ()


@_c_fields()
@dataclasses.dataclass(frozen=True)
class ApplyResult:
    """The outcome of :func:`read_policy_apply` for one filesystem."""
    fsid: str
    path: str
    policy: Optional[str]        #: None without a record
    status: ApplyStatus
    error: Optional[str]         #: why, when FAILED

    @classmethod
    def _from(cls, raw: dict) -> "ApplyResult":
        return cls(**dict(raw, policy=_text_or_none(raw["policy"]),
                          status=ApplyStatus(raw["status"]),
                          error=_text_or_none(raw["error"])))


@dataclasses.dataclass(frozen=True)
class ApplyReport:
    """Every filesystem :func:`read_policy_apply` looked at."""
    results: list[ApplyResult]
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: list, warnings=()) -> "ApplyReport":
        return cls([ApplyResult._from(r) for r in raw], warnings=warnings)


@_c_fields()
@dataclasses.dataclass(frozen=True)
class IoStats:
    """One member device's read counters."""
    devid: int
    path: str
    present: bool                #: False: missing device or no block stat file
    reads: int                   #: completed read requests
    read_bytes: int


@dataclasses.dataclass(frozen=True)
class IoStatsSample:
    """The read counters of every member device at one moment, by devid."""
    devices: list[IoStats]
    warnings: tuple[str, ...] = ()


@_c_fields()
@dataclasses.dataclass(frozen=True)
class RecommendWorkload:
    """A workload :func:`read_policy_recommend` replayed, and its fastest policy."""
    readers: int                 #: each with one 64 KiB request in flight
    random: bool                 #: False: sequential, each reader its own slice
    fastest: str                 #: the fastest candidate ("devid:3")
    rate: float                  #: its bytes a second


@_c_fields(nested=("rates",))
@dataclasses.dataclass(frozen=True)
class RecommendCandidate:
    """A candidate policy and what it read."""
    policy: str                  #: canonical: "pid", "round-robin:65536", "devid:2"
    worst_ratio: float           #: min over the workloads of rate / that workload's fastest
    rates: list[float]           #: bytes a second, per workload (the workloads' order)


@_c_fields()
@dataclasses.dataclass(frozen=True)
class RecommendDevice:
    """A member device the probe read, and what else it did meanwhile."""
    devid: int
    device: str
    stats_available: bool        #: its block device has counters
    probe_bytes: int             #: what the probe read from it
    other_read_bytes: int        #: what others read meanwhile
    other_write_bytes: int       #: ... and wrote
    disturbed: bool              #: enough to disturb its figures (a warning too)


@_c_fields(nested=("workloads", "candidates", "devices"))
@dataclasses.dataclass(frozen=True)
class Recommendation:
    """What :func:`read_policy_recommend` measured and picked."""
    fsid: str
    mountpoint: str
    affects_reads: bool          #: False: no RAID1-family chunk, nothing probed or picked
    metadata_region: bool        #: the probe read metadata: no mirrored data chunk
    region_bytes: int            #: the chunk bytes the probe read from
    seconds: float               #: the probe took
    recommended: Optional[str]   #: the pick
    reason: str                  #: why, with the figures
    current: str                 #: the active policy
    offered: bool                #: the running kernel takes the pick
    not_offered: Optional[str]   #: ... and why not
    applied: bool                #: set and recorded for every mount
    changed: bool                #: the kernel's policy was another before
    persistent: Optional[str]    #: the record for every mount
    disturbed: bool              #: some device's figures are
    workloads: list[RecommendWorkload]
    candidates: list[RecommendCandidate]
    devices: list[RecommendDevice]
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "Recommendation":
        return cls(**dict(raw, recommended=_text_or_none(raw["recommended"]),
                          not_offered=_text_or_none(raw["not_offered"]),
                          persistent=_text_or_none(raw["persistent"]),
                          workloads=[RecommendWorkload(**w) for w in raw["workloads"]],
                          candidates=[RecommendCandidate(**c) for c in raw["candidates"]],
                          devices=[RecommendDevice(**d) for d in raw["devices"]]),
                   warnings=warnings)


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


@_c_fields(absorbs=("have_statfs",))
@dataclasses.dataclass(frozen=True)
class MonitorSample:
    """The filesystem-wide figures of one sample of the monitor history, in
    bytes (as :func:`usage` computes them)."""
    time: datetime.datetime          #: when it was taken (UTC)
    device_size: int
    device_allocated: int
    used: int
    data_size: int
    data_used: int
    metadata_size: int
    metadata_used: int
    free_estimated: int
    free_strict: int
    free_statfs: Optional[int]       #: None when statfs was not read
    metadata_room: int
    metadata_room_after_data: int
    global_reserve: int
    global_reserve_used: int

    @classmethod
    def _from(cls, raw: dict) -> "MonitorSample":
        raw = dict(raw)
        have_statfs = raw.pop("have_statfs")
        return cls(**dict(
            raw, time=datetime.datetime.fromtimestamp(raw["time"], datetime.timezone.utc),
            free_statfs=raw["free_statfs"] if have_statfs else None))


@_c_fields(absorbs=("ok", "exhausts"))
@dataclasses.dataclass(frozen=True)
class MonitorTrend:
    """A fitted pace and the days it leaves; None where there was too little
    history, ``math.inf`` days when nothing is consumed."""
    growth: Optional[float]          #: bytes per second
    growth_low: Optional[float]      #: the 95% range
    growth_high: Optional[float]
    one_off_changes: int             #: jumps (a balance, a deletion) left out
    days_left: Optional[float]       #: from now
    days_left_low: Optional[float]   #: the soonest
    days_left_high: Optional[float]  #: the latest

    @classmethod
    def _from(cls, raw: dict) -> "MonitorTrend":
        if not raw["ok"]:
            return cls(None, None, None, 0, None, None, None)
        return cls(raw["growth"], raw["growth_low"], raw["growth_high"],
                   raw["one_off_changes"], raw["days_left"], raw["days_left_low"],
                   raw["days_left_high"])


@_c_fields(absorbs=("have_latest",), nested=("latest", "metadata", "data"))
@dataclasses.dataclass(frozen=True)
class MonitorProjection:
    """Where one filesystem is heading (``btrfsx monitor report``)."""
    fsid: str
    label: str
    mountpoint: str
    now: datetime.datetime
    window: float                    #: seconds before now
    nr_samples: int                  #: in the window
    latest: Optional[MonitorSample]  #: the newest sample in the window
    metadata_left: int               #: metadata room less the global reserve
    metadata: MonitorTrend           #: metadata use; days until metadata ENOSPC
    data: MonitorTrend               #: data use; days until free_estimated is gone
    reason: str                      #: why there is no projection; "" when there is
    min_history: float               #: seconds: learning until the samples span this long
    history_span: float              #: seconds between the oldest and the newest sample
    learning: bool                   #: too little history: told, not projected
    metadata_growth_seen: Optional[float]  #: while learning: bytes grown in the span
    data_growth_seen: Optional[float]
    burst: bool                      #: while learning: at that pace, room for < 30 days

    @classmethod
    def _from(cls, raw: dict) -> "MonitorProjection":
        return cls(
            fsid=_fsid(raw["fsid"]), label=raw["label"], mountpoint=raw["mountpoint"],
            now=datetime.datetime.fromtimestamp(raw["now"], datetime.timezone.utc),
            window=float(raw["window"]), nr_samples=raw["nr_samples"],
            latest=MonitorSample._from(raw["latest"]) if raw["latest"] else None,
            metadata_left=raw["metadata_left"], metadata=MonitorTrend._from(raw["metadata"]),
            data=MonitorTrend._from(raw["data"]), reason=raw["reason"],
            min_history=float(raw["min_history"]), history_span=float(raw["history_span"]),
            learning=raw["learning"],
            metadata_growth_seen=raw["metadata_growth_seen"] if raw["learning"] else None,
            data_growth_seen=raw["data_growth_seen"] if raw["learning"] else None,
            burst=raw["burst"])


def _epoch(t: Union[datetime.datetime, float, int, None], default: float) -> int:
    if t is None:
        return int(default)
    if isinstance(t, datetime.datetime):
        return int(t.timestamp())
    return int(t)


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


@_c_fields(absorbs=("has_hint",))
@dataclasses.dataclass(frozen=True)
class PlanChange:
    """One change of a plan, as the library parsed it."""
    op: PlanOp
    devid: int
    size: int                    #: bytes
    hint: Optional[Union[Hint, int]]     #: None when the change sets none
    #: balance: a chunk is balanced when its used bytes are at least MIN and
    #: below MAX percent of its size (MAX 0: the empty ones); metadata's
    #: range holds for system chunks too
    data_usage_min: int
    data_usage_max: int
    metadata_usage_min: int
    metadata_usage_max: int
    #: convert: the type (data or metadata) and the new profile; balance: the kinds
    flags: int

    @classmethod
    def _from(cls, raw: dict) -> "PlanChange":
        op = PlanOp(raw["op"])
        fields = {k: v for k, v in raw.items() if k != "has_hint"}
        has = raw["has_hint"] or op == PlanOp.HINT
        return cls(**dict(fields, op=op, hint=_hint(raw["hint"]) if has else None))


@_c_fields()
@dataclasses.dataclass(frozen=True)
class PlanShortDevice:
    """A device a short type of chunk may use, as the failed change leaves it."""
    devid: int
    hint: Union[Hint, int]
    tier: int                    #: the allocator's tier for the type (1 first)
    unallocated: int


@_c_fields(nested=("devices",))
@dataclasses.dataclass(frozen=True)
class PlanShort(_BlockGroupFlags):
    """Chunks of one type a change cannot place: which tier is short by how much."""
    flags: int                   #: type and profile of the chunks it needs
    missing: int                 #: used bytes without room
    chunks: int                  #: chunks that could not move
    devices: list[PlanShortDevice]   #: best tier first


@_c_fields(nested=("change", "short"))
@dataclasses.dataclass(frozen=True)
class PlanStep:
    """One change of a plan and what it does."""
    change: PlanChange
    description: str             #: "remove devid 3", ...
    devid: int                   #: the device it acts on (add: the new devid)
    status: PlanStatus
    tight: bool                  #: possible, but the kernel's space reservation may fail it
    reason: Optional[str]        #: why it is impossible
    moved_chunks: int
    moved_bytes: int             #: used bytes of the chunks moved: what is copied
    moved_length: int
    new_chunks: int
    new_length: int
    copied_bytes: int            #: replace: bytes copied to the new device
    short: list[PlanShort]

    @classmethod
    def _from(cls, raw: dict) -> "PlanStep":
        return cls(**dict(
            raw, change=PlanChange._from(raw["change"]), status=PlanStatus(raw["status"]),
            reason=_text_or_none(raw["reason"]),
            short=[PlanShort(**dict(sh, devices=[PlanShortDevice(**dict(d, hint=_hint(d["hint"])))
                                                 for d in sh["devices"]]))
                   for sh in raw["short"]]))


@_c_fields(nested=("devids",))
@dataclasses.dataclass(frozen=True)
class PlanChunk(_BlockGroupFlags):
    """A chunk a change moves, or one it creates."""
    step: int                    #: index into Plan.steps
    logical: int
    length: int
    used: int                    #: moved: when its change began; created: bytes placed in it
    used_before: int             #: in the filesystem now
    existed: bool                #: False: an earlier change of the plan made it
    flags: int
    devids: list[int]


@_c_fields(nested=("possible", "steps", "before", "after", "moved", "created", "misplaced_after",
                   "newly_misplaced", "plan_warnings"))
@dataclasses.dataclass(frozen=True)
class Plan:
    """The result of :func:`plan` (``btrfsx filesystem plan``)."""
    possible: bool               #: every change is
    steps: list[PlanStep]
    before: Usage                #: the figures now
    after: Usage                 #: after the plan (as far as it got)
    moved: list[PlanChunk]
    created: list[PlanChunk]
    misplaced_after: Optional[Misplaced]     #: None when no hint is set before or after
    newly_misplaced: list[bool]  #: per misplaced_after chunk: not misplaced now
    plan_warnings: list[str]     #: what a sysadmin should know (also in warnings)
    kernel: str                  #: whose behaviour the plan followed ("6.18"; "" unknown)
    kernel_running: bool         #: the running kernel's, not one asked for
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "Plan":
        misplaced = raw["misplaced_after"]
        return cls(possible=raw["possible"], steps=[PlanStep._from(s) for s in raw["steps"]],
                   kernel=raw["kernel"], kernel_running=raw["kernel_running"],
                   before=Usage._from(raw["before"]), after=Usage._from(raw["after"]),
                   moved=[PlanChunk(**c) for c in raw["moved"]],
                   created=[PlanChunk(**c) for c in raw["created"]],
                   misplaced_after=Misplaced._from(misplaced) if misplaced else None,
                   newly_misplaced=raw["newly_misplaced"], plan_warnings=raw["warnings"],
                   warnings=warnings)


@_c_fields()
@dataclasses.dataclass(frozen=True)
class KernelTrait:
    """One behaviour of the kernel the models follow (the register)."""
    name: str
    first: str                   #: the first version with it; "" every kernel known
    last: str                    #: the last version with it; "" still there
    active: bool                 #: the kernel asked about has it
    function: str                #: the kernel function it follows
    model: str                   #: the btrfsx file that follows it
    summary: str
    evidence: str                #: the traces and test cases that showed it
    test: str                    #: the unit test that pins it, file:function
    unversioned: Optional[str]   #: why no version is known; None with a first version


@_c_fields(nested=("traits",))
@dataclasses.dataclass(frozen=True)
class KernelTraits:
    """The result of :func:`kernel_traits` (``btrfsx inspect kernel-traits``)."""
    kernel: str                  #: "6.18"; "" when the release could not be read
    release: str                 #: uname -r, or the version asked for
    kernel_running: bool
    traits: list[KernelTrait]
    warnings: tuple[str, ...] = ()

    @classmethod
    def _from(cls, raw: dict, warnings=()) -> "KernelTraits":
        return cls(**dict(raw, traits=[KernelTrait(**t) for t in raw["traits"]]),
                   warnings=warnings)


# --------------------------------------------------------------------------- functions

def strerror(code: int) -> str:
    """The library's short description of error @code."""
    return _btrfsx.strerror(int(code))


def hint_name(hint: int) -> Optional[str]:
    """"data_preferred", "metadata_only", ... for @hint; None for a value
    without a name."""
    if not 0 <= hint < _U64_LIMIT:
        return None
    return _btrfsx.hint_name(int(hint))


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


def read_policy_get(path: Path, *, sysfs_root: Optional[Path] = None,
                    config_dir: Optional[Path] = None) -> ReadPolicy:
    """The read policy of the mounted filesystem holding @path."""
    return ReadPolicy._from(*_btrfsx.read_policy_get(path, sysfs_root, config_dir))


def read_policy_set(path: Path, policy: str, *, persist: bool = False,
                    sysfs_root: Optional[Path] = None,
                    config_dir: Optional[Path] = None) -> ReadPolicyChange:
    """Switch the read policy of the mounted filesystem holding @path and read
    it back.

    @policy: "pid", "round-robin", "round-robin:<bytes>", "devid:<devid>" or
    another name the kernel offers (NotSupportedError when it does not offer
    it). @persist also records it, to be applied again at every mount."""
    flags = _btrfsx.READ_POLICY_PERSIST if persist else 0
    (after, changed), warnings = _btrfsx.read_policy_set(path, policy, flags, sysfs_root,
                                                         config_dir)
    return ReadPolicyChange(ReadPolicy._from(after), changed, warnings)


def read_policy_apply(path: Optional[Path] = None, *, sysfs_root: Optional[Path] = None,
                      config_dir: Optional[Path] = None) -> ApplyReport:
    """Apply the recorded read policy to the filesystem holding @path, or
    with None every recorded one (those not mounted now are reported as
    ``NOT_MOUNTED``).

    When one fails, the first failure's error is raised with the full
    :class:`ApplyReport` as its ``result``."""
    try:
        raw, warnings = _btrfsx.read_policy_apply(path, sysfs_root, config_dir)
    except BtrfsxError as e:
        if e.partial is not None:
            e.result = ApplyReport._from(e.partial, e.warnings)
        raise
    return ApplyReport._from(raw, warnings)


def io_stats_sample(path: Path, *, sysfs_root: Optional[Path] = None) -> IoStatsSample:
    """The current read counters of every member device of the mounted
    filesystem holding @path. Two samples a second apart show which devices
    the read policy uses."""
    raw, warnings = _btrfsx.io_stats_sample(path, sysfs_root)
    return IoStatsSample([IoStats(**d) for d in raw], warnings)


def read_policy_recommend(path: Path, *, seconds: float = 0,
                          readers: Optional[Sequence[int]] = None, sequential: bool = True,
                          random: bool = True, apply: bool = False,
                          progress: Optional[Callable[[dict], object]] = None,
                          cancel: Optional[threading.Event] = None,
                          sysfs_root: Optional[Path] = None,
                          config_dir: Optional[Path] = None) -> Recommendation:
    """Measure which read policy reads the mounted filesystem holding @path
    fastest, and pick one (``btrfsx read-policy recommend``).

    Every candidate (pid, round-robin with min_contig_read 64K, 256K and 1M,
    devid of each device) is replayed over the RAID1-family chunks the
    filesystem holds, straight from its devices (read-only, O_DIRECT), for
    @readers (default 1 and 8) readers reading sequentially and/or at random,
    within @seconds (0: 30). @apply sets the pick and records it for every
    mount (NotSupportedError, with the recommendation as ``result``, when the
    running kernel does not offer it). @progress gets {"done", "total",
    "seconds"} after each replay; a true return value, or setting @cancel,
    cancels (CancelledError: nothing recommended, nothing applied)."""
    patterns = (_btrfsx.RECOMMEND_SEQUENTIAL if sequential else 0) | \
        (_btrfsx.RECOMMEND_RANDOM if random else 0)
    if not patterns:
        raise ValueError("sequential, random or both")
    try:
        raw, warnings = _btrfsx.read_policy_recommend(
            path, float(seconds), None if readers is None else list(readers), patterns, apply,
            progress, cancel, sysfs_root, config_dir)
    except BtrfsxError as e:
        if e.partial is not None:
            e.result = Recommendation._from(e.partial, e.warnings)
        raise
    return Recommendation._from(raw, warnings)


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


def monitor_history(filesystem: Path, *, db: Optional[Path] = None,
                    since: Union[datetime.datetime, float, None] = None,
                    until: Union[datetime.datetime, float, None] = None) -> list[MonitorSample]:
    """The samples ``btrfsx monitor record`` stored of one filesystem, oldest
    first: a plain list of :class:`MonitorSample`.

    @filesystem: its fsid, a mount point it was recorded at, or a path on it
    while mounted. @db: the history (default /var/lib/btrfsx/monitor.db).
    @since, @until: datetimes or seconds since the epoch (default: all).
    NotFoundError when there is no history or the filesystem is not in it."""
    raw, _ = _btrfsx.monitor_history(db, filesystem, _epoch(since, 0),
                                     _epoch(until, 2 ** 62))
    return [MonitorSample._from(s) for s in raw]


def monitor_projections(filesystems: Sequence[Path] = (), *, db: Optional[Path] = None,
                        now: Union[datetime.datetime, float, None] = None,
                        window: float = 30 * 86400) -> list[MonitorProjection]:
    """The projections of ``btrfsx monitor report``, one per filesystem (all
    in the history when @filesystems is empty): a plain list of
    :class:`MonitorProjection`.

    @now: the end of the window (default: now), @window: its length in
    seconds. The pace is a robust fit (Theil-Sen, up to three one-off jumps
    left out); metadata's days run until the metadata room falls to the global
    reserve, data's until the strict free space is gone. Until the samples
    span a day (and number 3) a filesystem is ``learning``: its trends are
    None and ``reason`` tells the growth seen, not projected."""
    if isinstance(filesystems, (str, bytes, os.PathLike)):
        filesystems = [filesystems]
    if not window > 0:
        raise _invalid(f"window must be positive, not {window}")
    raw, _ = _btrfsx.monitor_projections(db, list(filesystems),
                                         _epoch(now, datetime.datetime.now().timestamp()),
                                         int(window))
    return [MonitorProjection._from(p) for p in raw]


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
            path, forbidden_only, dry_run, force, int(limit), int(max_bytes), float(pause),
            sysfs_root, state_dir, _relocate_progress_adapter(progress), cancel,
            float(progress_interval))
    except BtrfsxError as e:
        if e.partial is not None:
            e.result = RelocateResult._from(e.partial, e.warnings)
        raise
    return RelocateResult._from(raw, warnings)


def plan(paths: Paths, changes: Sequence[tuple], *, sysfs_root: Optional[Path] = None,
         kernel: Optional[str] = None) -> Plan:
    """The space and placement after @changes, before making them (``btrfsx
    filesystem plan``); nothing is changed.

    @paths: a mount point (needs root), or the member devices / image files
    of an unmounted filesystem. @changes: applied in order, each a tuple
    (op, value) as the command spells it: ("add", "64G:metadata_only"),
    ("remove", 3), ("resize", "3=10G"), ("hint", "3=data_only"),
    ("convert", "metadata=raid1c3"), ("replace", "2=4T"), ("relocate",),
    ("balance", "dusage=50,musage=10..30"), ("resume",).
    An impossible change is no error: see :attr:`Plan.possible` and each
    step's status and reason. :class:`InvalidArgumentError` for a plan that
    cannot be made (an unknown devid, a size too small, a profile the devices
    cannot hold, conflicting changes) or a change that does not parse.
    @kernel ("6.1"): make the changes as that kernel would (before an upgrade,
    or to replay a plan made on another machine), not as the running one."""
    spelled = []
    for change in changes:
        if not isinstance(change, tuple) or not 1 <= len(change) <= 2:
            raise _invalid(f"a change is (op, value) or (op,): {change!r}")
        op, value = change[0], change[1] if len(change) > 1 else None
        spelled.append((str(op), None if value is None else str(value)))
    if not spelled:
        raise _invalid("no change to plan")
    return Plan._from(*_btrfsx.plan(_path_list(paths), sysfs_root, spelled, kernel))


def kernel_traits(kernel: Optional[str] = None) -> KernelTraits:
    """Every behaviour of the kernel the models follow, with its versions,
    and which the kernel @kernel ("6.1"; default the running one) has
    (``btrfsx inspect kernel-traits``)."""
    return KernelTraits._from(*_btrfsx.kernel_traits_get(kernel))
