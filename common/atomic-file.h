/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Files replaced whole: a reader sees the old content or the new one, never
 * a mix, even across a crash. The content goes to a temporary file beside
 * the target (".<name>.XXXXXX": hidden, and without the target's suffix, so
 * collectors that read "*.prom" or "*.json" never pick it up), is flushed to
 * disk, renamed over the target, and the directory is flushed.
 *
 * Library style: functions return 0 or a negative errno with a message
 * recorded by bx_error(); nothing prints.
 */
#ifndef BTRFSX_ATOMIC_FILE_H
#define BTRFSX_ATOMIC_FILE_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

struct bx_atomic_file {
	FILE *fp;                  /* write the content here */
	char path[PATH_MAX];       /* the target */
	char tmp[PATH_MAX];        /* the temporary file beside it */
};

/* Creates @dir and its missing parents with mode 0755. */
int bx_mkdir_parents(const char *dir);

/*
 * Starts replacing @path: creates the temporary file with @mode (its
 * directory must exist). On failure nothing is left behind.
 */
int bx_atomic_begin(struct bx_atomic_file *af, const char *path, mode_t mode);

/*
 * Flushes, syncs and renames the temporary file over the target, then syncs
 * the directory. On failure (a full disk shows here) the temporary file is
 * removed and the target is unchanged. Either way @af is finished.
 */
int bx_atomic_commit(struct bx_atomic_file *af);

/* Drops the temporary file; the target is unchanged. */
void bx_atomic_abort(struct bx_atomic_file *af);

#endif
