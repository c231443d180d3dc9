/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The robust trend fit (monitor/trend.c): known slopes under noise, one-off
 * jumps, patterns; and the projections made from it (monitor/projection.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "monitor/projection.h"
#include "monitor/trend.h"
#include "tests/unit/unit.h"

#define DAY 86400.0
#define MIN5 300.0

/* A fixed pseudo-random sequence in [-1, 1): the same noise on every run. */
static double noise(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*state >> 11) / (double)(1ULL << 52) - 1.0;
}

static bool near(double value, double want, double rel)
{
	return fabs(value - want) <= rel * fabs(want);
}

static struct bx_trend fit(const struct bx_trend_sample *s, size_t n)
{
	struct bx_trend tr;

	CHECK(bx_trend_fit(s, n, &tr) == 0);
	CHECK(tr.nr_samples == n);
	return tr;
}

/* y = 1000 + rate * t exactly: every estimate is the rate. */
static void test_exact_line(void)
{
	struct bx_trend_sample s[10];
	struct bx_trend tr;
	struct bx_trend_days d;

	for (int i = 0; i < 10; i++)
		s[i] = (struct bx_trend_sample){ i * DAY, 1000 + 50.0 * i };
	tr = fit(s, 10);
	CHECK(tr.status == BX_TREND_OK);
	CHECK(near(tr.slope, 50 / DAY, 1e-9));
	CHECK(near(tr.slope_low, 50 / DAY, 1e-9) && near(tr.slope_high, 50 / DAY, 1e-9));
	CHECK(tr.nr_jumps == 0 && tr.nr_points == 10);
	bx_trend_days_left(&tr, 500, &d);
	CHECK(d.exhausts && near(d.days, 10, 1e-9) && near(d.days_low, 10, 1e-9));
	bx_trend_days_left(&tr, -1, &d);
	CHECK(d.exhausts && d.days == 0 && d.days_high == 0);
}

static void test_too_little(void)
{
	struct bx_trend_sample s[3] = { { 0, 1 }, { DAY, 2 }, { DAY, 3 } };
	struct bx_trend tr;

	tr = fit(s, 2);
	CHECK(tr.status == BX_TREND_TOO_FEW_SAMPLES);
	tr = fit(s, 0);
	CHECK(tr.status == BX_TREND_TOO_FEW_SAMPLES);
	s[0].t = DAY;
	tr = fit(s, 3);
	CHECK(tr.status == BX_TREND_NO_TIME_SPAN);
	CHECK(*bx_trend_status_str(BX_TREND_TOO_FEW_SAMPLES));
	CHECK(!*bx_trend_status_str(BX_TREND_OK));
}

/* Not consumed: shrinking or flat never runs out. */
static void test_not_growing(void)
{
	struct bx_trend_sample s[20];
	struct bx_trend_days d;
	struct bx_trend tr;

	for (int i = 0; i < 20; i++)
		s[i] = (struct bx_trend_sample){ i * DAY, 5000 - 10.0 * i };
	tr = fit(s, 20);
	CHECK(tr.status == BX_TREND_OK && tr.slope < 0);
	bx_trend_days_left(&tr, 100, &d);
	CHECK(!d.exhausts && isinf(d.days) && isinf(d.days_high) && isinf(d.days_low));
}

/*
 * Daily samples at jittered times, 1 MiB/day measured with +-512 KiB of
 * noise: within 5 %, and the 95 % range holds the true pace.
 */
static void test_measurement_noise(void)
{
	struct bx_trend_sample s[60];
	uint64_t state = 42;
	struct bx_trend tr;

	for (int i = 0; i < 60; i++) {
		double t = i * DAY + 3600 * noise(&state);

		s[i] = (struct bx_trend_sample){ t, 1048576 * t / DAY + 524288 * noise(&state) };
	}
	tr = fit(s, 60);
	CHECK(tr.status == BX_TREND_OK);
	CHECK(near(tr.slope * DAY, 1048576, 0.05));
	CHECK(tr.slope_low * DAY < 1048576 && tr.slope_high * DAY > 1048576);
	CHECK(tr.slope_low < tr.slope && tr.slope < tr.slope_high);
}

/*
 * Each day adds 1 MiB +-40 %: the samples are a random walk around the
 * pace. The estimate is within 5 %; the range describes these samples'
 * trend (their own mean pace), so it holds the estimate, not necessarily
 * the generator's rate.
 */
static void test_increment_noise(void)
{
	struct bx_trend_sample s[60];
	uint64_t state = 42;
	double y = 0;
	struct bx_trend tr;

	for (int i = 0; i < 60; i++) {
		s[i] = (struct bx_trend_sample){ i * DAY, y };
		y += 1048576 * (1 + 0.4 * noise(&state));
	}
	tr = fit(s, 60);
	CHECK(tr.status == BX_TREND_OK && tr.nr_jumps == 0);
	CHECK(near(tr.slope * DAY, 1048576, 0.05));
	CHECK(tr.slope_low < tr.slope && tr.slope < tr.slope_high);
}

/*
 * Growth with noise, then a deletion in the middle and a balance near the
 * end (both one-off drops): the fit keeps the pace; a plain Theil-Sen over
 * all pairs would not.
 */
static void test_one_off_jumps(void)
{
	struct bx_trend_sample s[40];
	uint64_t state = 7;
	double y = 1e9;
	struct bx_trend tr;

	for (int i = 0; i < 40; i++) {
		if (i == 20)
			y -= 300e6;		/* deletion: 30 days' worth */
		if (i == 33)
			y -= 100e6;		/* balance */
		s[i] = (struct bx_trend_sample){ i * DAY, y };
		y += 10e6 * (1 + 0.3 * noise(&state));
	}
	tr = fit(s, 40);
	CHECK(tr.status == BX_TREND_OK);
	CHECK(tr.nr_jumps == 2);
	CHECK(near(tr.slope * DAY, 10e6, 0.05));
}

/* A nightly backup: +50 GB once a day, 5-minute samples for 30 days: a pattern, not jumps. */
static void test_staircase(void)
{
	size_t n = (size_t)(30 * DAY / MIN5);
	struct bx_trend_sample *s = malloc(n * sizeof(*s));
	struct bx_trend tr;

	for (size_t i = 0; i < n; i++)
		s[i] = (struct bx_trend_sample){ i * MIN5, 50e9 * floor(i * MIN5 / DAY) };
	tr = fit(s, n);
	CHECK(tr.status == BX_TREND_OK);
	CHECK(tr.nr_points == BX_TREND_MAX_POINTS);
	CHECK(tr.nr_jumps == 0);
	CHECK(near(tr.slope * DAY, 50e9, 0.05));
	free(s);
}

/* A rotation: a new backup and the oldest deleted every night: no growth. */
static void test_rotation(void)
{
	struct bx_trend_sample s[120];
	struct bx_trend tr;

	for (int i = 0; i < 120; i++)
		s[i] = (struct bx_trend_sample){ i * DAY / 4, 1e12 + (i % 4 == 3 ? 50e9 : 0) };
	tr = fit(s, 120);
	CHECK(tr.status == BX_TREND_OK);
	CHECK(fabs(tr.slope * DAY) < 1e6);
}

/* Flat with two small bumps: leaving the bumps out never makes growth up. */
static void test_flat_with_bumps(void)
{
	struct bx_trend_sample s[30];
	struct bx_trend tr;

	for (int i = 0; i < 30; i++)
		s[i] = (struct bx_trend_sample){ i * DAY, 4096.0 * 1000 + (i >= 10) * 16384 -
								 (i >= 20) * 16384 };
	tr = fit(s, 30);
	CHECK(tr.status == BX_TREND_OK);
	CHECK(tr.slope == 0);
}

/*
 * Noise-free growth in whole 16 KiB nodes and one balance of +1 GB: the
 * robust spread of the steps is 0, and the rounding of each step must not
 * count as a one-off (more than BX_TREND_MAX_ONE_OFF of those would cancel
 * them all and leave the balance in the pace).
 */
static void test_quantized_with_one_off(void)
{
	struct bx_trend_sample s[40];
	struct bx_trend tr;

	for (int i = 0; i < 40; i++) {
		double y = 16384.0 * floor((1e9 + 10e6 * i) / 16384) + (i >= 25) * 1e9;

		s[i] = (struct bx_trend_sample){ i * DAY, y };
	}
	tr = fit(s, 40);
	CHECK(tr.status == BX_TREND_OK);
	CHECK(tr.nr_jumps == 1);
	CHECK(near(tr.slope * DAY, 10e6, 0.01));
}

/* A year of 5-minute samples: reduced to BX_TREND_MAX_POINTS, pace kept. */
static void test_year(void)
{
	size_t n = (size_t)(365 * DAY / MIN5);
	struct bx_trend_sample *s = malloc(n * sizeof(*s));
	uint64_t state = 3;
	struct bx_trend tr;

	for (size_t i = 0; i < n; i++)
		s[i] = (struct bx_trend_sample){ i * MIN5,
						 2e6 * (i * MIN5 / DAY) + 5e5 * noise(&state) };
	tr = fit(s, n);
	CHECK(tr.status == BX_TREND_OK && tr.nr_points == BX_TREND_MAX_POINTS);
	CHECK(near(tr.slope * DAY, 2e6, 0.01));
	free(s);
}

#define MiB 1048576.0

/* @n daily samples: metadata and data use growing at @meta and @data bytes a day. */
static void daily(struct bx_mon_figures *f, size_t n, double meta, double data)
{
	for (size_t i = 0; i < n; i++)
		f[i] = (struct bx_mon_figures){
			.time = (int64_t)(i * DAY),
			.metadata_used = (uint64_t)(100 * MiB + meta * (double)i),
			.data_size = (uint64_t)(1000 * MiB + data * (double)i),
			.data_used = (uint64_t)(1000 * MiB + data * (double)i),
			.metadata_room = (uint64_t)(100 * MiB),
			.metadata_room_after_data = (uint64_t)(100 * MiB),
			.global_reserve = (uint64_t)(10 * MiB),
			.free_estimated = (uint64_t)(500 * MiB),
			.free_strict = (uint64_t)(400 * MiB),
		};
}

/* The projection of @n figures at @now with the defaults (30-day window, 1 day to learn). */
static int project(const struct bx_mon_figures *f, size_t n, int64_t now,
		   struct bx_mon_projection *p)
{
	struct bx_mon_project_opts opts = bx_mon_project_defaults(now);

	return bx_mon_project_figures(f, n, &opts, p);
}

/*
 * Metadata alone: (room - reserve) / pace; data: free_estimated / pace, not
 * free_strict (what data can take, not what it takes without the metadata
 * devices' room); days count from now.
 */
static void test_projection_alone(void)
{
	struct bx_mon_figures f[10];
	struct bx_mon_projection p;

	daily(f, 10, 1 * MiB, 10 * MiB);
	CHECK(project(f, 10, f[9].time, &p) == 0);
	CHECK(bx_mon_projection_ok(&p) && p.nr_samples == 10 && p.have_latest);
	CHECK(p.metadata_left == (uint64_t)(90 * MiB));
	CHECK(near(p.metadata_days.days, 90, 1e-9) && p.metadata_days.exhausts);
	CHECK(p.data_left == (uint64_t)(500 * MiB) && near(p.data_days.days, 50, 1e-9));
	CHECK(project(f, 10, f[9].time + (int64_t)(10 * DAY), &p) == 0);
	CHECK(near(p.metadata_days.days, 80, 1e-9) && near(p.data_days.days, 40, 1e-9));
}

/*
 * Data takes metadata's room: data grows 10 MiB a day, fills the 20 MiB free
 * in its chunks in 2 days, then allocates chunks for its other 480 MiB in
 * 48 days, taking 144 of the 194 MiB room (3 MiB a day). Metadata grows
 * 1 MiB a day: of the 184 MiB left above the reserve, 2 go in the first
 * 2 days, the other 182 at 4 MiB a day: 2 + 45.5 = 47.5 days.
 */
static void test_projection_data_takes_room(void)
{
	struct bx_mon_figures f[10];
	struct bx_mon_projection p;

	daily(f, 10, 1 * MiB, 10 * MiB);
	for (size_t i = 0; i < 10; i++)
		f[i].data_size += (uint64_t)(20 * MiB);
	f[9].metadata_room = (uint64_t)(194 * MiB);
	f[9].metadata_room_after_data = (uint64_t)(50 * MiB);
	CHECK(project(f, 10, f[9].time, &p) == 0);
	CHECK(near(p.metadata_days.days, 47.5, 1e-9));
	/* data does not grow: only metadata consumes the room */
	daily(f, 10, 1 * MiB, 0);
	f[9].metadata_room = (uint64_t)(200 * MiB);
	f[9].metadata_room_after_data = (uint64_t)(50 * MiB);
	CHECK(project(f, 10, f[9].time, &p) == 0);
	CHECK(near(p.metadata_days.days, 190, 1e-9) && !p.data_days.exhausts);
	/* the room outlasts data (150 at 3.1 MiB a day for 50 days): the rest at 0.1 a day */
	daily(f, 10, 0.1 * MiB, 10 * MiB);
	f[9].metadata_room = (uint64_t)(200 * MiB);
	f[9].metadata_room_after_data = (uint64_t)(50 * MiB);
	CHECK(project(f, 10, f[9].time, &p) == 0);
	CHECK(near(p.metadata_days.days, 400, 1e-4));
}

static void test_projection_too_little(void)
{
	struct bx_mon_figures f[2];
	struct bx_mon_projection p;

	daily(f, 2, 1 * MiB, 1 * MiB);
	CHECK(project(f, 2, f[1].time, &p) == 0);
	CHECK(!bx_mon_projection_ok(&p) && p.have_latest && p.nr_samples == 2);
	CHECK(p.learning && p.metadata.status == BX_TREND_NOT_FITTED);
	CHECK(project(f, 0, 0, &p) == 0);
	CHECK(!p.have_latest && !bx_mon_projection_ok(&p));
}

int main(void)
{
	test_exact_line();
	test_too_little();
	test_not_growing();
	test_measurement_noise();
	test_increment_noise();
	test_one_off_jumps();
	test_staircase();
	test_rotation();
	test_flat_with_bumps();
	test_quantized_with_one_off();
	test_year();
	test_projection_alone();
	test_projection_data_takes_room();
	test_projection_too_little();
	return unit_summary();
}
