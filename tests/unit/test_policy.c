/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of what btrfsx refuses and what it moves (model/policy.c):
 * each refusal with its words, the order they come in, and the selection
 * of misplaced chunks with its limits.
 */
#include <errno.h>
#include <string.h>

#include "model/policy.h"
#include "tests/unit/unit.h"
#include "tests/unit/snapshot-fixture.h"

static enum bx_refusal refusal(const struct bx_fs_condition *c, enum bx_op op, unsigned int checks,
			       char *why)
{
	return bx_policy_refusal(c, op, checks, why, 512);
}

/* A balance holds the kernel's exclusive operation: what it refuses and in which words. */
static void test_balance_refuses(void)
{
	struct bx_fs_condition c = { .mounted = true, .balance = BX_SNAP_BALANCE_PAUSED };
	char why[512];

	CHECK(refusal(&c, BX_OP_DEVICE_REMOVE, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_EXCLUSIVE);
	CHECK(!strcmp(why, "a paused balance holds the kernel's exclusive operation, which refuses "
		      "a device remove until the balance is resumed to its end ('btrfs balance "
		      "resume') or is cancelled ('btrfs balance cancel')"));
	CHECK(bx_refusal_errno(BX_REFUSE_EXCLUSIVE) == -EBUSY);
	/* Paused, a device add and a hint pass; a resume is what ends it. */
	CHECK(refusal(&c, BX_OP_DEVICE_ADD, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_NONE && !*why);
	CHECK(refusal(&c, BX_OP_HINT, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_NONE);
	CHECK(refusal(&c, BX_OP_BALANCE_RESUME, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_NONE);
	CHECK(refusal(&c, BX_OP_BALANCE, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_EXCLUSIVE);
	CHECK(strstr(why, "refuses a new balance") != NULL);
	/* Running, an add is refused too; interrupted is "an interrupted balance". */
	c.balance = BX_SNAP_BALANCE_RUNNING;
	CHECK(refusal(&c, BX_OP_DEVICE_ADD, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_EXCLUSIVE);
	CHECK(strstr(why, "until the balance ends") != NULL);
	c.balance = BX_SNAP_BALANCE_INTERRUPTED;
	CHECK(refusal(&c, BX_OP_RESIZE, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_EXCLUSIVE);
	CHECK(!strncmp(why, "an interrupted balance", 22));
	/* Not asked for, not checked. */
	CHECK(refusal(&c, BX_OP_RESIZE, BX_CHECK_READ_ONLY, why) == BX_REFUSE_NONE);
}

/* The kernel's other exclusive operations and a scrub keep every chunk move out. */
static void test_other_operations(void)
{
	struct bx_fs_condition c = { .mounted = true };
	char why[512];

	snprintf(c.exclusive, sizeof(c.exclusive), "device replace");
	CHECK(refusal(&c, BX_OP_BALANCE, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_EXCLUSIVE);
	CHECK(!strcmp(why, "the kernel runs a device replace, its exclusive operation, which "
		      "refuses a new balance until it ends"));
	CHECK(refusal(&c, BX_OP_HINT, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_NONE);
	c.exclusive[0] = '\0';
	c.scrub_running = true;
	CHECK(refusal(&c, BX_OP_BALANCE, BX_CHECK_EXCLUSIVE, why) == BX_REFUSE_EXCLUSIVE);
	CHECK(strstr(why, "a scrub runs") != NULL);
}

/* Read-only first, then a missing member, then the exclusive operation, then the hints. */
static void test_order_and_words(void)
{
	struct bx_fs_condition c = { .mounted = true, .read_only = true, .nr_missing = 2,
				     .missing = { 3, 5 }, .balance = BX_SNAP_BALANCE_RUNNING,
				     .kernel_hints = 0 };
	const unsigned int all = BX_CHECK_READ_ONLY | BX_CHECK_DEGRADED | BX_CHECK_EXCLUSIVE |
				 BX_CHECK_HINTS;
	char why[512];

	CHECK(refusal(&c, BX_OP_BALANCE, all, why) == BX_REFUSE_READ_ONLY);
	CHECK(!strcmp(why, "mounted read-only; chunks cannot move"));
	CHECK(bx_refusal_errno(BX_REFUSE_READ_ONLY) == -EROFS);
	c.read_only = false;
	CHECK(refusal(&c, BX_OP_BALANCE, all, why) == BX_REFUSE_DEGRADED);
	CHECK(!strcmp(why, "devid 3, 5 are missing (the filesystem is mounted degraded)"));
	CHECK(bx_refusal_errno(BX_REFUSE_DEGRADED) == -ENODEV);
	c.nr_missing = 0;
	CHECK(refusal(&c, BX_OP_BALANCE, all, why) == BX_REFUSE_EXCLUSIVE);
	c.balance = BX_SNAP_BALANCE_NONE;
	CHECK(refusal(&c, BX_OP_BALANCE, all, why) == BX_REFUSE_NO_HINTS);
	CHECK(!strncmp(why, "the running kernel ignores allocation hints", 43));
	CHECK(bx_refusal_errno(BX_REFUSE_NO_HINTS) == -EOPNOTSUPP);
	c.kernel_hints = -1;	/* unknown: not refused */
	CHECK(refusal(&c, BX_OP_BALANCE, all, why) == BX_REFUSE_NONE);
	CHECK(bx_refusal_errno(BX_REFUSE_NONE) == 0);
}

/* A snapshot's condition: its balance and its missing members (unmounted: the words say so). */
static void test_condition_of_snapshot(void)
{
	uint64_t sizes[3] = { 1 * GiB, 1 * GiB, 1 * GiB };
	struct bx_fs_condition c;
	struct fs f;
	char why[512];

	fs_init(&f, 3, sizes, NULL);
	f.in.devs[1].missing = true;
	f.in.balance = BX_SNAP_BALANCE_INTERRUPTED;
	f.in.kernel_hints = -1;
	bx_fs_condition_of(&f.in, &c);
	CHECK(!c.mounted && c.balance == BX_SNAP_BALANCE_INTERRUPTED && c.nr_missing == 1 &&
	      c.missing[0] == 2 && c.kernel_hints == -1);
	CHECK(refusal(&c, BX_OP_BALANCE, BX_CHECK_DEGRADED, why) == BX_REFUSE_DEGRADED);
	CHECK(!strcmp(why, "devid 2 is missing (not named, and not found by the filesystem's fsid "
		      "among the block devices or beside the image files named)"));
	bx_snapshot_release(&f.in);
}

static void test_select(void)
{
	struct bx_misplaced_chunk chunks[3] = {
		{ .cls = BX_PLACE_FORBIDDEN, .used = 100 * MiB },
		{ .cls = BX_PLACE_FORBIDDEN, .used = 200 * MiB },
		{ .cls = BX_PLACE_OFF_PREFERENCE, .used = 300 * MiB },
	};
	struct bx_misplaced_report rep = { .nr_chunks = 3, .chunks = chunks };
	uint64_t bytes;

	CHECK_EQ_U64(bx_policy_select(&rep, false, 0, 0, &bytes), 3);
	CHECK_EQ_U64(bytes, 600 * MiB);
	CHECK_EQ_U64(bx_policy_select(&rep, true, 0, 0, &bytes), 2);
	CHECK_EQ_U64(bytes, 300 * MiB);
	CHECK(!bx_policy_takes(&chunks[2], true) && bx_policy_takes(&chunks[1], true) &&
	      bx_policy_takes(&chunks[2], false));
	CHECK_EQ_U64(bx_policy_select(&rep, false, 1, 0, &bytes), 1);
	CHECK_EQ_U64(bytes, 100 * MiB);
	/* The byte limit stops before the chunk that would pass it, never in the middle. */
	CHECK_EQ_U64(bx_policy_select(&rep, false, 0, 250 * MiB, &bytes), 1);
	CHECK_EQ_U64(bx_policy_select(&rep, false, 0, 50 * MiB, &bytes), 0);
	CHECK_EQ_U64(bytes, 0);
}

int main(void)
{
	test_balance_refuses();
	test_other_operations();
	test_order_and_words();
	test_condition_of_snapshot();
	test_select();
	return unit_summary();
}
