/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Misplaced chunks: every chunk of a snapshot whose devices break the
 * current allocation hints, classified by placement (model/placement.h),
 * in the order a relocation takes them (forbidden first, then
 * off-preference; the fewest used bytes first), with totals and the free
 * space in well-placed chunks. Pure: the filesystem misplaced report, the
 * relocation engine, the planner and the library start from it
 * (fsops/misplaced.h adds the time estimate).
 *
 * The hints are the snapshot's (mounted: as sysfs shows them, else the
 * device items), whether or not the kernel honours them: the report says
 * what breaks the hints, hints_effective whether new chunks follow them.
 */
#ifndef BTRFSX_MODEL_MISPLACED_H
#define BTRFSX_MODEL_MISPLACED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "model/placement.h"
#include "model/snapshot.h"

/*
 * A chunk that breaks the hints. The list is what struct
 * btrfsx_misplaced_chunk and Python's MisplacedChunk take as it is
 * (common/fields.h); the rest the library converts.
 */
#define BX_MISPLACED_CHUNK_FIELDS(X)				\
	X(uint64_t, logical, )					\
	X(uint64_t, length, )	/* logical bytes allocated */	\
	X(uint64_t, used, )	/* logical bytes in use: what a relocation copies */

struct bx_misplaced_chunk {
	BX_MISPLACED_CHUNK_FIELDS(BX_FIELD_MEMBER)
	uint64_t type;			/* BTRFS_BLOCK_GROUP_* type and profile */
	enum bx_place_class cls;
	uint32_t tiers;			/* bit t: a stripe on tier t (0: excluded) */
	uint32_t num_stripes;
	struct bx_place_stripe *stripes;	/* in the chunk item's order */
	size_t nr_offending;
	uint64_t *offending;		/* devids breaking the hints */
	/* where the allocator model would put a new chunk of this kind now */
	bool have_target;		/* false: the model finds no room */
	uint64_t target_type;
	uint64_t target_length;
	uint32_t target_stripes;
	uint64_t *target_devids;	/* target_stripes devids, in stripe order */
};

/* One class of misplaced chunks, summed: btrfsx_misplaced_totals, MisplacedTotals. */
#define BX_MISPLACED_TOTALS_FIELDS(X)						\
	X(uint64_t, chunks, )							\
	X(uint64_t, allocated, )	/* logical bytes of the chunks */	\
	X(uint64_t, used, )		/* logical bytes in use */		\
	X(double, estimate_seconds, )	/* of a relocation; < 0: no rate known */

struct bx_misplaced_totals {
	BX_MISPLACED_TOTALS_FIELDS(BX_FIELD_MEMBER)
};

/* What struct btrfsx_misplaced and Python's Misplaced take as it is. */
#define BX_MISPLACED_REPORT_FIELDS(X)						\
	X(uint8_t, fsid, [16])							\
	X(bool, mounted, )							\
	X(char, path, [4096])							\
	X(bool, hints_effective, )	/* new chunks follow the hints */	\
	X(uint64_t, chunks_checked, )

struct bx_misplaced_report {
	BX_MISPLACED_REPORT_FIELDS(BX_FIELD_MEMBER)
	/* the running kernel honours hints: 1, 0, -1 unknown (bx_snapshot.kernel_hints) */
	int kernel_hints;
	struct bx_kernel kernel;	/* whose behaviour the placement followed (the snapshot's) */
	struct bx_misplaced_totals forbidden;
	struct bx_misplaced_totals off_preference;
	/* the measured copy rate of earlier relocations (fsops/copy-rate.h) */
	bool have_rate;
	double rate;			/* used bytes per second */
	uint64_t pool[BX_PLACE_NR_KINDS];	/* free bytes in well-placed chunks, per kind */
	size_t nr_chunks;
	/* forbidden first, then off-preference; by used bytes, then logical */
	struct bx_misplaced_chunk *chunks;
};

/*
 * The report for @in (which needs chunks_used_known), without a time
 * estimate (estimate_seconds -1). Release with
 * bx_misplaced_report_release(). Returns 0, -EINVAL or -ENOMEM, with the
 * message.
 */
int bx_misplaced_classify(const struct bx_snapshot *in, struct bx_misplaced_report *rep);
void bx_misplaced_report_release(struct bx_misplaced_report *rep);

#endif
