/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The relocation engine: moves the misplaced chunks of a mounted filesystem
 * (fsops/misplaced.h), and only those, one chunk per kernel balance call
 * (BTRFS_IOC_BALANCE_V2 with a vrange filter on that chunk and its type),
 * forbidden ones first, then off-preference ones.
 *
 * Before it starts, the allocator model must have room for every chunk it
 * plans to move (model/placement.h, bx_place_room); before each
 * chunk it reads the filesystem again and checks that chunk's room; after
 * each chunk it reads where the kernel put the data (the new chunks) and
 * checks them against the model: every new chunk where the model said, and
 * better placed than the old one, else the run stops with the reason. A run
 * that stops (limit, cancel, no room) is resumed by running again: what is
 * still misplaced is worked out afresh.
 *
 * A member device of a mounted filesystem stands for its mount point.
 * Refused: a path that is not a mounted btrfs, a read-only mount, a balance
 * already running or paused (anyone's), another relocation of the same
 * filesystem, and a kernel that ignores hints (unless forced: the kernel
 * would place the chunk without them). A dry run only reads: it is refused
 * only where nothing can be read, and says what a real run would be refused
 * for (res->refused).
 *
 * Forced on a kernel that ignores hints, every new chunk is still compared
 * with the model's prediction under the stored hints: one the kernel puts
 * where the hints forbid (or no better) stops the run like on any kernel.
 *
 * Library style: nothing is printed; progress goes to a callback from the
 * calling thread, a cancel flag (or the callback) stops the run through the
 * kernel's balance control (BTRFS_IOC_BALANCE_CTL). Functions return 0 or a
 * negative errno with a message recorded by bx_error().
 */
#ifndef BTRFSX_RELOCATE_H
#define BTRFSX_RELOCATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsops/misplaced.h"

/* A run's progress: btrfsx_relocate_progress and RelocateProgress (common/fields.h). */
#define BX_RELOCATE_PROGRESS_FIELDS(X)								\
	X(uint64_t, chunks_done, )								\
	X(uint64_t, chunks_total, )	/* planned at the start (grows if more turn up) */	\
	X(uint64_t, bytes_done, )	/* used bytes of the chunks moved */			\
	X(uint64_t, bytes_total, )								\
	X(double, elapsed, )		/* seconds since the start */				\
	X(double, kernel_seconds, )	/* spent in the kernel's balance calls */		\
	X(uint64_t, current, )		/* logical address of the chunk being moved; 0: none */	\
	X(uint64_t, current_used, )								\
	X(bool, pausing, )		/* between chunks (--pause) */

struct bx_relocate_progress {
	BX_RELOCATE_PROGRESS_FIELDS(BX_FIELD_MEMBER)
};

/* Called from the calling thread; non-zero cancels the run. */
typedef int (*bx_relocate_progress_fn)(void *arg, const struct bx_relocate_progress *p);

/*
 * The options struct btrfsx_relocate_options and Python's
 * relocate_misplaced() take as they are (common/fields.h, BX_FIELD_TAKE);
 * the progress callback and the cancel flag stay outside, the library
 * relays them.
 */
#define BX_RELOCATE_OPTS_FIELDS(X)						\
	X(bool, forbidden_only, )	/* leave off-preference chunks alone */	\
	X(bool, dry_run, )		/* plan (and check the room), move nothing */ \
	X(bool, force, )		/* move even when the kernel ignores hints */ \
	X(uint64_t, limit, )		/* at most this many chunks; 0: no limit */ \
	X(uint64_t, max_bytes, )	/* at most this many used bytes; 0: no limit */ \
	X(double, pause, )		/* seconds between chunks */		\
	X(const char *, sysfs_root, )	/* NULL: "/sys" */			\
	X(const char *, state_dir, )	/* copy rate and lock; NULL: /var/lib/btrfsx */ \
	X(double, progress_interval, )	/* seconds; 0: 0.5 */

struct bx_relocate_opts {
	BX_RELOCATE_OPTS_FIELDS(BX_FIELD_MEMBER)
	bx_relocate_progress_fn progress;	/* may be NULL */
	void *progress_arg;
	const volatile int *cancel;	/* may be NULL; non-zero cancels */
};

/*
 * A chunk the kernel created while one was moved. The list is what struct
 * btrfsx_relocated_new and Python's RelocatedNewChunk take as it is.
 * as_modelled: the model with the stored hints (the prediction the plan
 * shows) allocates the same devices and offsets; a kernel that ignores
 * hints rarely does.
 */
#define BX_RELOCATE_NEW_CHUNK_FIELDS(X)	\
	X(uint64_t, logical, )		\
	X(uint64_t, length, )		\
	X(bool, as_modelled, )		\
	X(bool, improves, )	/* better placed than the chunk moved (same kind only) */

struct bx_relocate_new_chunk {
	BX_RELOCATE_NEW_CHUNK_FIELDS(BX_FIELD_MEMBER)
	uint64_t type;
	uint32_t num_stripes;
	uint64_t *devids;		/* in stripe order */
};

/* A chunk moved: the list is what btrfsx_relocated and Relocated take as it is. */
#define BX_RELOCATED_FIELDS(X)							\
	X(uint64_t, logical, )							\
	X(uint64_t, length, )							\
	X(uint64_t, used, )							\
	X(double, seconds, )		/* in the kernel's balance call */	\
	X(bool, as_modelled, )		/* every new chunk as_modelled */

struct bx_relocated {
	BX_RELOCATED_FIELDS(BX_FIELD_MEMBER)
	uint64_t type;
	enum bx_place_class cls;
	uint32_t num_stripes;
	uint64_t *devids;		/* where it was */
	size_t nr_new;
	struct bx_relocate_new_chunk *new_chunks;	/* none: packed into existing chunks */
};

enum bx_relocate_stop {
	BX_RELOCATE_DONE,		/* nothing (selected) is misplaced any more */
	BX_RELOCATE_LIMIT,		/* the chunk or byte limit was reached */
	BX_RELOCATE_DRY_RUN,		/* planned only */
	BX_RELOCATE_CANCELLED,
	BX_RELOCATE_NO_ROOM,		/* the model has no room for a planned chunk */
	BX_RELOCATE_ENOSPC,		/* the kernel ran out of space while moving */
	BX_RELOCATE_MISPLACED_AGAIN,	/* a new chunk is no better placed than the old */
	BX_RELOCATE_FAILED,		/* another error: see the return value */
};

/*
 * What struct btrfsx_relocate_result and Python's RelocateResult take as it
 * is. refused: for a dry run, what a real run would be refused for (for
 * people; "" nothing). remaining_*: misplaced when the run ended (all of
 * them, whatever the options selected).
 */
#define BX_RELOCATE_RESULT_FIELDS(X)							\
	X(char, reason, [2048])		/* why it stopped, for people; "" when done */	\
	X(char, refused, [2048])							\
	X(bool, hints_effective, )							\
	X(bool, forced, )		/* moved although the kernel ignores hints */	\
	X(uint64_t, planned_bytes, )							\
	X(uint64_t, bytes_moved, )	/* used bytes of the chunks moved */		\
	X(double, seconds, )		/* wall time */					\
	X(double, kernel_seconds, )	/* in the kernel's balance calls */		\
	X(uint64_t, remaining_chunks, )							\
	X(uint64_t, remaining_bytes, )

struct bx_relocate_result {
	BX_RELOCATE_RESULT_FIELDS(BX_FIELD_MEMBER)
	enum bx_relocate_stop stop;
	struct bx_misplaced_report start;	/* the report before the first chunk */
	size_t nr_planned;		/* the first nr_planned chunks of start */
	size_t nr_relocated;
	struct bx_relocated *relocated;
};

/*
 * Relocates the misplaced chunks of the filesystem mounted at @path (or of
 * which @path is a member device).
 * *@res is filled whenever the run started (also when it stopped early:
 * then the return value says why, and res->stop / res->reason); free it
 * with bx_relocate_result_free(). Returns 0 (done, limit, dry run),
 * -EINTR (cancelled), -ENOSPC (no room, the kernel's ENOSPC, or a chunk
 * placed no better), -EBUSY (a balance or relocation runs), -EOPNOTSUPP
 * (the kernel ignores hints; forced, it put a chunk no better), -EROFS,
 * -EPERM, or another error.
 */
int bx_relocate_run(const char *path, const struct bx_relocate_opts *opts,
		    struct bx_relocate_result **res);
void bx_relocate_result_free(struct bx_relocate_result *res);

#endif
