/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the write path (write.c) may do for one caller.
 *
 * refused: the command did not declare that it writes (BX_CMD_WRITES in
 * cmds/commands.h); the dispatcher sets it and every write then fails with
 * -EPERM, so a read-only command cannot change a device by mistake.
 *
 * The rest is crash simulation for the tests, and exists only in builds
 * configured with --enable-fault-injection (scripts/test.sh's build; a
 * release build has none of it: no variables read, no pause, no write-back).
 * The btrfsx command of such a build fills the plan from its environment:
 *
 *   BTRFSX_FAULT_AFTER_WRITES=N      the machine stops after the N-th write:
 *                                    that write completes, every later one
 *                                    fails with -EIO;
 *   BTRFSX_FAULT_DROP_UNFLUSHED=all  ... and at that point loses the writes
 *   BTRFSX_FAULT_DROP_UNFLUSHED=2,5  issued since the last flush: all of
 *                                    them, or the ones listed (1-based, in
 *                                    issue order, at most 64). The crash then
 *                                    comes right after the N-th write, before
 *                                    the flush that would follow it;
 *   BTRFSX_FAULT_PAUSE_BEFORE_WRITE=N  SIGSTOP before the N-th write, with
 *                                    every member held, so a test can try a
 *                                    second writer or a mount meanwhile
 *                                    (SIGCONT resumes).
 *
 * A "write" is one pwrite or pwritev; an unflushed write is remembered per
 * request of a batch, so a dropped one is one tree block, superblock or wipe.
 */
#ifndef BTRFSX_WRITE_PLAN_H
#define BTRFSX_WRITE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#define BX_FAULT_MAX_LISTED 64

struct bx_write_plan {
	bool refused;                 /* a command that does not write: every write fails */
	/* Read only by builds with fault injection; all zero: off. */
	uint64_t after_writes;        /* 0: never stop */
	bool drop_all;                /* lose every unflushed write at the stop */
	uint64_t drop_mask;           /* bit k-1: lose the k-th unflushed write */
	uint64_t pause_before_write;  /* 0: never pause */
};

#ifdef BTRFSX_FAULT_INJECTION
/*
 * Fills the fault fields of @plan from the three variables' values (NULL or
 * "" for unset). -EINVAL with a message naming the variable for anything
 * malformed.
 */
int bx_fault_plan_parse(struct bx_write_plan *plan, const char *after_writes,
			const char *drop_unflushed, const char *pause_before_write);
#endif

#endif
