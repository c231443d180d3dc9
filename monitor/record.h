/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recording: each mounted filesystem sampled (monitor/collect.c) with its
 * last offline scrub (the scrub's status file) and stored in the history
 * (monitor/history.c), as `btrfsx monitor record` and its systemd timer do.
 *
 * Library style: 0 or a negative errno with a message recorded by bx_error();
 * a filesystem that cannot be recorded does not cost the others theirs.
 */
#ifndef BTRFSX_MONITOR_RECORD_H
#define BTRFSX_MONITOR_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "monitor/history.h"
#include "monitor/sample.h"

/* The first mount point of every mounted btrfs, once per filesystem; free with bx_mon_paths_free(). */
int bx_mon_mounted_filesystems(char ***paths, int *nr);
void bx_mon_paths_free(char **paths, int nr);

/*
 * The last offline scrub of @s's filesystem, from its status file under
 * @state_dir, into s->scrub. None leaves it unknown; a file that cannot be
 * read is a warning.
 */
void bx_mon_take_scrub(const char *state_dir, struct bx_mon_sample *s);

struct bx_mon_record_opts {
	const char *sysfs_root;		/* NULL: "/sys" */
	const char *state_dir;		/* where the scrub status files are */
	int64_t now;			/* the samples' time, seconds since the epoch */
	int64_t keep;			/* drop samples older than this many seconds */
	/* Told each sample stored (for the caller to show); may be NULL. */
	void (*recorded)(void *arg, const struct bx_mon_sample *s);
	void *arg;
};

/*
 * Samples each of the @nr filesystems mounted at @paths and stores it in
 * @db. @found: the paths were found mounted, so one unmounted since is only
 * a warning. One that fails is a warning when others fail too; returns 0,
 * the one failure's error, or an error saying how many were not recorded.
 */
int bx_mon_record(struct bx_mon_db *db, char **paths, int nr, bool found,
		  const struct bx_mon_record_opts *opts);

#endif
