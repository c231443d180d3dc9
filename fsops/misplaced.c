/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The misplaced report as the command, the relocation engine and the
 * library show it: the model's classification (model/misplaced.c) with a
 * time estimate from the measured copy rate. See misplaced.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/copy-rate.h"
#include "fsops/misplaced.h"

static void estimate(struct bx_misplaced_report *rep, const char *state_dir)
{
	uint64_t bytes = 0;
	double seconds = 0;
	int ret;

	if (!state_dir)
		return;
	ret = bx_copy_rate_load(state_dir, rep->fsid, &bytes, &seconds);
	if (ret) {
		/* An unreadable record costs the estimate, not the report. */
		bx_warn("no time estimate: %s", bx_error_message(ret));
		bx_error_clear();
		return;
	}
	if (!bytes || seconds <= 0)
		return;
	rep->have_rate = true;
	rep->rate = (double)bytes / seconds;
	rep->forbidden.estimate_seconds = (double)rep->forbidden.used / rep->rate;
	rep->off_preference.estimate_seconds = (double)rep->off_preference.used / rep->rate;
}

int bx_misplaced_compute(const struct bx_snapshot *in, const char *state_dir,
			 struct bx_misplaced_report *rep)
{
	int ret = bx_misplaced_classify(in, rep);

	if (ret)
		return ret;
	estimate(rep, state_dir);
	if (!rep->hints_effective && rep->nr_chunks)
		bx_warn("the running kernel ignores allocation hints: these chunks break the "
			"stored hints, but new chunks will not follow them either");
	return 0;
}
