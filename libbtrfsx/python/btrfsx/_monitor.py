# SPDX-License-Identifier: LGPL-2.1-or-later
"""The monitor's history and its projections (``btrfsx monitor``)."""

from __future__ import annotations

import dataclasses
import datetime
import os
from typing import Optional, Sequence, Union

from . import _btrfsx
from ._common import Path, _c_fields, _fsid, _invalid


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
