/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The superblock's feature bits: their names, and which ones btrfsx reads
 * and writes. Pure functions.
 *
 * An incompat bit changes how the trees are to be read: a filesystem with
 * one btrfsx does not know (the remap tree of Linux 7.0 moves where logical
 * addresses live) is refused by everything that reads its trees, naming the
 * bit. A compat_ro bit only forbids writing: such a filesystem is read, but
 * not written (offline hint set, scrub repair). compat bits change nothing.
 */
#ifndef BTRFSX_FEATURES_H
#define BTRFSX_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * btrfsx mkfs marks the superblocks it writes before the trees are complete
 * with this incompat bit (mkfs/mkfs.h): no kernel mounts them, and btrfsx
 * refuses them as unfinished.
 */
#define BX_MKFS_INCOMPAT_UNFINISHED (1ULL << 63)

/* "no-holes", "block-group-tree" ... (mkfs.btrfs -O spelling), or NULL. */
const char *bx_incompat_name(unsigned int bit);
const char *bx_compat_ro_name(unsigned int bit);

enum bx_features_verdict {
	BX_FEATURES_OK,
	BX_FEATURES_NO_READ,    /* an incompat feature btrfsx does not read */
	BX_FEATURES_NO_WRITE,   /* writing, and a compat_ro feature btrfsx does not write on */
};

/*
 * Whether btrfsx may read (and, when @writing, write) a filesystem with
 * these feature bits; the first feature in the way is described into @buf
 * ("incompat feature remap-tree (bit 17)", "unknown incompat feature bit 40").
 */
enum bx_features_verdict bx_features_check(uint64_t incompat, uint64_t compat_ro, bool writing,
					   char *buf, size_t len);

#endif
