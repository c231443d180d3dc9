/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The settings of the kernel's automatic block group reclaim as a snapshot
 * (model/snapshot.h) carries them: what sysfs showed of a mounted
 * filesystem. What the kernel does with them, and the reader, are in
 * fsops/reclaim.h.
 */
#ifndef BTRFSX_MODEL_RECLAIM_H
#define BTRFSX_MODEL_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

struct bx_reclaim_kind {
	bool known;		/* the kernel shows the kind's files (mounted) */
	bool dynamic;		/* dynamic_reclaim */
	bool periodic;		/* periodic_reclaim */
	int threshold;		/* percent, as the kernel computes it now; 0: none */
	uint64_t count;		/* block groups relocated since the mount (reclaim_count) */
	uint64_t bytes;		/* what they held (reclaim_bytes) */
	uint64_t errors;	/* relocations that failed (reclaim_errors) */
};

/* Per kind, indexed as bx_snapshot.balance_target (BX_SNAP_KIND_*). */
struct bx_reclaim {
	struct bx_reclaim_kind kind[3];
	uint64_t data_chunk_size;	/* allocation/data/chunk_size; 0: not read */
};

#endif
