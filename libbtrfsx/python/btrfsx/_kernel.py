# SPDX-License-Identifier: LGPL-2.1-or-later
"""The register of kernel behaviour the models follow
(``btrfsx inspect kernel-traits``)."""

from __future__ import annotations

import dataclasses
from typing import Optional

from . import _btrfsx
from ._common import _c_fields


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


def kernel_traits(kernel: Optional[str] = None) -> KernelTraits:
    """Every behaviour of the kernel the models follow, with its versions,
    and which the kernel @kernel ("6.1"; default the running one) has
    (``btrfsx inspect kernel-traits``)."""
    return KernelTraits._from(*_btrfsx.kernel_traits_get(kernel))
