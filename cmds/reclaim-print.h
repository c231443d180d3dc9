/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel's block group reclaim in filesystem usage and filesystem plan. */
#ifndef BTRFSX_RECLAIM_PRINT_H
#define BTRFSX_RECLAIM_PRINT_H

#include "cmds/format-output.h"
#include "fsops/reclaim.h"

/*
 * "reclaim" (JSON: null when unknown, that is unmounted) and, in text when
 * any kind has it on, what the kernel will do to the figures: @settings's
 * reclaim (read from sysfs) applied to the filesystem as @in describes it
 * (the real one, or a plan's after-state: thresholds and the block groups
 * below them as they will be then). @heading names which.
 */
void bx_reclaim_print(struct bx_out *out, const struct bx_snapshot *settings,
		      const struct bx_snapshot *in, const char *heading, unsigned int units);

#endif
