/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The planner's working state: the filesystem as the changes so far leave
 * it. Devices carry both the allocator model's view (holes) and what the
 * usage report needs; chunks carry their stripes and used bytes. Shared by
 * plan/plan.c (the changes) and plan/plan-state.c (the state).
 */
#ifndef BTRFSX_PLAN_PRIVATE_H
#define BTRFSX_PLAN_PRIVATE_H

#include "model/allocator.h"
#include "model/placement.h"
#include "plan/plan.h"

/* Free space inside a data chunk: logical bytes [start, start + len). */
struct ps_hole {
	uint64_t start;
	uint64_t len;
};

/* The size classes of the kernel's data allocator (6.3+): none yet, < 128 KiB, < 8 MiB, more. */
enum ps_size_class { PS_SC_NONE, PS_SC_SMALL, PS_SC_MEDIUM, PS_SC_LARGE };

/* A chunk; plan_state.chunks keeps them in address order except where gone ones were reused. */
struct ps_chunk {
	uint64_t logical;
	uint64_t length;
	uint64_t used;
	uint64_t used_before;		/* in the input; 0 for a new chunk */
	bool is_new;			/* made by the plan */
	uint64_t type;
	uint64_t stripe_size;		/* device bytes of each stripe */
	uint32_t num_stripes;
	uint32_t sub_stripes;
	struct bx_place_stripe *stripes;
	uint64_t start_used;		/* when the running change began */
	bool gone;			/* relocated away */
	bool pending;			/* to be moved by the running change */
	bool moving;			/* being moved: read-only, no pool */
	bool in_pool;			/* listed in its pool */
	bool unused_listed;		/* on the kernel's list of unused block groups */
	/*
	 * Data chunks when the extents are known (plan_state.exact): the extents in it
	 * (what moving it copies, one by one) and the free space between them
	 * (where extents of other chunks land), both by address.
	 */
	size_t nr_exts, cap_exts;
	struct bx_usage_dextent *exts;
	size_t nr_holes, cap_holes;
	struct ps_hole *holes;
	enum ps_size_class size_class;
};

struct ps_dev {
	struct bx_usage_dev info;	/* no extents: the chunks hold them */
	bool added;
	bool removed;
	bool replaced;
};

/*
 * Bytes a pool gave a chunk: undone when the move they were for fails. With
 * extents (plan_state.exact) @start is where in the chunk they went.
 */
struct ps_take {
	size_t idx;
	uint64_t bytes;
	uint64_t start;
	bool extent;
};

/* A device extent freed in the running transaction: not yet reusable. */
struct ps_freed {
	size_t dev;
	uint64_t start;
	uint64_t len;
};

/* Free space in chunks of one type, filled in order. */
struct ps_pool {
	uint64_t type;
	uint64_t free;			/* free bytes of the chunks listed */
	size_t *chunks;			/* indexes into plan_state.chunks */
	size_t nr, cap, next;
};

/*
 * Which data chunks have room for an extent, fast (plan-data.c): per size
 * class a max-tree over the chunk indexes of each chunk's largest free
 * range (0: not one of @type, gone or being moved). Leaves of chunks added
 * since are filled on the next use; @stale makes it rebuilt (a move undone).
 */
struct ps_hole_index {
	uint64_t type;
	size_t nr;			/* chunks indexed: 0 .. nr - 1 */
	size_t leaves;			/* a power of two, 0: not built */
	uint64_t *tree[PS_SC_LARGE + 1];
	bool stale;
};

/* The state itself; the ps_ functions below work on it. */
struct plan_state {
	const struct bx_usage_input *in;
	size_t nr_devs;
	struct ps_dev *devs;
	struct bx_alloc_device *adevs;	/* the model, same order */
	struct bx_alloc_params params;
	size_t nr_chunks, cap_chunks;
	struct ps_chunk *chunks;	/* by logical */
	size_t nr_spaces;
	struct bx_usage_space *spaces;	/* as the space info would show them */
	uint64_t first_logical;		/* of a chunk when none is left */
	size_t nr_pools;
	struct ps_pool *pools;
	size_t nr_journal, cap_journal;
	struct ps_take *journal;	/* the takes since the last mark kept */
	size_t nr_freed, cap_freed;
	struct ps_freed *freed;		/* until ps_commit() */
	long moving;			/* the chunk being moved, or -1 */
	bool exact;			/* the data chunks' extents are known */
	bool size_classes;		/* the kernel's data allocator keeps size classes */
	bool balance_ended;		/* a resume ran the input's balance to its end */
	struct ps_hole_index hix;
};

int ps_init(struct plan_state *s, const struct bx_usage_input *in);
void ps_release(struct plan_state *s);

/* The index of devid @devid (a removed one when no other has it), or -1. */
long ps_dev_index(const struct plan_state *s, uint64_t devid);
size_t ps_nr_writable(const struct plan_state *s);
/* Whether the filesystem has mixed block groups (data and metadata together). */
bool ps_is_mixed(const struct plan_state *s);
/* The type and profile the kernel gives a new chunk of @kind (a BTRFS_BLOCK_GROUP_* type bit). */
uint64_t ps_alloc_type(const struct plan_state *s, uint64_t kind);
/* Logical bytes used in chunks of @kind (type bits). */
uint64_t ps_used_of_kind(const struct plan_state *s, uint64_t kind);

/* A new device at the end; returns its index or a negative errno. */
long ps_add_device(struct plan_state *s, uint64_t size, uint64_t hint);
/* Sets @idx's size and rebuilds its holes from the chunks' extents. */
int ps_resize_device(struct plan_state *s, size_t idx, uint64_t size);
void ps_set_hint(struct plan_state *s, size_t idx, uint64_t hint);

/*
 * Allocates an empty chunk of @type where the model puts it. With @improve,
 * only where the model places it better than that chunk (bx_place_improves),
 * else -ENOSPC. Returns its index, -ENOSPC, or another negative errno.
 */
long ps_alloc_chunk(struct plan_state *s, uint64_t type, const struct bx_place_chunk *improve);
/* ps_alloc_chunk(), and the new chunk joins its pool (ps_pool_add()). */
long ps_pool_chunk(struct plan_state *s, uint64_t type, const struct bx_place_chunk *improve);
/*
 * Frees chunk @idx: it leaves the space info, its devices' used bytes go
 * down at once, but its extents become holes only at ps_commit(): the
 * kernel's free_dev_extent search reads the commit root of the device tree.
 */
int ps_free_chunk(struct plan_state *s, size_t idx);
/* The transaction commits: the extents freed since become holes. */
int ps_commit(struct plan_state *s);
/*
 * The kernel's cleaner after a change (btrfs_delete_unused_bgs()): the empty
 * block groups on its list go, but the last of their profile and those its
 * space info may need soon; then a commit.
 */
int ps_delete_unused(struct plan_state *s);

/*
 * Puts up to @bytes into the free space of the pool of @type, in order;
 * *@taken the bytes that fit. Every take is journalled. Returns 0 or -ENOMEM.
 */
int ps_pool_take(struct plan_state *s, uint64_t type, uint64_t bytes, uint64_t *taken);
/* Chunk @idx is moved (read-only: no pool takes from it), and is done. */
void ps_begin_move(struct plan_state *s, size_t idx);
void ps_end_move(struct plan_state *s, size_t idx);
/* Free bytes left in the pool of @type, but for the chunk being moved. */
uint64_t ps_pool_free(const struct plan_state *s, uint64_t type);
/* Journal: forget the takes after @mark (they stay), or undo them. */
void ps_journal_keep(struct plan_state *s, size_t mark);
void ps_journal_undo(struct plan_state *s, size_t mark);
/*
 * Lists chunk @idx in its type's pool when it has free space and is not
 * being moved. Chunks that move later in the same change take bytes too:
 * the kernel makes only the block group it relocates read-only.
 */
int ps_pool_add(struct plan_state *s, size_t idx);
/* Forgets every pool (chunks become pending or gone between changes). */
void ps_pools_reset(struct plan_state *s);

/*
 * Puts a data extent of @len bytes at @start of chunk @idx (a hole there):
 * it joins the chunk's extents and its used bytes, journalled. Returns 0,
 * -ENOMEM, or -EINVAL when that range is not free.
 */
int ps_put_extent(struct plan_state *s, size_t idx, uint64_t start, uint64_t len);
/* The size class the kernel gives an extent of @len bytes. */
enum ps_size_class ps_size_class(uint64_t len);

/*
 * Moves the extents of data chunk @idx (being moved) into chunks of
 * @target, one by one, where the kernel's relocation puts them
 * (plan-data.c); new chunks where the model places them (only where they
 * place @improve better, when given). Returns 0 (all moved), 1 when an
 * extent finds no room (*@missing: the bytes still to move), or a negative
 * errno.
 */
int ps_move_extents(struct plan_state *s, size_t idx, uint64_t target, const struct bx_place_chunk *improve,
		    uint64_t *missing);

/* Unallocated bytes of device @idx for the model (0 when not writable). */
uint64_t ps_unallocated(const struct plan_state *s, size_t idx);

/* The filesystem the state describes, as the usage reader fills it. */
int ps_materialize(const struct plan_state *s, struct bx_usage_input *out);

/* The allocator model of the state for placement (points into @s). */
void ps_place_model(const struct plan_state *s, struct bx_place_model *pm);

#endif
