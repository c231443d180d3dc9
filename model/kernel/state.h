/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel state: the filesystem as the kernel holds it while it makes
 * changes, set up from a snapshot (model/snapshot.h) and turned back into
 * one (bx_ks_materialize()). Devices carry both the allocator model's view
 * (holes) and what the usage report needs; chunks (block groups) carry
 * their stripes, used bytes, and for data the extents in them; the space
 * infos, with pools of the free space in block groups that relocated bytes
 * go into first; the device extents freed in the running transaction.
 *
 * Its functions are the kernel's rules, in files named after the kernel's
 * (block-group.c, space-info.c, extent-tree.c; relocation.h for the
 * relocation that runs on it). Pure: no I/O. The planner and the maintain
 * engine apply their operations to it.
 */
#ifndef BTRFSX_MODEL_KERNEL_STATE_H
#define BTRFSX_MODEL_KERNEL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/ctree.h"
#include "model/allocator.h"
#include "model/placement.h"
#include "model/snapshot.h"

/* Free space inside a data chunk: logical bytes [start, start + len). */
struct bx_ks_hole {
	uint64_t start;
	uint64_t len;
};

/*
 * The size classes of the kernel's data allocator (the size_classes trait):
 * none yet, < 128 KiB, < 8 MiB, more.
 */
enum bx_ks_size_class { BX_KS_SC_NONE, BX_KS_SC_SMALL, BX_KS_SC_MEDIUM, BX_KS_SC_LARGE };

/* A chunk; bx_kstate.chunks keeps them in address order except where gone ones were reused. */
struct bx_ks_chunk {
	uint64_t logical;
	uint64_t length;
	uint64_t used;
	uint64_t used_before;		/* in the snapshot; 0 for a new chunk */
	bool is_new;			/* made since the snapshot */
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
	 * Data chunks when the extents are known (bx_kstate.exact): the extents in it
	 * (what moving it copies, one by one) and the free space between them
	 * (where extents of other chunks land), both by address.
	 */
	size_t nr_exts, cap_exts;
	struct bx_snap_dextent *exts;
	size_t nr_holes, cap_holes;
	struct bx_ks_hole *holes;
	enum bx_ks_size_class size_class;
};

struct bx_ks_dev {
	struct bx_snap_dev info;	/* no extents: the chunks hold them */
	bool added;
	bool removed;
	bool replaced;
};

/*
 * Bytes a pool gave a chunk: undone when the move they were for fails. With
 * extents (bx_kstate.exact) @start is where in the chunk they went.
 */
struct bx_ks_take {
	size_t idx;
	uint64_t bytes;
	uint64_t start;
	bool extent;
};

/* A device extent freed in the running transaction: not yet reusable. */
struct bx_ks_freed {
	size_t dev;
	uint64_t start;
	uint64_t len;
};

/* Free space in chunks of one type, filled in order. */
struct bx_ks_pool {
	uint64_t type;
	uint64_t free;			/* free bytes of the chunks listed */
	size_t *chunks;			/* indexes into bx_kstate.chunks */
	size_t nr, cap, next;
};

/*
 * Which data chunks have room for an extent, fast (extent-tree.c): per size
 * class a max-tree over the chunk indexes of each chunk's largest free
 * range (0: not one of @type, gone or being moved). Leaves of chunks added
 * since are filled on the next use; @stale makes it rebuilt (a move undone).
 */
struct bx_ks_hole_index {
	uint64_t type;
	size_t nr;			/* chunks indexed: 0 .. nr - 1 */
	size_t leaves;			/* a power of two, 0: not built */
	uint64_t *tree[BX_KS_SC_LARGE + 1];
	bool stale;
};

/* The state itself; the bx_ks_ functions below work on it. */
struct bx_kstate {
	const struct bx_snapshot *in;
	size_t nr_devs;
	struct bx_ks_dev *devs;
	struct bx_alloc_device *adevs;	/* the model, same order */
	struct bx_alloc_params params;
	size_t nr_chunks, cap_chunks;
	struct bx_ks_chunk *chunks;	/* by logical */
	size_t nr_spaces;
	struct bx_snap_space *spaces;	/* as the space info would show them */
	uint64_t first_logical;		/* of a chunk when none is left */
	size_t nr_pools;
	struct bx_ks_pool *pools;
	size_t nr_journal, cap_journal;
	struct bx_ks_take *journal;	/* the takes since the last mark kept */
	size_t nr_freed, cap_freed;
	struct bx_ks_freed *freed;		/* until bx_ks_commit() */
	long moving;			/* the chunk being moved, or -1 */
	bool exact;			/* the data chunks' extents are known */
	bool size_classes;		/* the kernel's data allocator keeps size classes */
	bool balance_ended;		/* a resume ran the snapshot's balance to its end */
	struct bx_ks_hole_index hix;
};

int bx_ks_init(struct bx_kstate *s, const struct bx_snapshot *in);
void bx_ks_release(struct bx_kstate *s);

/* The index of devid @devid (a removed one when no other has it), or -1. */
long bx_ks_dev_index(const struct bx_kstate *s, uint64_t devid);
size_t bx_ks_nr_writable(const struct bx_kstate *s);
/* Whether the filesystem has mixed block groups (data and metadata together). */
bool bx_ks_is_mixed(const struct bx_kstate *s);
/* The type and profile the kernel gives a new chunk of @kind (a BTRFS_BLOCK_GROUP_* type bit). */
uint64_t bx_ks_alloc_type(const struct bx_kstate *s, uint64_t kind);
/* Logical bytes used in chunks of @kind (type bits). */
uint64_t bx_ks_used_of_kind(const struct bx_kstate *s, uint64_t kind);

/* A new device at the end; returns its index or a negative errno. */
long bx_ks_add_device(struct bx_kstate *s, uint64_t size, uint64_t hint);
/* Sets @idx's size and rebuilds its holes from the chunks' extents. */
int bx_ks_resize_device(struct bx_kstate *s, size_t idx, uint64_t size);
void bx_ks_set_hint(struct bx_kstate *s, size_t idx, uint64_t hint);

/*
 * Allocates an empty chunk of @type where the model puts it. With @improve,
 * only where the model places it better than that chunk (bx_place_improves),
 * else -ENOSPC. Returns its index, -ENOSPC, or another negative errno.
 */
long bx_ks_alloc_chunk(struct bx_kstate *s, uint64_t type, const struct bx_place_chunk *improve);
/* bx_ks_alloc_chunk(), and the new chunk joins its pool (bx_ks_pool_add()). */
long bx_ks_pool_chunk(struct bx_kstate *s, uint64_t type, const struct bx_place_chunk *improve);
/*
 * Frees chunk @idx: it leaves the space info, its devices' used bytes go
 * down at once, but its extents become holes only at bx_ks_commit(): the
 * kernel's free_dev_extent search reads the commit root of the device tree.
 */
int bx_ks_free_chunk(struct bx_kstate *s, size_t idx);
/* The transaction commits: the extents freed since become holes. */
int bx_ks_commit(struct bx_kstate *s);
/*
 * The kernel's cleaner after a change (btrfs_delete_unused_bgs()): the empty
 * block groups on its list go, but the last of their profile and those its
 * space info may need soon; then a commit.
 */
int bx_ks_delete_unused(struct bx_kstate *s);

/*
 * Puts up to @bytes into the free space of the pool of @type, in order;
 * *@taken the bytes that fit. Every take is journalled. Returns 0 or -ENOMEM.
 */
int bx_ks_pool_take(struct bx_kstate *s, uint64_t type, uint64_t bytes, uint64_t *taken);
/* Chunk @idx is moved (read-only: no pool takes from it), and is done. */
void bx_ks_begin_move(struct bx_kstate *s, size_t idx);
void bx_ks_end_move(struct bx_kstate *s, size_t idx);
/* Free bytes left in the pool of @type, but for the chunk being moved. */
uint64_t bx_ks_pool_free(const struct bx_kstate *s, uint64_t type);
/* Journal: forget the takes after @mark (they stay), or undo them. */
void bx_ks_journal_keep(struct bx_kstate *s, size_t mark);
void bx_ks_journal_undo(struct bx_kstate *s, size_t mark);
/*
 * Lists chunk @idx in its type's pool when it has free space and is not
 * being moved. Chunks that move later in the same change take bytes too:
 * the kernel makes only the block group it relocates read-only.
 */
int bx_ks_pool_add(struct bx_kstate *s, size_t idx);
/* Forgets every pool (chunks become pending or gone between changes). */
void bx_ks_pools_reset(struct bx_kstate *s);

/*
 * Puts a data extent of @len bytes at @start of chunk @idx (a hole there):
 * it joins the chunk's extents and its used bytes, journalled. Returns 0,
 * -ENOMEM, or -EINVAL when that range is not free.
 */
int bx_ks_put_extent(struct bx_kstate *s, size_t idx, uint64_t start, uint64_t len);
/* The size class the kernel gives an extent of @len bytes. */
enum bx_ks_size_class bx_ks_size_class(uint64_t len);

/* Whether @type's extents go to data block groups of every profile (single data). */
static inline bool bx_ks_takes_any_data(const struct bx_kstate *s, uint64_t type)
{
	return type == BTRFS_BLOCK_GROUP_DATA &&
	       bx_kernel_has(&s->in->kernel, BX_KT_SINGLE_DATA_ANY_PROFILE);
}

/*
 * The index of the data block groups' free ranges for extents of @type
 * (extent-tree.c), brought up to date; 0 or -ENOMEM with the message.
 */
int bx_ks_extent_index(struct bx_kstate *s, uint64_t type);
/* Chunk @idx changed (its free ranges, or it is being moved): its entry again. */
void bx_ks_extent_index_set(struct bx_kstate *s, size_t idx);
/*
 * find_free_extent() for one extent of @len bytes of @type, from *@hint
 * on (0: none): 1 placed (*@hint then its end), 0 no room (the kernel's
 * ENOSPC, after new chunks placed only where they place @improve better,
 * when given), or a negative errno.
 */
int bx_ks_place_extent(struct bx_kstate *s, uint64_t type, uint64_t len,
		       const struct bx_place_chunk *improve, uint64_t *hint);
/*
 * The reservation of @bytes of data of @type (btrfs_alloc_data_chunk_ondemand):
 * data chunks allocated while the free space of the data space info is
 * short. 1 reserved, 0 no room for another chunk, or a negative errno.
 */
int bx_ks_reserve_data(struct bx_kstate *s, uint64_t type, uint64_t bytes,
		       const struct bx_place_chunk *improve);

/*
 * btrfs_inc_block_group_ro() on metadata or system chunk @idx: refused
 * (the kernel's -ENOSPC) unless its free bytes can be overcommitted on the
 * devices' space per copy of @profile, the type new chunks of its kind get
 * (block-group.c).
 */
bool bx_ks_ro_refused(const struct bx_kstate *s, size_t idx, uint64_t profile);
/*
 * Whether the devices have little room per copy of @type for the
 * reservations while a metadata or system block group moves (space-info.c).
 */
bool bx_ks_little_headroom(const struct bx_kstate *s, uint64_t type);

/* Unallocated bytes of device @idx for the model (0 when not writable). */
uint64_t bx_ks_unallocated(const struct bx_kstate *s, size_t idx);

/* The filesystem the state describes, as a snapshot (the readers' form). */
int bx_ks_materialize(const struct bx_kstate *s, struct bx_snapshot *out);

/* The allocator model of the state for placement (points into @s). */
void bx_ks_place_model(const struct bx_kstate *s, struct bx_place_model *pm);

#endif
