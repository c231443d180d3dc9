/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Robust trend: binning, one-off jumps, pooled Theil–Sen. See trend.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/trend.h"

#define SECONDS_PER_DAY 86400.0
/* The 97.5 % point of the standard normal distribution: a two-sided 95 % range. */
#define Z_95 1.959963985

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n values; sorts them. */
static double median_sorting(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Which of the BX_TREND_MAX_POINTS equal slices of [@t0, @t0 + @span] holds @t. */
static size_t slice_of(double t, double t0, double span)
{
	double slice = (t - t0) / span * BX_TREND_MAX_POINTS;

	return slice < BX_TREND_MAX_POINTS - 1 ? (size_t)slice : BX_TREND_MAX_POINTS - 1;
}

/*
 * Step 1: @n samples (spanning some time) into at most BX_TREND_MAX_POINTS
 * points, one per equal slice of the time span that holds samples (median
 * time, median value). Slices of time, not runs of samples: a burst of
 * samples taken seconds apart (someone trying `record` by hand) weighs as
 * the moment it is, not as many points outvoting the days around it.
 * @scratch holds @n doubles; returns how many points were filled.
 */
static size_t reduce(const struct bx_trend_sample *s, size_t n, struct bx_trend_sample *pts,
		     double *scratch)
{
	double t0 = s[0].t, span = s[n - 1].t - s[0].t;
	size_t nr_points = 0;

	for (size_t first = 0, end; first < n; first = end) {
		size_t slice = slice_of(s[first].t, t0, span), k;

		for (end = first + 1; end < n && slice_of(s[end].t, t0, span) == slice; end++)
			;
		k = end - first;
		for (size_t i = 0; i < k; i++)
			scratch[i] = s[first + i].t;
		pts[nr_points].t = median_sorting(scratch, k);
		for (size_t i = 0; i < k; i++)
			scratch[i] = s[first + i].y;
		pts[nr_points++].y = median_sorting(scratch, k);
	}
	return nr_points;
}

/*
 * Step 2: marks jump[i] when the step from point i-1 to i is a one-off; returns
 * how many. @scratch holds 2 * n doubles.
 */
static size_t find_jumps(const struct bx_trend_sample *pts, size_t n, bool *jump, double *scratch)
{
	double *rate = scratch, *dev = scratch + n;
	size_t nr_steps = 0, nr_rates = 0, nr_jumps = 0;
	double pace, centre, spread;

	memset(jump, 0, n * sizeof(*jump));
	if (n < 3)
		return 0;
	for (size_t i = 1; i < n; i++)
		if (pts[i].t > pts[i - 1].t)
			rate[nr_rates++] = (pts[i].y - pts[i - 1].y) / (pts[i].t - pts[i - 1].t);
	if (!nr_rates)
		return 0;
	pace = median_sorting(rate, nr_rates);
	/* What each step adds beyond the typical pace; its median and robust spread. */
	for (size_t i = 1; i < n; i++)
		dev[nr_steps++] = (pts[i].y - pts[i - 1].y) - pace * (pts[i].t - pts[i - 1].t);
	memcpy(rate, dev, nr_steps * sizeof(*rate));
	centre = median_sorting(rate, nr_steps);
	for (size_t i = 0; i < nr_steps; i++)
		rate[i] = fabs(dev[i] - centre);
	spread = fmax(1.4826 * median_sorting(rate, nr_steps), BX_TREND_MIN_SPREAD);
	for (size_t i = 1; i < n; i++) {
		double off = fabs(dev[i - 1] - centre);

		if (off > BX_TREND_JUMP_SCALE * spread) {
			jump[i] = true;
			nr_jumps++;
		}
	}
	if (nr_jumps > BX_TREND_MAX_ONE_OFF) {
		memset(jump, 0, n * sizeof(*jump));
		return 0;
	}
	return nr_jumps;
}

/* Step 3: the slopes of all pairs within one stretch into @slopes; returns how many. */
static size_t pair_slopes(const struct bx_trend_sample *pts, size_t n, const bool *jump,
			  double *slopes, double *var_s)
{
	size_t nr = 0, start = 0;

	*var_s = 0;
	for (size_t end = 1; end <= n; end++) {
		double len;

		if (end < n && !jump[end])
			continue;
		/* the stretch [start, end) */
		for (size_t i = start; i < end; i++)
			for (size_t j = i + 1; j < end; j++)
				if (pts[j].t > pts[i].t)
					slopes[nr++] = (pts[j].y - pts[i].y) / (pts[j].t - pts[i].t);
		len = (double)(end - start);
		*var_s += len * (len - 1) * (2 * len + 5) / 18;
		start = end;
	}
	return nr;
}

/* The slopes at the ranks of the 95 % range; @slopes sorted. */
static void slope_range(const double *slopes, size_t nr, double var_s, struct bx_trend *tr)
{
	double c = Z_95 * sqrt(var_s);
	double lo = floor(((double)nr - c) / 2), hi = ceil(((double)nr + c) / 2);

	if (lo < 0)
		lo = 0;
	if (hi > (double)nr - 1)
		hi = (double)nr - 1;
	tr->slope_low = slopes[(size_t)lo];
	tr->slope_high = slopes[(size_t)hi];
}

static bool has_time_span(const struct bx_trend_sample *s, size_t n)
{
	return n && s[n - 1].t > s[0].t;
}

int bx_trend_fit(const struct bx_trend_sample *samples, size_t n, struct bx_trend *tr)
{
	size_t cap = n < BX_TREND_MAX_POINTS ? n : BX_TREND_MAX_POINTS;
	struct bx_trend_sample *pts = NULL;
	double *scratch = NULL, *slopes = NULL, var_s;
	bool *jump = NULL;
	size_t nr_slopes;
	int ret = 0;

	memset(tr, 0, sizeof(*tr));
	tr->nr_samples = n;
	if (n < BX_TREND_MIN_SAMPLES) {
		tr->status = BX_TREND_TOO_FEW_SAMPLES;
		return 0;
	}
	if (!has_time_span(samples, n)) {
		tr->status = BX_TREND_NO_TIME_SPAN;
		return 0;
	}
	pts = malloc(cap * sizeof(*pts));
	jump = malloc(cap * sizeof(*jump));
	scratch = malloc((n > 2 * cap ? n : 2 * cap) * sizeof(*scratch));
	slopes = malloc((cap * (cap - 1) / 2 + 1) * sizeof(*slopes));
	if (!pts || !jump || !scratch || !slopes) {
		ret = -ENOMEM;
		goto out;
	}
	tr->nr_points = reduce(samples, n, pts, scratch);
	if (tr->nr_points < BX_TREND_MIN_SAMPLES) {	/* two moments draw a line, not a range */
		tr->status = BX_TREND_TOO_FEW_MOMENTS;
		goto out;
	}
	tr->nr_jumps = find_jumps(pts, tr->nr_points, jump, scratch);
	nr_slopes = pair_slopes(pts, tr->nr_points, jump, slopes, &var_s);
	if (!nr_slopes) {	/* no stretch has two points at different times */
		tr->status = BX_TREND_NO_TIME_SPAN;
		goto out;
	}
	tr->slope = median_sorting(slopes, nr_slopes);
	slope_range(slopes, nr_slopes, var_s, tr);
	tr->status = BX_TREND_OK;
out:
	free(pts);
	free(jump);
	free(scratch);
	free(slopes);
	return ret;
}

const char *bx_trend_status_str(enum bx_trend_status status)
{
	switch (status) {
	case BX_TREND_OK:
		return "";
	case BX_TREND_TOO_FEW_SAMPLES:
		return "fewer than 3 samples";
	case BX_TREND_NO_TIME_SPAN:
		return "all samples were taken at the same time";
	case BX_TREND_TOO_FEW_MOMENTS:
		return "the samples fall in fewer than 3 moments of their time span";
	case BX_TREND_NOT_FITTED:
		return "not fitted";
	}
	return "unknown";
}

/* Days until @remaining is used at @slope (per second); INFINITY if it is not used. */
static double days_at(double remaining, double slope)
{
	if (remaining <= 0)
		return 0;
	return slope > 0 ? remaining / slope / SECONDS_PER_DAY : INFINITY;
}

void bx_trend_days_left(const struct bx_trend *tr, double remaining, struct bx_trend_days *d)
{
	d->exhausts = remaining <= 0 || tr->slope > 0;
	d->days = days_at(remaining, tr->slope);
	d->days_low = days_at(remaining, tr->slope_high);
	d->days_high = days_at(remaining, tr->slope_low);
}
