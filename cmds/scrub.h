/* btrfsx scrub: presenting a result and keeping the last one per filesystem. */
#ifndef BTRFSX_CMDS_SCRUB_H
#define BTRFSX_CMDS_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

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

/* <state_dir>/scrub/<fsid>.json */
void scrub_status_path(const char *state_dir, const uint8_t fsid[16], char *buf, size_t len);

/*
 * Writes @res (JSON, the stable format of `--format json scrub start`) to
 * @path atomically: a temporary file, fsync, rename, fsync of the directory.
 * Creates the directories. @pid is the scrubbing process (for "running").
 */
int scrub_status_save(const char *path, const struct bx_scrub_result *res, const char *status,
		      pid_t pid);

/*
 * Reads a status file back into *@res (free with scrub_status_free). A
 * "running" status whose process is gone becomes "interrupted".
 */
struct scrub_status;
int scrub_status_load(const char *path, struct scrub_status **st);
const struct bx_scrub_result *scrub_status_result(const struct scrub_status *st);
const char *scrub_status_state(const struct scrub_status *st);
void scrub_status_free(struct scrub_status *st);

#endif
