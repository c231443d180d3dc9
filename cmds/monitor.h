/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx monitor: what its commands share (cmds/monitor.c holds record and
 * metrics and the group's table, cmds/monitor-report.c report and its
 * monitoring plugin, --check).
 */
#ifndef BTRFSX_CMDS_MONITOR_H
#define BTRFSX_CMDS_MONITOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmds/commands.h"
#include "monitor/history.h"
#include "monitor/projection.h"

/* The time of a sample: now, or BTRFSX_MONITOR_NOW (tests only: simulated time). */
int bx_monitor_now(int64_t *now);

/* $BTRFSX_STATE_DIR/monitor.db (default /var/lib/btrfsx/monitor.db). */
void bx_monitor_default_db(const struct bx_ctx *ctx, char *path, size_t len);

/* A path option's value: a usage error when it looks like an option (--db --help). */
int bx_monitor_path_option(const char *option, const char *arg, char *path, size_t len);

/*
 * What report and metrics read: the history, and how the projections are
 * made (--window, --min-history). Their long options, in each command's
 * table; bx_monitor_reading_option() takes them.
 */
#define BX_MON_DB_OPTION 'D'
#define BX_MON_WINDOW_OPTION 'W'
#define BX_MON_MIN_HISTORY_OPTION 'L'
#define BX_MON_READING_LONGOPTS \
	{ "db", required_argument, NULL, BX_MON_DB_OPTION }, \
	{ "window", required_argument, NULL, BX_MON_WINDOW_OPTION }, \
	{ "min-history", required_argument, NULL, BX_MON_MIN_HISTORY_OPTION }
#define BX_MON_READING_HELP \
	"--db <path>              the history (default $BTRFSX_STATE_DIR/monitor.db)", \
	"--window <duration>      how far back to fit (default 30d; s m h d w)", \
	"--min-history <duration> learning until the samples span this long: growth", \
	"                         is told, not projected (default 1d; 0: no minimum)"

struct bx_monitor_reading {
	char db[PATH_MAX];
	struct bx_mon_project_opts proj;
};

/* The defaults: the state directory's history, bx_mon_project_defaults(). */
void bx_monitor_reading_init(const struct bx_ctx *ctx, struct bx_monitor_reading *r);

/* True when @opt was one of the reading options, with *@ret 0 or the usage error. */
bool bx_monitor_reading_option(int opt, struct bx_monitor_reading *r, int *ret);

/* After the options: refuses a learning span as long as the window; sets now. */
int bx_monitor_reading_done(struct bx_monitor_reading *r);

/* The filesystems of the history that the arguments name (all without any). */
struct bx_monitor_selection {
	struct bx_mon_fs *all;
	size_t nr_all;
	size_t nr;
	struct bx_mon_fs **fs;		/* chosen, in the order asked */
	bool named;			/* chosen by name, not all */
};

int bx_monitor_select(struct bx_mon_db *db, const char *db_path, int nr_args, char **args,
		      struct bx_monitor_selection *sel);
void bx_monitor_selection_free(struct bx_monitor_selection *sel);

extern const char *const bx_monitor_report_usage[];
int bx_cmd_monitor_report(struct bx_ctx *ctx, int argc, char **argv);

#endif
