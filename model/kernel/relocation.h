/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the kernel does when it relocates block groups (fs/btrfs/
 * relocation.c, volumes.c btrfs_shrink_device() and __btrfs_balance(),
 * block-group.c btrfs_inc_block_group_ro(), dev-replace.c), run on the
 * kernel state (state.h). Pure: the state in, the state changed and what
 * happened out; the callers (the planner, the maintain engine) say what
 * it means for their users.
 *
 * Relocating a chunk: its used bytes go first into the free space of the
 * chunks of the new chunk type, by address (the kernel fills existing
 * block groups first, also those it relocates later), then into new chunks
 * the allocator model places one after the other on the writable devices;
 * when the chunk's profile is not the one new chunks get, the kernel first
 * allocates one chunk of the new profile (btrfs_inc_block_group_ro);
 * moving a data chunk while no data is used allocates an empty data chunk
 * first (btrfs_may_alloc_data_chunk). Data chunks whose extents are known
 * move extent by extent (relocation.c and extent-tree.c). The chunk's
 * device extents are then free for the chunks after it, from the next
 * commit on. A chunk that finds no room stays where it is (the kernel's
 * ENOSPC) and what its move took is given back.
 */
#ifndef BTRFSX_MODEL_KERNEL_RELOCATION_H
#define BTRFSX_MODEL_KERNEL_RELOCATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/kernel/state.h"

/*
 * A balance's usage filter per kind (chunk_usage_range_filter): a chunk is
 * balanced when its used bytes, as the balance reaches it, are at least
 * MIN and below MAX percent of its size (MAX 0: the empty ones). Mixed
 * chunks take data's; metadata's holds for system chunks too.
 */
struct bx_usage_filter {
	uint8_t data_min, data_max;
	uint8_t metadata_min, metadata_max;
};

/* Whether filter @f takes a chunk of @type and @length with @used bytes in use. */
bool bx_usage_filter_selects(const struct bx_usage_filter *f, uint64_t type, uint64_t length,
			     uint64_t used);

/* How one run of relocations moves its chunks: what the operation asked for. */
struct bx_reloc_how {
	uint64_t target[BX_PLACE_NR_KINDS];	/* convert: the new type per kind; 0: the fs's */
	bool retry;			/* shrink: what failed is tried once more */
	bool reserve_once;		/* balance: the empty data chunk at most once */
	bool improve;			/* misplaced: new chunks must place it better */
	bool soft;			/* resume: chunks already in the target stay */
	/* balance: the usage filter, checked as the balance reaches each chunk */
	const struct bx_usage_filter *usage;
	/* kept across runs of one operation (the model sets them) */
	bool reserved;			/* the empty data chunk was made */
	bool pair_made;			/* convert: the paired chunk was made */
};

/* Chunks of one type that found no room. */
struct bx_reloc_short {
	uint64_t type;			/* type and profile of the chunks they needed */
	uint64_t missing;		/* used bytes without room */
	uint64_t used;			/* of the chunks that could not move */
	uint64_t largest;		/* the most one of them still needed */
	uint32_t chunks;
};

/* The chunks to move, in order; after a run, those that did not move, and why. */
struct bx_reloc_list {
	size_t *idx;			/* chunk indexes (malloc()ed: the caller frees it) */
	size_t nr;
	struct bx_reloc_short shorts[BX_PLACE_NR_KINDS * 2];
	size_t nr_shorts;
};

/* The shortage of @type in @ml (added when new; the last one when full). */
struct bx_reloc_short *bx_reloc_short_of(struct bx_reloc_list *ml, uint64_t type);

/*
 * What a run did besides moving chunks, for the caller to say (set, never
 * cleared, by the model).
 */
struct bx_reloc_events {
	/*
	 * Possible, but uncertain: it moves or copies the only metadata or
	 * system block group with room while the devices are nearly full, or
	 * a new chunk got less than a chunk of its type gets (the devices'
	 * last room). The kernel's space reservation may then allocate
	 * another chunk or fail.
	 */
	bool tight;
	/*
	 * A metadata block group moves while no other has room for the
	 * commit before it (prepare_to_relocate()) and the devices have none
	 * for a new one: the kernel may abort the transaction. The first such
	 * chunk's address.
	 */
	bool abort_risk;
	uint64_t abort_logical;
	/* A shrink moved every chunk, some only on its second try. */
	bool second_try;
	/* Called for each chunk moved, before it is freed; may be NULL. */
	int (*moved)(void *arg, const struct bx_kstate *s, size_t idx);
	void *arg;
};

/*
 * Relocates the chunks of @ml in order, as @how says (one pass, or two
 * with @how->retry; chunks that stopped breaking the hints (@how->improve)
 * or that the filters no longer take are skipped). Afterwards @ml holds
 * the chunks that did not move, with the shortages of their types; the
 * state is committed. Returns 0 or a negative errno with the message.
 */
int bx_ks_relocate(struct bx_kstate *s, struct bx_reloc_how *how, struct bx_reloc_list *ml,
		   struct bx_reloc_events *ev);

/* ---- which chunks an operation relocates, in the kernel's order (volumes.c) ---- */

/*
 * The chunks with an extent on @devid ending beyond @end, from the highest
 * extent down (btrfs_shrink_device()'s order); @end 0: every chunk there.
 * Into @ml (its idx allocated here). Returns 0 or -ENOMEM.
 */
int bx_ks_chunks_on_device(const struct bx_kstate *s, uint64_t devid, uint64_t end,
			   struct bx_reloc_list *ml);

/* The chunks with any of the @types bits, the last one first (__btrfs_balance()'s order). */
int bx_ks_chunks_of_type(const struct bx_kstate *s, uint64_t types, struct bx_reloc_list *ml);

/* bx_ks_chunks_of_type() of a balance of @types: metadata takes system along. */
int bx_ks_balance_chunks(const struct bx_kstate *s, uint64_t types, struct bx_reloc_list *ml);

/* ---- a replace (dev-replace.c) ---- */

/*
 * A replace of @devid copies each of its block groups read-only (scrub),
 * up the device: the chunks the kernel allocates meanwhile. Returns 0, 1
 * when a block group cannot be made read-only (the kernel's ENOSPC; its
 * index in *@refused), or a negative errno. @ev->tight when a metadata block
 * group moves without another with room.
 */
int bx_ks_replace_copy(struct bx_kstate *s, uint64_t devid, struct bx_reloc_events *ev,
		       size_t *refused);

/* Bytes a replace copies from @devid: each stripe there holds its share of the used bytes. */
uint64_t bx_ks_replace_copies(const struct bx_kstate *s, uint64_t devid);

/* ---- a prediction in one call ---- */

/* What relocating a set of chunks does (bx_relocation_predict()). */
struct bx_reloc_prediction {
	size_t moved;			/* chunks relocated */
	uint64_t moved_bytes;		/* their used bytes: what the kernel copies */
	size_t created;			/* chunks allocated for them (still there at rest) */
	uint64_t created_length;
	size_t failed;			/* chunks that found no room (the kernel's ENOSPC) */
	struct bx_reloc_events events;	/* tight, abort risk (moved: unused) */
};

/*
 * Relocates the chunks at @logicals (@n; each a balance of that chunk
 * alone, in order, as `btrfsx balance misplaced` moves them; with
 * @improve only where the model places it better) on a state of @snap,
 * lets the cleaner run, and gives the filesystem afterwards in @after
 * (release it with bx_snapshot_release()) and what happened in @out. A
 * chunk that finds no room stays and the others go on. Returns 0, -ENOENT
 * (no chunk at one of @logicals) or another negative errno, with the
 * message.
 */
int bx_relocation_predict(const struct bx_snapshot *snap, const uint64_t *logicals, size_t n,
			  bool improve, struct bx_snapshot *after, struct bx_reloc_prediction *out);

#endif
