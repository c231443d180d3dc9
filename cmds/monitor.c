/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx monitor: keep a history of each filesystem's space (record), say
 * where it is heading (report, also as a Nagios/Icinga plugin with
 * --check), and hand it to Prometheus (metrics). The engine is monitor/.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmds/monitor.h"
#include "common/error.h"
#include "common/units.h"
#include "fsops/mounted-fs.h"
#include "monitor/history.h"
#include "monitor/metrics.h"
#include "monitor/projection.h"
#include "monitor/record.h"
#include "monitor/sample.h"

#define DEFAULT_KEEP (400 * 86400)

/* ---- what every command shares ---- */

int bx_monitor_now(int64_t *now)
{
	const char *env = getenv("BTRFSX_MONITOR_NOW");
	uint64_t value;

	if (!env || !*env) {
		*now = (int64_t)time(NULL);
		return 0;
	}
	if (bx_parse_u64(env, &value) || value > INT64_MAX / 2)
		return bx_error(-EINVAL, "BTRFSX_MONITOR_NOW: '%s' is not a time in seconds since "
				"the epoch", env);
	*now = (int64_t)value;
	return 0;
}

void bx_monitor_default_db(const struct bx_ctx *ctx, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", ctx->state_dir, BX_MON_DB_FILE);
}

static int parse_duration_option(const char *option, const char *arg, int64_t *seconds)
{
	if (bx_parse_duration(arg, seconds))
		return bx_usage_error("%s: '%s' is not a duration from 1s to 100 years (a number "
				      "with s, m, h, d or w, e.g. 30d)", option, arg);
	return 0;
}

int bx_monitor_path_option(const char *option, const char *arg, char *path, size_t len)
{
	if (arg[0] == '-')
		return bx_usage_error("%s: '%s' looks like an option (write ./%s for a file of "
				      "that name)", option, arg, arg);
	if (!arg[0] || snprintf(path, len, "%s", arg) >= (int)len)
		return bx_usage_error("%s: invalid path '%s'", option, arg);
	return 0;
}

void bx_monitor_reading_init(const struct bx_ctx *ctx, struct bx_monitor_reading *r)
{
	bx_monitor_default_db(ctx, r->db, sizeof(r->db));
	r->proj = bx_mon_project_defaults(0);
}

bool bx_monitor_reading_option(int opt, struct bx_monitor_reading *r, int *ret)
{
	if (opt == BX_MON_DB_OPTION)
		*ret = bx_monitor_path_option("--db", optarg, r->db, sizeof(r->db));
	else if (opt == BX_MON_WINDOW_OPTION)
		*ret = parse_duration_option("--window", optarg, &r->proj.window);
	else if (opt == BX_MON_MIN_HISTORY_OPTION && !strcmp(optarg, "0"))
		r->proj.min_history = *ret = 0;
	else if (opt == BX_MON_MIN_HISTORY_OPTION)
		*ret = parse_duration_option("--min-history", optarg, &r->proj.min_history);
	else
		return false;
	return true;
}

int bx_monitor_reading_done(struct bx_monitor_reading *r)
{
	char learn[32], window[32];

	if (r->proj.min_history >= r->proj.window) {
		bx_format_duration(r->proj.min_history, learn, sizeof(learn));
		bx_format_duration(r->proj.window, window, sizeof(window));
		return bx_usage_error("--min-history (%s) must be shorter than --window (%s): "
				      "learning would never end", learn, window);
	}
	return bx_monitor_now(&r->proj.now);
}

/* ---- record ---- */

static const char *const record_usage[] = {
	"btrfsx monitor record [--db <path>] [--keep <duration>] [<mountpoint>...]",
	"Store a sample of each mounted filesystem in the history.",
	"",
	"Without a mount point: every mounted btrfs, once per filesystem.",
	"Takes the figures of 'btrfsx filesystem usage' (free space and metadata room",
	"from the allocator model), the block group lines, per device the size,",
	"unallocated and allocated bytes, hint and the kernel's error counters, the",
	"read policy and the last offline scrub's result, from ioctls and sysfs only,",
	"and stores them in one transaction. A systemd timer runs it every 5 minutes.",
	"",
	"--db <path>          the history (default $BTRFSX_STATE_DIR/monitor.db,",
	"                     /var/lib/btrfsx/monitor.db)",
	"--keep <duration>    drop samples older than this (default 400d; s m h d w);",
	"                     samples older than 35 days are thinned to one an hour",
	NULL
};

/* One filesystem recorded: a line (text) or an object of the "recorded" list (JSON). */
static void show_recorded(void *arg, const struct bx_mon_sample *s)
{
	struct bx_out *out = arg;
	char fsid[BX_FSID_STR_LEN];

	bx_fsid_unparse(s->fsid, fsid);
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_textf(out, "recorded");
	bx_out_str(out, "mountpoint", s->mountpoint, BX_F_NO_NAME);
	bx_out_str(out, "fsid", fsid, 0);
	bx_out_str(out, "label", s->label, BX_F_JSON_ONLY);
	bx_out_s64(out, "time", s->fig.time, BX_F_JSON_ONLY);
	bx_out_size(out, "metadata_room", s->fig.metadata_room, 0, 0);
	bx_out_size(out, "free_strict", s->fig.free_strict, 0, 0);
	bx_out_obj_end(out);
}

static int cmd_record(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, BX_MON_DB_OPTION },
		{ "keep", required_argument, NULL, 'k' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct bx_mon_record_opts o = { .sysfs_root = ctx->sysfs_root, .state_dir = ctx->state_dir,
					.keep = DEFAULT_KEEP, .recorded = show_recorded,
					.arg = ctx->out };
	char db_path[PATH_MAX], state_db[PATH_MAX], **mounted = NULL;
	struct bx_mon_db *db;
	int opt, ret, nr_mounted = 0;

	bx_monitor_default_db(ctx, state_db, sizeof(state_db));
	memcpy(db_path, state_db, sizeof(db_path));
	while ((opt = bx_getopt(ctx, argc, argv, "h", longopts)) != -1) {
		switch (opt) {
		case BX_MON_DB_OPTION:
			ret = bx_monitor_path_option("--db", optarg, db_path, sizeof(db_path));
			if (ret)
				return ret;
			break;
		case 'k':
			ret = parse_duration_option("--keep", optarg, &o.keep);
			if (ret)
				return ret;
			break;
		default:
			return bx_opt_result(opt);
		}
	}
	ret = bx_monitor_now(&o.now);
	if (!ret && optind == argc)
		ret = bx_mon_mounted_filesystems(&mounted, &nr_mounted);
	if (!ret && optind == argc && !nr_mounted)
		ret = bx_error(-ENOENT, "no btrfs filesystem is mounted: nothing to record");
	/* The state directory is btrfsx's to make; another history's must exist. */
	if (!ret)
		ret = bx_mon_db_open(db_path, strcmp(db_path, state_db) ? BX_MON_WRITE :
				     BX_MON_WRITE_MAKE_DIR, &db);
	if (!ret) {
		bx_out_str(ctx->out, "db", db_path, BX_F_JSON_ONLY);
		bx_out_list_begin(ctx->out, "recorded");
		if (mounted)
			ret = bx_mon_record(db, mounted, nr_mounted, true, &o);
		else
			ret = bx_mon_record(db, argv + optind, argc - optind, false, &o);
		bx_out_list_end(ctx->out);
		bx_mon_db_close(db);
	}
	bx_mon_paths_free(mounted, nr_mounted);
	return ret;
}

/* ---- choosing filesystems of the history ---- */

void bx_monitor_selection_free(struct bx_monitor_selection *sel)
{
	free(sel->all);
	free(sel->fs);
}

int bx_monitor_select(struct bx_mon_db *db, const char *db_path, int nr_args, char **args,
		      struct bx_monitor_selection *sel)
{
	int ret;

	memset(sel, 0, sizeof(*sel));
	ret = bx_mon_db_filesystems(db, &sel->all, &sel->nr_all);
	if (ret)
		return ret;
	sel->fs = calloc((nr_args ? (size_t)nr_args : sel->nr_all) + 1, sizeof(*sel->fs));
	if (!sel->fs) {
		bx_monitor_selection_free(sel);
		return bx_error(-ENOMEM, "out of memory");
	}
	sel->named = nr_args > 0;
	if (!nr_args) {
		for (size_t i = 0; i < sel->nr_all; i++)
			sel->fs[sel->nr++] = &sel->all[i];
		return 0;
	}
	for (int i = 0; i < nr_args; i++) {
		ret = bx_mon_find_fs(sel->all, sel->nr_all, args[i], db_path, &sel->fs[sel->nr++]);
		if (ret) {
			bx_monitor_selection_free(sel);
			return ret;
		}
	}
	return 0;
}

/* ---- metrics ---- */

static const char *const metrics_usage[] = {
	"btrfsx monitor metrics [--db <path>] [--window <duration>] [--min-history <duration>] [--textfile <dir>] [<mountpoint|fsid>...]",
	"Export the newest samples and the projections as Prometheus metrics.",
	"",
	"The text exposition format, to standard output or, with --textfile, written",
	"atomically (temporary file, rename) as <dir>/btrfsx.prom for node_exporter's",
	"textfile collector. Filesystems (all, or those named) with a sample in the",
	"window: btrfsx_metadata_room_bytes, btrfsx_metadata_days_left,",
	"btrfsx_device_unallocated_bytes{devid,hint}, ... (man btrfsx-monitor).",
	"The growth and days series are left out while a filesystem is learning.",
	"",
	BX_MON_READING_HELP,
	"--textfile <dir>         write <dir>/btrfsx.prom instead of standard output",
	NULL
};

/* Families as JSON: name, type, help and the labelled values (null for an infinite one). */
static void print_metrics_json(struct bx_out *out, const struct bx_metrics *m)
{
	bx_out_list_begin(out, "metrics");
	for (size_t i = 0; i < m->nr_families; i++) {
		const struct bx_metric_family *f = &m->families[i];

		if (!f->nr_values)
			continue;
		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_str(out, "name", f->name, 0);
		bx_out_str(out, "type", f->type, 0);
		bx_out_str(out, "help", f->help, 0);
		bx_out_list_begin(out, "values");
		for (size_t j = 0; j < f->nr_values; j++) {
			const struct bx_metric_value *v = &f->values[j];

			bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
			bx_out_obj_begin(out, "labels", BX_OBJ_JSON_ONLY, NULL);
			for (size_t k = 0; k < v->nr_labels; k++)
				bx_out_str(out, v->names[k], v->values[k], 0);
			bx_out_obj_end(out);
			if (isinf(v->value) || isnan(v->value))
				bx_out_str(out, "value", NULL, 0);
			else
				bx_out_double(out, "value", v->value,
					      floor(v->value) == v->value ? 0 : 9, 0);
			bx_out_obj_end(out);
		}
		bx_out_list_end(out);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

/* The newest sample and the projection of each chosen filesystem with a sample in the window. */
struct exported {
	size_t nr;
	struct bx_mon_sample *latest;
	struct bx_mon_projection *proj;
	struct bx_metrics_input *inputs;
};

static void exported_free(struct exported *e)
{
	for (size_t i = 0; i < e->nr; i++)
		bx_mon_sample_release(&e->latest[i]);
	free(e->latest);
	free(e->proj);
	free(e->inputs);
}

static int gather(struct bx_mon_db *db, const struct bx_monitor_selection *sel,
		  const struct bx_mon_project_opts *opts, struct exported *e)
{
	int ret = 0;

	memset(e, 0, sizeof(*e));
	e->latest = calloc(sel->nr + 1, sizeof(*e->latest));
	e->proj = calloc(sel->nr + 1, sizeof(*e->proj));
	e->inputs = calloc(sel->nr + 1, sizeof(*e->inputs));
	if (!e->latest || !e->proj || !e->inputs)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < sel->nr; i++) {
		ret = bx_mon_project(db, sel->fs[i]->id, opts, &e->proj[e->nr]);
		if (ret || !e->proj[e->nr].have_latest)
			continue;
		ret = bx_mon_db_latest(db, sel->fs[i]->id, opts->now, &e->latest[e->nr]);
		if (ret)
			break;
		e->inputs[e->nr] = (struct bx_metrics_input){ &e->latest[e->nr], &e->proj[e->nr] };
		e->nr++;
	}
	return ret;
}

static int export_metrics(struct bx_ctx *ctx, struct bx_mon_db *db,
			  const struct bx_monitor_reading *r, int nr_args, char **args,
			  const char *textfile)
{
	struct bx_metrics m = { 0 };
	struct bx_monitor_selection sel;
	struct exported e = { 0 };
	char path[PATH_MAX];
	int ret;

	ret = bx_monitor_select(db, r->db, nr_args, args, &sel);
	if (ret)
		return ret;
	ret = gather(db, &sel, &r->proj, &e);
	if (!ret)
		ret = bx_metrics_build(e.inputs, e.nr, &m);
	if (!ret && textfile)
		ret = bx_metrics_write_textfile(&m, textfile, path, sizeof(path));
	else if (!ret && bx_out_format(ctx->out) == BX_FORMAT_TEXT)
		ret = bx_metrics_write(&m, stdout);
	if (!ret) {
		if (textfile)
			bx_out_str(ctx->out, "textfile", path, 0);
		bx_out_u64(ctx->out, "filesystems", e.nr, textfile ? 0 : BX_F_JSON_ONLY);
		print_metrics_json(ctx->out, &m);
	}
	bx_metrics_release(&m);
	exported_free(&e);
	bx_monitor_selection_free(&sel);
	return ret;
}

static int cmd_metrics(struct bx_ctx *ctx, int argc, char **argv)
{
	enum { OPT_TEXTFILE = 256 };
	static const struct option longopts[] = {
		BX_MON_READING_LONGOPTS,
		{ "textfile", required_argument, NULL, OPT_TEXTFILE },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct bx_monitor_reading r;
	char textfile[PATH_MAX] = "";
	struct bx_mon_db *db;
	int opt, ret;

	bx_monitor_reading_init(ctx, &r);
	while ((opt = bx_getopt(ctx, argc, argv, "h", longopts)) != -1) {
		if (bx_monitor_reading_option(opt, &r, &ret)) {
			if (ret)
				return ret;
			continue;
		}
		switch (opt) {
		case OPT_TEXTFILE:
			ret = bx_monitor_path_option("--textfile", optarg, textfile,
						     sizeof(textfile));
			if (ret)
				return ret;
			break;
		default:
			return bx_opt_result(opt);
		}
	}
	ret = bx_monitor_reading_done(&r);
	if (!ret)
		ret = bx_mon_db_open(r.db, BX_MON_READ, &db);
	if (ret)
		return ret;
	ret = export_metrics(ctx, db, &r, argc - optind, argv + optind,
			     textfile[0] ? textfile : NULL);
	bx_mon_db_close(db);
	return ret;
}

static const char *const monitor_usage[] = {
	"btrfsx monitor <command> [<args>]",
	"Keep a history of space use, project it, export it to Prometheus.",
	NULL
};

static const struct bx_cmd monitor_cmds[] = {
	{ "record", cmd_record, record_usage, NULL, BX_CMD_JSON },
	{ "report", bx_cmd_monitor_report, bx_monitor_report_usage, NULL,
	  BX_CMD_JSON | BX_CMD_PLUGIN },
	{ "metrics", cmd_metrics, metrics_usage, NULL, BX_CMD_JSON },
	{ NULL },
};

const struct bx_cmd_group bx_monitor_group = { monitor_usage, monitor_cmds };
