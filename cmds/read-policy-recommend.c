/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx read-policy recommend: which read policy reads this array fastest,
 * measured (recommend/recommend.c); registered in the read-policy group.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/commands.h"
#include "cmds/read-policy-recommend.h"
#include "cmds/table.h"
#include "common/error.h"
#include "common/units.h"
#include "recommend/recommend.h"

const char *const bx_read_policy_recommend_usage[] = {
	"btrfsx read-policy recommend [--seconds <n>] [--readers <list>] [--pattern <pattern>] "
	"[--apply] [--progress|--no-progress] <path>",
	"Measure which read policy reads a mounted filesystem fastest, and say why.",
	"",
	"Replays the reads of a workload under every candidate policy -- pid,",
	"round-robin with min_contig_read 64K, 256K and 1M, devid of each device --",
	"over data the filesystem holds, straight from its devices (read-only,",
	"O_DIRECT, 64KiB requests), and picks from the measured rates, not from",
	"the devices' rotational flag. Several workloads: the policy whose worst",
	"workload comes closest to that workload's fastest. Figures that other I/O",
	"on the devices disturbed are said to be. SIGINT or SIGTERM stops the",
	"probe: nothing is recommended or applied then.",
	"",
	"--seconds <n>       bound of a probe round (default 30; up to 3 rounds",
	"                    when the ranking is not stable)",
	"--readers <list>    readers of the workloads, e.g. 1,8 (default 1,8; each",
	"                    with one 64KiB request in flight)",
	"--pattern <p>       sequential, random or both (default both)",
	"--apply             set the pick and record it for every mount",
	"--progress          show the probe's progress on stderr (default on a terminal)",
	"--no-progress       never show progress",
	NULL
};

static volatile sig_atomic_t cancel_requested;

static void on_signal(int sig)
{
	(void)sig;
	cancel_requested = 1;
}

static size_t progress_len;

static void on_progress(void *arg, size_t done, size_t total, double seconds)
{
	double per = done ? seconds / (double)done : 0;
	int len;

	(void)arg;
	len = fprintf(stderr, "\rprobing: %zu of %zu replays, about %.0f s left", done, total,
		      per * (double)(total - done));
	if (len > 0 && (size_t)len < progress_len)
		fprintf(stderr, "%*s", (int)(progress_len - (size_t)len), "");
	fflush(stderr);
	progress_len = len > 0 ? (size_t)len : 0;
}

static void clear_progress(void)
{
	if (progress_len)
		fprintf(stderr, "\r%*s\r", (int)progress_len, "");
	progress_len = 0;
}

static int parse_readers(const char *arg, unsigned int *readers, size_t *nr)
{
	char copy[128], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", arg);
	*nr = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (*nr == BX_REC_MAX_WORKLOADS / 2 || bx_parse_u64(tok, &v) || !v ||
		    v > BX_PROBE_MAX_READERS)
			return bx_usage_error("invalid --readers '%s' (up to %d counts from 1 to %d, comma-separated)",
					      arg, BX_REC_MAX_WORKLOADS / 2, BX_PROBE_MAX_READERS);
		readers[(*nr)++] = (unsigned int)v;
	}
	if (!*nr || strlen(arg) >= sizeof(copy))
		return bx_usage_error("invalid --readers '%s' (up to %d counts from 1 to %d, comma-separated)",
				      arg, BX_REC_MAX_WORKLOADS / 2, BX_PROBE_MAX_READERS);
	return 0;
}

struct args {
	struct bx_rec_options opts;
	unsigned int readers[BX_REC_MAX_WORKLOADS / 2];
	size_t nr_readers;
	bool sequential, random;
	struct bx_progress_choice progress;
};

static int parse_option(int opt, struct args *a)
{
	char *end;

	switch (opt) {
	case 's':
		a->opts.seconds = strtod(optarg, &end);
		if (end == optarg || *end || !(a->opts.seconds > 0) || a->opts.seconds > 86400)
			return bx_usage_error("invalid --seconds '%s' (more than 0, at most 86400)",
					      optarg);
		return 0;
	case 'r':
		return parse_readers(optarg, a->readers, &a->nr_readers);
	case 'p':
		a->sequential = !strcmp(optarg, "sequential") || !strcmp(optarg, "both");
		a->random = !strcmp(optarg, "random") || !strcmp(optarg, "both");
		if (!a->sequential && !a->random)
			return bx_usage_error("invalid --pattern '%s' (sequential, random or both)",
					      optarg);
		return 0;
	case 'a':
		a->opts.apply = true;
		return 0;
	default:
		return bx_progress_option(opt, &a->progress) ? 0 : bx_opt_result(opt);
	}
}

static void make_workloads(struct args *a)
{
	for (int random = 0; random <= 1; random++) {
		if (random ? !a->random : !a->sequential)
			continue;
		for (size_t i = 0; i < a->nr_readers; i++)
			a->opts.workloads[a->opts.nr_workloads++] =
				(struct bx_probe_workload){ a->readers[i], random };
	}
}

static int parse_args(struct bx_ctx *ctx, int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "readers", required_argument, NULL, 'r' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "apply", no_argument, NULL, 'a' },
		BX_PROGRESS_LONGOPTS,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	int opt, ret;

	a->readers[0] = 1;
	a->readers[1] = 8;
	a->nr_readers = 2;
	a->sequential = a->random = true;
	while ((opt = bx_getopt(ctx, argc, argv, "h", longopts)) != -1) {
		ret = parse_option(opt, a);
		if (ret)
			return ret;
	}
	ret = bx_progress_check(&a->progress);
	if (!ret)
		ret = bx_check_argc(argc - optind, 1, 1);
	if (ret)
		return ret;
	make_workloads(a);
	a->opts.sysfs_root = ctx->sysfs_root;
	a->opts.config_dir = ctx->config_dir;
	return 0;
}

static void print_workloads(struct bx_out *out, const struct bx_rec_result *res)
{
	bx_out_list_begin(out, "workloads");
	/* Without candidates nothing was measured: no workload to show. */
	for (size_t w = 0; res->nr_candidates && w < res->nr_workloads; w++) {
		const struct bx_rec_workload *wl = &res->workloads[w];
		const struct bx_rec_candidate *best = &res->candidates[wl->best];

		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_u64(out, "readers", wl->w.readers, 0);
		bx_out_str(out, "pattern", wl->w.random ? "random" : "sequential", 0);
		bx_out_str(out, "fastest", best->policy, 0);
		bx_out_u64(out, "rate", (uint64_t)best->rates[w], 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

/* Text: a table of the candidates' rates, MiB/s per workload. */
static int print_table(struct bx_out *out, const struct bx_rec_result *res)
{
	struct bx_table *t = bx_table_new(res->nr_workloads + 2);

	bx_table_row(t);
	bx_table_cell(t, 0, BX_ALIGN_LEFT, "policy (MiB/s)");
	for (size_t w = 0; w < res->nr_workloads; w++)
		bx_table_cellf(t, w + 1, BX_ALIGN_RIGHT, "%s x%u",
			       res->workloads[w].w.random ? "random" : "seq",
			       res->workloads[w].w.readers);
	bx_table_cell(t, res->nr_workloads + 1, BX_ALIGN_RIGHT, "worst");
	bx_table_rule(t);
	for (size_t c = 0; c < res->nr_candidates; c++) {
		const struct bx_rec_candidate *cand = &res->candidates[c];

		bx_table_row(t);
		bx_table_cellf(t, 0, BX_ALIGN_LEFT, "%s%s", cand->policy,
			       (int)c == res->pick ? " *" : "");
		for (size_t w = 0; w < res->nr_workloads; w++)
			bx_table_cellf(t, w + 1, BX_ALIGN_RIGHT, "%.1f",
				       cand->rates[w] / (1024.0 * 1024.0));
		bx_table_cellf(t, res->nr_workloads + 1, BX_ALIGN_RIGHT, "%.2f", cand->worst_ratio);
	}
	return bx_table_print(out, t);
}

static void print_candidates(struct bx_out *out, const struct bx_rec_result *res)
{
	bx_out_list_begin(out, "candidates");
	for (size_t c = 0; c < res->nr_candidates; c++) {
		const struct bx_rec_candidate *cand = &res->candidates[c];

		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_str(out, "policy", cand->policy, 0);
		bx_out_list_begin(out, "rates");
		for (size_t w = 0; w < res->nr_workloads; w++)
			bx_out_u64(out, NULL, (uint64_t)cand->rates[w], BX_F_JSON_ONLY);
		bx_out_list_end(out);
		bx_out_double(out, "worst_ratio", cand->worst_ratio, 3, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

static void print_devices(struct bx_out *out, const struct bx_rec_result *res)
{
	bx_out_list_begin(out, "devices");
	for (size_t i = 0; i < res->nr_devices; i++) {
		const struct bx_rec_device *d = &res->devices[i];

		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_u64(out, "devid", d->devid, 0);
		bx_out_str(out, "device", d->device, 0);
		bx_out_size(out, "probe_bytes=probe read", d->probe_bytes, 0, 0);
		bx_out_bool(out, "stats_available", d->stats_available, BX_F_JSON_ONLY);
		bx_out_size(out, "other_read_bytes=others read", d->other_read_bytes, 0, 0);
		bx_out_size(out, "other_write_bytes=wrote", d->other_write_bytes, 0, 0);
		bx_out_bool(out, "disturbed", d->disturbed, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

static int print_result(struct bx_ctx *ctx, const struct bx_rec_result *res)
{
	struct bx_out *out = ctx->out;
	int ret = 0;

	bx_out_str(out, "fsid", res->fsid, 0);
	bx_out_str(out, "mountpoint", res->mountpoint, 0);
	bx_out_bool(out, "affects_reads", res->affects_reads, 0);
	bx_out_str(out, "recommended", res->recommended[0] ? res->recommended : NULL, 0);
	bx_out_str(out, "reason", res->reason, 0);
	bx_out_str(out, "current", res->current[0] ? res->current : NULL, 0);
	bx_out_bool(out, "offered", res->offered, 0);
	bx_out_str(out, "not_offered", res->not_offered[0] ? res->not_offered : NULL,
		   res->not_offered[0] ? 0 : BX_F_JSON_ONLY);
	bx_out_bool(out, "applied", res->applied, 0);
	bx_out_str(out, "persistent", res->persistent[0] ? res->persistent : NULL, 0);
	bx_out_bool(out, "disturbed", res->disturbed, 0);
	bx_out_bool(out, "stable", res->stable, 0);
	bx_out_u64(out, "rounds", res->rounds, 0);
	bx_out_double(out, "seconds", res->seconds, 1, 0);
	bx_out_str(out, "region", res->metadata_region ? "metadata" : "data", 0);
	bx_out_size(out, "region_bytes", res->region_bytes, 0, 0);
	print_workloads(out, res);
	if (res->nr_candidates)
		ret = print_table(out, res);
	print_candidates(out, res);
	print_devices(out, res);
	return ret;
}

/* Warnings a script reads in the document, people on stderr. */
static void warn_about(const struct bx_rec_result *res)
{
	if (!res->affects_reads)
		bx_warn("%s: no RAID1, RAID1C3, RAID1C4 or RAID10 block group: reads have one copy "
			"to read, whatever the policy; nothing to recommend", res->mountpoint);
	for (size_t i = 0; i < res->nr_devices; i++)
		if (res->devices[i].disturbed)
			bx_warn("device %llu (%s): others read %llu and wrote %llu bytes during the probe: its figures are disturbed; run again when it is idle",
				(unsigned long long)res->devices[i].devid, res->devices[i].device,
				(unsigned long long)res->devices[i].other_read_bytes,
				(unsigned long long)res->devices[i].other_write_bytes);
	if (res->recommended[0] && !res->stable)
		bx_warn("the ranking is not stable: after %u rounds a pass alone still picks "
			"otherwise (the host is busy?); %s is the pick of all the figures, but run "
			"again when the devices are idle", (unsigned int)res->rounds, res->recommended);
	if (res->recommended[0] && !res->offered)
		bx_warn("%s cannot be set on this kernel: %s", res->recommended, res->not_offered);
}

int bx_cmd_read_policy_recommend(struct bx_ctx *ctx, int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	struct bx_rec_result res;
	struct args a = { 0 };
	int ret;

	ret = parse_args(ctx, argc, argv, &a);
	if (ret)
		return ret;
	cancel_requested = 0;
	a.opts.cancel = &cancel_requested;
	if (bx_progress_shown(&a.progress))
		a.opts.progress = on_progress;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = bx_rec_run(argv[optind], &a.opts, &res);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	clear_progress();
	if (ret == -EINTR)
		ret = bx_error(-EINTR, "%s: the probe was interrupted: nothing recommended, "
			       "nothing applied", argv[optind]);
	if (!ret || res.pick >= 0) {
		int printed;

		warn_about(&res);
		printed = print_result(ctx, &res);
		if (!ret)
			ret = printed;
	}
	bx_rec_result_free(&res);
	return ret;
}
