/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Chunk placement against the allocation hints: which existing chunks break
 * the hints, where the allocator model would put a chunk of the same kind
 * now, whether a new chunk is better placed than an old one, and whether
 * the model has room to move a list of chunks.
 *
 * Pure functions on top of the allocator model (allocator.h): structures in,
 * decisions out. No I/O, no printing, no global state; errors are negative
 * errno values. The filesystem misplaced report, the relocation engine and
 * a what-if planner all classify through here.
 *
 * Classes (SPEC "Allocation hints", tiers as allocator.h defines them; value
 * 4, none, is the last tier):
 *  - forbidden: a stripe on a device whose hint excludes the chunk's type
 *    (data on metadata_only, metadata or system on data_only);
 *  - off-preference: not forbidden, and the model's chunk of that kind, asked
 *    for now, is better placed: for every tier t the share of its stripes on
 *    tier t or worse is at most the chunk's, and for one t smaller. With
 *    equal stripe counts (single, dup, raid1, raid1c3, raid1c4) that is "each
 *    stripe as good, one better" on the sorted tiers; shares make a raid0,
 *    raid10 or raid5/6 chunk that spans more devices of the same tiers no
 *    worse. When the model finds no room for a chunk of that kind, nothing
 *    is off-preference (moving could not do better).
 * Mixed block groups ignore hints, so they are never misplaced; with
 * BX_ALLOC_IGNORE_HINTS in the model's flags nothing is.
 */
#ifndef BTRFSX_PLACEMENT_H
#define BTRFSX_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/allocator.h"

/* Kinds of chunk: a new chunk of each kind has one type and profile. */
#define BX_PLACE_KIND_DATA 0	/* data, also mixed data+metadata */
#define BX_PLACE_KIND_METADATA 1
#define BX_PLACE_KIND_SYSTEM 2
#define BX_PLACE_NR_KINDS 3

/* The kind of a chunk of @type (BTRFS_BLOCK_GROUP_* bits). */
int bx_place_kind(uint64_t type);
/* "data", "metadata", "system" or "data+metadata" for @type. */
const char *bx_place_type_name(uint64_t type);

/* The allocator model of one filesystem, as it is now. */
struct bx_place_model {
	const struct bx_alloc_device *devs;	/* in alloc_list order, see allocator.h */
	size_t nr_devs;
	struct bx_alloc_params params;
	/* type and profile of the next chunk of each kind; 0: the chunk's own */
	uint64_t new_type[BX_PLACE_NR_KINDS];
};

struct bx_place_stripe {
	uint64_t devid;
	uint64_t physical;
};

/* An existing chunk. */
struct bx_place_chunk {
	uint64_t logical;
	uint64_t length;		/* logical bytes */
	uint64_t used;			/* logical bytes in use: what a move copies */
	uint64_t type;			/* BTRFS_BLOCK_GROUP_* type and profile */
	uint32_t num_stripes;
	const struct bx_place_stripe *stripes;
};

enum bx_place_class {
	BX_PLACE_OK,
	BX_PLACE_FORBIDDEN,
	BX_PLACE_OFF_PREFERENCE,
};

struct bx_place_verdict {
	enum bx_place_class cls;
	uint32_t tiers;			/* bit t: a stripe on tier t (bit 0: excluded) */
	bool unknown_device;		/* a stripe on a devid the model does not have */
	size_t nr_offending;
	uint64_t *offending;		/* devids breaking the hints, each once; malloc()ed */
	/*
	 * Where the model puts a new chunk of this kind now: target_ret 0 and
	 * target filled (stripes malloc()ed), or -ENOSPC (no room).
	 */
	int target_ret;
	struct bx_alloc_chunk target;
};

/*
 * Classifies @chunk against @model. Release @v with bx_place_verdict_release()
 * (also after an error). Returns 0, -EINVAL (a type the model does not take)
 * or -ENOMEM.
 */
int bx_place_classify(const struct bx_place_model *model, const struct bx_place_chunk *chunk,
		      struct bx_place_verdict *v);
void bx_place_verdict_release(struct bx_place_verdict *v);

/*
 * Where the model puts a new chunk of each kind (new_type) now, decided
 * once: classifying many chunks against one model need not decide again.
 * ret[kind]: 0 (chunk filled), -ENOSPC, or 1 (new_type 0: each chunk's own
 * type decides). Release with bx_place_targets_release().
 */
struct bx_place_targets {
	int ret[BX_PLACE_NR_KINDS];
	struct bx_alloc_chunk chunk[BX_PLACE_NR_KINDS];
};
int bx_place_targets_decide(const struct bx_place_model *model, struct bx_place_targets *t);
void bx_place_targets_release(struct bx_place_targets *t);
/* bx_place_classify() with the model's targets decided already (@t may be NULL). */
int bx_place_classify_with(const struct bx_place_model *model, const struct bx_place_targets *t,
			   const struct bx_place_chunk *chunk, struct bx_place_verdict *v);

/*
 * Whether a new chunk on the devices @devids (@n stripes) places the data of
 * @old better: the new one is not forbidden, and @old was forbidden or the
 * new one is better by the off-preference rule above. Devids the model does
 * not have count as excluded.
 */
bool bx_place_improves(const struct bx_place_model *model, const struct bx_place_chunk *old,
		       const uint64_t *devids, uint32_t n);

/* The best tier any writable device has for @type (BX_TIER_LAST + 1: none). */
uint32_t bx_place_best_tier(const struct bx_place_model *model, uint64_t type);

/* Whether the model has room to move a list of chunks (bx_place_room). */
struct bx_place_room {
	size_t nr_fit;			/* leading moves that all have room */
	uint32_t short_moves[BX_PLACE_NR_KINDS];	/* moves without (full) room */
	uint64_t missing[BX_PLACE_NR_KINDS];	/* their used bytes without room */
	uint64_t new_chunk_bytes[BX_PLACE_NR_KINDS];	/* logical bytes of new chunks needed */
	uint32_t new_chunks[BX_PLACE_NR_KINDS];
};

/*
 * Runs the model forward over @moves, in order: each chunk's used bytes go
 * first into @pool[kind] (free bytes in well-placed chunks of that kind, as
 * the kernel fills existing block groups before it allocates), then into
 * new chunks the model allocates one after the other, each of which must
 * improve on the moved chunk (bx_place_improves); the leftover of a new chunk
 * joins the pool. A moved chunk's device extents are freed for the moves
 * after it. A move without enough room is counted in @room and left in place.
 * @moves[i].type decides the kind; forbidden and off-preference moves are
 * treated alike. @pool may be NULL (empty). Returns 0, -EINVAL or -ENOMEM.
 */
int bx_place_room(const struct bx_place_model *model, const struct bx_place_chunk *moves,
		  size_t nr_moves, const uint64_t *pool, struct bx_place_room *room);

#endif
