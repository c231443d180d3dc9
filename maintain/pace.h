/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pace of a maintain run between chunks: the time window (quiet
 * hours), the I/O budget (the used bytes moved so far, at most the budget
 * in MiB/s on average since the run started) and a pause while the
 * devices are busy, measured over one second while the run moves nothing:
 * a member device busy (its io_ticks, /sys/class/block/<dev>/stat)
 * busy-device percent of that second or more (default 75), or the tasks of the whole system all stalled on I/O
 * (/proc/pressure/io "full") at least busy-pressure percent of it.
 */
#ifndef BTRFSX_MAINTAIN_PACE_H
#define BTRFSX_MAINTAIN_PACE_H

#include <stdbool.h>
#include <stdint.h>

#include "fsops/mounted-fs.h"
#include "maintain/policy.h"

/* Busy devices pause a run at most this long before the chunk; then it stops. */
#define BX_PACE_BUSY_MAX_SECONDS 600

enum bx_pace_wait {
	BX_PACE_GO,
	BX_PACE_STOPPED,		/* a stop was asked while waiting */
	BX_PACE_WINDOW,			/* outside the window */
	BX_PACE_BUSY,			/* the devices stayed busy */
};

struct bx_pacer {
	const struct bx_maintain_policy *policy;
	const struct bx_mounted_fs *mfs;
	const volatile int *stop;
	int (*minute_now)(void);
	double start;
	double paused;			/* seconds waited: budget and busy devices */
	double busy_paused;
};

void bx_pacer_init(struct bx_pacer *p, const struct bx_maintain_policy *policy,
		   const struct bx_mounted_fs *mfs, const volatile int *stop,
		   int (*minute_now)(void));

/* Waits as the policy says before the next chunk, @bytes_moved so far. */
enum bx_pace_wait bx_pacer_wait(struct bx_pacer *p, uint64_t bytes_moved);

/* The seconds to wait so that @bytes over @elapsed seconds keep to @budget MiB/s. Pure. */
double bx_pace_budget_wait(double budget, uint64_t bytes, double elapsed);

#endif
