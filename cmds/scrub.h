/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx scrub: presenting a result (the status file is the engine's, scrub/scrub.h). */
#ifndef BTRFSX_CMDS_SCRUB_H
#define BTRFSX_CMDS_SCRUB_H

#include <stdbool.h>
#include <stddef.h>

#include "cmds/format-output.h"
#include "scrub/scrub.h"

struct scrub_print_opts {
	bool per_device;            /* -d */
	bool raw;                   /* -R: every counter instead of the summary */
	unsigned int units;
};

/*
 * Prints @res as the "scrub" object: identity, status ("running",
 * "finished", "cancelled", "interrupted"), timing, the counters in total and
 * per device, the error records and the files of uncorrectable data.
 */
void scrub_print(struct bx_out *out, const struct bx_scrub_result *res, const char *status,
		 const struct scrub_print_opts *po);

#endif
