/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The read-policy recommender: candidates, the timed replays, the pick and why. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "fsops/read-policy.h"
#include "fsops/snapshot-read.h"
#include "fsops/usage.h"
#include "recommend/recommend.h"

/* round-robin's min_contig_read values tried: the kernel's default and one each side. */
static const uint64_t rr_values[] = { 64 * 1024, 256 * 1024, 1024 * 1024 };
/* The least a replay may last: below it a few slow reads decide. */
#define MIN_REPLAY_SECONDS 0.1
/* A round: every replay forwards, then backwards. */
#define PASSES 2

void bx_rec_workload_name(const struct bx_probe_workload *w, char *buf, size_t len)
{
	snprintf(buf, len, "%u %s reader%s", w->readers, w->random ? "random" : "sequential",
		 w->readers == 1 ? "" : "s");
}

static double mib(double bytes)
{
	return bytes / (1024.0 * 1024.0);
}

/* ---- candidates ---- */

static void add_candidate(struct bx_rec_result *res, enum bx_rp_kind kind, uint64_t arg)
{
	struct bx_rec_candidate *c = &res->candidates[res->nr_candidates++];

	memset(c, 0, sizeof(*c));
	c->value.kind = kind;
	c->value.has_arg = kind != BX_RP_PID;
	c->value.arg = arg;
	snprintf(c->value.name, sizeof(c->value.name), "%s",
		 kind == BX_RP_PID ? "pid" : kind == BX_RP_DEVID ? "devid" : "round-robin");
	bx_rp_format(&c->value, c->policy, sizeof(c->policy));
}

static int make_candidates(struct bx_rec_result *res, const struct bx_probe_map *map)
{
	size_t nr = 1 + sizeof(rr_values) / sizeof(rr_values[0]) + map->nr_devs;

	res->candidates = calloc(nr, sizeof(*res->candidates));
	res->devices = calloc(map->nr_devs + 1, sizeof(*res->devices));
	if (!res->candidates || !res->devices)
		return bx_error(-ENOMEM, "out of memory");
	add_candidate(res, BX_RP_PID, 0);
	for (size_t i = 0; i < sizeof(rr_values) / sizeof(rr_values[0]); i++)
		add_candidate(res, BX_RP_ROUND_ROBIN, rr_values[i]);
	for (size_t i = 0; i < map->nr_devs; i++) {
		struct bx_rec_device *d = &res->devices[res->nr_devices++];

		d->devid = map->devs[i].devid;
		snprintf(d->device, sizeof(d->device), "%s", map->devs[i].path);
		d->stats_available = map->devs[i].stat_path[0] != '\0';
		add_candidate(res, BX_RP_DEVID, d->devid);
	}
	return 0;
}

/* ---- the replays ---- */

struct run {
	struct bx_probe_map *map;
	const struct bx_rec_options *opts;
	struct bx_rec_result *res;
	struct bx_probe_result *per;     /* [workload * nr_candidates + candidate] */
	double *pass_rates;              /* [pass][workload * nr_candidates + candidate] */
	struct bx_probe_result devs;     /* every replay's per-device figures */
	size_t done, total;
	double replay_seconds, start;
};

/*
 * One candidate on one workload for @seconds. pid is a lottery of the pids the
 * readers get: its time is shared among the pids of the first reader that
 * send it to each copy in turn, so its rate is their mean.
 */
static int replay_one(struct run *r, size_t w, size_t c, unsigned int pass)
{
	const struct bx_rec_candidate *cand = &r->res->candidates[c];
	const struct bx_probe_workload *wl = &r->res->workloads[w].w;
	unsigned int bases = cand->value.kind == BX_RP_PID ? r->map->max_copies : 1;
	size_t n = r->res->nr_workloads * r->res->nr_candidates;
	size_t at = w * r->res->nr_candidates + c;
	struct bx_probe_result *out = &r->per[at];
	uint64_t bytes = 0;
	double seconds = 0;
	int ret = 0;

	for (unsigned int base = 0; !ret && base < bases; base++) {
		struct bx_probe_result one;

		ret = bx_probe_result_init(&one, r->map->nr_devs);
		if (ret)
			return ret;
		ret = bx_probe_replay(r->map, wl, &cand->value, base, pass * bases + base,
				      r->replay_seconds / bases, r->opts->cancel, &one);
		if (!ret) {
			bytes += one.bytes;
			seconds += one.seconds;
			out->bytes += one.bytes;
			out->seconds += one.seconds;
			for (size_t i = 0; i < r->map->nr_devs; i++) {
				r->devs.dev_bytes[i] += one.dev_bytes[i];
				r->devs.other_read_bytes[i] += one.other_read_bytes[i];
				r->devs.other_write_bytes[i] += one.other_write_bytes[i];
			}
		}
		bx_probe_result_free(&one);
	}
	r->pass_rates[pass * n + at] = seconds > 0 ? (double)bytes / seconds : 0;
	r->done++;
	if (!ret && r->opts->progress)
		r->opts->progress(r->opts->progress_arg, r->done, r->total, bx_monotonic_seconds() - r->start);
	return ret;
}

/*
 * One round: every candidate on every workload, twice, forward, then
 * backward (drift hits all alike); the rates are those of every round so far.
 */
static int replay_round(struct run *r, unsigned int round)
{
	size_t n = r->res->nr_workloads * r->res->nr_candidates;

	for (unsigned int pass = round * PASSES; pass < (round + 1) * PASSES; pass++) {
		for (size_t k = 0; k < n; k++) {
			size_t i = pass % 2 ? n - 1 - k : k;
			int ret = replay_one(r, i / r->res->nr_candidates, i % r->res->nr_candidates,
					     pass);

			if (ret)
				return ret;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct bx_probe_result *p = &r->per[i];

		r->res->candidates[i % r->res->nr_candidates].rates[i / r->res->nr_candidates] =
			p->seconds > 0 ? (double)p->bytes / p->seconds : 0;
	}
	return 0;
}

static void account_devices(struct bx_rec_result *res, const struct bx_probe_result *devs)
{
	for (size_t i = 0; i < res->nr_devices; i++) {
		struct bx_rec_device *d = &res->devices[i];
		uint64_t others;

		d->probe_bytes = devs->dev_bytes[i];
		d->other_read_bytes = devs->other_read_bytes[i];
		d->other_write_bytes = devs->other_write_bytes[i];
		others = d->other_read_bytes + d->other_write_bytes;
		d->disturbed = d->stats_available && others > BX_REC_DISTURBED_MIN &&
			       (double)others > BX_REC_DISTURBED_SHARE * (double)d->probe_bytes;
		res->disturbed |= d->disturbed;
	}
}

/*
 * Rounds until the pick is stable: until each pass of the last round alone
 * picks what all rounds so far pick (or a tie of it). A host busy with
 * other work slows some replays and not others, so a pass alone may pick
 * differently; another round then measures again, up to BX_REC_MAX_ROUNDS,
 * after which the result says the ranking is not stable.
 */
static int rounds_until_stable(struct run *r)
{
	size_t n = r->res->nr_workloads * r->res->nr_candidates;
	int ret = 0;

	for (unsigned int round = 0; round < BX_REC_MAX_ROUNDS && !ret; round++) {
		ret = replay_round(r, round);
		if (ret)
			break;
		r->res->rounds = round + 1;
		bx_rec_decide(r->res);
		r->res->stable = bx_rec_passes_agree(r->res, r->pass_rates + round * PASSES * n,
						     PASSES);
		if (r->res->stable)
			break;
		/* The progress counts the round to come. */
		r->total += PASSES * n;
	}
	return ret;
}

static int probe(struct bx_probe_map *map, const struct bx_rec_options *opts,
		 struct bx_rec_result *res)
{
	size_t n = res->nr_workloads * res->nr_candidates;
	double seconds = opts->seconds > 0 ? opts->seconds : BX_REC_DEFAULT_SECONDS;
	struct run r = { .map = map, .opts = opts, .res = res, .total = PASSES * n };
	int ret;

	r.replay_seconds = seconds / (double)r.total;
	/* (a hair of slack: 4.8 s for 48 replays is enough) */
	if (r.replay_seconds < MIN_REPLAY_SECONDS * 0.999)
		return bx_error(-EINVAL,
				"%.0f seconds are too few for %zu replays (%zu policies, %zu workloads, twice): give at least --seconds %.0f",
				seconds, r.total, res->nr_candidates, res->nr_workloads,
				MIN_REPLAY_SECONDS * (double)r.total + 0.5);
	r.per = calloc(n, sizeof(*r.per));
	r.pass_rates = calloc(n * PASSES * BX_REC_MAX_ROUNDS, sizeof(*r.pass_rates));
	ret = r.per && r.pass_rates ? bx_probe_result_init(&r.devs, map->nr_devs) :
				      bx_error(-ENOMEM, "out of memory");
	if (!ret)
		ret = bx_probe_open(map);
	r.start = bx_monotonic_seconds();
	if (!ret)
		ret = rounds_until_stable(&r);
	res->seconds = bx_monotonic_seconds() - r.start;
	if (!ret)
		account_devices(res, &r.devs);
	bx_probe_result_free(&r.devs);
	free(r.per);
	free(r.pass_rates);
	return ret;
}

/* ---- the pick ---- */

static void workload_bests(struct bx_rec_result *res)
{
	for (size_t w = 0; w < res->nr_workloads; w++) {
		size_t best = 0;

		for (size_t c = 1; c < res->nr_candidates; c++)
			if (res->candidates[c].rates[w] > res->candidates[best].rates[w] * (1 + BX_REC_TIE))
				best = c;
		res->workloads[w].best = best;
	}
}

static void worst_ratios(struct bx_rec_result *res)
{
	for (size_t c = 0; c < res->nr_candidates; c++) {
		struct bx_rec_candidate *cand = &res->candidates[c];

		cand->worst_ratio = 1e9;
		for (size_t w = 0; w < res->nr_workloads; w++) {
			double best = res->candidates[res->workloads[w].best].rates[w];
			double ratio = best > 0 ? cand->rates[w] / best : 1.0;

			if (ratio < cand->worst_ratio) {
				cand->worst_ratio = ratio;
				cand->worst_workload = w;
			}
		}
	}
}

/* The candidate with the best worst ratio; an earlier one wins a tie. */
static size_t pick(const struct bx_rec_result *res)
{
	size_t best = 0;

	for (size_t c = 1; c < res->nr_candidates; c++)
		if (res->candidates[c].worst_ratio >
		    res->candidates[best].worst_ratio * (1 + BX_REC_TIE))
			best = c;
	return best;
}

static void appendf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void appendf(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/* The fastest other candidate of workload @w than @not. */
static size_t runner_up(const struct bx_rec_result *res, size_t w, size_t not)
{
	size_t best = not == 0 ? 1 : 0;

	for (size_t c = 0; c < res->nr_candidates; c++)
		if (c != not && res->candidates[c].rates[w] > res->candidates[best].rates[w])
			best = c;
	return best;
}

/*
 * A candidate a little ahead of the pick (within BX_REC_TIE) lost a tie:
 * say so where it is named, or the figures seem to contradict the pick.
 */
static void explain_tie(struct bx_rec_result *res, size_t p, double mine, double theirs)
{
	if (theirs <= mine)
		return;
	appendf(res->reason, sizeof(res->reason), " (within %.0f %% of %s: a tie, which goes "
		"to the candidate tried first: pid, round-robin, then devid by devid)",
		BX_REC_TIE * 100, res->candidates[p].policy);
}

static void reason_one(struct bx_rec_result *res, size_t p)
{
	const struct bx_rec_candidate *c = res->candidates;
	size_t second = runner_up(res, 0, p);
	char wl[64];

	bx_rec_workload_name(&res->workloads[0].w, wl, sizeof(wl));
	snprintf(res->reason, sizeof(res->reason), "with %s, %s read %.1f MiB/s", wl, c[p].policy,
		 mib(c[p].rates[0]));
	if (p != 0 && c[0].rates[0] > 0)
		appendf(res->reason, sizeof(res->reason), ", %.2fx pid (%.1f MiB/s)",
			c[p].rates[0] / c[0].rates[0], mib(c[0].rates[0]));
	if (second != 0 || p == 0) {
		appendf(res->reason, sizeof(res->reason), "; the next best, %s, %.1f MiB/s",
			c[second].policy, mib(c[second].rates[0]));
		explain_tie(res, p, c[p].rates[0], c[second].rates[0]);
	}
}

static void reason_many(struct bx_rec_result *res, size_t p)
{
	const struct bx_rec_candidate *c = res->candidates;
	size_t second = p == 0 ? 1 : 0;
	char wl[64];

	for (size_t k = 0; k < res->nr_candidates; k++)
		if (k != p && c[k].worst_ratio > c[second].worst_ratio)
			second = k;
	bx_rec_workload_name(&res->workloads[c[p].worst_workload].w, wl, sizeof(wl));
	snprintf(res->reason, sizeof(res->reason),
		 "%s comes closest to the fastest policy of every workload: at worst %.2f of it (%s)",
		 c[p].policy, c[p].worst_ratio, wl);
	if (p != 0) {
		bx_rec_workload_name(&res->workloads[c[0].worst_workload].w, wl, sizeof(wl));
		appendf(res->reason, sizeof(res->reason), "; pid at worst %.2f (%s)",
			c[0].worst_ratio, wl);
	}
	if (second != 0) {
		bx_rec_workload_name(&res->workloads[c[second].worst_workload].w, wl, sizeof(wl));
		appendf(res->reason, sizeof(res->reason), ", %s at worst %.2f (%s)",
			c[second].policy, c[second].worst_ratio, wl);
		explain_tie(res, p, c[p].worst_ratio, c[second].worst_ratio);
	}
}

/* The devid candidates of the first workload: what each device reads alone. */
static void reason_devices(struct bx_rec_result *res)
{
	const char *sep = NULL;
	char wl[64];

	bx_rec_workload_name(&res->workloads[0].w, wl, sizeof(wl));
	for (size_t c = 0; c < res->nr_candidates; c++) {
		const struct bx_rec_candidate *cand = &res->candidates[c];

		if (cand->value.kind != BX_RP_DEVID)
			continue;
		if (!sep)
			appendf(res->reason, sizeof(res->reason), "; alone, with %s:", wl);
		appendf(res->reason, sizeof(res->reason), "%s device %llu %.1f", sep ? sep : "",
			(unsigned long long)cand->value.arg, mib(cand->rates[0]));
		sep = ",";
	}
	if (sep)
		appendf(res->reason, sizeof(res->reason), " MiB/s");
}

void bx_rec_decide(struct bx_rec_result *res)
{
	size_t p;

	workload_bests(res);
	worst_ratios(res);
	p = pick(res);
	res->pick = (int)p;
	snprintf(res->recommended, sizeof(res->recommended), "%s", res->candidates[p].policy);
	if (res->nr_workloads == 1)
		reason_one(res, p);
	else
		reason_many(res, p);
	reason_devices(res);
}

bool bx_rec_passes_agree(const struct bx_rec_result *res, const double *pass_rates,
			 size_t nr_passes)
{
	size_t nc = res->nr_candidates, nw = res->nr_workloads;
	struct bx_rec_result one = *res;
	bool agree = true;

	one.candidates = malloc(nc * sizeof(*one.candidates));
	if (!one.candidates)
		return false;	/* not shown to agree */
	for (size_t p = 0; p < nr_passes && agree; p++) {
		size_t mine;

		memcpy(one.candidates, res->candidates, nc * sizeof(*one.candidates));
		for (size_t w = 0; w < nw; w++)
			for (size_t c = 0; c < nc; c++)
				one.candidates[c].rates[w] = pass_rates[(p * nw + w) * nc + c];
		workload_bests(&one);
		worst_ratios(&one);
		mine = pick(&one);
		agree = mine == (size_t)res->pick ||
			one.candidates[res->pick].worst_ratio * (1 + BX_REC_TIE) >=
			one.candidates[mine].worst_ratio;
	}
	free(one.candidates);
	return agree;
}

/* ---- against the running kernel ---- */

/* Whether the running kernel (@st) takes the pick, and why not. */
static void check_kernel(const struct bx_rp_state *st, const struct bx_mounted_fs *fs,
			 struct bx_rec_result *res)
{
	const struct bx_rec_candidate *c = &res->candidates[res->pick];
	int ret = bx_rp_check(st, fs, &c->value);

	res->offered = ret == 0;
	if (ret) {
		snprintf(res->not_offered, sizeof(res->not_offered), "%s", bx_error_message(ret));
		/* Said in the result; an error only when applying. */
		bx_error_clear();
	}
}

static int apply(const struct bx_rec_options *opts, const struct bx_mounted_fs *fs,
		 struct bx_rec_result *res)
{
	const struct bx_rec_candidate *c = &res->candidates[res->pick];
	struct bx_rp_info after;
	int ret;

	if (!res->offered)
		return bx_error(-EOPNOTSUPP, "cannot apply %s: %s", c->policy, res->not_offered);
	ret = bx_rp_switch(opts->sysfs_root, opts->config_dir, fs, &c->value, true, NULL, &after,
			   &res->changed);
	if (ret)
		return ret;
	res->applied = true;
	snprintf(res->persistent, sizeof(res->persistent), "%s", after.recorded);
	return 0;
}

static void default_workloads(struct bx_rec_result *res, const struct bx_rec_options *opts)
{
	static const struct bx_probe_workload defaults[] = {
		{ 1, false }, { 8, false }, { 1, true }, { 8, true },
	};
	const struct bx_probe_workload *w = opts->nr_workloads ? opts->workloads : defaults;
	size_t nr = opts->nr_workloads ? opts->nr_workloads : sizeof(defaults) / sizeof(defaults[0]);

	for (size_t i = 0; i < nr && i < BX_REC_MAX_WORKLOADS; i++)
		res->workloads[res->nr_workloads++].w = w[i];
}

static int read_region(const char *path, const struct bx_rec_options *opts,
		       struct bx_probe_map *map)
{
	struct bx_snapshot in;
	int ret = bx_snapshot_read_committed_used((char *const *)&path, 1, opts->sysfs_root, &in);

	if (ret)
		return ret;
	ret = bx_probe_map_build(&in, opts->sysfs_root, map);
	bx_snapshot_release(&in);
	return ret;
}

int bx_rec_run(const char *path, const struct bx_rec_options *opts, struct bx_rec_result *res)
{
	struct bx_probe_map map = { 0 };
	struct bx_mounted_fs fs;
	struct bx_rp_state st;
	int ret;

	memset(res, 0, sizeof(*res));
	res->pick = -1;
	ret = bx_mounted_open(path, &fs);
	if (ret)
		return ret;
	snprintf(res->fsid, sizeof(res->fsid), "%s", fs.fsid_str);
	snprintf(res->mountpoint, sizeof(res->mountpoint), "%s", fs.path);
	default_workloads(res, opts);
	ret = bx_rp_read(opts->sysfs_root, fs.fsid_str, &st);
	if (!ret) {
		bx_rp_format(&st.active, res->current, sizeof(res->current));
		ret = read_region(path, opts, &map);
	}
	if (ret || !map.nr_mirrored)
		goto out;
	res->affects_reads = true;
	if (!map.nr_chunks) {
		ret = bx_error(-ENODATA,
			       "%s: its RAID1-family chunks hold nothing to read yet (or have a copy on a missing device): nothing to measure",
			       path);
		goto out;
	}
	res->metadata_region = map.metadata;
	res->region_bytes = map.length;
	ret = make_candidates(res, &map);
	if (!ret)
		ret = probe(&map, opts, res);
	if (ret)
		goto out;
	check_kernel(&st, &fs, res);
	if (opts->apply)
		ret = apply(opts, &fs, res);
out:
	bx_probe_map_free(&map);
	bx_mounted_close(&fs);
	return ret;
}

void bx_rec_result_free(struct bx_rec_result *res)
{
	free(res->candidates);
	free(res->devices);
	res->candidates = NULL;
	res->devices = NULL;
}
