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

# One module per area, as the C module has one file per area
# (libbtrfsx/python/<area>.c); this file gathers their public names.
from . import _btrfsx
from ._common import (  # noqa: F401
    BtrfsxError, BtrfsxIOError, BusyError, CancelledError, CorruptedError, ErrorCode, Hint,
    hint_name, InvalidArgumentError, MissingDeviceError, MountedError, NoMemoryError,
    NoSpaceError, NotBtrfsError, NotFoundError, NotMountedError, NotSupportedError,
    PermissionDeniedError, profile_name, strerror, type_name, _make_error, _c_fields)
from ._hints import (  # noqa: F401
    fs_info_offline, FsInfo, hint_get, hint_parse, hint_set, HintChange, HintInterface,
    HintState)
from ._usage import (  # noqa: F401
    Reclaim, Usage, usage, UsageClass, UsageDevice, UsageReclaim, UsageSpace, UsageWarning)
from ._read_policy import (  # noqa: F401
    ApplyReport, ApplyResult, ApplyStatus, io_stats_sample, IoStats, IoStatsSample,
    read_policy_apply, read_policy_get, read_policy_recommend, read_policy_set, ReadPolicy,
    ReadPolicyChange, ReadPolicyInterface, Recommendation, RecommendCandidate, RecommendDevice,
    RecommendWorkload)
from ._scrub import (  # noqa: F401
    scrub_offline, ScrubCounters, ScrubDevice, ScrubError, ScrubFile, ScrubProgress,
    ScrubResult)
from ._monitor import (  # noqa: F401
    monitor_history, monitor_projections, MonitorProjection, MonitorSample, MonitorTrend)
from ._misplaced import (  # noqa: F401
    Misplaced, misplaced, MisplacedChunk, MisplacedClass, MisplacedTotals, relocate_misplaced,
    Relocated, RelocatedNewChunk, RelocateProgress, RelocateResult, RelocateStatus)
from ._plan import (  # noqa: F401
    Plan, plan, PlanChange, PlanChunk, PlanOp, PlanShort, PlanShortDevice, PlanStatus, PlanStep)
from ._kernel import (  # noqa: F401
    kernel_traits, KernelTrait, KernelTraits)
from ._maintain import (  # noqa: F401
    maintain, MaintainChunk, MaintainReason, MaintainResult, MaintainState, MaintainStatus)

__version__ = f"{_btrfsx.VERSION_MAJOR}.{_btrfsx.VERSION_MINOR}.{_btrfsx.VERSION_PATCH}"

__all__ = [
    "ApplyReport", "ApplyResult", "ApplyStatus", "BtrfsxError", "BtrfsxIOError", "BusyError",
    "CancelledError", "CorruptedError", "ErrorCode", "fs_info_offline", "FsInfo", "Hint",
    "hint_get", "hint_name", "hint_parse", "hint_set", "HintChange", "HintInterface",
    "HintState", "InvalidArgumentError", "io_stats_sample", "IoStats", "IoStatsSample",
    "kernel_traits", "KernelTrait", "KernelTraits", "Misplaced", "misplaced", "MisplacedChunk",
    "MisplacedClass", "MisplacedTotals", "MissingDeviceError", "monitor_history",
    "monitor_projections", "MonitorProjection", "MonitorSample", "MonitorTrend", "MountedError",
    "NoMemoryError", "NoSpaceError", "NotBtrfsError", "NotFoundError", "NotMountedError",
    "NotSupportedError", "PermissionDeniedError", "Plan", "plan", "PlanChange", "PlanChunk",
    "PlanOp", "PlanShort", "PlanShortDevice", "PlanStatus", "PlanStep", "profile_name",
    "read_policy_apply", "read_policy_get", "read_policy_recommend", "read_policy_set",
    "ReadPolicy", "ReadPolicyChange", "ReadPolicyInterface", "Recommendation",
    "Reclaim", "RecommendCandidate", "RecommendDevice", "RecommendWorkload", "relocate_misplaced",
    "Relocated", "RelocatedNewChunk", "RelocateProgress", "RelocateResult", "RelocateStatus",
    "scrub_offline", "ScrubCounters", "ScrubDevice", "ScrubError", "ScrubFile", "ScrubProgress",
    "ScrubResult", "strerror", "type_name", "Usage", "usage", "UsageClass", "UsageDevice",
    "UsageReclaim", "UsageSpace", "UsageWarning",
    "maintain", "MaintainChunk", "MaintainReason", "MaintainResult", "MaintainState",
    "MaintainStatus",
]
