/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What btrfsx refuses and what it moves (policy.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/policy.h"

/* ---- refusals ---- */

const char *bx_op_name(enum bx_op op)
{
	switch (op) {
	case BX_OP_DEVICE_ADD:
		return "device add";
	case BX_OP_DEVICE_REMOVE:
		return "device remove";
	case BX_OP_DEVICE_REPLACE:
		return "device replace";
	case BX_OP_RESIZE:
		return "resize";
	case BX_OP_BALANCE_RESUME:
		return "balance resume";
	case BX_OP_HINT:
		return "hint";
	default:
		return "new balance";
	}
}

void bx_fs_condition_of(const struct bx_snapshot *in, struct bx_fs_condition *c)
{
	memset(c, 0, sizeof(*c));
	c->mounted = in->mounted;
	c->balance = in->balance;
	c->kernel_hints = in->mounted ? in->hints_effective : in->kernel_hints;
	for (size_t i = 0; i < in->nr_devs; i++) {
		if (!in->devs[i].missing)
			continue;
		if (c->nr_missing < BX_CONDITION_MISSING_MAX)
			c->missing[c->nr_missing] = in->devs[i].devid;
		c->nr_missing++;
	}
}

int bx_refusal_errno(enum bx_refusal r)
{
	switch (r) {
	case BX_REFUSE_READ_ONLY:
		return -EROFS;
	case BX_REFUSE_DEGRADED:
		return -ENODEV;
	case BX_REFUSE_EXCLUSIVE:
		return -EBUSY;
	case BX_REFUSE_NO_HINTS:
		return -EOPNOTSUPP;
	default:
		return 0;
	}
}

static void say_missing(const struct bx_fs_condition *c, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "devid ");

	for (size_t i = 0; i < c->nr_missing && i < BX_CONDITION_MISSING_MAX && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? ", " : "",
					 (unsigned long long)c->missing[i]);
	if (used < len && c->nr_missing > BX_CONDITION_MISSING_MAX)
		used += (size_t)snprintf(buf + used, len - used, " and %zu more",
					 c->nr_missing - BX_CONDITION_MISSING_MAX);
	if (used < len)
		snprintf(buf + used, len - used, " %s missing (%s)", c->nr_missing > 1 ? "are" : "is",
			 c->mounted ? "the filesystem is mounted degraded" :
			 "not named, and not found by the filesystem's fsid among the block "
			 "devices or beside the image files named");
}

/*
 * A balance running, paused or interrupted (the next mount resumes it, or
 * holds it paused with skip_balance) holds the kernel's exclusive
 * operation: it refuses every device remove, resize, replace and balance
 * (a convert, a relocation) meanwhile, and a device add too while it runs.
 * Hints are sysfs writes (or offline), no exclusive operation.
 */
static bool balance_refuses(const struct bx_fs_condition *c, enum bx_op op, char *buf, size_t len)
{
	if (c->balance == BX_SNAP_BALANCE_NONE || op == BX_OP_HINT || op == BX_OP_BALANCE_RESUME ||
	    (op == BX_OP_DEVICE_ADD && c->balance != BX_SNAP_BALANCE_RUNNING))
		return false;
	snprintf(buf, len, "a%s %s balance holds the kernel's exclusive operation, which refuses a "
		 "%s until the balance %s or is cancelled ('btrfs balance cancel')",
		 c->balance == BX_SNAP_BALANCE_INTERRUPTED ? "n" : "",
		 bx_snap_balance_name(c->balance), bx_op_name(op),
		 c->balance == BX_SNAP_BALANCE_RUNNING ? "ends ('btrfs balance status')" :
		 "is resumed to its end ('btrfs balance resume')");
	return true;
}

static bool exclusive_refuses(const struct bx_fs_condition *c, enum bx_op op, char *buf, size_t len)
{
	if (op == BX_OP_HINT)
		return false;
	if (balance_refuses(c, op, buf, len))
		return true;
	if (c->exclusive[0]) {
		snprintf(buf, len, "the kernel runs a %s, its exclusive operation, which refuses a "
			 "%s until it ends", c->exclusive, bx_op_name(op));
		return true;
	}
	if (c->scrub_running) {
		snprintf(buf, len, "a scrub runs: it reads every block group, and a %s would move "
			 "them under it; wait for it to end or cancel it ('btrfs scrub cancel')",
			 bx_op_name(op));
		return true;
	}
	return false;
}

enum bx_refusal bx_policy_refusal(const struct bx_fs_condition *c, enum bx_op op,
				  unsigned int checks, char *buf, size_t len)
{
	buf[0] = '\0';
	if ((checks & BX_CHECK_READ_ONLY) && c->mounted && c->read_only && op != BX_OP_HINT) {
		snprintf(buf, len, "mounted read-only; chunks cannot move");
		return BX_REFUSE_READ_ONLY;
	}
	if ((checks & BX_CHECK_DEGRADED) && c->nr_missing) {
		say_missing(c, buf, len);
		return BX_REFUSE_DEGRADED;
	}
	if ((checks & BX_CHECK_EXCLUSIVE) && exclusive_refuses(c, op, buf, len))
		return BX_REFUSE_EXCLUSIVE;
	if ((checks & BX_CHECK_HINTS) && c->kernel_hints == 0) {
		snprintf(buf, len, "the running kernel ignores allocation hints: moved chunks would "
			 "be placed without them (--force moves them anyway, which is pointless for "
			 "placement)");
		return BX_REFUSE_NO_HINTS;
	}
	return BX_REFUSE_NONE;
}

/* ---- selection ---- */

bool bx_policy_takes(const struct bx_misplaced_chunk *c, bool forbidden_only)
{
	return c->cls == BX_PLACE_FORBIDDEN || !forbidden_only;
}

size_t bx_policy_select(const struct bx_misplaced_report *rep, bool forbidden_only,
			uint64_t limit, uint64_t max_bytes, uint64_t *bytes)
{
	uint64_t sum = 0;
	size_t n = 0;

	while (n < rep->nr_chunks && bx_policy_takes(&rep->chunks[n], forbidden_only)) {
		if (limit && n >= limit)
			break;
		if (max_bytes && sum + rep->chunks[n].used > max_bytes)
			break;
		sum += rep->chunks[n].used;
		n++;
	}
	*bytes = sum;
	return n;
}

int bx_policy_room(const struct bx_place_model *pm, const struct bx_misplaced_report *rep,
		   const struct bx_misplaced_chunk *chunks, size_t n, struct bx_place_room *room)
{
	struct bx_place_chunk *moves = calloc(n + 1, sizeof(*moves));
	int ret;

	if (!moves)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct bx_misplaced_chunk *c = &chunks[i];

		moves[i] = (struct bx_place_chunk){ c->logical, c->length, c->used, c->type,
						    c->num_stripes, c->stripes };
	}
	ret = bx_place_room(pm, moves, n, rep->pool, room);
	free(moves);
	return ret;
}
