/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx maintain: plan and run the maintain engine (maintain/maintain.h)
 * on a mounted filesystem, by its policy (maintain/policy.h) and the
 * monitor's history of its metadata growth.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "cmds/commands.h"
#include "cmds/monitor.h"
#include "cmds/move-progress.h"
#include "common/error.h"
#include "common/units.h"
#include "format/profiles.h"
#include "maintain/maintain.h"
#include "model/placement.h"
#include "monitor/history.h"
#include "monitor/projection.h"

static const char *const maintain_usage[] = {
	"btrfsx maintain <command> [<args>]",
	"Keep metadata room and placement by moving the fewest bytes.",
	NULL
};

#define POLICY_HELP \
	"--policy <file>      the policy file (default $BTRFSX_CONFIG_DIR/maintain.conf,", \
	"                     /etc/btrfsx/maintain.conf; none there: the defaults)", \
	"--db <path>          the monitor's history, for the pace of metadata growth", \
	"                     (default $BTRFSX_STATE_DIR/monitor.db; none: no pace)"

#define STATUS_HELP \
	"Exit status: 0 the target is met (or will be, for a plan) or nothing is", \
	"to do; 1 failure or refusal; 2 usage error or a bad policy file; 5 moving", \
	"data cannot meet the target (the reason says what would: a device of at", \
	"least a size); 6 the run stopped before the target (time window, busy", \
	"devices, SIGTERM): the next run goes on."

static const char *const plan_usage[] = {
	"btrfsx maintain plan [--policy <file>] [--db <path>] <mountpoint>",
	"Say what 'maintain run' would do now, and why; change nothing.",
	"",
	"Each action is a chunk to move with its reason (metadata-room: the room",
	"is below the target; empty: an empty or nearly empty block group holds",
	"device space metadata needs; misplaced: the allocation hints want it",
	"elsewhere), its used bytes and the time at the measured copy rate, and",
	"the state after all of them as the relocation model predicts it. Reads",
	"only: writes nothing, takes no lock; says what a real run would be",
	"refused for.",
	"",
	POLICY_HELP,
	"",
	STATUS_HELP,
	NULL
};

static const char *const run_usage[] = {
	"btrfsx maintain run [--dry-run] [--policy <file>] [--budget <MiB/s>] [--window <HH:MM-HH:MM>] [--textfile <dir>] [--db <path>] [--progress|--no-progress] [--cancel-on-eof] <mountpoint>",
	"Move the chunks 'maintain plan' lists, one at a time, until the target is met.",
	"",
	"Each chunk moves by a kernel balance of that chunk alone. Before each one",
	"the filesystem is read again; the run stops as soon as the target is met.",
	"It keeps to the I/O budget, moves only inside the time window and pauses",
	"while the devices are busy. SIGTERM or SIGINT ends the chunk moving now",
	"and stops (a second one cancels that chunk); the next run goes on.",
	"Refused: a read-only or degraded filesystem, a balance, replace, resize,",
	"device add or remove, scrub, 'balance misplaced' or another maintain run.",
	"",
	"--dry-run            plan only, as 'maintain plan' (writes nothing)",
	"--budget <MiB/s>     move at most this much used data a second on average",
	"                     (default: the policy's, 100; 0: no limit)",
	"--window <HH:MM-HH:MM> move chunks only inside this time window (local time;",
	"                     over midnight as 22:00-06:00; default: the policy's)",
	"--textfile <dir>     write the run's Prometheus metrics to",
	"                     <dir>/btrfsx-maintain-<fsid>.prom (node_exporter's",
	"                     textfile directory, as 'monitor metrics --textfile')",
	"--progress           show chunks, bytes, rate and ETA on stderr (default on a",
	"                     terminal; with JSON output one JSON object a line)",
	"--no-progress        never",
	"--cancel-on-eof      the end of standard input stops as SIGTERM does (for a",
	"                     program that cannot send a signal)",
	POLICY_HELP,
	"",
	STATUS_HELP,
	NULL
};

static volatile int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	if (stop_requested < 2)
		stop_requested++;
}

struct maintain_args {
	char policy_file[PATH_MAX];
	bool policy_given;
	char db[PATH_MAX];
	bool db_given;
	char textfile[PATH_MAX];
	bool dry_run;
	bool have_budget;
	double budget;
	bool have_window;
	int window_start, window_end;
	struct bx_progress_choice progress;
	bool cancel_on_eof;
};

static int parse_args(struct bx_ctx *ctx, int argc, char **argv, bool run,
		      struct maintain_args *a)
{
	enum { OPT_POLICY = 0x200, OPT_DB, OPT_DRY_RUN, OPT_BUDGET, OPT_WINDOW, OPT_TEXTFILE,
	       OPT_CANCEL_ON_EOF };
	static const struct option plan_opts[] = {
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "db", required_argument, NULL, OPT_DB },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	static const struct option run_opts[] = {
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "db", required_argument, NULL, OPT_DB },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "budget", required_argument, NULL, OPT_BUDGET },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "textfile", required_argument, NULL, OPT_TEXTFILE },
		{ "cancel-on-eof", no_argument, NULL, OPT_CANCEL_ON_EOF },
		BX_PROGRESS_LONGOPTS,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	int opt, ret = 0;

	while ((opt = bx_getopt(ctx, argc, argv, "h", run ? run_opts : plan_opts)) != -1) {
		char *end;

		if (run && bx_progress_option(opt, &a->progress))
			continue;
		switch (opt) {
		case OPT_POLICY:
			ret = bx_monitor_path_option("--policy", optarg, a->policy_file,
						     sizeof(a->policy_file));
			a->policy_given = true;
			break;
		case OPT_DB:
			ret = bx_monitor_path_option("--db", optarg, a->db, sizeof(a->db));
			a->db_given = true;
			break;
		case OPT_TEXTFILE:
			ret = bx_monitor_path_option("--textfile", optarg, a->textfile,
						     sizeof(a->textfile));
			break;
		case OPT_DRY_RUN:
			a->dry_run = true;
			break;
		case OPT_CANCEL_ON_EOF:
			a->cancel_on_eof = true;
			break;
		case OPT_BUDGET:
			errno = 0;
			a->budget = strtod(optarg, &end);
			if (end == optarg || *end || errno || !isfinite(a->budget) || a->budget < 0 ||
			    a->budget > 1e6 || optarg[0] < '0' || optarg[0] > '9')
				return bx_usage_error("--budget: '%s' is not MiB/s (e.g. 50; 0: no "
						      "limit)", optarg);
			a->have_budget = true;
			break;
		case OPT_WINDOW:
			if (bx_maintain_parse_window(optarg, &a->window_start, &a->window_end))
				return bx_usage_error("--window: %s", bx_error_message(-EINVAL));
			a->have_window = true;
			break;
		default:
			return bx_opt_result(opt);
		}
		if (ret)
			return ret;
	}
	ret = bx_progress_check(&a->progress);
	if (ret)
		return ret;
	return bx_check_argc(argc - optind, 1, 1);
}

/*
 * The pace of metadata growth (bytes a day) from the monitor's history
 * into *@pace, -1 when it has none. A history named with --db that cannot
 * be read is an error, as a --policy file is; the default one may be
 * missing (no monitor runs).
 */
static int history_pace(const struct bx_ctx *ctx, const struct maintain_args *a,
			const char *mountpoint, double *pace)
{
	struct bx_mon_db *db = NULL;
	struct bx_mon_fs *list = NULL, *fs = NULL;
	struct bx_mon_projection proj;
	char path[PATH_MAX];
	size_t nr = 0;
	int64_t t;
	int ret;

	*pace = -1;
	if (a->db_given)
		snprintf(path, sizeof(path), "%s", a->db);
	else
		bx_monitor_default_db(ctx, path, sizeof(path));
	ret = bx_mon_db_open(path, BX_MON_READ, &db);
	if (ret) {
		if (a->db_given)
			return bx_error_wrap(ret, "--db");
		bx_error_clear();
		return 0;
	}
	if (!bx_mon_db_filesystems(db, &list, &nr) &&
	    !bx_mon_find_fs(list, nr, mountpoint, path, &fs) && !bx_monitor_now(&t)) {
		struct bx_mon_project_opts po = bx_mon_project_defaults(t);

		if (!bx_mon_project(db, fs->id, &po, &proj) && proj.metadata.status == BX_TREND_OK)
			*pace = proj.metadata.slope > 0 ? proj.metadata.slope * 86400 : 0;
	}
	/* A filesystem the history has not seen, or too little of it: no pace. */
	bx_error_clear();
	free(list);
	bx_mon_db_close(db);
	return 0;
}

/* The policy of the filesystem at @path: defaults, the file, then the options. */
static int load_policy(const struct bx_ctx *ctx, const struct maintain_args *a, const char *path,
		       struct bx_maintain_policy *p, char *file, size_t len, bool *found)
{
	int ret;

	if (a->policy_given)
		snprintf(file, len, "%s", a->policy_file);
	else
		snprintf(file, len, "%s/%s", ctx->config_dir, BX_MAINTAIN_CONF);
	ret = bx_maintain_policy_of(path, file, a->policy_given, p, found);
	if (ret == -EINVAL)
		return bx_usage_error("%s", bx_error_message(ret));
	if (ret)
		return ret;
	if (a->have_budget)
		p->budget = a->budget;
	if (a->have_window) {
		p->window_start = a->window_start;
		p->window_end = a->window_end;
	}
	return 0;
}

/* ---- the output ---- */

static void out_days(struct bx_out *out, const char *key, double days)
{
	if (days < 0 || isinf(days) || isnan(days))
		bx_out_str(out, key, days < 0 ? "unknown (no history)" : "not consumed",
			   BX_F_TEXT_ONLY);
	else
		bx_out_double(out, key, days, 1, BX_F_TEXT_ONLY);
	if (days < 0 || isinf(days) || isnan(days))
		bx_out_str(out, key, NULL, BX_F_JSON_ONLY);
	else
		bx_out_double(out, key, days, 1, BX_F_JSON_ONLY);
}

static void out_state(struct bx_out *out, const char *key, const char *heading,
		      const struct bx_maintain_state *st)
{
	bx_out_obj_begin(out, key, BX_OBJ_LINES, heading);
	bx_out_size(out, "metadata_room", st->metadata_room, 0, 0);
	bx_out_size(out, "metadata_used", st->metadata_used, 0, 0);
	bx_out_size(out, "unallocated", st->unallocated, 0, 0);
	out_days(out, "days_left", st->days_left);
	bx_out_u64(out, "misplaced", st->misplaced, 0);
	bx_out_obj_end(out);
}

static void out_seconds(struct bx_out *out, const char *key, double s)
{
	if (s < 0)
		bx_out_str(out, key, s < 0 ? NULL : "", BX_F_JSON_ONLY);
	else
		bx_out_double(out, key, s, 1, BX_F_JSON_ONLY);
	if (s < 0)
		bx_out_str(out, key, "unknown", BX_F_TEXT_ONLY);
	else
		bx_out_double(out, key, s, 1, BX_F_TEXT_ONLY);
}

static void out_chunk(struct bx_out *out, enum bx_maintain_reason reason, uint64_t logical,
		      uint64_t type, uint64_t length, uint64_t used, double seconds)
{
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_str(out, "reason", bx_maintain_reason_name(reason), 0);
	bx_out_u64(out, "logical", logical, 0);
	bx_out_str(out, "type", bx_place_type_name(type), 0);
	bx_out_str(out, "profile", bx_profile_name(type), 0);
	bx_out_size(out, "length", length, 0, 0);
	bx_out_size(out, "used", used, 0, 0);
	out_seconds(out, "seconds", seconds);
	bx_out_obj_end(out);
}

static void out_policy(struct bx_out *out, const struct bx_maintain_policy *p, const char *file,
		       bool found)
{
	char window[32] = "always";

	if (p->window_start >= 0)
		snprintf(window, sizeof(window), "%02d:%02d-%02d:%02d", p->window_start / 60,
			 p->window_start % 60, p->window_end / 60, p->window_end % 60);
	bx_out_obj_begin(out, "policy", BX_OBJ_JSON_ONLY, NULL);
	bx_out_str(out, "file", file, 0);
	bx_out_bool(out, "section", found, 0);
	bx_out_bool(out, "metadata_room_auto", p->room_auto, 0);
	bx_out_u64(out, "metadata_room", p->room_bytes, 0);
	bx_out_double(out, "metadata_room_days", p->room_days, 1, 0);
	bx_out_str(out, "placement", p->placement == BX_MAINTAIN_PLACEMENT_ON ? "on" :
		   p->placement == BX_MAINTAIN_PLACEMENT_OFF ? "off" : "forbidden-only", 0);
	bx_out_double(out, "budget", p->budget, 1, 0);
	bx_out_str(out, "quiet_hours", window, 0);
	bx_out_double(out, "busy_pressure", p->busy_pressure, 1, 0);
	bx_out_double(out, "busy_device", p->busy_device, 1, 0);
	bx_out_obj_end(out);
}

static void print_result(struct bx_out *out, const struct bx_maintain_result *res,
			 const char *mode, const struct bx_maintain_policy *policy,
			 const char *file, bool found, double pace, const char *textfile)
{
	const struct bx_maintain_plan *p = &res->plan;
	bool ran = !strcmp(mode, "run");

	bx_out_obj_begin(out, "maintain", BX_OBJ_LINES, NULL);
	bx_out_uuid(out, "fsid", res->fsid, 0);
	bx_out_str(out, "mountpoint", res->path, 0);
	bx_out_str(out, "mode", mode, 0);
	bx_out_str(out, "status", bx_maintain_status_name(res->status), 0);
	bx_out_str(out, "reason", res->reason[0] ? res->reason : NULL, 0);
	bx_out_str(out, "refused=a real run is refused", res->refused[0] ? res->refused : NULL,
		   res->refused[0] ? 0 : BX_F_JSON_ONLY);
	bx_out_bool(out, "target_met", res->target_met, 0);
	out_policy(out, policy, file, found);
	bx_out_size(out, "target", p->target, 0, 0);
	bx_out_str(out, "target_why=target from", p->target_why, 0);
	if (pace < 0)
		bx_out_str(out, "pace=metadata pace a day", NULL, BX_F_JSON_ONLY);
	else
		bx_out_size(out, "pace=metadata pace a day", (uint64_t)pace, 0, 0);
	if (res->copy_rate > 0)
		bx_out_size(out, "copy_rate=copy rate a second", (uint64_t)res->copy_rate, 0, 0);
	else
		bx_out_str(out, "copy_rate=copy rate a second", NULL, BX_F_JSON_ONLY);
	out_state(out, "before", "before:", &p->before);
	out_state(out, "after", "after (predicted):", &p->after);
	bx_out_u64(out, "chunks_planned", p->nr_actions, 0);
	bx_out_size(out, "bytes_planned", p->bytes_planned, 0, 0);
	out_seconds(out, "seconds_planned", p->seconds_planned);
	bx_out_u64(out, "chunks_created=new chunks (predicted)", p->chunks_created, 0);
	if (p->status == BX_MAINTAIN_CANNOT)
		bx_out_size(out, "device_needed=add a device of at least", p->device_needed, 0, 0);
	else
		bx_out_str(out, "device_needed", NULL, BX_F_JSON_ONLY);
	if (p->nr_actions)
		bx_out_textf(out, "actions (in order):");
	bx_out_list_begin(out, "actions");
	for (size_t i = 0; i < p->nr_actions; i++)
		out_chunk(out, p->actions[i].reason, p->actions[i].logical, p->actions[i].type,
			  p->actions[i].length, p->actions[i].used, p->actions[i].seconds);
	bx_out_list_end(out);
	if (ran) {
		out_state(out, "final", "after the run:", &res->final);
		bx_out_u64(out, "chunks_moved", res->nr_moved, 0);
		bx_out_size(out, "bytes_moved", res->bytes_moved, 0, 0);
		bx_out_double(out, "seconds", res->seconds, 1, 0);
		bx_out_double(out, "kernel_seconds", res->kernel_seconds, 1, 0);
		bx_out_double(out, "paused_seconds", res->paused_seconds, 1, 0);
		if (res->nr_moved)
			bx_out_textf(out, "moved:");
		bx_out_list_begin(out, "moved");
		for (size_t i = 0; i < res->nr_moved; i++)
			out_chunk(out, res->moved[i].reason, res->moved[i].logical,
				  res->moved[i].type, res->moved[i].length, res->moved[i].used,
				  res->moved[i].seconds);
		bx_out_list_end(out);
		bx_out_str(out, "metrics_textfile=metrics", textfile, textfile ? 0 : BX_F_JSON_ONLY);
	} else {
		bx_out_str(out, "final", NULL, BX_F_JSON_ONLY);
		bx_out_u64(out, "chunks_moved", 0, BX_F_JSON_ONLY);
		bx_out_u64(out, "bytes_moved", 0, BX_F_JSON_ONLY);
		bx_out_double(out, "seconds", res->seconds, 1, BX_F_JSON_ONLY);
		bx_out_double(out, "kernel_seconds", 0, 1, BX_F_JSON_ONLY);
		bx_out_double(out, "paused_seconds", 0, 1, BX_F_JSON_ONLY);
		bx_out_list_begin(out, "moved");
		bx_out_list_end(out);
		bx_out_str(out, "metrics_textfile", NULL, BX_F_JSON_ONLY);
	}
	bx_out_obj_end(out);
}

/* The engine's progress shown as balance misplaced shows its own (the same fields). */
static void show_progress(void *arg, const struct bx_maintain_progress *m)
{
	struct bx_relocate_progress p = {
		.chunks_done = m->chunks_done, .chunks_total = m->chunks_total,
		.bytes_done = m->bytes_done, .bytes_total = m->bytes_total,
		.elapsed = m->elapsed, .kernel_seconds = m->kernel_seconds,
		.current = m->current, .current_used = m->current_used, .pausing = m->pausing,
	};

	bx_move_progress_show(arg, &p);
}

static int exit_status(const struct bx_maintain_result *res)
{
	switch (res->status) {
	case BX_MAINTAIN_NOTHING:
	case BX_MAINTAIN_PLANNED:
	case BX_MAINTAIN_MET:
		return 0;
	case BX_MAINTAIN_CANNOT:
		return BX_EXIT_PLAN_IMPOSSIBLE;
	case BX_MAINTAIN_STOPPED:
		return BX_EXIT_STOPPED;
	case BX_MAINTAIN_FAILED:
		break;
	}
	return BX_EXIT_FAILURE;
}

static int maintain(struct bx_ctx *ctx, int argc, char **argv, bool run)
{
	struct maintain_args a = { 0 };
	struct bx_maintain_opts o = { 0 };
	struct bx_maintain_result *res = NULL;
	struct bx_move_progress ps = { 0 };
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	char file[PATH_MAX], textfile[PATH_MAX];
	bool found = false, textfile_written = false;
	int ret = parse_args(ctx, argc, argv, run, &a);

	if (ret)
		return ret;
	ret = load_policy(ctx, &a, argv[optind], &o.policy, file, sizeof(file), &found);
	if (ret)
		return ret;
	o.plan_only = !run || a.dry_run;
	o.sysfs_root = ctx->sysfs_root;
	o.state_dir = ctx->state_dir;
	o.stop = &stop_requested;
	ret = history_pace(ctx, &a, argv[optind], &o.pace);
	if (ret)
		return ret;
	stop_requested = 0;
	ps.show = run && !a.dry_run && bx_progress_shown(&a.progress);
	ps.json = ctx->format == BX_FORMAT_JSON;
	o.progress = show_progress;
	o.progress_arg = &ps;
	if (a.cancel_on_eof) {
		ret = bx_stop_at_eof(&stop_requested);
		if (ret)
			return ret;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = bx_maintain_run(argv[optind], &o, &res);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	bx_move_progress_end(&ps);
	if (!res)
		return ret;
	if (!o.plan_only && a.textfile[0]) {
		int ret2 = bx_maintain_metrics_write(res, a.textfile, textfile, sizeof(textfile));

		if (ret2)
			bx_warn("the metrics were not written: %s", bx_error_message(ret2));
		else
			textfile_written = true;
		bx_error_clear();
	}
	print_result(ctx->out, res, !run ? "plan" : a.dry_run ? "dry-run" : "run", &o.policy, file,
		     found, o.pace, textfile_written ? textfile : NULL);
	if (!ret)
		ret = exit_status(res);
	bx_maintain_result_free(res);
	return ret;
}

static int cmd_maintain_plan(struct bx_ctx *ctx, int argc, char **argv)
{
	return maintain(ctx, argc, argv, false);
}

static int cmd_maintain_run(struct bx_ctx *ctx, int argc, char **argv)
{
	return maintain(ctx, argc, argv, true);
}

static const struct bx_cmd maintain_cmds[] = {
	{ "plan", cmd_maintain_plan, plan_usage, NULL, BX_CMD_JSON },
	{ "run", cmd_maintain_run, run_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ NULL },
};

const struct bx_cmd_group bx_maintain_group = { maintain_usage, maintain_cmds };
