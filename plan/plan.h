/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The what-if planner: the space and placement of a filesystem after a list
 * of changes, worked out before any of them is made.
 *
 * Pure: a snapshot in (model/snapshot.h; the caller reads it with
 * bx_snapshot_read_extents(), so every chunk's used bytes and the data
 * extents are known), changes in, a struct bx_plan_result out. No I/O, no
 * printing, no global state; functions return 0 or a negative errno with a
 * message recorded by bx_error(). Each change is applied to the kernel
 * state (model/kernel/state.h) as the snapshot's kernel makes it (the
 * register, model/kernel/kernel.h); the space figures are
 * bx_usage_compute()'s on the filesystem as it would be (fsops/usage.h,
 * pure too), the placement is the allocator model's (model/allocator.h),
 * misplaced chunks are the misplaced report's (model/misplaced.h).
 *
 * The changes are applied in order, each as the kernel (6.1 .. 7.3) makes it:
 *  - add SIZE[:HINT]: a device with the next devid; nothing moves. A hint is
 *    set right after the add (before anything is allocated).
 *  - remove DEVID: the device leaves the allocator and its chunks are
 *    relocated from the end of the device down (btrfs_shrink_device to 0).
 *  - resize DEVID=SIZE: growing adds room; shrinking relocates the chunks
 *    with an extent beyond the new end, the same way, the device itself
 *    still taking chunks below it.
 *  - hint DEVID=HINT: nothing moves; the chunks that break the new hints
 *    are listed (the misplaced report).
 *  - convert data|metadata=PROFILE: every chunk of that type (metadata:
 *    system too, as btrfs balance -m does) is rewritten in the new profile,
 *    from the last chunk down, also those already in it (balance without
 *    the soft filter).
 *  - replace DEVID=SIZE[:HINT]: the new device takes the devid and every
 *    extent where it was; its size stays the old device's (the rest is
 *    slack until a resize) and its hint is data_preferred (no kernel copies
 *    the hint) unless one is given, which is set right after the replace.
 *  - relocate: the misplaced chunks moved as `btrfsx balance misplaced` moves
 *    them (forbidden first, each only where the model places it better),
 *    refused as a whole when the model has no room for all.
 *  - balance dusage=U,musage=U: `btrfs balance start -dusage=U -musage=U`
 *    (U: N or MIN..MAX, percent of a chunk's size): the chunks of the kinds
 *    named (metadata: system too, as btrfs balance copies -m to -s) from the
 *    last down, each whose used bytes are in the range when the balance
 *    reaches it (earlier moves may have filled it), rewritten in the profile
 *    new chunks get. A chunk without room stays and the balance goes on
 *    (the kernel's enospc_errors): the change is then impossible.
 *  - resume: the paused or interrupted balance resumed to its end (btrfs
 *    balance resume, or the mount that resumes it): the chunks of each kind
 *    it converts that are not in the target profile yet (the kernel turns
 *    on the soft filter when it resumes), from the last down. The kinds it
 *    balances without converting are not in the input: not modelled.
 *
 * Relocating a chunk is the kernel's relocation (model/kernel/relocation.h).
 * A chunk that finds no room makes the change impossible (the kernel's
 * ENOSPC): the plan stops there, the result shows the filesystem as that
 * failed change leaves it (what moved stays moved), and the later changes
 * are not reached.
 */
#ifndef BTRFSX_PLAN_H
#define BTRFSX_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "fsops/usage.h"
#include "model/misplaced.h"

/*
 * The smallest device a plan takes (the kernel's smallest resize), and the
 * largest: the model's fills grow with the device, and no device is larger.
 */
#define BX_PLAN_MIN_DEVICE (256ULL << 20)
#define BX_PLAN_MAX_DEVICE (1ULL << 50)
/* resize: the size of the device itself ("DEVID=max", as btrfs filesystem resize takes it). */
#define BX_PLAN_SIZE_MAX UINT64_MAX

enum bx_plan_op {
	BX_PLAN_ADD,
	BX_PLAN_REMOVE,
	BX_PLAN_RESIZE,
	BX_PLAN_HINT,
	BX_PLAN_CONVERT,
	BX_PLAN_REPLACE,
	BX_PLAN_RELOCATE,
	BX_PLAN_BALANCE,
	BX_PLAN_RESUME,
};
/* The last change kind: the library's table of them is checked against it. */
#define BX_PLAN_LAST_OP BX_PLAN_RESUME

/*
 * What struct btrfsx_plan_change and Python's PlanChange hold as it is
 * (common/fields.h; the library takes it with BX_FIELD_TAKE and gives it
 * back with BX_FIELD_COPY). The op and the public flags (type | profile)
 * are mapped by hand. The usage range: a chunk of a kind in @type is
 * balanced when its used bytes are at least MIN and below MAX percent of
 * its size (the kernel's usage filter; MAX 0: the empty ones); metadata's
 * holds for system too.
 */
#define BX_PLAN_CHANGE_FIELDS(X)					\
	X(uint64_t, devid, )	/* remove, resize, hint, replace */	\
	X(uint64_t, size, )	/* add, resize, replace: bytes */	\
	X(uint64_t, hint, )	/* hint; add and replace when has_hint */ \
	X(bool, has_hint, )						\
	X(uint8_t, data_usage_min, )	/* balance */			\
	X(uint8_t, data_usage_max, )					\
	X(uint8_t, metadata_usage_min, )				\
	X(uint8_t, metadata_usage_max, )

struct bx_plan_change {
	enum bx_plan_op op;
	BX_PLAN_CHANGE_FIELDS(BX_FIELD_MEMBER)
	/* convert: BTRFS_BLOCK_GROUP_DATA or _METADATA; balance: either or both */
	uint64_t type;
	uint64_t profile;	/* convert: the profile bits (0: single) */
};

/*
 * One change as the command line spells it: @op "add", "remove", "resize",
 * "hint", "convert", "replace", "relocate", "balance" or "resume", and its
 * value ("64G:metadata_only", "3", "3=10G" or "3=max", "3=data_only", "data=raid1",
 * "2=1T[:hint]", "dusage=50,musage=10..30"; NULL for relocate and resume).
 * Returns 0 or -EINVAL with a message saying what is wrong.
 */
int bx_plan_parse_change(const char *op, const char *value, struct bx_plan_change *c);

/* "remove devid 3", "add 64.00GiB as metadata_only", ... into @buf. */
void bx_plan_describe_change(const struct bx_plan_change *c, char *buf, size_t len);

/* The option name of @op ("add", "remove", ...). */
const char *bx_plan_op_name(enum bx_plan_op op);

enum bx_plan_status {
	BX_PLAN_STEP_DONE,		/* possible; applied */
	BX_PLAN_STEP_IMPOSSIBLE,	/* the kernel would fail or refuse: see reason */
	BX_PLAN_STEP_NOT_REACHED,	/* an earlier change is impossible */
};

/*
 * A device that may take chunks of a type which lacks room, as the failed
 * change leaves it: btrfsx_plan_short_device, PlanShortDevice (common/fields.h).
 */
#define BX_PLAN_SHORT_DEVICE_FIELDS(X)							\
	X(uint64_t, devid, )								\
	X(uint64_t, hint, )								\
	X(uint32_t, tier, )	/* the allocator's tier for the type (1 first) */	\
	X(uint64_t, unallocated, )

struct bx_plan_short_dev {
	BX_PLAN_SHORT_DEVICE_FIELDS(BX_FIELD_MEMBER)
};

/*
 * Chunks of one type that a change cannot place. The list is what
 * btrfsx_plan_short and PlanShort take as it is (the type is their flags).
 */
#define BX_PLAN_SHORT_FIELDS(X)					\
	X(uint64_t, missing, )	/* used bytes without room */	\
	X(uint32_t, chunks, )	/* chunks that could not move */

struct bx_plan_short {
	BX_PLAN_SHORT_FIELDS(BX_FIELD_MEMBER)
	uint64_t type;			/* type and profile of the chunks it needs */
	size_t nr_devs;
	struct bx_plan_short_dev *devs;	/* the devices the type may use, best tier first */
};

/*
 * One change and what it does. The list is what btrfsx_plan_step and
 * PlanStep take as it is (the change, its description and the status are
 * converted). tight: possible, but uncertain: it moves or copies the only
 * metadata or system block group with room while the devices are nearly
 * full. The kernel's space reservation may then allocate another chunk or
 * fail (ENOSPC, seen ending in a transaction abort). A warning says so.
 */
#define BX_PLAN_STEP_FIELDS(X)									\
	X(uint64_t, devid, )	/* the device it acts on (add: the new devid) */		\
	X(char, reason, [1024])	/* impossible: why, for people */				\
	X(bool, tight, )									\
	X(uint64_t, moved_chunks, )	/* chunks relocated (or rewritten) */			\
	X(uint64_t, moved_bytes, )	/* their used bytes when it began: what is copied */	\
	X(uint64_t, moved_length, )	/* their logical size */				\
	X(uint64_t, new_chunks, )	/* chunks allocated for them */				\
	X(uint64_t, new_length, )								\
	X(uint64_t, copied_bytes, )	/* replace: bytes copied to the new device */

struct bx_plan_step {
	struct bx_plan_change change;
	enum bx_plan_status status;
	BX_PLAN_STEP_FIELDS(BX_FIELD_MEMBER)
	bool tight_abort;		/* tight: the kernel may abort the transaction (a warning) */
	bool tight_retry;		/* tight: it moves all only on the kernel's second try */
	size_t first_moved, nr_moved;	/* its chunks in bx_plan_result.moved */
	size_t first_created, nr_created;	/* and in bx_plan_result.created */
	size_t nr_short;
	struct bx_plan_short *shorts;
};

/*
 * A chunk that a change moves, or one it creates. The list is what
 * btrfsx_plan_chunk and PlanChunk take as it is. used: moved, the used bytes
 * when its change began (what it copies); created, the bytes placed in it.
 */
#define BX_PLAN_CHUNK_FIELDS(X)							\
	X(size_t, step, )	/* index of the change */			\
	X(uint64_t, logical, )							\
	X(uint64_t, length, )							\
	X(uint64_t, used, )							\
	X(uint64_t, used_before, )	/* used bytes in the filesystem now */	\
	X(bool, existed, )	/* in the filesystem now (false: a change made it) */

struct bx_plan_chunk {
	BX_PLAN_CHUNK_FIELDS(BX_FIELD_MEMBER)
	uint64_t type;
	uint32_t num_stripes;
	uint64_t *devids;		/* in stripe order */
};

struct bx_plan_result {
	bool possible;			/* every change is */
	size_t nr_steps;
	struct bx_plan_step *steps;
	struct bx_snapshot after_in;	/* the filesystem after the plan (as far as it got) */
	struct bx_usage_report before;
	struct bx_usage_report after;
	size_t nr_moved;
	struct bx_plan_chunk *moved;
	size_t nr_created;
	struct bx_plan_chunk *created;
	/* The misplaced reports, when a hint is set before or after. */
	bool have_misplaced;
	struct bx_misplaced_report misplaced_before;
	struct bx_misplaced_report misplaced_after;
	bool *newly_misplaced;		/* per misplaced_after chunk: not misplaced before */
	uint64_t newly_misplaced_chunks;
	uint64_t newly_misplaced_bytes;	/* their used bytes */
	size_t nr_warnings;
	char (*warnings)[512];		/* also recorded with bx_warn() */
};

/*
 * Plans @changes (@nr, applied in order) on the filesystem @in. @in needs
 * chunks_used_known. Returns 0 (also for an impossible plan: see
 * ->possible and the steps), -EINVAL for a plan that cannot be made at all
 * with the message recorded (an unknown devid, a size below the smallest
 * device or below what a replace copies, a profile the device count cannot
 * hold, a change on a device an earlier change removed, the same type
 * converted twice), or -ENOMEM / -EOPNOTSUPP. Release @res with
 * bx_plan_result_release() (also after an error).
 */
int bx_plan_compute(const struct bx_snapshot *in, const struct bx_plan_change *changes,
		    size_t nr, struct bx_plan_result *res);
void bx_plan_result_release(struct bx_plan_result *res);

#endif
