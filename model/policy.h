/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What btrfsx refuses and what it moves, said once for every engine that
 * changes chunks or plans to: the what-if planner (plan/), `balance
 * misplaced` (relocate/) and the maintain engine. Pure: a filesystem's
 * condition in (fsops/condition.h reads it from a mounted filesystem,
 * bx_fs_condition_of() from a snapshot), decisions and their reasons out.
 *
 * Refusals, in this order: a read-only mount, a missing member, an
 * exclusive operation of the kernel (a balance running, paused or
 * interrupted holds it, as do a replace, a resize, a device add or remove;
 * a scrub is no exclusive operation of the kernel's but reads every block
 * group, so nothing moves beside it), a kernel that ignores the hints. Each
 * caller asks for the checks that apply to it (a plan of an unmounted
 * filesystem is not read-only).
 *
 * Selection: the misplaced chunks in the report's order (forbidden first,
 * then off-preference, the fewest used bytes first), the off-preference
 * ones left out when only the forbidden ones are asked for, as many as a
 * chunk and a byte limit allow; and whether the allocator model has room
 * for them, one after another.
 */
#ifndef BTRFSX_MODEL_POLICY_H
#define BTRFSX_MODEL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/misplaced.h"
#include "model/placement.h"
#include "model/snapshot.h"

/* What an engine is about to do (or to plan). */
enum bx_op {
	BX_OP_DEVICE_ADD,
	BX_OP_DEVICE_REMOVE,
	BX_OP_DEVICE_REPLACE,
	BX_OP_RESIZE,
	BX_OP_BALANCE,			/* a new balance: a convert, a filter, one chunk moved */
	BX_OP_BALANCE_RESUME,		/* the paused or interrupted balance resumed */
	BX_OP_HINT,			/* a hint set: sysfs or offline, no exclusive operation */
};

/* The most devids a condition names as missing (more are counted). */
#define BX_CONDITION_MISSING_MAX 16

/* A filesystem's condition now, as far as the refusals look at it. */
struct bx_fs_condition {
	bool mounted;
	bool read_only;			/* mounted read-only */
	/* a balance running, paused, or interrupted (unmounted: resumed at the next mount) */
	enum bx_snap_balance balance;
	/* another exclusive operation the kernel runs ("device replace", "resize"); "" none */
	char exclusive[32];
	bool scrub_running;
	size_t nr_missing;		/* members missing: degraded */
	uint64_t missing[BX_CONDITION_MISSING_MAX];
	int kernel_hints;		/* new chunks follow the hints: 1, 0, -1 unknown */
};

/* The condition a snapshot shows (balance, missing members, hints); not read-only. */
void bx_fs_condition_of(const struct bx_snapshot *in, struct bx_fs_condition *c);

/* bx_policy_refusal() checks */
#define BX_CHECK_READ_ONLY (1U << 0)
#define BX_CHECK_DEGRADED (1U << 1)
#define BX_CHECK_EXCLUSIVE (1U << 2)	/* the kernel's exclusive operation, and a scrub */
#define BX_CHECK_HINTS (1U << 3)	/* the operation is about placement by the hints */

enum bx_refusal {
	BX_REFUSE_NONE,
	BX_REFUSE_READ_ONLY,		/* -EROFS */
	BX_REFUSE_DEGRADED,		/* -ENODEV */
	BX_REFUSE_EXCLUSIVE,		/* -EBUSY: the kernel would refuse @op */
	BX_REFUSE_NO_HINTS,		/* -EOPNOTSUPP */
};

/*
 * Whether @op is refused on a filesystem in condition @c, by the @checks
 * asked for (BX_CHECK_*): the first refusal that applies, with its reason
 * for people in @buf (@len bytes; "" when none).
 */
enum bx_refusal bx_policy_refusal(const struct bx_fs_condition *c, enum bx_op op,
				  unsigned int checks, char *buf, size_t len);

/* The negative errno a refusal returns with (0 for none). */
int bx_refusal_errno(enum bx_refusal r);

/* "device add", "device remove", "device replace", "resize", "new balance", ... */
const char *bx_op_name(enum bx_op op);

/* Whether a run that moves only the forbidden chunks (@forbidden_only) takes @c. */
bool bx_policy_takes(const struct bx_misplaced_chunk *c, bool forbidden_only);

/*
 * How many of @rep's chunks a run takes, in the report's order: the
 * forbidden ones (and the off-preference ones unless @forbidden_only), at
 * most @limit chunks and @max_bytes used bytes (0: no limit). *@bytes:
 * their used bytes.
 */
size_t bx_policy_select(const struct bx_misplaced_report *rep, bool forbidden_only,
			uint64_t limit, uint64_t max_bytes, uint64_t *bytes);

/*
 * Whether the allocator model @pm has room to move the @n chunks at
 * @chunks (of @rep, whose well-placed chunks' free space is the pool),
 * one after another: bx_place_room() into @room. Returns 0 or the model's
 * negative errno (no message).
 */
int bx_policy_room(const struct bx_place_model *pm, const struct bx_misplaced_report *rep,
		   const struct bx_misplaced_chunk *chunks, size_t n, struct bx_place_room *room);

#endif
