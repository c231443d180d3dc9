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

#include "cmds/commands.h"
#include "cmds/scrub.h"
#include "common/error.h"
#include "common/units.h"
#include "fsops/mounted-fs.h"
#include "fsops/read-policy.h"
#include "monitor/history.h"
#include "monitor/metrics.h"
#include "monitor/projection.h"
#include "monitor/sample.h"

#define DEFAULT_KEEP (400 * 86400)
#define DEFAULT_WARNING_DAYS 30.0
#define DEFAULT_CRITICAL_DAYS 14.0
#define SECONDS_PER_DAY 86400.0

/* Nagios/Icinga plugin states, which are also the exit codes of report --check. */
enum check_state { CHECK_OK, CHECK_WARNING, CHECK_CRITICAL, CHECK_UNKNOWN };

static const char *const check_names[] = { "OK", "WARNING", "CRITICAL", "UNKNOWN" };
/* Which state the status line takes: UNKNOWN ranks above OK, below a real WARNING. */
static const int check_rank[] = { 0, 2, 3, 1 };

/* ---- what every command shares ---- */

/* The time of a sample: now, or BTRFSX_MONITOR_NOW (tests only: simulated time). */
static int monitor_now(int64_t *now)
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

static void default_db(const struct bx_ctx *ctx, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", ctx->state_dir, BX_MON_DB_FILE);
}

static int parse_duration_option(const char *option, const char *arg, int64_t *seconds)
{
	if (bx_parse_duration(arg, seconds))
		return bx_usage_error("%s: invalid duration '%s' (a number with s, m, h, d or w, "
				      "e.g. 30d)", option, arg);
	return 0;
}

static int parse_days_option(const char *option, const char *arg, double *days)
{
	char *end;

	errno = 0;
	*days = strtod(arg, &end);
	if (errno || end == arg || *end || !(*days >= 0) || *days > 36500)
		return bx_usage_error("%s: invalid number of days '%s'", option, arg);
	return 0;
}

/* Options several commands share: --db <path>, --window <duration>. */
#define DB_OPTION 'D'
#define WINDOW_OPTION 'W'

/* A path option's value; one that looks like an option (--db --help) was a slip. */
static int path_option(const char *option, const char *arg, char *path, size_t len)
{
	if (arg[0] == '-')
		return bx_usage_error("%s: '%s' looks like an option (write ./%s for a file of "
				      "that name)", option, arg, arg);
	if (!arg[0] || snprintf(path, len, "%s", arg) >= (int)len)
		return bx_usage_error("%s: invalid path '%s'", option, arg);
	return 0;
}

/*
 * Takes --db and --window for the command: true when @opt was one of them,
 * with *@ret 0 or the usage error.
 */
static bool shared_option(int opt, char *db_path, size_t db_len, int64_t *window, int *ret)
{
	if (opt == DB_OPTION)
		*ret = path_option("--db", optarg, db_path, db_len);
	else if (opt == WINDOW_OPTION && window)
		*ret = parse_duration_option("--window", optarg, window);
	else
		return false;
	return true;
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

/* The last offline scrub of the filesystem, from its status file. */
static void take_scrub(const struct bx_ctx *ctx, struct bx_mon_sample *s)
{
	struct bx_mon_scrub *sc = &s->scrub;
	const struct bx_scrub_result *res;
	const struct bx_scrub_counters *c;
	struct scrub_status *st;
	char path[PATH_MAX];
	int ret;

	scrub_status_path(ctx->state_dir, s->fsid, path, sizeof(path));
	ret = scrub_status_load(path, &st);
	if (ret) {
		if (ret != -ENOENT)
			bx_warn("%s", bx_error_message(ret));
		bx_error_clear();
		return;
	}
	res = scrub_status_result(st);
	c = &res->total;
	sc->known = true;
	snprintf(sc->status, sizeof(sc->status), "%s", scrub_status_state(st));
	sc->started = (int64_t)res->started;
	sc->duration = res->duration;
	sc->bytes_scrubbed = c->data_bytes_scrubbed + c->tree_bytes_scrubbed;
	sc->errors = c->read_errors + c->super_errors + c->verify_errors + c->csum_errors +
		     c->parity_errors;
	sc->corrected = c->corrected_errors + c->super_corrected;
	sc->uncorrectable = c->uncorrectable_errors;
	scrub_status_free(st);
}

static int record_one(struct bx_ctx *ctx, struct bx_mon_db *db, const char *arg, int64_t now,
		      int64_t keep)
{
	char mountpoint[PATH_MAX], fsid[BX_FSID_STR_LEN];
	struct bx_mon_sample s;
	int ret;

	if (!realpath(arg, mountpoint))
		return bx_error(-errno, "%s: %m", arg);
	ret = bx_mon_collect(mountpoint, ctx->sysfs_root, now, &s);
	if (ret)
		return ret;
	take_scrub(ctx, &s);
	ret = bx_mon_db_add(db, &s, keep);
	if (!ret) {
		bx_fsid_unparse(s.fsid, fsid);
		bx_out_obj_begin(ctx->out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_textf(ctx->out, "recorded");
		bx_out_str(ctx->out, "mountpoint", s.mountpoint, BX_F_NO_NAME);
		bx_out_str(ctx->out, "fsid", fsid, 0);
		bx_out_str(ctx->out, "label", s.label, BX_F_JSON_ONLY);
		bx_out_s64(ctx->out, "time", s.fig.time, BX_F_JSON_ONLY);
		bx_out_size(ctx->out, "metadata_room", s.fig.metadata_room, 0, 0);
		bx_out_size(ctx->out, "free_strict", s.fig.free_strict, 0, 0);
		bx_out_obj_end(ctx->out);
	}
	bx_mon_sample_release(&s);
	return ret;
}

/* The first mount point of every mounted btrfs; free() *@paths and the strings. */
static int mounted_filesystems(char ***paths, int *nr)
{
	struct bx_rp_mounts mounts;
	int ret = bx_rp_scan_mounts("/proc/self/mountinfo", NULL, &mounts);

	*nr = 0;
	if (ret)
		return ret;
	*paths = calloc(mounts.nr + 1, sizeof(**paths));
	for (size_t i = 0; *paths && i < mounts.nr; i++) {
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen = seen || !strcmp(mounts.mounts[j].fsid, mounts.mounts[i].fsid);
		if (!seen && !((*paths)[(*nr)++] = strdup(mounts.mounts[i].mountpoint)))
			ret = bx_error(-ENOMEM, "out of memory");
	}
	if (!*paths)
		ret = bx_error(-ENOMEM, "out of memory");
	free(mounts.mounts);
	return ret;
}

static void free_paths(char **paths, int nr)
{
	for (int i = 0; paths && i < nr; i++)
		free(paths[i]);
	free(paths);
}

/*
 * Records each of @paths; one that cannot be sampled does not cost the others
 * theirs. @found: the paths were found mounted, and one unmounted since is
 * only a warning.
 */
static int record_all(struct bx_ctx *ctx, struct bx_mon_db *db, char **paths, int nr,
		      bool found, int64_t now, int64_t keep)
{
	char first_error[1024] = "";
	int ret, first_ret = 0, nr_failed = 0;

	bx_out_list_begin(ctx->out, "recorded");
	for (int i = 0; i < nr; i++) {
		ret = record_one(ctx, db, paths[i], now, keep);
		if (!ret)
			continue;
		if (found && (ret == -ENOENT || bx_error_last_kind() == BX_ERROR_KIND_NOT_BTRFS)) {
			bx_warn("%s (unmounted meanwhile?)", bx_error_message(ret));
			continue;
		}
		if (!nr_failed++) {
			first_ret = ret;
			snprintf(first_error, sizeof(first_error), "%s", bx_error_message(ret));
		} else {
			bx_warn("%s", bx_error_message(ret));
		}
	}
	bx_out_list_end(ctx->out);
	if (nr_failed == 1)
		return bx_error(first_ret, "%s", first_error);
	if (nr_failed) {
		bx_warn("%s", first_error);
		return bx_error(first_ret, "%d of %d filesystems not recorded", nr_failed, nr);
	}
	return 0;
}

static int cmd_record(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, DB_OPTION },
		{ "keep", required_argument, NULL, 'k' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	int64_t keep = DEFAULT_KEEP, now;
	char db_path[PATH_MAX], **mounted = NULL;
	struct bx_mon_db *db;
	int opt, ret, nr_mounted = 0;

	default_db(ctx, db_path, sizeof(db_path));
	while ((opt = bx_getopt(ctx, argc, argv, "h", longopts)) != -1) {
		if (shared_option(opt, db_path, sizeof(db_path), NULL, &ret)) {
			if (ret)
				return ret;
			continue;
		}
		switch (opt) {
		case 'k':
			ret = parse_duration_option("--keep", optarg, &keep);
			if (ret)
				return ret;
			break;
		default:
			return bx_opt_result(opt);
		}
	}
	ret = monitor_now(&now);
	if (!ret && optind == argc)
		ret = mounted_filesystems(&mounted, &nr_mounted);
	if (!ret && optind == argc && !nr_mounted)
		ret = bx_error(-ENOENT, "no btrfs filesystem is mounted: nothing to record");
	if (!ret)
		ret = bx_mon_db_open(db_path, true, &db);
	if (!ret) {
		bx_out_str(ctx->out, "db", db_path, BX_F_JSON_ONLY);
		if (mounted)
			ret = record_all(ctx, db, mounted, nr_mounted, true, now, keep);
		else
			ret = record_all(ctx, db, argv + optind, argc - optind, false, now, keep);
		bx_mon_db_close(db);
	}
	free_paths(mounted, nr_mounted);
	return ret;
}

/* ---- choosing filesystems of the history ---- */

struct selection {
	struct bx_mon_fs *all;
	size_t nr_all;
	size_t nr;
	struct bx_mon_fs **fs;		/* chosen, in the order asked */
};

static void selection_free(struct selection *sel)
{
	free(sel->all);
	free(sel->fs);
}

/* The filesystems @args name, or all in the history when there are none. */
static int select_fs(struct bx_mon_db *db, const char *db_path, int nr_args, char **args,
		     struct selection *sel)
{
	int ret;

	memset(sel, 0, sizeof(*sel));
	ret = bx_mon_db_filesystems(db, &sel->all, &sel->nr_all);
	if (ret)
		return ret;
	sel->fs = calloc((nr_args ? (size_t)nr_args : sel->nr_all) + 1, sizeof(*sel->fs));
	if (!sel->fs) {
		selection_free(sel);
		return bx_error(-ENOMEM, "out of memory");
	}
	if (!nr_args) {
		for (size_t i = 0; i < sel->nr_all; i++)
			sel->fs[sel->nr++] = &sel->all[i];
		return 0;
	}
	for (int i = 0; i < nr_args; i++) {
		ret = bx_mon_find_fs(sel->all, sel->nr_all, args[i], db_path, &sel->fs[sel->nr++]);
		if (ret) {
			selection_free(sel);
			return ret;
		}
	}
	return 0;
}

/* ---- report ---- */

static const char *const report_usage[] = {
	"btrfsx monitor report [--db <path>] [--window <duration>] [--check [-w <days>] [-c <days>]] [<mountpoint|fsid>...]",
	"Show how fast metadata and data grow and how many days they have left.",
	"",
	"Per filesystem (all in the history, or those named): the pace at which",
	"metadata and data use grow over the window, a robust fit (Theil-Sen, with",
	"a one-off balance, deletion or copy left out), and the days until the",
	"metadata room falls to the global reserve (metadata ENOSPC) and until the",
	"strict free space for data is gone, with a 95% range. Says why when the",
	"window has too little history (fewer than 3 samples).",
	"",
	"--db <path>            the history (default $BTRFSX_STATE_DIR/monitor.db)",
	"--window <duration>    how far back to fit (default 30d; s m h d w)",
	"--check                a monitoring plugin (Nagios, Icinga): one status line",
	"                       first, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN",
	"-w|--warning <days>    WARNING below this many days left (default 30)",
	"-c|--critical <days>   CRITICAL below this many days left (default 14)",
	NULL
};

struct check_opts {
	bool enabled;
	double warning;
	double critical;
};

/* A day count for text: "12.3", "never" for one that never comes. */
static void days_text(double days, char *buf, size_t len)
{
	if (isinf(days))
		snprintf(buf, len, "never");
	else
		snprintf(buf, len, "%.1f", days);
}

/* Days in JSON (null when they never come) and text, with the 95% range. */
static void print_days(struct bx_out *out, const char *key, const struct bx_trend_days *d)
{
	char text[160], est[32], low[32], high[32], json_key[64];

	days_text(d->days, est, sizeof(est));
	days_text(d->days_low, low, sizeof(low));
	days_text(d->days_high, high, sizeof(high));
	if (d->exhausts)
		snprintf(text, sizeof(text), "%s (95%%: %s to %s)", est, low, high);
	else
		snprintf(text, sizeof(text), "never (not growing; 95%%: %s to %s)", low, high);
	bx_out_str(out, key, text, BX_F_TEXT_ONLY);
	snprintf(json_key, sizeof(json_key), "%s_low", key);
	if (isinf(d->days))
		bx_out_str(out, key, NULL, BX_F_JSON_ONLY);
	else
		bx_out_double(out, key, d->days, 2, BX_F_JSON_ONLY);
	if (isinf(d->days_low))
		bx_out_str(out, json_key, NULL, BX_F_JSON_ONLY);
	else
		bx_out_double(out, json_key, d->days_low, 2, BX_F_JSON_ONLY);
	snprintf(json_key, sizeof(json_key), "%s_high", key);
	if (isinf(d->days_high))
		bx_out_str(out, json_key, NULL, BX_F_JSON_ONLY);
	else
		bx_out_double(out, json_key, d->days_high, 2, BX_F_JSON_ONLY);
}

/* A pace per day: text with its range and units, JSON bytes per day. */
static void print_growth(struct bx_out *out, const char *key, const struct bx_trend *t)
{
	double per_day = t->slope * SECONDS_PER_DAY;
	char text[160], est[40], low[40], high[40], json_key[64];
	const struct { double v; char *buf; } parts[] = {
		{ per_day, est }, { t->slope_low * SECONDS_PER_DAY, low },
		{ t->slope_high * SECONDS_PER_DAY, high },
	};

	for (size_t i = 0; i < 3; i++) {
		double v = parts[i].v;

		parts[i].buf[0] = v < 0 ? '-' : '\0';
		bx_pretty_size((uint64_t)fabs(v), 0, parts[i].buf + (v < 0), 39);
	}
	snprintf(text, sizeof(text), "%s/day (95%%: %s to %s)", est, low, high);
	bx_out_str(out, key, text, BX_F_TEXT_ONLY);
	bx_out_double(out, key, per_day, 0, BX_F_JSON_ONLY);
	snprintf(json_key, sizeof(json_key), "%s_low", key);
	bx_out_double(out, json_key, t->slope_low * SECONDS_PER_DAY, 0, BX_F_JSON_ONLY);
	snprintf(json_key, sizeof(json_key), "%s_high", key);
	bx_out_double(out, json_key, t->slope_high * SECONDS_PER_DAY, 0, BX_F_JSON_ONLY);
}

/* The state of one filesystem by its days left; UNKNOWN without a projection. */
static enum check_state fs_state(const struct bx_mon_projection *p, const struct check_opts *co)
{
	double soonest;

	if (!bx_mon_projection_ok(p))
		return CHECK_UNKNOWN;
	soonest = fmin(p->metadata_days.days, p->data_days.days);
	if (soonest < co->critical)
		return CHECK_CRITICAL;
	if (soonest < co->warning)
		return CHECK_WARNING;
	return CHECK_OK;
}

static void time_text(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static void print_projection(struct bx_out *out, const struct bx_mon_fs *fs,
			     const struct bx_mon_projection *p, enum check_state state)
{
	char heading[sizeof(fs->mountpoint) + sizeof(fs->label) + 64], reason[160];
	char first[48], last[48];
	const struct bx_mon_figures *l = &p->latest;

	snprintf(heading, sizeof(heading), "%s (%s%s%sfsid %s):", fs->mountpoint,
		 fs->label[0] ? "label " : "", fs->label, fs->label[0] ? ", " : "", fs->fsid_str);
	bx_out_obj_begin(out, NULL, BX_OBJ_LINES, heading);
	bx_out_str(out, "fsid", fs->fsid_str, BX_F_JSON_ONLY);
	bx_out_str(out, "label", fs->label, BX_F_JSON_ONLY);
	bx_out_str(out, "mountpoint", fs->mountpoint, BX_F_JSON_ONLY);
	bx_out_str(out, "status", check_names[state], 0);
	bx_mon_projection_reason(p, reason, sizeof(reason));
	if (reason[0])
		bx_out_str(out, "reason", reason, 0);
	bx_out_u64(out, "samples", p->nr_samples, 0);
	bx_out_s64(out, "window", p->window, BX_F_JSON_ONLY);
	if (p->have_latest) {
		time_text(p->first.time, first, sizeof(first));
		time_text(l->time, last, sizeof(last));
		bx_out_str(out, "first_sample", first, BX_F_TEXT_ONLY);
		bx_out_str(out, "last_sample", last, BX_F_TEXT_ONLY);
		bx_out_s64(out, "first_sample", p->first.time, BX_F_JSON_ONLY);
		bx_out_s64(out, "last_sample", l->time, BX_F_JSON_ONLY);
		bx_out_size(out, "metadata_used", l->metadata_used, 0, 0);
		bx_out_size(out, "metadata_room", l->metadata_room, 0, 0);
		bx_out_size(out, "global_reserve", l->global_reserve, 0, 0);
		bx_out_size(out, "metadata_room_after_data", l->metadata_room_after_data, 0, 0);
	}
	if (p->metadata.status == BX_TREND_OK) {
		print_growth(out, "metadata_growth_per_day", &p->metadata);
		print_days(out, "metadata_days_left", &p->metadata_days);
		bx_out_u64(out, "metadata_one_off_changes", p->metadata.nr_jumps, 0);
	}
	if (p->have_latest) {
		bx_out_size(out, "data_used", l->data_used, 0, 0);
		bx_out_size(out, "free_strict", l->free_strict, 0, 0);
	}
	if (p->data.status == BX_TREND_OK) {
		print_growth(out, "data_growth_per_day", &p->data);
		print_days(out, "data_days_left", &p->data_days);
		bx_out_u64(out, "data_one_off_changes", p->data.nr_jumps, 0);
	}
	bx_out_obj_end(out);
}

/* One filesystem's part of the status line: "tank: metadata 9.5 days left". */
static void status_part(const struct bx_mon_fs *fs, const struct bx_mon_projection *p,
			enum check_state state, char *buf, size_t len)
{
	const char *name = fs->label[0] ? fs->label : fs->mountpoint;
	char reason[160], meta[32], data[32];

	if (state == CHECK_UNKNOWN) {
		bx_mon_projection_reason(p, reason, sizeof(reason));
		snprintf(buf, len, "%s: %s", name, reason);
		return;
	}
	days_text(p->metadata_days.days, meta, sizeof(meta));
	days_text(p->data_days.days, data, sizeof(data));
	snprintf(buf, len, "%s: metadata %s days left, data %s", name, meta, data);
}

/* Nagios performance data of one filesystem: 'name metadata_days'=9.5;30;14;0 */
static void perfdata(const struct bx_mon_fs *fs, const struct bx_mon_projection *p,
		     const struct check_opts *co, char *buf, size_t len)
{
	const char *name = fs->label[0] ? fs->label : fs->mountpoint;
	const struct { const char *what; double days; bool ok; } items[] = {
		{ "metadata_days_left", p->metadata_days.days, p->metadata.status == BX_TREND_OK },
		{ "data_days_left", p->data_days.days, p->data.status == BX_TREND_OK },
	};
	size_t used = strlen(buf);

	for (size_t i = 0; i < 2 && used < len; i++) {
		if (!items[i].ok || isinf(items[i].days))
			continue;
		used += (size_t)snprintf(buf + used, len - used, " '%s %s'=%.2f;%g;%g;0", name,
					 items[i].what, items[i].days, co->warning, co->critical);
	}
}

/* The status line: the worst state, the filesystems in it, the performance data. */
static enum check_state print_status_line(struct bx_out *out, const struct selection *sel,
					  const struct bx_mon_projection *proj,
					  const struct check_opts *co)
{
	enum check_state worst = sel->nr ? CHECK_OK : CHECK_UNKNOWN;
	char line[4096] = "", perf[2048] = "", part[PATH_MAX + 256];
	size_t used;

	for (size_t i = 0; i < sel->nr; i++) {
		enum check_state st = fs_state(&proj[i], co);

		if (check_rank[st] > check_rank[worst])
			worst = st;
	}
	used = (size_t)snprintf(line, sizeof(line), "BTRFSX %s - ", check_names[worst]);
	if (!sel->nr)
		snprintf(line + used, sizeof(line) - used, "no filesystem in the history yet");
	for (size_t i = 0, n = 0; i < sel->nr && used < sizeof(line); i++) {
		enum check_state st = fs_state(&proj[i], co);

		if (worst != CHECK_OK && st != worst)
			continue;
		status_part(sel->fs[i], &proj[i], st, part, sizeof(part));
		used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", n++ ? "; " : "",
					 part);
	}
	for (size_t i = 0; i < sel->nr; i++)
		perfdata(sel->fs[i], &proj[i], co, perf, sizeof(perf));
	if (perf[0] && strlen(line) < sizeof(line) - 1)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " |%s", perf);
	bx_out_obj_begin(out, "check", BX_OBJ_INLINE, NULL);
	bx_out_str(out, "line", line, BX_F_NO_NAME);
	bx_out_str(out, "status", check_names[worst], BX_F_JSON_ONLY);
	bx_out_double(out, "warning_days", co->warning, 2, BX_F_JSON_ONLY);
	bx_out_double(out, "critical_days", co->critical, 2, BX_F_JSON_ONLY);
	bx_out_obj_end(out);
	return worst;
}

static int report_projections(struct bx_ctx *ctx, struct bx_mon_db *db, const char *db_path,
			      int nr_args, char **args, int64_t window, const struct check_opts *co)
{
	struct bx_mon_projection *proj = NULL;
	enum check_state state = CHECK_OK;
	struct selection sel;
	int64_t now;
	int ret;

	ret = monitor_now(&now);
	if (!ret)
		ret = select_fs(db, db_path, nr_args, args, &sel);
	if (ret)
		return ret;
	proj = calloc(sel.nr + 1, sizeof(*proj));
	if (!proj)
		ret = bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < sel.nr; i++)
		ret = bx_mon_project(db, sel.fs[i]->id, now, window, &proj[i]);
	if (!ret && co->enabled)
		state = print_status_line(ctx->out, &sel, proj, co);
	if (!ret && !sel.nr && !co->enabled)
		bx_warn("%s: no filesystem in the history yet", db_path);
	if (!ret) {
		bx_out_list_begin(ctx->out, "filesystems");
		for (size_t i = 0; i < sel.nr; i++)
			print_projection(ctx->out, sel.fs[i], &proj[i], fs_state(&proj[i], co));
		bx_out_list_end(ctx->out);
	}
	free(proj);
	selection_free(&sel);
	if (ret)
		return ret;
	return co->enabled ? BX_EXIT_WITH((int)state) : 0;
}

static int cmd_report(struct bx_ctx *ctx, int argc, char **argv)
{
	enum { OPT_CHECK = 256 };
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, DB_OPTION },
		{ "window", required_argument, NULL, WINDOW_OPTION },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "warning", required_argument, NULL, 'w' },
		{ "critical", required_argument, NULL, 'c' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct check_opts co = { false, DEFAULT_WARNING_DAYS, DEFAULT_CRITICAL_DAYS };
	bool thresholds = false;
	int64_t window = BX_MON_DEFAULT_WINDOW;
	char db_path[PATH_MAX], line[1200];
	struct bx_mon_db *db;
	int opt, ret;

	default_db(ctx, db_path, sizeof(db_path));
	while ((opt = bx_getopt(ctx, argc, argv, "w:c:h", longopts)) != -1) {
		if (shared_option(opt, db_path, sizeof(db_path), &window, &ret)) {
			if (ret)
				return ret;
			continue;
		}
		switch (opt) {
		case OPT_CHECK:
			co.enabled = true;
			break;
		case 'w':
		case 'c':
			ret = parse_days_option(opt == 'w' ? "--warning" : "--critical", optarg,
						opt == 'w' ? &co.warning : &co.critical);
			if (ret)
				return ret;
			thresholds = true;
			break;
		default:
			return bx_opt_result(opt);
		}
	}
	if (thresholds && !co.enabled)
		return bx_usage_error("--warning and --critical go with --check");
	if (co.critical > co.warning)
		return bx_usage_error("--critical (%g days) must not be more than --warning (%g)",
				      co.critical, co.warning);
	ret = bx_mon_db_open(db_path, false, &db);
	if (!ret) {
		ret = report_projections(ctx, db, db_path, argc - optind, argv + optind, window, &co);
		bx_mon_db_close(db);
	}
	if (ret >= 0 || !co.enabled)
		return ret;
	/* A plugin that cannot tell says UNKNOWN on its one line. */
	snprintf(line, sizeof(line), "BTRFSX UNKNOWN - %s", bx_error_message(ret));
	bx_out_obj_begin(ctx->out, "check", BX_OBJ_INLINE, NULL);
	bx_out_str(ctx->out, "line", line, BX_F_NO_NAME);
	bx_out_str(ctx->out, "status", check_names[CHECK_UNKNOWN], BX_F_JSON_ONLY);
	bx_out_obj_end(ctx->out);
	return BX_EXIT_WITH(CHECK_UNKNOWN);
}

/* ---- metrics ---- */

static const char *const metrics_usage[] = {
	"btrfsx monitor metrics [--db <path>] [--window <duration>] [--textfile <dir>] [<mountpoint|fsid>...]",
	"Export the newest samples and the projections as Prometheus metrics.",
	"",
	"The text exposition format, to standard output or, with --textfile, written",
	"atomically (temporary file, rename) as <dir>/btrfsx.prom for node_exporter's",
	"textfile collector. Filesystems (all, or those named) with a sample in the",
	"window: btrfsx_metadata_room_bytes, btrfsx_metadata_days_left,",
	"btrfsx_device_unallocated_bytes{devid,hint}, ... (man btrfsx-monitor).",
	"",
	"--db <path>            the history (default $BTRFSX_STATE_DIR/monitor.db)",
	"--window <duration>    how far back the trends are fitted (default 30d)",
	"--textfile <dir>       write <dir>/btrfsx.prom instead of standard output",
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

static int gather(struct bx_mon_db *db, const struct selection *sel, int64_t now, int64_t window,
		  struct exported *e)
{
	int ret = 0;

	memset(e, 0, sizeof(*e));
	e->latest = calloc(sel->nr + 1, sizeof(*e->latest));
	e->proj = calloc(sel->nr + 1, sizeof(*e->proj));
	e->inputs = calloc(sel->nr + 1, sizeof(*e->inputs));
	if (!e->latest || !e->proj || !e->inputs)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < sel->nr; i++) {
		ret = bx_mon_project(db, sel->fs[i]->id, now, window, &e->proj[e->nr]);
		if (ret || !e->proj[e->nr].have_latest)
			continue;
		ret = bx_mon_db_latest(db, sel->fs[i]->id, now, &e->latest[e->nr]);
		if (ret)
			break;
		e->inputs[e->nr] = (struct bx_metrics_input){ &e->latest[e->nr], &e->proj[e->nr] };
		e->nr++;
	}
	return ret;
}

static int export_metrics(struct bx_ctx *ctx, struct bx_mon_db *db, const char *db_path,
			  int nr_args, char **args, int64_t window, const char *textfile)
{
	struct bx_metrics m = { 0 };
	struct selection sel;
	struct exported e = { 0 };
	char path[PATH_MAX];
	int64_t now;
	int ret;

	ret = monitor_now(&now);
	if (!ret)
		ret = select_fs(db, db_path, nr_args, args, &sel);
	if (ret)
		return ret;
	ret = gather(db, &sel, now, window, &e);
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
	selection_free(&sel);
	return ret;
}

static int cmd_metrics(struct bx_ctx *ctx, int argc, char **argv)
{
	enum { OPT_TEXTFILE = 256 };
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, DB_OPTION },
		{ "window", required_argument, NULL, WINDOW_OPTION },
		{ "textfile", required_argument, NULL, OPT_TEXTFILE },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	int64_t window = BX_MON_DEFAULT_WINDOW;
	char db_path[PATH_MAX], textfile[PATH_MAX] = "";
	struct bx_mon_db *db;
	int opt, ret;

	default_db(ctx, db_path, sizeof(db_path));
	while ((opt = bx_getopt(ctx, argc, argv, "h", longopts)) != -1) {
		if (shared_option(opt, db_path, sizeof(db_path), &window, &ret)) {
			if (ret)
				return ret;
			continue;
		}
		switch (opt) {
		case OPT_TEXTFILE:
			ret = path_option("--textfile", optarg, textfile, sizeof(textfile));
			if (ret)
				return ret;
			break;
		default:
			return bx_opt_result(opt);
		}
	}
	ret = bx_mon_db_open(db_path, false, &db);
	if (ret)
		return ret;
	ret = export_metrics(ctx, db, db_path, argc - optind, argv + optind, window,
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
	{ "report", cmd_report, report_usage, NULL, BX_CMD_JSON },
	{ "metrics", cmd_metrics, metrics_usage, NULL, BX_CMD_JSON },
	{ NULL },
};

const struct bx_cmd_group bx_monitor_group = { monitor_usage, monitor_cmds };
