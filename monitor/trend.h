/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The trend of a quantity over time, robust to noise and to one-off jumps,
 * and how long a remaining amount lasts at that pace. Pure: arrays in,
 * numbers out, no I/O.
 *
 * The fit (bx_trend_fit):
 *  1. the samples are reduced to at most BX_TREND_MAX_POINTS points, one per
 *     equal slice of their time span (the median time and the median value
 *     of the samples in it), so a year of 5-minute samples costs as little
 *     as a month of daily ones, and a burst of samples taken seconds apart
 *     counts as one moment, not as many votes;
 *  2. one-off jumps are found: steps between neighbouring points that the
 *     typical pace does not explain (more than BX_TREND_JUMP_SCALE robust
 *     standard deviations, from the median absolute deviation, away from
 *     it, the deviation taken as at least BX_TREND_MIN_SPREAD). Up to BX_TREND_MAX_ONE_OFF of them in a window — a balance, a
 *     deletion, a large copy — cut the series into stretches; more are a
 *     pattern (a nightly backup, a rotation) and stay part of the trend;
 *  3. the slope is the Theil–Sen estimate: the median of the slopes of all
 *     pairs of points within one stretch (the pooled form used for seasonal
 *     series), and its 95 % range the usual one from Kendall's S (ranks
 *     (N -+ 1.96 sqrt(Var S)) / 2 of the sorted slopes).
 */
#ifndef BTRFSX_TREND_H
#define BTRFSX_TREND_H

#include <stdbool.h>
#include <stddef.h>

#define BX_TREND_MIN_SAMPLES 3
#define BX_TREND_MAX_POINTS 256
#define BX_TREND_JUMP_SCALE 8.0
#define BX_TREND_MAX_ONE_OFF 3
/*
 * The least robust spread a one-off is measured against (bytes): on quiet,
 * noise-free or quantized use (whole 16 KiB nodes) the spread is 0, and
 * every rounding of a step would be a "jump" — a few of them excluded from
 * the pace, or more than BX_TREND_MAX_ONE_OFF cancelling the real one-offs.
 * A one-off moves at least BX_TREND_JUMP_SCALE times this.
 */
#define BX_TREND_MIN_SPREAD (1024.0 * 1024.0)

struct bx_trend_sample {
	double t;	/* seconds */
	double y;
};

enum bx_trend_status {
	BX_TREND_OK,
	BX_TREND_TOO_FEW_SAMPLES,	/* fewer than BX_TREND_MIN_SAMPLES */
	BX_TREND_NO_TIME_SPAN,		/* all samples at one time */
	BX_TREND_TOO_FEW_MOMENTS,	/* step 1 left fewer than BX_TREND_MIN_SAMPLES points */
	BX_TREND_NOT_FITTED,		/* the caller did not fit (too little history) */
};

struct bx_trend {
	enum bx_trend_status status;
	size_t nr_samples;		/* given */
	size_t nr_points;		/* after step 1 */
	size_t nr_jumps;		/* one-off jumps left out */
	double slope;			/* y per second */
	double slope_low;		/* the 95 % range */
	double slope_high;
};

/*
 * Fits @samples (@n of them, in time order). Returns 0 with @trend filled
 * (its status says whether there is a slope), or -ENOMEM.
 */
int bx_trend_fit(const struct bx_trend_sample *samples, size_t n, struct bx_trend *trend);

/* A short reason for a status that is not BX_TREND_OK ("" for OK). */
const char *bx_trend_status_str(enum bx_trend_status status);

/* How long @remaining lasts at the fitted pace, in days. */
struct bx_trend_days {
	bool exhausts;			/* the pace consumes it (slope > 0) */
	double days;			/* INFINITY when it does not */
	double days_low;		/* soonest, at the range's fastest pace */
	double days_high;		/* latest; INFINITY when the range includes no growth */
};

/* @remaining <= 0 is gone: 0 days. @trend must have status BX_TREND_OK. */
void bx_trend_days_left(const struct bx_trend *trend, double remaining,
			struct bx_trend_days *days);

#endif
