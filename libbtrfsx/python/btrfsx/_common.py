# SPDX-License-Identifier: LGPL-2.1-or-later
"""What every part of the btrfsx package shares: the error codes and
exceptions, the conversions of flags and ids, and the check that holds each
result class to the C module's table of its fields."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import os
import uuid
from typing import Optional, Sequence, Union

from . import _btrfsx


Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


Paths = Union[Path, Sequence[Path]]


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


def _c_options(*, python_only: Sequence[str] = ()):
    """Checks a function against the C module's table of the options it
    passes (``_btrfsx.OPTIONS``, made from the engine's list of the public
    options struct): its keyword-only parameters are the table's, plus the
    @python_only ones it handles itself. An option added to the C side
    without a parameter here stops the import; :func:`_options` then passes
    the parameters on by name."""
    def check(fn):
        table = set(_btrfsx.OPTIONS[fn.__name__])
        ours = {p.name for p in inspect.signature(fn).parameters.values()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
        missing, extra = table - ours, ours - set(python_only) - table
        stale = set(python_only) - ours
        if missing or extra or stale:
            raise ImportError(f"btrfsx.{fn.__name__} does not match the C table of its "
                              f"options: not a parameter {sorted(missing)}, not in the table "
                              f"{sorted(extra)}, declared but absent {sorted(stale)}")
        return fn
    return check


def _options(function: str, arguments: dict) -> dict:
    """The options of C function @function from a call's @arguments (its
    ``locals()``), by the names the C module's table gives."""
    return {name: arguments[name] for name in _btrfsx.OPTIONS[function]}


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


def strerror(code: int) -> str:
    """The library's short description of error @code."""
    return _btrfsx.strerror(int(code))


def hint_name(hint: int) -> Optional[str]:
    """"data_preferred", "metadata_only", ... for @hint; None for a value
    without a name."""
    if not 0 <= hint < _U64_LIMIT:
        return None
    return _btrfsx.hint_name(int(hint))
