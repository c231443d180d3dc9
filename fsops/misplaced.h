/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Misplaced chunks: every chunk whose devices break the current allocation
 * hints, as the filesystem misplaced report, the relocation engine and the
 * library see it. Reading goes through the usage reader (fsops/usage.h); the
 * classification is model/placement.h's. Library style: no printing,
 * functions return 0 or a negative errno with a message recorded.
 *
 * The hints are the stored ones (mounted: as sysfs shows them, else the
 * device items), whether or not the running kernel honours them: the report
 * says what breaks the hints, hints_effective whether new chunks follow them.
 */
#ifndef BTRFSX_MISPLACED_H
#define BTRFSX_MISPLACED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "fsops/usage.h"
#include "model/placement.h"

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
	/* the running kernel honours hints: 1, 0, -1 unknown (bx_usage_input.kernel_hints) */
	int kernel_hints;
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
 * Reads the filesystem @paths names (as bx_usage_read: a mount point, or the
 * devices of an unmounted filesystem) with every chunk's used bytes.
 */
int bx_misplaced_read(char *const *paths, int nr_paths, const char *sysfs_root,
		      struct bx_usage_input *in);

/*
 * bx_misplaced_read() and the data chunks' extents (bx_usage_read_dextents()):
 * what a model of the kernel's relocation needs (the what-if planner).
 */
int bx_relocation_read(char *const *paths, int nr_paths, const char *sysfs_root,
		       struct bx_usage_input *in);

/*
 * The placement model of @in now: the devices, the running kernel's
 * allocator flags, the type of a new chunk of each kind. @um owns the
 * devices; @pm points into it. Release @um with bx_usage_model_release().
 */
int bx_misplaced_model(const struct bx_usage_input *in, struct bx_usage_model *um,
		       struct bx_place_model *pm);

/* The chunk @c of @in as placement sees it (stripes into @stripes, num_stripes long). */
void bx_misplaced_place_chunk(const struct bx_usage_input *in, const struct bx_usage_chunk *c,
			      struct bx_place_stripe *stripes, struct bx_place_chunk *out);

/*
 * The report for @in (which needs chunks_used_known). @state_dir (NULL: no
 * rate, no estimate) holds the measured copy rate. Release with
 * bx_misplaced_report_release(). Returns 0, -EINVAL or -ENOMEM.
 */
int bx_misplaced_compute(const struct bx_usage_input *in, const char *state_dir,
			 struct bx_misplaced_report *rep);
/* bx_misplaced_compute() with no rate and no warning said (the planner says its own). */
int bx_misplaced_compute_quiet(const struct bx_usage_input *in, struct bx_misplaced_report *rep);
void bx_misplaced_report_release(struct bx_misplaced_report *rep);

#endif
