# SPDX-License-Identifier: LGPL-2.1-or-later
"""Read policies of RAID1-family profiles: get, set, apply, the
recommendation, and the block devices' read counters."""

from __future__ import annotations

import dataclasses
import enum
import threading
from typing import Callable, Optional, Sequence

from . import _btrfsx
from ._common import BtrfsxError, Path, _c_fields, _text_or_none


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
    stable: bool                 #: each pass of the last round alone picks the same
    rounds: int                  #: of the probe (at most 3), each every replay twice
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
