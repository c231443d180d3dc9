/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx balance misplaced: moves only the chunks that break the allocation
 * hints, one kernel balance call per chunk (relocate/relocate.c), with a
 * progress line, limits, pauses, and a clean cancel on SIGINT/SIGTERM.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds/commands.h"
#include "cmds/misplaced.h"
#include "common/error.h"
#include "common/units.h"
#include "disk/volumes.h"
#include "relocate/relocate.h"

static const char *const balance_usage[] = {
	"btrfsx balance <command> [<args>]",
	"Move chunks to where the allocation hints want them.",
	NULL
};

static const char *const misplaced_usage[] = {
	"btrfsx balance misplaced [options] [<units>] <mountpoint>",
	"Move only the chunks that break the allocation hints, one at a time.",
	"",
	"The chunks 'btrfsx filesystem misplaced' lists are moved, forbidden ones",
	"first, then off-preference ones, each by a kernel balance of that chunk",
	"alone (a vrange filter), instead of a balance of everything. Before the",
	"start the allocator model must have room for every chunk to move, else",
	"nothing moves and the message says which devices lack how much. After",
	"each chunk the new chunks are checked against the model; one placed no",
	"better (or, forced on a kernel that ignores hints, where the hints forbid)",
	"stops the run with the reason and exit 1. Needs root, a read-write mount",
	"and a kernel that honours hints; a running or paused balance is refused.",
	"--dry-run only reads: it works on any kernel and mount, and says what a",
	"real run would be refused for.",
	"",
	"SIGINT or SIGTERM cancels the chunk being moved through the kernel's",
	"balance control, prints what was done and exits 1; running again goes",
	"on with what is still misplaced.",
	"",
	"--forbidden-only    move forbidden chunks only",
	"--dry-run           list what would be moved and check the room; move nothing",
	"--limit <N>         move at most N chunks",
	"--max-bytes <size>  move at most this much used data (e.g. 20G)",
	"--pause <duration>  wait between chunks so other I/O breathes (30s, 2m, 1h)",
	"--force             move even when the running kernel ignores allocation hints;",
	"                    pointless for placement (the kernel places without them):",
	"                    the run stops at the first chunk placed no better",
	"--cancel-on-eof     the end of standard input cancels as SIGTERM does (for a",
	"                    program that runs this, such as the web console)",
	"--progress          show chunks, bytes, rate and ETA on stderr (default on a",
	"                    terminal; one JSON object a line in JSON output);",
	"                    --no-progress never",
	BX_UNITS_HELP_LONG,
	NULL
};

static volatile int cancel_requested;

static void on_signal(int sig)
{
	(void)sig;
	cancel_requested = 1;
}

/*
 * --cancel-on-eof: a program that runs the relocation and cannot send a
 * signal (Cockpit's spawn closes the channel, and with it the output it
 * wanted to read) closes our standard input instead. Whatever it sends
 * before is read and dropped.
 */
static void *cancel_at_eof(void *arg)
{
	char buf[256];

	(void)arg;
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	cancel_requested = 1;
	return NULL;
}

struct progress_state {
	bool show;
	bool json;		/* --format json: one JSON object a line */
	size_t line_len;
};

/*
 * With --format json the progress is for programs (the web console): each
 * report is a line of its own on stderr, {"progress": {...}} with the
 * engine's figures as they are, so nothing is parsed out of the text line.
 */
static void progress_json(const struct bx_relocate_progress *p)
{
	fprintf(stderr, "{\"progress\": {\"chunks_done\": %llu, \"chunks_total\": %llu, "
		"\"bytes_done\": %llu, \"bytes_total\": %llu, \"elapsed\": %.3f, "
		"\"kernel_seconds\": %.3f, \"current\": %llu, \"current_used\": %llu, "
		"\"pausing\": %s}}\n",
		(unsigned long long)p->chunks_done, (unsigned long long)p->chunks_total,
		(unsigned long long)p->bytes_done, (unsigned long long)p->bytes_total, p->elapsed,
		p->kernel_seconds, (unsigned long long)p->current,
		(unsigned long long)p->current_used, p->pausing ? "true" : "false");
	fflush(stderr);
}

static int progress_line(void *arg, const struct bx_relocate_progress *p)
{
	struct progress_state *ps = arg;
	char done[32], total[32], rate_text[32], eta_text[32], current[96] = "", line[256];
	double rate = p->elapsed > 0 ? (double)p->bytes_done / p->elapsed : 0;
	double pct = p->bytes_total ? 100.0 * (double)p->bytes_done / (double)p->bytes_total : 100;
	int len;

	if (!ps->show)
		return 0;
	if (ps->json) {
		progress_json(p);
		return 0;
	}
	bx_pretty_size(p->bytes_done, 0, done, sizeof(done));
	bx_pretty_size(p->bytes_total, 0, total, sizeof(total));
	bx_pretty_size((uint64_t)rate, 0, rate_text, sizeof(rate_text));
	if (rate > 0 && p->bytes_total > p->bytes_done)
		misplaced_duration_text((double)(p->bytes_total - p->bytes_done) / rate, eta_text,
					sizeof(eta_text));
	else
		snprintf(eta_text, sizeof(eta_text), "-");
	if (p->current) {
		char used[32];

		bx_pretty_size(p->current_used, 0, used, sizeof(used));
		snprintf(current, sizeof(current), ", moving chunk %llu (%s)",
			 (unsigned long long)p->current, used);
	} else if (p->pausing) {
		snprintf(current, sizeof(current), ", pausing");
	}
	len = snprintf(line, sizeof(line), "moved %llu/%llu chunks, %s/%s (%.1f%%), %s/s, ETA %s%s",
		       (unsigned long long)p->chunks_done, (unsigned long long)p->chunks_total,
		       done, total, pct > 100 ? 100.0 : pct, rate_text, eta_text, current);
	fprintf(stderr, "\r%s%*s", line, ps->line_len > (size_t)len ? (int)(ps->line_len - len) : 0,
		"");
	fflush(stderr);
	ps->line_len = (size_t)len;
	return 0;
}

static const char *stop_name(enum bx_relocate_stop stop)
{
	switch (stop) {
	case BX_RELOCATE_DONE:
		return "finished";
	case BX_RELOCATE_LIMIT:
		return "limit reached";
	case BX_RELOCATE_DRY_RUN:
		return "dry run";
	case BX_RELOCATE_CANCELLED:
		return "cancelled";
	case BX_RELOCATE_NO_ROOM:
		return "no room";
	case BX_RELOCATE_ENOSPC:
		return "out of space";
	case BX_RELOCATE_MISPLACED_AGAIN:
		return "placed no better";
	default:
		return "failed";
	}
}

static void print_new_chunk(struct bx_out *out, const struct bx_relocate_new_chunk *n)
{
	bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "logical", n->logical, 0);
	bx_out_str(out, "type", bx_place_type_name(n->type), 0);
	bx_out_str(out, "profile", bx_profile_name(n->type), 0);
	bx_out_u64(out, "flags", n->type, 0);
	bx_out_u64(out, "length", n->length, 0);
	misplaced_devids_json(out, "devids", n->devids, n->num_stripes);
	bx_out_bool(out, "as_modelled", n->as_modelled, 0);
	bx_out_bool(out, "improves", n->improves, 0);
	bx_out_obj_end(out);
}

/* "12345:3,4 67890:1,2" (new chunk: devids), or "packed into existing chunks". */
static void new_chunks_text(const struct bx_relocated *rel, char *buf, size_t len)
{
	size_t used = 0;

	snprintf(buf, len, "packed-into-existing-chunks");
	for (size_t i = 0; i < rel->nr_new && used < len; i++) {
		char devs[256];

		misplaced_devids_text(rel->new_chunks[i].devids, rel->new_chunks[i].num_stripes,
				      devs, sizeof(devs));
		used += (size_t)snprintf(buf + used, len - used, "%s%llu:%s", i ? " " : "",
					 (unsigned long long)rel->new_chunks[i].logical, devs);
	}
}

static void print_relocated(struct bx_out *out, const struct bx_relocated *rel, unsigned int units)
{
	char from[256], to[1024];

	misplaced_devids_text(rel->devids, rel->num_stripes, from, sizeof(from));
	new_chunks_text(rel, to, sizeof(to));
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	misplaced_print_chunk_head(out, rel->cls, rel->type, rel->logical, rel->length, rel->used,
				   units);
	bx_out_str(out, "from", from, BX_F_TEXT_ONLY);
	bx_out_str(out, "to", to, BX_F_TEXT_ONLY);
	bx_out_double(out, "seconds", rel->seconds, 1, 0);
	bx_out_bool(out, "as_modelled", rel->as_modelled, 0);
	misplaced_devids_json(out, "devids", rel->devids, rel->num_stripes);
	if (bx_out_format(out) == BX_FORMAT_JSON) {
		bx_out_list_begin(out, "new_chunks");
		for (size_t i = 0; i < rel->nr_new; i++)
			print_new_chunk(out, &rel->new_chunks[i]);
		bx_out_list_end(out);
	}
	bx_out_obj_end(out);
}

static void print_result(struct bx_out *out, const struct bx_relocate_result *res,
			 unsigned int units)
{
	char text[64];
	double rate = res->kernel_seconds > 0 ? (double)res->bytes_moved / res->kernel_seconds : 0;

	bx_out_obj_begin(out, "balance", BX_OBJ_LINES, NULL);
	bx_out_uuid(out, "fsid", res->start.fsid, 0);
	bx_out_str(out, "mountpoint", res->start.path, 0);
	bx_out_str(out, "status", stop_name(res->stop), 0);
	bx_out_str(out, "reason", res->reason[0] ? res->reason : NULL, 0);
	/* Only a dry run can be refused and go on; the text says it for a dry run alone. */
	bx_out_str(out, "refused=a real run is refused", res->refused[0] ? res->refused : NULL,
		   res->stop == BX_RELOCATE_DRY_RUN ? 0 : BX_F_JSON_ONLY);
	bx_out_bool(out, "hints_effective", res->hints_effective, 0);
	bx_out_bool(out, "forced", res->forced, BX_F_JSON_ONLY);
	bx_out_u64(out, "chunks_planned", res->nr_planned, 0);
	bx_out_size(out, "bytes_planned", res->planned_bytes, units, 0);
	bx_out_u64(out, "chunks_moved", res->nr_relocated, 0);
	bx_out_size(out, "bytes_moved", res->bytes_moved, units, 0);
	misplaced_duration_text(res->seconds, text, sizeof(text));
	bx_out_str(out, "time", text, BX_F_TEXT_ONLY);
	bx_out_double(out, "seconds", res->seconds, 1, BX_F_JSON_ONLY);
	bx_out_double(out, "kernel_seconds", res->kernel_seconds, 1, BX_F_JSON_ONLY);
	bx_pretty_size((uint64_t)rate, units, text, sizeof(text));
	strncat(text, "/s", sizeof(text) - strlen(text) - 1);
	bx_out_str(out, "rate", text, BX_F_TEXT_ONLY);
	bx_out_double(out, "rate", rate, 0, BX_F_JSON_ONLY);
	bx_out_u64(out, "remaining_chunks", res->remaining_chunks, 0);
	bx_out_size(out, "remaining_bytes", res->remaining_bytes, units, 0);
	if (res->nr_planned)
		bx_out_textf(out, "planned (model: where a new chunk goes now):");
	bx_out_list_begin(out, "planned");
	for (size_t i = 0; i < res->nr_planned; i++)
		misplaced_print_chunk(out, &res->start.chunks[i], units);
	bx_out_list_end(out);
	if (res->nr_relocated)
		bx_out_textf(out, "moved (to: new chunk:devids):");
	bx_out_list_begin(out, "moved");
	for (size_t i = 0; i < res->nr_relocated; i++)
		print_relocated(out, &res->relocated[i], units);
	bx_out_list_end(out);
	bx_out_obj_end(out);
}

struct misplaced_args {
	struct bx_relocate_opts opts;
	unsigned int units;
	struct bx_progress_choice progress;
	bool cancel_on_eof;
};

static int parse_misplaced(struct bx_ctx *ctx, int argc, char **argv, struct misplaced_args *a)
{
	enum { OPT_FORBIDDEN_ONLY = 0x200, OPT_DRY_RUN, OPT_LIMIT, OPT_MAX_BYTES, OPT_PAUSE,
	       OPT_FORCE, OPT_CANCEL_ON_EOF };
	static const struct option longopts[] = {
		BX_UNITS_LONGOPTS,
		{ "forbidden-only", no_argument, NULL, OPT_FORBIDDEN_ONLY },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
		{ "pause", required_argument, NULL, OPT_PAUSE },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "cancel-on-eof", no_argument, NULL, OPT_CANCEL_ON_EOF },
		BX_PROGRESS_LONGOPTS,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "h", longopts)) != -1) {
		if (bx_units_option(opt, &a->units) || bx_progress_option(opt, &a->progress))
			continue;
		switch (opt) {
		case OPT_FORBIDDEN_ONLY:
			a->opts.forbidden_only = true;
			break;
		case OPT_DRY_RUN:
			a->opts.dry_run = true;
			break;
		case OPT_LIMIT:
			if (bx_parse_u64(optarg, &a->opts.limit) || !a->opts.limit)
				return bx_usage_error("--limit: '%s' is not a number of chunks (1 or "
						      "more)", optarg);
			break;
		case OPT_MAX_BYTES:
			ret = bx_parse_size(optarg, &a->opts.max_bytes);
			if (ret)
				return bx_usage_error("--max-bytes: %s", bx_error_message(ret));
			if (!a->opts.max_bytes)
				return bx_usage_error("--max-bytes: '%s' is not a size (e.g. 20G)",
						      optarg);
			break;
		case OPT_PAUSE: {
			int64_t seconds;

			if (bx_parse_duration(optarg, &seconds) || seconds > 86400)
				return bx_usage_error("--pause: '%s' is not a duration (e.g. 30s, 2m, "
						      "1h; at most a day)", optarg);
			a->opts.pause = (double)seconds;
			break;
		}
		case OPT_FORCE:
			a->opts.force = true;
			break;
		case OPT_CANCEL_ON_EOF:
			a->cancel_on_eof = true;
			break;
		default:
			return bx_opt_result(opt);
		}
	}
	ret = bx_progress_check(&a->progress);
	if (ret)
		return ret;
	return bx_check_argc(argc - optind, 1, 1);
}

static int cmd_balance_misplaced(struct bx_ctx *ctx, int argc, char **argv)
{
	struct misplaced_args a = { 0 };
	struct progress_state ps = { 0 };
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	struct bx_relocate_result *res = NULL;
	int ret = parse_misplaced(ctx, argc, argv, &a);

	if (ret)
		return ret;
	ps.show = bx_progress_shown(&a.progress);
	ps.json = ctx->format == BX_FORMAT_JSON;
	a.opts.sysfs_root = ctx->sysfs_root;
	a.opts.state_dir = ctx->state_dir;
	a.opts.progress = progress_line;
	a.opts.progress_arg = &ps;
	a.opts.cancel = &cancel_requested;
	cancel_requested = 0;
	if (a.cancel_on_eof) {
		pthread_t watcher;

		if (pthread_create(&watcher, NULL, cancel_at_eof, NULL) == 0)
			pthread_detach(watcher);
		else
			return bx_error(-EAGAIN, "--cancel-on-eof: no thread to watch standard input");
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = bx_relocate_run(argv[optind], &a.opts, &res);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (ps.show && !ps.json && ps.line_len)
		fprintf(stderr, "\r%*s\r", (int)ps.line_len, "");
	/* A refusal before anything was planned or moved is the error message alone. */
	if (res && (res->stop != BX_RELOCATE_FAILED || res->nr_relocated))
		print_result(ctx->out, res, a.units);
	bx_relocate_result_free(res);
	return ret;
}

static const struct bx_cmd balance_cmds[] = {
	{ "misplaced", cmd_balance_misplaced, misplaced_usage, NULL,
	  BX_CMD_JSON | BX_CMD_WRITES },
	{ NULL },
};

const struct bx_cmd_group bx_balance_group = { balance_usage, balance_cmds };
