/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The maintain engine: keeps a mounted filesystem out of the metadata
 * ENOSPC trap and its chunks where the hints want them, by moving the
 * fewest bytes that meet a target, one chunk per kernel balance call.
 *
 * The target (a policy, maintain/policy.h): metadata room (the usage
 * report's metadata_room: free space in metadata block groups plus the
 * metadata chunks the allocator model can still allocate) of at least a
 * size, an automatic size (one metadata chunk, or half the metadata in
 * use when that is more), and the days at the current pace of metadata
 * growth (the monitor's history, handed in by the caller); and no
 * misplaced chunk (placement on, or the forbidden ones only).
 *
 * The choice (bx_maintain_choose(), pure): the misplaced chunks the policy
 * takes, then, while the room is below the target, data chunks by the
 * fewest used bytes for their size (the most device space freed per byte
 * moved; empty ones first), each kept only when the relocation model
 * (model/kernel/relocation.h: the kernel's relocation, the chunks it
 * allocates on the way) predicts more unallocated device space with it
 * than without and, with metadata below the kernel's 80 % for a new chunk,
 * when the data chunks keep half a data chunk free or the unallocated
 * space holds a full data chunk besides the target (the kernel's next data
 * chunk takes all that is left when less is: packed data chunks hand it
 * what a move frees), until the predicted room meets the target. The plan is
 * checked so before the first chunk moves; a target that moving data
 * cannot meet says so, with the size of a device that would meet it.
 * Never a full balance.
 *
 * Library style: nothing is printed; 0 or a negative errno with the
 * message recorded by bx_error().
 */
#ifndef BTRFSX_MAINTAIN_H
#define BTRFSX_MAINTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "maintain/policy.h"
#include "model/snapshot.h"

/* Why a chunk moves. */
enum bx_maintain_reason {
	BX_MAINTAIN_ROOM,		/* metadata room below the target */
	BX_MAINTAIN_EMPTY,		/* an empty or nearly empty block group holds the space */
	BX_MAINTAIN_MISPLACED,		/* the hints want it elsewhere */
};

/* Below this share of its size in use a data chunk counts as nearly empty (percent). */
#define BX_MAINTAIN_NEARLY_EMPTY_PCT 10

/*
 * A chunk to move, or moved: what struct btrfsx_maintain_chunk and Python's
 * MaintainChunk take as it is (common/fields.h). seconds: planned, at the
 * measured copy rate (< 0: no rate known); moved, in the kernel's call.
 */
#define BX_MAINTAIN_CHUNK_FIELDS(X)						\
	X(uint64_t, logical, )							\
	X(uint64_t, length, )							\
	X(uint64_t, used, )		/* what the kernel copies */		\
	X(uint64_t, type, )		/* type and profile bits */		\
	X(double, seconds, )

struct bx_maintain_action {
	BX_MAINTAIN_CHUNK_FIELDS(BX_FIELD_MEMBER)
	enum bx_maintain_reason reason;
};

/*
 * The filesystem's state, now or predicted after the actions: what struct
 * btrfsx_maintain_state and Python's MaintainState take as it is.
 * days_left: the metadata room at the current pace; < 0 unknown (no
 * history), infinite when none is used.
 */
#define BX_MAINTAIN_STATE_FIELDS(X)						\
	X(uint64_t, metadata_room, )						\
	X(uint64_t, metadata_used, )						\
	X(uint64_t, unallocated, )	/* device bytes, writable devices */	\
	X(double, days_left, )							\
	X(uint64_t, misplaced, )	/* chunks breaking the hints */

struct bx_maintain_state {
	BX_MAINTAIN_STATE_FIELDS(BX_FIELD_MEMBER)
};

/* What the caller knows besides the snapshot. */
struct bx_maintain_inputs {
	double pace;			/* metadata bytes used per day; < 0: no history */
	double copy_rate;		/* used bytes per second; 0: none measured */
};

/* The outcome of a plan, or of a run. */
enum bx_maintain_status {
	BX_MAINTAIN_NOTHING,		/* the target is met already */
	BX_MAINTAIN_PLANNED,		/* the actions meet it (a plan) */
	BX_MAINTAIN_MET,		/* a run met it */
	BX_MAINTAIN_CANNOT,		/* moving data cannot meet it */
	BX_MAINTAIN_STOPPED,		/* a run stopped before it: budget, window, signal */
	BX_MAINTAIN_FAILED,
};

/*
 * A plan's figures: what struct btrfsx_maintain_result and Python's
 * MaintainResult take as they are.
 */
#define BX_MAINTAIN_PLAN_FIELDS(X)								\
	X(uint64_t, target, )		/* metadata room wanted, bytes; 0: no room target */	\
	X(char, target_why, [256])	/* how the target was made, for people */		\
	X(bool, room_below, )		/* the room is below the target now */			\
	X(bool, placement_wanted, )	/* misplaced chunks to move */				\
	X(uint64_t, bytes_planned, )	/* used bytes the actions copy (predicted) */		\
	X(double, seconds_planned, )	/* at the copy rate; < 0 unknown */			\
	X(uint64_t, chunks_created, )	/* chunks the kernel allocates on the way */		\
	X(uint64_t, device_needed, )	/* CANNOT: a device of at least this would meet it */

struct bx_maintain_plan {
	BX_MAINTAIN_PLAN_FIELDS(BX_FIELD_MEMBER)
	enum bx_maintain_status status;
	struct bx_maintain_state before, after;
	size_t nr_actions;
	struct bx_maintain_action *actions;	/* in the order they move */
	char reason[1024];		/* CANNOT: why, for people */
};

void bx_maintain_plan_release(struct bx_maintain_plan *p);

/*
 * The plan for @in (read with its used bytes and data extents), by
 * @policy, with what the caller knows in @inputs. Pure: no I/O. Returns 0
 * (p->status says NOTHING, PLANNED or CANNOT) or a negative errno.
 */
int bx_maintain_choose(const struct bx_snapshot *in, const struct bx_maintain_policy *policy,
		       const struct bx_maintain_inputs *inputs, struct bx_maintain_plan *p);

/* The state of @in (no prediction). Pure. */
int bx_maintain_state_of(const struct bx_snapshot *in, const struct bx_maintain_policy *policy,
			 const struct bx_maintain_inputs *inputs, struct bx_maintain_state *st);

/* "metadata-room", "empty", "misplaced" */
const char *bx_maintain_reason_name(enum bx_maintain_reason r);
/* "nothing-to-do", "planned", "target-met", "cannot-meet", "stopped", "failed" */
const char *bx_maintain_status_name(enum bx_maintain_status s);

/* ---- a run on a mounted filesystem (maintain/run.c) ---- */

/*
 * A run's progress, with the meanings of balance misplaced's
 * (relocate/relocate.h): chunks and used bytes moved of those planned at
 * the start (the totals grow when a later round plans more), seconds since
 * the start and in the kernel's balance calls, the chunk moving now (0:
 * none) and its used bytes, and whether the run waits between chunks (the
 * budget, busy devices).
 */
struct bx_maintain_progress {
	uint64_t chunks_done, chunks_total;
	uint64_t bytes_done, bytes_total;
	double elapsed, kernel_seconds;
	uint64_t current, current_used;
	bool pausing;
};

/* Called from the calling thread, at most every half second but at each change of chunk. */
typedef void (*bx_maintain_progress_fn)(void *arg, const struct bx_maintain_progress *p);

/* What a run or a plan is asked. */
struct bx_maintain_opts {
	struct bx_maintain_policy policy;
	double pace;			/* metadata bytes a day (the monitor's); < 0 unknown */
	bool plan_only;			/* plan, --dry-run: read, write nothing (not even a lock) */
	const char *sysfs_root;		/* NULL: "/sys" */
	const char *state_dir;		/* copy rate and lock; NULL: /var/lib/btrfsx */
	/*
	 * 1: stop after the chunk that moves now; 2: cancel it too (the kernel's
	 * balance control; it stays where it was). May be NULL.
	 */
	const volatile int *stop;
	/* Minute of the day for the window; NULL: the local time. */
	int (*minute_now)(void);
	bx_maintain_progress_fn progress;	/* a run's progress; may be NULL */
	void *progress_arg;
};

/*
 * A run's (or a plan's) result: what struct btrfsx_maintain_result and
 * Python's MaintainResult take as it is, beside the plan's figures.
 * refused: plan only, what a real run would be refused for ("" none);
 * copy_rate: the measured one it planned with (0 none); reason: why it
 * cannot meet the target, stopped or failed.
 */
#define BX_MAINTAIN_RESULT_FIELDS(X)						\
	X(uint8_t, fsid, [16])							\
	X(char, path, [4096])		/* the mount point */			\
	X(char, refused, [1024])						\
	X(double, copy_rate, )							\
	X(char, reason, [1024])							\
	X(bool, target_met, )							\
	X(uint64_t, bytes_moved, )						\
	X(double, seconds, )		/* wall time */				\
	X(double, kernel_seconds, )	/* in the kernel's balance calls */	\
	X(double, paused_seconds, )	/* waiting: budget, busy devices */

struct bx_maintain_result {
	BX_MAINTAIN_RESULT_FIELDS(BX_FIELD_MEMBER)
	struct bx_maintain_plan plan;	/* at the start */
	enum bx_maintain_status status;	/* of the run (plan only: the plan's) */
	struct bx_maintain_state final;	/* read after the run (plan only: predicted) */
	size_t nr_moved;
	struct bx_maintain_action *moved;	/* seconds: in the kernel's call */
};

/*
 * Plans (opts->plan_only) or runs maintenance on the filesystem mounted at
 * @path (a member device stands for its mount point). *@res is set when
 * the filesystem was read (free it with bx_maintain_result_free()), also
 * when the run stopped or failed after it. Returns 0 (also for CANNOT and
 * STOPPED: res->status says), -EROFS (read-only), -ENODEV (degraded),
 * -EBUSY (another exclusive operation, a scrub, balance misplaced or
 * maintain), -ENOTDIR (not mounted) or another negative errno.
 */
int bx_maintain_run(const char *path, const struct bx_maintain_opts *opts,
		    struct bx_maintain_result **res);
void bx_maintain_result_free(struct bx_maintain_result *res);

/*
 * The policy of the filesystem mounted at @path from the file @file (its
 * section named by the mount point or the fsid; *@found whether one was),
 * over the defaults; a missing file is the defaults unless @required.
 * Returns 0, -EINVAL for a bad file (the message names file and line), or
 * another negative errno.
 */
int bx_maintain_policy_of(const char *path, const char *file, bool required,
			  struct bx_maintain_policy *p, bool *found);

/*
 * Writes the run's Prometheus metrics into
 * <dir>/btrfsx-maintain-<fsid>.prom (the monitor's textfile directory,
 * beside its btrfsx.prom; one file per filesystem, replaced at each run).
 * The path written into @path.
 */
int bx_maintain_metrics_write(const struct bx_maintain_result *res, const char *dir,
			      char *path, size_t len);

#endif
