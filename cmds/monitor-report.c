/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx monitor report: where each filesystem of the history is heading,
 * for people, and with --check for monitoring systems (Nagios, Icinga,
 * Sensu), following the Monitoring Plugins' conventions: one status line
 * first, performance data in the standard form, the state as exit status,
 * UNKNOWN (3) for every usage or configuration error (the dispatcher does
 * that for BX_CMD_PLUGIN commands).
 *
 * No page without evidence: a filesystem still learning (monitor/
 * projection.h) is OK with what its samples show on the line; a projection
 * pages only when the latest end of its 95% range of days left is below a
 * threshold, that is when even the slowest pace the samples allow leaves
 * fewer days; what is already gone (no metadata room above the global
 * reserve, no strict free space) needs no projection and is CRITICAL at
 * once. A filesystem without a recent sample (unmounted, no longer
 * recorded) is only UNKNOWN when named, or when no filesystem has one (the
 * recorder is not running).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmds/monitor.h"
#include "common/error.h"
#include "common/units.h"

#define DEFAULT_WARNING_DAYS 30.0
#define DEFAULT_CRITICAL_DAYS 14.0
#define MAX_DAYS 36500.0
#define DEFAULT_MAX_AGE (30 * 60)
#define SECONDS_PER_DAY 86400.0

/* Nagios/Icinga plugin states, which are also the exit codes of report --check. */
enum check_state { CHECK_OK, CHECK_WARNING, CHECK_CRITICAL, CHECK_UNKNOWN };

static const char *const check_names[] = { "OK", "WARNING", "CRITICAL", "UNKNOWN" };
/* Which state the status line takes: UNKNOWN ranks above OK, below a real WARNING. */
static const int check_rank[] = { 0, 2, 3, 1 };

const char *const bx_monitor_report_usage[] = {
	"btrfsx monitor report [--db <path>] [--window <duration>] [--min-history <duration>] [--samples] [--check [-w <days>] [-c <days>] [--max-age <duration>]] [<mountpoint|fsid>...]",
	"Show how fast metadata and data grow and how many days they have left.",
	"",
	"Per filesystem (all in the history, or those named): the pace at which",
	"metadata and data use grow over the window, a robust fit (Theil-Sen, with",
	"a one-off balance, deletion or copy left out), and the days until the",
	"metadata room falls to the global reserve (metadata ENOSPC) and until the",
	"strict free space for data is gone, with a 95% range. Until the samples",
	"span --min-history the filesystem is learning: the growth seen is told",
	"(a burst when it would use the room within --warning days), not projected.",
	"",
	BX_MON_READING_HELP,
	"--samples                the window's samples too: per sample its time, the",
	"                         metadata left above the global reserve and the data",
	"                         free (what a chart of the trend draws)",
	"--check                  a monitoring plugin (Nagios, Icinga, Sensu): one",
	"                         status line first, exit 0 OK, 1 WARNING, 2 CRITICAL,",
	"                         3 UNKNOWN (also for every usage error)",
	"-w|--warning <days>      WARNING when even the latest end of the 95% range",
	"                         of days left is below this (default 30; 0 to 36500)",
	"-c|--critical <days>     CRITICAL likewise (default 14; at most --warning)",
	"--max-age <duration>     a filesystem without a sample this recent is stale",
	"                         (default 30m): UNKNOWN when named, or when all are",
	NULL
};

struct check_opts {
	bool enabled;
	double warning;
	double critical;
	int64_t max_age;
	bool named;			/* the filesystems were named on the command line */
};

/* What the report shows besides the projections. */
struct report_opts {
	bool samples;			/* --samples: the window's samples, per filesystem */
};

/* One filesystem's state, and what decided it. */
struct verdict {
	enum check_state state;
	bool stale;			/* no sample within max_age */
	int64_t age;			/* seconds since the newest sample; 0 when none */
	bool metadata_gone;		/* no metadata room above the global reserve now */
	bool data_gone;			/* data can take nothing more now */
};

/* ---- options ---- */

static int parse_days_option(const char *option, const char *arg, double *days)
{
	char *end;

	errno = 0;
	*days = strtod(arg, &end);
	if (errno || end == arg || *end || !(*days >= 0) || *days > MAX_DAYS)
		return bx_usage_error("%s: '%s' is not a number of days from 0 to %.0f", option,
				      arg, MAX_DAYS);
	return 0;
}

/* ---- the verdict ---- */

static struct verdict judge(const struct bx_mon_projection *p, const struct check_opts *co)
{
	struct verdict v = { CHECK_OK };
	double latest;

	if (p->have_latest && p->now > p->latest.time)
		v.age = p->now - p->latest.time;
	v.stale = !p->have_latest || v.age > co->max_age;
	if (v.stale) {
		v.state = co->named ? CHECK_UNKNOWN : CHECK_OK;
		return v;
	}
	v.metadata_gone = p->metadata_left == 0;
	v.data_gone = p->data_left == 0;
	if (v.metadata_gone || v.data_gone) {
		v.state = CHECK_CRITICAL;
		return v;
	}
	if (!bx_mon_projection_ok(p))
		return v;	/* learning, or no fit: nothing to page on */
	latest = fmin(p->metadata_days.days_high, p->data_days.days_high);
	if (latest < co->critical)
		v.state = CHECK_CRITICAL;
	else if (latest < co->warning)
		v.state = CHECK_WARNING;
	return v;
}

/* ---- text ---- */

/* A day count for text: "12.3", "never" for one that never comes. */
static void days_text(double days, char *buf, size_t len)
{
	if (isinf(days))
		snprintf(buf, len, "never");
	else
		snprintf(buf, len, "%.1f", days);
}

/*
 * "9.5@what (95%: 8.1 to 11.2)", "never (not growing)", "never (not growing;
 * 95%: 300.0 to never)".
 */
static void days_range_text(const struct bx_trend_days *d, const char *what, char *buf,
			    size_t len)
{
	char est[32], low[32], high[32];

	days_text(d->days, est, sizeof(est));
	days_text(d->days_low, low, sizeof(low));
	days_text(d->days_high, high, sizeof(high));
	if (d->exhausts)
		snprintf(buf, len, "%s%s (95%%: %s to %s)", est, what, low, high);
	else if (isinf(d->days_low))
		snprintf(buf, len, "never (not growing)");
	else
		snprintf(buf, len, "never (not growing; 95%%: %s to %s)", low, high);
}

/* A name for the status line and performance data: the label, else the mount point. */
static const char *fs_name(const struct bx_mon_fs *fs)
{
	return fs->label[0] ? fs->label : fs->mountpoint;
}

static void time_text(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* One filesystem's part of the status line: "tank: metadata 9.5 days left (95%: ...)". */
static void status_part(const struct bx_mon_fs *fs, const struct bx_mon_projection *p,
			const struct verdict *v, char *buf, size_t len)
{
	char reason[512], meta[96], data[96], age[32];

	bx_mon_projection_reason(p, reason, sizeof(reason));
	if (v->stale && p->have_latest) {
		bx_format_duration(v->age, age, sizeof(age));
		snprintf(buf, len, "%s: no sample for %s (unmounted, or not recorded?)",
			 fs_name(fs), age);
	} else if (v->metadata_gone || v->data_gone) {
		snprintf(buf, len, "%s: %s%s%s now", fs_name(fs),
			 v->metadata_gone ? "the metadata room is down to the global reserve" : "",
			 v->metadata_gone && v->data_gone ? ", and " : "",
			 v->data_gone ? "no free space is left for data" : "");
	} else if (reason[0]) {
		snprintf(buf, len, "%s: %s", fs_name(fs), reason);
	} else {
		days_range_text(&p->metadata_days, " days left", meta, sizeof(meta));
		days_range_text(&p->data_days, "", data, sizeof(data));
		snprintf(buf, len, "%s: metadata %s, data %s", fs_name(fs), meta, data);
	}
}

/* One line, whatever a label or path holds. */
static void one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ')
			*s = '?';
}

/* Appends one performance datum: 'label'=value[unit];warn;crit;0 */
static void perf_item(char *buf, size_t len, const char *name, const char *what, double value,
		      const char *unit, const char *thresholds)
{
	size_t used = strlen(buf);
	char label[300];

	snprintf(label, sizeof(label), "%s %s", name, what);
	/* The standard form allows neither a quote nor '=' in a label. */
	for (char *c = label; *c; c++)
		if (*c == '\'' || *c == '=' || (unsigned char)*c < ' ')
			*c = '_';
	if (used < len)
		snprintf(buf + used, len - used, " '%s'=%.*f%s;%s;0", label,
			 strcmp(unit, "B") ? 2 : 0, value, unit, thresholds);
}

/*
 * Performance data of one filesystem: the room left in bytes, the days left
 * and the latest end of their range, which the thresholds apply to (a
 * range "30:" alerts below 30).
 */
static void perfdata(const struct bx_mon_fs *fs, const struct bx_mon_projection *p,
		     const struct check_opts *co, char *buf, size_t len)
{
	const struct { const char *what; const struct bx_trend_days *d; } items[] = {
		{ "metadata_days_left", &p->metadata_days }, { "data_days_left", &p->data_days },
	};
	char thresholds[64], upper[64];

	if (!p->have_latest)
		return;
	perf_item(buf, len, fs_name(fs), "metadata_left", (double)p->metadata_left, "B", ";");
	perf_item(buf, len, fs_name(fs), "data_left", (double)p->data_left, "B", ";");
	if (!bx_mon_projection_ok(p))
		return;
	snprintf(thresholds, sizeof(thresholds), "%g:;%g:", co->warning, co->critical);
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		if (!isinf(items[i].d->days))
			perf_item(buf, len, fs_name(fs), items[i].what, items[i].d->days, "", ";");
		snprintf(upper, sizeof(upper), "%s_upper", items[i].what);
		if (!isinf(items[i].d->days_high))
			perf_item(buf, len, fs_name(fs), upper, items[i].d->days_high, "",
				  thresholds);
	}
}

/* ---- the status line ---- */

static enum check_state worst_state(const struct verdict *v, size_t nr)
{
	enum check_state worst = CHECK_OK;
	bool any_fresh = false;

	for (size_t i = 0; i < nr; i++) {
		if (check_rank[v[i].state] > check_rank[worst])
			worst = v[i].state;
		any_fresh = any_fresh || !v[i].stale;
	}
	/* Nothing recent at all: the recorder is not running, which is not OK. */
	if (!any_fresh && check_rank[CHECK_UNKNOWN] > check_rank[worst])
		worst = CHECK_UNKNOWN;
	return worst;
}

/* The status line: the worst state, the filesystems in it, the performance data. */
static enum check_state print_status_line(struct bx_out *out,
					  const struct bx_monitor_selection *sel,
					  const struct bx_mon_projection *proj,
					  const struct verdict *v, const struct check_opts *co)
{
	enum check_state worst = worst_state(v, sel->nr);
	char line[8192] = "", perf[4096] = "", part[PATH_MAX + 1024], max_age[32];
	size_t used;

	used = (size_t)snprintf(line, sizeof(line), "BTRFSX %s - ", check_names[worst]);
	bx_format_duration(co->max_age, max_age, sizeof(max_age));
	if (!sel->nr)
		snprintf(line + used, sizeof(line) - used, "no filesystem in the history yet");
	for (size_t i = 0, n = 0; i < sel->nr && used < sizeof(line); i++) {
		/* the filesystems in the worst state; all of them when all are well */
		if (worst != CHECK_OK && v[i].state != worst &&
		    !(worst == CHECK_UNKNOWN && v[i].stale))
			continue;
		status_part(sel->fs[i], &proj[i], &v[i], part, sizeof(part));
		used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", n++ ? "; " : "",
					 part);
	}
	for (size_t i = 0; i < sel->nr; i++)
		if (!v[i].stale)
			perfdata(sel->fs[i], &proj[i], co, perf, sizeof(perf));
	one_line(line);
	one_line(perf);
	if (perf[0] && strlen(line) < sizeof(line) - 1)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " |%s", perf);
	bx_out_obj_begin(out, "check", BX_OBJ_INLINE, NULL);
	bx_out_str(out, "line", line, BX_F_NO_NAME);
	bx_out_str(out, "status", check_names[worst], BX_F_JSON_ONLY);
	bx_out_double(out, "warning_days", co->warning, 2, BX_F_JSON_ONLY);
	bx_out_double(out, "critical_days", co->critical, 2, BX_F_JSON_ONLY);
	bx_out_s64(out, "max_age", co->max_age, BX_F_JSON_ONLY);
	bx_out_obj_end(out);
	return worst;
}

/* ---- the report ---- */

/* Days in JSON (null when they never come) and text, with the 95% range. */
static void print_days(struct bx_out *out, const char *key, const struct bx_trend_days *d)
{
	const struct { const char *suffix; double days; } ends[] = {
		{ "", d->days }, { "_low", d->days_low }, { "_high", d->days_high },
	};
	char text[160], json_key[64];

	days_range_text(d, "", text, sizeof(text));
	bx_out_str(out, key, text, BX_F_TEXT_ONLY);
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		snprintf(json_key, sizeof(json_key), "%s%s", key, ends[i].suffix);
		if (isinf(ends[i].days))
			bx_out_str(out, json_key, NULL, BX_F_JSON_ONLY);
		else
			bx_out_double(out, json_key, ends[i].days, 2, BX_F_JSON_ONLY);
	}
}

/* A signed byte count for text: "-1.50MiB". */
static void signed_size(double v, char *buf, size_t len)
{
	buf[0] = v < 0 ? '-' : '\0';
	bx_pretty_size((uint64_t)fabs(v), 0, buf + (v < 0), len - 1);
}

/* A pace per day: text with its range and units, JSON bytes per day. */
static void print_growth(struct bx_out *out, const char *key, const struct bx_trend *t)
{
	const struct { const char *suffix; double per_day; } ends[] = {
		{ "", t->slope * SECONDS_PER_DAY }, { "_low", t->slope_low * SECONDS_PER_DAY },
		{ "_high", t->slope_high * SECONDS_PER_DAY },
	};
	char text[160], est[40], low[40], high[40], json_key[64];

	signed_size(ends[0].per_day, est, sizeof(est));
	signed_size(ends[1].per_day, low, sizeof(low));
	signed_size(ends[2].per_day, high, sizeof(high));
	snprintf(text, sizeof(text), "%s/day (95%%: %s to %s)", est, low, high);
	bx_out_str(out, key, text, BX_F_TEXT_ONLY);
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		snprintf(json_key, sizeof(json_key), "%s%s", key, ends[i].suffix);
		bx_out_double(out, json_key, ends[i].per_day, 0, BX_F_JSON_ONLY);
	}
}

/* The pace, the days left and the one-off changes of one use ("metadata", "data"). */
static void print_fit(struct bx_out *out, const char *use, const struct bx_trend *t,
		      const struct bx_trend_days *d)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_growth_per_day", use);
	print_growth(out, key, t);
	snprintf(key, sizeof(key), "%s_days_left", use);
	print_days(out, key, d);
	snprintf(key, sizeof(key), "%s_one_off_changes", use);
	bx_out_u64(out, key, t->nr_jumps, 0);
}

/* What a learning window shows: the growth seen, and whether it is a burst. */
static void print_seen(struct bx_out *out, const struct bx_mon_projection *p)
{
	char text[40];

	signed_size(p->metadata_seen.growth, text, sizeof(text));
	bx_out_str(out, "metadata_growth_seen", text, BX_F_TEXT_ONLY);
	bx_out_double(out, "metadata_growth_seen", p->metadata_seen.growth, 0, BX_F_JSON_ONLY);
	signed_size(p->data_seen.growth, text, sizeof(text));
	bx_out_str(out, "data_growth_seen", text, BX_F_TEXT_ONLY);
	bx_out_double(out, "data_growth_seen", p->data_seen.growth, 0, BX_F_JSON_ONLY);
	bx_out_bool(out, "burst", p->metadata_seen.burst || p->data_seen.burst, 0);
}

/* How much history there is: samples, their span, the learning span, the newest's age. */
static void print_history(struct bx_out *out, const struct bx_mon_projection *p,
			  const struct verdict *v)
{
	char first[48], last[48], text[32];

	bx_out_u64(out, "samples", p->nr_samples, 0);
	bx_out_s64(out, "window", p->window, BX_F_JSON_ONLY);
	bx_out_s64(out, "min_history", p->min_history, BX_F_JSON_ONLY);
	bx_out_bool(out, "learning", p->learning, 0);
	bx_out_bool(out, "stale", v->stale, 0);
	if (!p->have_latest)
		return;
	time_text(p->first.time, first, sizeof(first));
	time_text(p->latest.time, last, sizeof(last));
	bx_out_str(out, "first_sample", first, BX_F_TEXT_ONLY);
	bx_out_str(out, "last_sample", last, BX_F_TEXT_ONLY);
	bx_out_s64(out, "first_sample", p->first.time, BX_F_JSON_ONLY);
	bx_out_s64(out, "last_sample", p->latest.time, BX_F_JSON_ONLY);
	bx_format_duration(p->span, text, sizeof(text));
	bx_out_str(out, "history_span", text, BX_F_TEXT_ONLY);
	bx_out_s64(out, "history_span", p->span, BX_F_JSON_ONLY);
	bx_format_duration(v->age, text, sizeof(text));
	bx_out_str(out, "sample_age", text, BX_F_TEXT_ONLY);
	bx_out_s64(out, "sample_age", v->age, BX_F_JSON_ONLY);
}

/*
 * The samples the projection was made from (those of the window), each with
 * what the days left count down: the metadata room above the global reserve
 * and the data free space (free_estimated), as the projection takes them.
 */
static int print_samples(struct bx_out *out, struct bx_mon_db *db, const struct bx_mon_fs *fs,
			 const struct bx_mon_projection *p)
{
	struct bx_mon_figures *figs = NULL;
	char when[48];
	size_t n = 0;
	int ret;

	ret = bx_mon_db_figures(db, fs->id, p->now - p->window, p->now, &figs, &n);
	if (ret)
		return ret;
	bx_out_list_begin(out, "series");
	for (size_t i = 0; i < n; i++) {
		const struct bx_mon_figures *f = &figs[i];

		time_text(f->time, when, sizeof(when));
		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, when);
		bx_out_s64(out, "time", f->time, BX_F_JSON_ONLY);
		bx_out_size(out, "metadata_left", bx_mon_metadata_left(f), 0, 0);
		bx_out_size(out, "data_left", f->free_estimated, 0, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
	free(figs);
	return 0;
}

static int print_projection(struct bx_out *out, struct bx_mon_db *db, const struct bx_mon_fs *fs,
			    const struct bx_mon_projection *p, const struct verdict *v,
			    const struct report_opts *ro)
{
	int ret = 0;
	char heading[sizeof(fs->mountpoint) + sizeof(fs->label) + 64], reason[512];
	const struct bx_mon_figures *l = &p->latest;
	bool ok = bx_mon_projection_ok(p);

	snprintf(heading, sizeof(heading), "%s (%s%s%sfsid %s):", fs->mountpoint,
		 fs->label[0] ? "label " : "", fs->label, fs->label[0] ? ", " : "", fs->fsid_str);
	bx_out_obj_begin(out, NULL, BX_OBJ_LINES, heading);
	bx_out_str(out, "fsid", fs->fsid_str, BX_F_JSON_ONLY);
	bx_out_str(out, "label", fs->label, BX_F_JSON_ONLY);
	bx_out_str(out, "mountpoint", fs->mountpoint, BX_F_JSON_ONLY);
	bx_out_str(out, "status", check_names[v->state], 0);
	bx_mon_projection_reason(p, reason, sizeof(reason));
	if (reason[0])
		bx_out_str(out, "reason", reason, 0);
	print_history(out, p, v);
	if (p->have_latest) {
		bx_out_size(out, "metadata_used", l->metadata_used, 0, 0);
		bx_out_size(out, "metadata_room", l->metadata_room, 0, 0);
		bx_out_size(out, "global_reserve", l->global_reserve, 0, 0);
		bx_out_size(out, "metadata_room_after_data", l->metadata_room_after_data, 0, 0);
		bx_out_size(out, "metadata_left", p->metadata_left, 0, 0);
	}
	if (ok)
		print_fit(out, "metadata", &p->metadata, &p->metadata_days);
	if (p->have_latest) {
		bx_out_size(out, "data_used", l->data_used, 0, 0);
		bx_out_size(out, "free_strict", l->free_strict, 0, 0);
		bx_out_size(out, "data_left", p->data_left, 0, 0);
	}
	if (ok)
		print_fit(out, "data", &p->data, &p->data_days);
	if (p->learning && p->have_latest)
		print_seen(out, p);
	if (ro->samples)
		ret = print_samples(out, db, fs, p);
	bx_out_obj_end(out);
	return ret;
}

static int report_projections(struct bx_ctx *ctx, struct bx_mon_db *db,
			      const struct bx_monitor_reading *r, int nr_args, char **args,
			      struct check_opts *co, const struct report_opts *ro)
{
	struct bx_mon_projection *proj = NULL;
	enum check_state state = CHECK_OK;
	struct bx_monitor_selection sel;
	struct verdict *v = NULL;
	int ret;

	ret = bx_monitor_select(db, r->db, nr_args, args, &sel);
	if (ret)
		return ret;
	co->named = sel.named;
	proj = calloc(sel.nr + 1, sizeof(*proj));
	v = calloc(sel.nr + 1, sizeof(*v));
	if (!proj || !v)
		ret = bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < sel.nr; i++) {
		ret = bx_mon_project(db, sel.fs[i]->id, &r->proj, &proj[i]);
		if (!ret)
			v[i] = judge(&proj[i], co);
	}
	if (!ret && co->enabled)
		state = print_status_line(ctx->out, &sel, proj, v, co);
	if (!ret && !sel.nr && !co->enabled)
		bx_warn("%s: no filesystem in the history yet", r->db);
	if (!ret) {
		bx_out_list_begin(ctx->out, "filesystems");
		for (size_t i = 0; !ret && i < sel.nr; i++)
			ret = print_projection(ctx->out, db, sel.fs[i], &proj[i], &v[i], ro);
		bx_out_list_end(ctx->out);
	}
	free(proj);
	free(v);
	bx_monitor_selection_free(&sel);
	if (ret)
		return ret;
	return co->enabled ? BX_EXIT_WITH((int)state) : 0;
}

/* The options of the plugin, refused without --check and when they contradict. */
static int check_options_done(const struct check_opts *co, bool thresholds)
{
	if (thresholds && !co->enabled)
		return bx_usage_error("--warning, --critical and --max-age go with --check");
	if (co->critical > co->warning)
		return bx_usage_error("--critical (%g days) must not be more than --warning "
				      "(%g days)", co->critical, co->warning);
	return 0;
}

int bx_cmd_monitor_report(struct bx_ctx *ctx, int argc, char **argv)
{
	enum { OPT_CHECK = 256, OPT_MAX_AGE, OPT_SAMPLES };
	static const struct option longopts[] = {
		BX_MON_READING_LONGOPTS,
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "warning", required_argument, NULL, 'w' },
		{ "critical", required_argument, NULL, 'c' },
		{ "max-age", required_argument, NULL, OPT_MAX_AGE },
		{ "samples", no_argument, NULL, OPT_SAMPLES },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct check_opts co = { false, DEFAULT_WARNING_DAYS, DEFAULT_CRITICAL_DAYS,
				 DEFAULT_MAX_AGE, false };
	struct report_opts ro = { false };
	struct bx_monitor_reading r;
	bool check_options = false;
	struct bx_mon_db *db;
	int opt, ret;

	bx_monitor_reading_init(ctx, &r);
	while ((opt = bx_getopt(ctx, argc, argv, "w:c:h", longopts)) != -1) {
		if (bx_monitor_reading_option(opt, &r, &ret)) {
			if (ret)
				return ret;
			continue;
		}
		switch (opt) {
		case OPT_CHECK:
			co.enabled = true;
			break;
		case OPT_SAMPLES:
			ro.samples = true;
			break;
		case 'w':
		case 'c':
			ret = parse_days_option(opt == 'w' ? "--warning" : "--critical", optarg,
						opt == 'w' ? &co.warning : &co.critical);
			if (ret)
				return ret;
			check_options = true;
			break;
		case OPT_MAX_AGE:
			if (bx_parse_duration(optarg, &co.max_age))
				return bx_usage_error("--max-age: '%s' is not a duration from 1s to "
						      "100 years (a number with s, m, h, d or w)",
						      optarg);
			check_options = true;
			break;
		default:
			return bx_opt_result(opt);
		}
	}
	ret = check_options_done(&co, check_options);
	if (!ret)
		ret = bx_monitor_reading_done(&r);
	if (ret)
		return ret;
	/* While learning, growth that would use the room before a warning is a burst. */
	r.proj.burst_days = co.warning;
	ret = bx_mon_db_open(r.db, BX_MON_READ, &db);
	if (ret)
		return ret;
	ret = report_projections(ctx, db, &r, argc - optind, argv + optind, &co, &ro);
	bx_mon_db_close(db);
	return ret;
}
