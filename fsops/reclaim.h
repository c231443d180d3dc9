/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's automatic reclaim of block groups, as sysfs shows it for a
 * mounted filesystem (/sys/fs/btrfs/<FSID>/allocation/<kind>/). It is off
 * unless switched on (bg_reclaim_threshold is 0 outside zoned
 * filesystems). When on, the cleaner thread relocates block groups of that
 * kind whose use is below a threshold, a percentage of each one's size:
 *
 *  - bg_reclaim_threshold: a block group is queued when a deletion takes
 *    its use from at or above the threshold to below it (one that was never
 *    above it stays), and relocated at the cleaner's next run, the least
 *    used first; one empty by then is deleted as any empty one is.
 *  - dynamic_reclaim (Linux 6.11): the threshold follows the unallocated
 *    space U: 100 x (10 C - U) / (10 C) percent, 0 once U reaches 10 C or
 *    while less than C of the kind's block groups is unused, C the data
 *    chunk size (the smallest of the data chunk_size, 10 % of the devices
 *    and 1 GiB). The file bg_reclaim_threshold shows the value of now and
 *    refuses writes.
 *  - periodic_reclaim (Linux 6.11): a deletion only counts the bytes it
 *    frees; once C bytes are, each cleaner run sweeps the kind: a block
 *    group below the threshold that saw no allocation since the sweep
 *    before is relocated (any below it while U is under C).
 *
 * What it does to the figures: a relocation moves the extents into the free
 * space of other block groups or into new chunks, so allocated bytes fall
 * (unallocated rises) by up to the block group's unused space. Metadata
 * room grows by that much at most; data that can still be written barely
 * moves (free space in data chunks becomes unallocated space). Writing
 * alone never starts it: a fill to ENOSPC gets what the model says, with
 * reclaim on or off. Traced on Linux 6.18 (tests/test_reclaim.py).
 */
#ifndef BTRFSX_RECLAIM_H
#define BTRFSX_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/fields.h"
#include "model/reclaim.h"
#include "model/snapshot.h"

/*
 * Reads the reclaim settings of the mounted filesystem @fsid under
 * @sysfs_root (the kernel's "/sys", or a test's tree). A kind whose files
 * are missing (an older kernel, a mixed filesystem) is left unknown; never
 * fails.
 */
void bx_reclaim_read(const char *sysfs_root, const uint8_t fsid[16], struct bx_reclaim *r);

/* Whether the kernel reclaims block groups of this kind (now or as space runs low). */
bool bx_reclaim_on(const struct bx_reclaim_kind *k);

/* Whether any kind has reclaim on. */
bool bx_reclaim_any(const struct bx_reclaim *r);

/*
 * C above: the data chunk size the kernel's reclaim and overcommit reckon
 * with (calc_effective_data_chunk_size()): the smallest of @r's data
 * chunk_size (10 GiB unless changed; unknown: that), 10 % of the writable
 * devices' size in @in, and 1 GiB.
 */
uint64_t bx_reclaim_data_chunk(const struct bx_snapshot *in, const struct bx_reclaim *r);

/*
 * The threshold of @kind for the filesystem as @in describes it, with the
 * settings of @r: a dynamic one computed from @in's unallocated space and
 * the kind's unused bytes as the kernel computes it (a plan's after-state
 * gets the threshold it will have then), the set one otherwise; 0 when off.
 */
int bx_reclaim_threshold(const struct bx_snapshot *in, const struct bx_reclaim *r,
			 unsigned int kind);

/*
 * One kind's reclaim as usage, plan and the library report it: the
 * settings, the threshold for the state described, the block groups used
 * below it (those the kernel relocates once its rule picks them) and what
 * it relocated since the mount.
 */
#define BX_RECLAIM_KIND_FIELDS(X)								\
	X(bool, known, )	/* the kernel shows the kind's settings */			\
	X(bool, on, )		/* it relocates now or as space runs low */			\
	X(bool, dynamic, )									\
	X(bool, periodic, )									\
	X(uint32_t, threshold, )	/* percent of a block group's size; 0: off */		\
	X(uint64_t, below_block_groups, )							\
	X(uint64_t, below_used, )	/* logical bytes in them */				\
	X(uint64_t, below_size, )	/* their logical size */				\
	X(uint64_t, below_device_bytes, )	/* what they take of the devices */		\
	X(uint64_t, reclaimed_block_groups, )	/* since the mount (reclaim_count) */		\
	X(uint64_t, reclaimed_bytes, )	/* what they held (reclaim_bytes) */			\
	X(uint64_t, reclaim_errors, )	/* relocations that failed */

struct bx_reclaim_kind_report {
	BX_RECLAIM_KIND_FIELDS(BX_FIELD_MEMBER)
};

struct bx_reclaim_report {
	bool known;			/* mounted, and the kernel shows some kind's settings */
	uint64_t data_chunk_size;	/* C (bx_reclaim_data_chunk()) */
	uint64_t device_bytes_below_threshold;	/* of every kind */
	struct bx_reclaim_kind_report kind[BX_SNAP_NR_KINDS];
};

/*
 * The report of the reclaim settings of @settings (the filesystem as read)
 * for the state @in describes (the same, or a plan's after-state): a
 * dynamic threshold is the one the kernel will have then. The block groups
 * below it need the chunks' used bytes in @in (chunks_used_known); without
 * them, none.
 */
void bx_reclaim_report(const struct bx_snapshot *settings, const struct bx_snapshot *in,
		       struct bx_reclaim_report *out);

#endif
