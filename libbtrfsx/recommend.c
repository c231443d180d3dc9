/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Read-policy recommendations: the public face of recommend/recommend.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/fields.h"
#include "libbtrfsx/libbtrfsx-private.h"
#include "recommend/recommend.h"

_Static_assert(BTRFSX_RECOMMEND_MAX_WORKLOADS == BX_REC_MAX_WORKLOADS,
	       "the public and the engine's workload counts differ");

/*
 * The engine reports progress through a void callback and watches one cancel
 * flag; the caller's callback may cancel by its return value, so the engine
 * watches this relay's flag, set from the caller's at each report.
 */
struct relay {
	const struct btrfsx_recommend_options *opts;
	volatile sig_atomic_t stop;
};

static void relay_progress(void *arg, size_t done, size_t total, double seconds)
{
	struct relay *relay = arg;

	if ((relay->opts->progress &&
	     relay->opts->progress(relay->opts->progress_arg, done, total, seconds)) ||
	    (relay->opts->cancel && __atomic_load_n(relay->opts->cancel, __ATOMIC_RELAXED)))
		__atomic_store_n(&relay->stop, 1, __ATOMIC_RELAXED);
}

static int engine_options(const struct btrfsx_recommend_options *opts, struct relay *relay,
			  const char *sysfs_root, const char *config_dir,
			  struct bx_rec_options *engine)
{
	static const unsigned int default_readers[] = { 1, 8 };
	const unsigned int *readers = opts->readers ? opts->readers : default_readers;
	size_t nr = opts->readers ? opts->nr_readers : 2;
	unsigned int patterns = opts->patterns ? opts->patterns :
				BTRFSX_RECOMMEND_SEQUENTIAL | BTRFSX_RECOMMEND_RANDOM;

	*engine = (struct bx_rec_options){
		.seconds = opts->seconds, .apply = opts->apply, .sysfs_root = sysfs_root,
		.config_dir = config_dir, .cancel = &relay->stop, .progress = relay_progress,
		.progress_arg = relay,
	};
	if (!nr || nr > BX_REC_MAX_WORKLOADS / 2 || opts->seconds < 0 ||
	    (patterns & ~(BTRFSX_RECOMMEND_SEQUENTIAL | BTRFSX_RECOMMEND_RANDOM)))
		return bx_error(-EINVAL, "invalid options: 1 to %d reader counts, seconds >= 0, "
				"patterns BTRFSX_RECOMMEND_SEQUENTIAL and/or _RANDOM",
				BX_REC_MAX_WORKLOADS / 2);
	for (int random = 0; random <= 1; random++) {
		if (!(patterns & (random ? BTRFSX_RECOMMEND_RANDOM : BTRFSX_RECOMMEND_SEQUENTIAL)))
			continue;
		for (size_t i = 0; i < nr; i++) {
			if (!readers[i] || readers[i] > BX_PROBE_MAX_READERS)
				return bx_error(-EINVAL, "invalid reader count %u (1 to %d)", readers[i],
						BX_PROBE_MAX_READERS);
			engine->workloads[engine->nr_workloads++] =
				(struct bx_probe_workload){ readers[i], random };
		}
	}
	return 0;
}

static void public_candidate(const struct bx_rec_candidate *in,
			     struct btrfsx_recommend_candidate *out)
{
	BX_REC_CANDIDATE_FIELDS(BX_FIELD_COPY)
	memcpy(out->rates, in->rates, sizeof(out->rates));
}

static void public_device(const struct bx_rec_device *in, struct btrfsx_recommend_device *out)
{
	BX_REC_DEVICE_FIELDS(BX_FIELD_COPY)
}

static struct btrfsx_recommendation *public_result(const struct bx_rec_result *in)
{
	struct btrfsx_recommendation *out = calloc(1, sizeof(*out));

	if (!out)
		return NULL;
	out->candidates = calloc(in->nr_candidates + 1, sizeof(*out->candidates));
	out->devices = calloc(in->nr_devices + 1, sizeof(*out->devices));
	if (!out->candidates || !out->devices) {
		btrfsx_recommendation_free(out);
		return NULL;
	}
	BX_REC_RESULT_FIELDS(BX_FIELD_COPY)
	for (size_t w = 0; w < in->nr_workloads; w++) {
		struct btrfsx_recommend_workload *pw = &out->workloads[w];

		pw->readers = in->workloads[w].w.readers;
		pw->random = in->workloads[w].w.random;
		if (in->nr_candidates) {
			const struct bx_rec_candidate *best = &in->candidates[in->workloads[w].best];

			snprintf(pw->fastest, sizeof(pw->fastest), "%s", best->policy);
			pw->rate = best->rates[w];
		}
	}
	out->nr_workloads = in->nr_workloads;
	for (size_t i = 0; i < in->nr_candidates; i++)
		public_candidate(&in->candidates[i], &out->candidates[i]);
	out->nr_candidates = in->nr_candidates;
	for (size_t i = 0; i < in->nr_devices; i++)
		public_device(&in->devices[i], &out->devices[i]);
	out->nr_devices = in->nr_devices;
	return out;
}

PUBLIC void btrfsx_recommendation_free(struct btrfsx_recommendation *r)
{
	if (!r)
		return;
	free(r->candidates);
	free(r->devices);
	free(r);
}

PUBLIC enum btrfsx_error btrfsx_read_policy_recommend(const char *path,
						      const struct btrfsx_recommend_options *opts,
						      const char *sysfs_root, const char *config_dir,
						      struct btrfsx_recommendation **out)
{
	static const struct btrfsx_recommend_options defaults = { 0 };
	struct bx_rec_options engine;
	struct relay relay = { .opts = opts ? opts : &defaults };
	struct bx_rec_result res;
	int ret;

	bx_api_begin();
	if (!path)
		return bx_api_missing("a path");
	if (!out)
		return bx_api_missing("out");
	*out = NULL;
	ret = engine_options(relay.opts, &relay, bx_api_sysfs_root(sysfs_root),
			     bx_api_config_dir(config_dir), &engine);
	if (ret)
		return bx_api_result(ret);
	/* A flag set before the call stops the probe before its first read. */
	if (relay.opts->cancel && __atomic_load_n(relay.opts->cancel, __ATOMIC_RELAXED))
		relay.stop = 1;
	ret = bx_rec_run(path, &engine, &res);
	if (ret == -EINTR)
		ret = bx_error(-EINTR, "%s: the probe was cancelled: nothing recommended, nothing "
			       "applied", path);
	/* Filled whenever there is a recommendation, also when applying it failed. */
	if (!ret || res.pick >= 0) {
		*out = public_result(&res);
		if (!*out && !ret)
			ret = bx_error(-ENOMEM, "out of memory");
	}
	bx_rec_result_free(&res);
	return bx_api_result(ret);
}
