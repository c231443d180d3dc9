# SPDX-License-Identifier: LGPL-2.1-or-later
"""The what-if planner (``btrfsx filesystem plan``)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Optional, Sequence, Union

from . import _btrfsx
from ._common import (
    Hint, Path, Paths, _BlockGroupFlags, _c_fields, _hint, _invalid, _path_list, _text_or_none)
from ._usage import Usage
from ._misplaced import Misplaced, misplaced


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


def plan(paths: Paths, changes: Sequence[tuple], *, sysfs_root: Optional[Path] = None,
         kernel: Optional[str] = None) -> Plan:
    """The space and placement after @changes, before making them (``btrfsx
    filesystem plan``); nothing is changed.

    @paths: a mount point (needs root), or the member devices / image files
    of an unmounted filesystem. @changes: applied in order, each a tuple
    (op, value) as the command spells it: ("add", "64G:metadata_only"),
    ("remove", 3), ("resize", "3=10G") or ("resize", "3=max"), ("hint", "3=data_only"),
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
