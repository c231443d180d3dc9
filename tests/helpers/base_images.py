# SPDX-License-Identifier: GPL-2.0-or-later
"""The fuzzing base images (tests/fuzz/images: every profile x checksum,
written by the kernel) for tests that damage a few items of a real
filesystem without loop devices: base_image("00-single-crc32c") is a
bximage.Image (tests/fuzz/bximage.py); change items with bximage.patch_items
or replace_items and write the members with Image.write(patches, directory).
"""

from __future__ import annotations

import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))

import bximage  # noqa: E402  (lives beside the fuzzing tools)

INODE_REF = 12
EXTENT_DATA = 108
ROOT_BACKREF = 144
BLOCK_GROUP_ITEM = 192
DEV_ITEM = 216
CHUNK_ITEM = 228


def base_image(name: str) -> bximage.Image:
    return bximage.Image(FUZZ / "images" / f"{name}.bxfi")


def file_extents(img: bximage.Image, inode: int) -> list[int]:
    """Logical addresses of the regular extents of @inode (every tree)."""
    out = []
    for objectid, _, body in bximage.item_bodies(img, EXTENT_DATA):
        if objectid == inode and len(body) >= 53 and body[20] == 1:
            out.append(int.from_bytes(body[21:29], "little"))
    return out
