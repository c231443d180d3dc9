/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the commands that move chunks (balance misplaced, maintain run)
 * share: the progress they show on stderr, one line rewritten in place for
 * people or, with --format json, one {"progress": {...}} object a line for
 * programs (the web console); and --cancel-on-eof, the end of standard
 * input taken as a SIGTERM.
 */
#ifndef BTRFSX_CMDS_MOVE_PROGRESS_H
#define BTRFSX_CMDS_MOVE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "relocate/relocate.h"

struct bx_move_progress {
	bool show;
	bool json;		/* --format json: one JSON object a line */
	size_t line_len;	/* of the text line shown, to overwrite it */
};

/* Shows @p on stderr (a relocate progress callback, @arg a struct bx_move_progress). */
int bx_move_progress_show(void *arg, const struct bx_relocate_progress *p);

/* Clears the text line at the end of the run. */
void bx_move_progress_end(struct bx_move_progress *ps);

/*
 * --cancel-on-eof: a thread reads standard input to its end, then raises
 * *@stop by one as the SIGTERM handlers do. 0, or a negative errno with the
 * message recorded.
 */
int bx_stop_at_eof(volatile int *stop);

#endif
