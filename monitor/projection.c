/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pace and days left from a window of history. See projection.h. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"
#include "monitor/projection.h"

#define SECONDS_PER_DAY 86400.0

/* The fit of one figure (at @offset in struct bx_mon_figures) over time. */
static int fit_figure(const struct bx_mon_figures *figs, size_t n, size_t offset,
		      struct bx_trend_sample *scratch, struct bx_trend *trend)
{
	for (size_t i = 0; i < n; i++)
		scratch[i] = (struct bx_trend_sample){
			(double)figs[i].time,
			(double)*(const uint64_t *)((const char *)&figs[i] + offset),
		};
	return bx_trend_fit(scratch, n, trend);
}

/* Days from the sample's time to days from @age seconds later. */
static void from_now(struct bx_trend_days *d, int64_t age)
{
	double shift = age > 0 ? (double)age / SECONDS_PER_DAY : 0;
	double *all[] = { &d->days, &d->days_low, &d->days_high };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		*all[i] = *all[i] > shift ? *all[i] - shift : 0;
}

/*
 * Seconds until @left bytes of metadata room are consumed: by metadata
 * growing at @m bytes/s throughout, and by data growing at @d, which fills
 * the free space in its chunks first (@in_chunks bytes), then allocates new
 * chunks until its free space (@data_free) is gone, taking @take bytes of
 * the metadata room on the way, evenly. Consumption is linear in each of
 * the three stretches; the first one that reaches @left decides.
 */
static double metadata_seconds(double left, double m, double d, double in_chunks,
			       double data_free, double take)
{
	double t0 = INFINITY, t1 = INFINITY, used = 0, start = 0;
	double end[3], rate[3];

	if (left <= 0)
		return 0;
	if (d > 0 && take > 0 && data_free > in_chunks) {
		t0 = in_chunks / d;
		t1 = data_free / d;
	}
	end[0] = t0;
	rate[0] = m;
	end[1] = t1;
	rate[1] = m + (t1 > t0 && !isinf(t1) ? take / (t1 - t0) : 0);
	end[2] = INFINITY;
	rate[2] = m;
	for (size_t i = 0; i < 3 && !isinf(start); i++) {
		double span = end[i] - start;

		if (rate[i] > 0 && used + rate[i] * span >= left)
			return start + (left - used) / rate[i];
		used += rate[i] * span;
		start = end[i];
	}
	return INFINITY;
}

/* The metadata's days left from the fits of metadata and data use (data's may be missing). */
static void metadata_days(const struct bx_mon_projection *p, struct bx_trend_days *days)
{
	const struct bx_mon_figures *l = &p->latest;
	bool data_ok = p->data.status == BX_TREND_OK;
	double in_chunks = l->data_size > l->data_used ? (double)(l->data_size - l->data_used) : 0;
	double take = l->metadata_room > l->metadata_room_after_data ?
		      (double)(l->metadata_room - l->metadata_room_after_data) : 0;
	double left = (double)p->metadata_left;
	const struct { double *out; double m, d; } cases[] = {
		{ &days->days, p->metadata.slope, data_ok ? p->data.slope : 0 },
		{ &days->days_low, p->metadata.slope_high, data_ok ? p->data.slope_high : 0 },
		{ &days->days_high, p->metadata.slope_low, data_ok ? p->data.slope_low : 0 },
	};

	for (size_t i = 0; i < 3; i++)
		*cases[i].out = metadata_seconds(left, cases[i].m, cases[i].d, in_chunks,
						 (double)l->free_estimated, take) / SECONDS_PER_DAY;
	days->exhausts = !isinf(days->days);
}

struct bx_mon_project_opts bx_mon_project_defaults(int64_t now)
{
	return (struct bx_mon_project_opts){ now, BX_MON_DEFAULT_WINDOW,
					     BX_MON_DEFAULT_MIN_HISTORY, BX_MON_DEFAULT_BURST_DAYS };
}

/*
 * The growth of a use from the oldest to the newest sample; a burst when at
 * that pace @room would last less than @burst_days.
 */
static struct bx_mon_seen seen(double oldest, double newest, int64_t span, double room,
			       double burst_days)
{
	double growth = newest - oldest;

	return (struct bx_mon_seen){
		growth,
		growth > 0 && span > 0 && room < growth / (double)span * burst_days * SECONDS_PER_DAY,
	};
}

/* Learning: what the samples show, told and not fitted. */
static void learn(struct bx_mon_projection *p, double burst_days)
{
	const struct bx_mon_figures *f = &p->first, *l = &p->latest;

	p->metadata.status = p->data.status = BX_TREND_NOT_FITTED;
	p->metadata.nr_samples = p->data.nr_samples = p->nr_samples;
	p->metadata_seen = seen((double)f->metadata_used, (double)l->metadata_used, p->span,
				(double)p->metadata_left, burst_days);
	p->data_seen = seen((double)f->data_used, (double)l->data_used, p->span,
			    (double)p->data_left, burst_days);
}

/* Fits both uses and projects their days; -ENOMEM. */
static int project(const struct bx_mon_figures *figs, size_t n, struct bx_mon_projection *p)
{
	const struct bx_mon_figures *last = &figs[n - 1];
	struct bx_trend_sample *scratch = calloc(n, sizeof(*scratch));
	int ret;

	if (!scratch)
		return bx_error(-ENOMEM, "out of memory");
	ret = fit_figure(figs, n, offsetof(struct bx_mon_figures, metadata_used), scratch,
			 &p->metadata);
	if (!ret)
		ret = fit_figure(figs, n, offsetof(struct bx_mon_figures, data_used), scratch,
				 &p->data);
	free(scratch);
	if (ret)
		return bx_error(ret, "out of memory");
	if (p->metadata.status == BX_TREND_OK) {
		metadata_days(p, &p->metadata_days);
		from_now(&p->metadata_days, p->now - last->time);
	}
	if (p->data.status == BX_TREND_OK) {
		bx_trend_days_left(&p->data, (double)p->data_left, &p->data_days);
		from_now(&p->data_days, p->now - last->time);
	}
	return 0;
}

int bx_mon_project_figures(const struct bx_mon_figures *figs, size_t n,
			   const struct bx_mon_project_opts *opts, struct bx_mon_projection *p)
{
	const struct bx_mon_figures *last;

	memset(p, 0, sizeof(*p));
	p->now = opts->now;
	p->window = opts->window;
	p->min_history = opts->min_history;
	p->nr_samples = n;
	p->learning = true;
	p->metadata.status = p->data.status = BX_TREND_TOO_FEW_SAMPLES;
	if (!n)
		return 0;
	last = &figs[n - 1];
	p->have_latest = true;
	p->first = figs[0];
	p->latest = *last;
	p->span = last->time - figs[0].time;
	p->metadata_left = bx_mon_metadata_left(last);
	p->data_left = last->free_estimated;
	p->learning = n < BX_TREND_MIN_SAMPLES || p->span < opts->min_history;
	if (p->learning) {
		learn(p, opts->burst_days);
		return 0;
	}
	return project(figs, n, p);
}

int bx_mon_project(struct bx_mon_db *db, int64_t fs_id, const struct bx_mon_project_opts *opts,
		   struct bx_mon_projection *p)
{
	struct bx_mon_figures *figs = NULL;
	size_t n = 0;
	int ret;

	ret = bx_mon_db_figures(db, fs_id, opts->now - opts->window, opts->now, &figs, &n);
	if (!ret)
		ret = bx_mon_project_figures(figs, n, opts, p);
	free(figs);
	return ret;
}

uint64_t bx_mon_metadata_left(const struct bx_mon_figures *f)
{
	return f->metadata_room > f->global_reserve ? f->metadata_room - f->global_reserve : 0;
}

bool bx_mon_projection_ok(const struct bx_mon_projection *p)
{
	return !p->learning && p->metadata.status == BX_TREND_OK && p->data.status == BX_TREND_OK;
}

/* Appends "metadata +400MiB" (what a learning window shows) to @buf, if it grew. */
static void seen_text(const char *what, const struct bx_mon_seen *s, char *buf, size_t len)
{
	size_t used = strlen(buf);
	char size[40];

	if (!(s->growth > 0) || used >= len)
		return;
	bx_pretty_size((uint64_t)s->growth, 0, size, sizeof(size));
	snprintf(buf + used, len - used, "%s%s +%s", used ? ", " : "", what, size);
}

static void learning_reason(const struct bx_mon_projection *p, char *buf, size_t len)
{
	char span[32], need[32], grew[160] = "";
	size_t used;

	bx_format_duration(p->span, span, sizeof(span));
	bx_format_duration(p->min_history, need, sizeof(need));
	used = (size_t)snprintf(buf, len, "learning: %zu sample%s over %s of the %s needed",
				p->nr_samples, p->nr_samples == 1 ? "" : "s", span, need);
	if (p->nr_samples < BX_TREND_MIN_SAMPLES && used < len)
		used += (size_t)snprintf(buf + used, len - used, " (and at least %d samples)",
					 BX_TREND_MIN_SAMPLES);
	seen_text("metadata", &p->metadata_seen, grew, sizeof(grew));
	seen_text("data", &p->data_seen, grew, sizeof(grew));
	if (grew[0] && used < len)
		snprintf(buf + used, len - used, "; %s in %s%s", grew, span,
			 p->metadata_seen.burst || p->data_seen.burst ?
			 ", a burst, not projected" : ", not projected");
}

void bx_mon_projection_reason(const struct bx_mon_projection *p, char *buf, size_t len)
{
	char window[32];

	buf[0] = '\0';
	if (!p->nr_samples) {
		bx_format_duration(p->window, window, sizeof(window));
		snprintf(buf, len, "no sample in the last %s", window);
	} else if (p->learning) {
		learning_reason(p, buf, len);
	} else if (!bx_mon_projection_ok(p)) {
		snprintf(buf, len, "%s", bx_trend_status_str(p->metadata.status != BX_TREND_OK ?
							      p->metadata.status : p->data.status));
	}
}
