/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * No page without evidence (monitor/projection.c): the learning span, bursts
 * told and not projected, and the 95% range the check pages on, in the
 * situations a sysadmin meets, with simulated time: a burst right after
 * the timer is enabled, a burst of samples taken by hand, a steady leak, a
 * one-off balance, a deletion.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "monitor/projection.h"
#include "tests/unit/unit.h"

#define MiB 1048576.0
#define GiB (1024 * MiB)
#define HOUR 3600
#define DAY 86400
#define MIN5 300

/* A filesystem with 20 GiB of metadata room and 500 GiB of strict free space at the start. */
#define ROOM (20 * GiB)
#define RESERVE (512 * MiB)
#define FREE (500 * GiB)

/* The figures of a sample at @t when metadata and data use grew by @meta and @data bytes. */
static struct bx_mon_figures at(int64_t t, double meta, double data)
{
	return (struct bx_mon_figures){
		.time = t,
		.metadata_used = (uint64_t)(8 * GiB + meta),
		.data_used = (uint64_t)(100 * GiB + data),
		.data_size = (uint64_t)(100 * GiB + data),
		.metadata_room = (uint64_t)(ROOM - meta),
		.metadata_room_after_data = (uint64_t)(ROOM - meta),
		.global_reserve = (uint64_t)RESERVE,
		.free_estimated = (uint64_t)(FREE - data),
		.free_strict = (uint64_t)(FREE - data),
	};
}

/* A fixed pseudo-random sequence in [-1, 1): the same noise on every run. */
static double noise(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*state >> 11) / (double)(1ULL << 52) - 1.0;
}

static struct bx_mon_projection project(const struct bx_mon_figures *f, size_t n, int64_t now)
{
	struct bx_mon_project_opts opts = bx_mon_project_defaults(now);
	struct bx_mon_projection p;

	CHECK(bx_mon_project_figures(f, n, &opts, &p) == 0);
	return p;
}

/* The latest end of the 95% range of days left, which the check pages on. */
static double latest_days(const struct bx_mon_projection *p)
{
	return fmin(p->metadata_days.days_high, p->data_days.days_high);
}

/*
 * The first report: the timer enabled while 400 MiB of small files
 * are written, 4 samples seconds apart. Learning: the growth is told, a
 * burst (at its pace the room lasts minutes), and nothing is projected.
 */
static void test_burst_right_after_enabling(void)
{
	struct bx_mon_figures f[4];
	struct bx_mon_projection p;
	char reason[512];

	for (int i = 0; i < 4; i++)
		f[i] = at(5 * i, 100 * MiB * i, 0);
	p = project(f, 4, 15);
	CHECK(p.learning && !bx_mon_projection_ok(&p));
	CHECK(p.span == 15 && p.nr_samples == 4);
	CHECK(p.metadata_seen.growth == 300 * MiB && p.metadata_seen.burst);
	CHECK(p.data_seen.growth == 0 && !p.data_seen.burst);
	bx_mon_projection_reason(&p, reason, sizeof(reason));
	CHECK(!strcmp(reason, "learning: 4 samples over 15s of the 1d needed; "
		      "metadata +300.00MiB in 15s, a burst, not projected"));
}

/*
 * The same burst, then a day of 5-minute samples growing 10 MiB a day: once
 * the history spans a day the burst is one moment of it, and the pace is
 * the day's (the check stays quiet: years left, not 0.0 days).
 */
static void test_burst_then_a_quiet_day(void)
{
	size_t n = 4 + DAY / MIN5, i;
	struct bx_mon_figures *f = calloc(n, sizeof(*f));
	struct bx_mon_projection p;

	for (i = 0; i < 4; i++)
		f[i] = at(5 * (int64_t)i, 100 * MiB * (double)i, 0);
	for (; i < n; i++) {
		int64_t t = 15 + (int64_t)(i - 3) * MIN5;

		f[i] = at(t, 300 * MiB + 10 * MiB * (double)t / DAY, 0);
	}
	/* 12 hours in: still learning, and the growth seen is no longer a burst */
	p = project(f, 4 + 12 * HOUR / MIN5, f[3 + 12 * HOUR / MIN5].time);
	CHECK(p.learning && !p.metadata_seen.burst);
	p = project(f, n, f[n - 1].time);
	CHECK(!p.learning && bx_mon_projection_ok(&p));
	CHECK(fabs(p.metadata.slope * DAY - 10 * MiB) < 0.5 * MiB);
	CHECK(latest_days(&p) > 1000);
	free(f);
}

/*
 * Someone tries `record` by hand: 60 samples in a minute while a restore
 * writes 2 GiB of metadata, then hourly samples for two days of no growth.
 * Slices of time, not runs of samples: the minute is one point of the fit.
 */
static void test_samples_taken_by_hand(void)
{
	struct bx_mon_figures f[60 + 48];
	struct bx_mon_projection p;
	size_t n = 0;

	for (int i = 0; i < 60; i++)
		f[n++] = at(i, 2 * GiB * i / 59, 0);
	for (int h = 1; h <= 48; h++)
		f[n++] = at(59 + h * HOUR, 2 * GiB, 0);
	p = project(f, n, f[n - 1].time);
	CHECK(bx_mon_projection_ok(&p));
	CHECK(p.metadata.slope == 0 && isinf(latest_days(&p)));
}

/*
 * A steady leak: metadata grows 1 GiB a day (noise of +-50 MiB), 5-minute
 * samples. After 2 hours it is learning and a burst (told, not paged);
 * after 3 days the range is tight around the truth, 19.5 GiB / 1 GiB a day
 * less the 3 days gone, and its latest end is below the default warning.
 */
static void test_steady_leak(void)
{
	size_t n = 3 * DAY / MIN5 + 1;
	struct bx_mon_figures *f = calloc(n, sizeof(*f));
	struct bx_mon_projection p;
	uint64_t state = 7;

	for (size_t i = 0; i < n; i++) {
		int64_t t = (int64_t)i * MIN5;

		f[i] = at(t, GiB * (double)t / DAY + 50 * MiB * noise(&state), 0);
	}
	p = project(f, 2 * HOUR / MIN5 + 1, 2 * HOUR);
	CHECK(p.learning && p.metadata_seen.burst);
	p = project(f, n, f[n - 1].time);
	CHECK(bx_mon_projection_ok(&p));
	CHECK(fabs(p.metadata_days.days - 16.5) < 0.5);
	CHECK(p.metadata_days.days_low <= p.metadata_days.days &&
	      p.metadata_days.days <= p.metadata_days.days_high);
	CHECK(p.metadata_days.days_high < 17.5 && p.metadata_days.days_low > 15.5);
	CHECK(latest_days(&p) < 30);
	free(f);
}

/*
 * A one-off balance on day 3 of 6 compacts metadata (-3 GiB at once) while
 * it grows 100 MiB a day (+-1 MiB an hour): the step is left out, the pace
 * stays the truth.
 */
static void test_one_off_balance(void)
{
	struct bx_mon_figures f[6 * 24 + 1];
	struct bx_mon_projection p;
	uint64_t state = 11;

	for (int h = 0; h <= 6 * 24; h++)
		f[h] = at(h * HOUR, 100 * MiB * h / 24 - (h >= 72 ? 3 * GiB : 0) +
			  MiB * noise(&state), 0);
	p = project(f, 6 * 24 + 1, f[6 * 24].time);
	CHECK(bx_mon_projection_ok(&p) && p.metadata.nr_jumps == 1);
	CHECK(fabs(p.metadata.slope * DAY - 100 * MiB) < 1 * MiB);
}

/*
 * A deletion: data grows 20 GiB a day (+-200 MiB an hour) for 4 days, then
 * 60 GiB are deleted at once and it goes on growing: the deletion neither
 * hides the growth nor turns it into shrinking; the days are counted from
 * the room left after it.
 */
static void test_deletion(void)
{
	struct bx_mon_figures f[8 * 24 + 1];
	struct bx_mon_projection p;
	uint64_t state = 5;

	for (int h = 0; h <= 8 * 24; h++)
		f[h] = at(h * HOUR, 0, 20 * GiB * h / 24 - (h >= 96 ? 60 * GiB : 0) +
			  200 * MiB * noise(&state));
	p = project(f, 8 * 24 + 1, f[8 * 24].time);
	CHECK(bx_mon_projection_ok(&p) && p.data.nr_jumps == 1);
	CHECK(fabs(p.data.slope * DAY - 20 * GiB) < 0.5 * GiB);
	/* 500 - (160 - 60) = 400 GiB left at 20 a day */
	CHECK(fabs(p.data_days.days - 20) < 0.5);
}

/* A learning span of 0 projects from 3 samples; the window must hold a sample. */
static void test_options_and_empty_window(void)
{
	struct bx_mon_project_opts opts = bx_mon_project_defaults(40);
	struct bx_mon_figures f[3];
	struct bx_mon_projection p;
	char reason[256];

	for (int i = 0; i < 3; i++)
		f[i] = at(20 * i, 10 * MiB * i, 0);
	opts.min_history = 0;
	CHECK(bx_mon_project_figures(f, 3, &opts, &p) == 0);
	CHECK(!p.learning && bx_mon_projection_ok(&p));
	CHECK(bx_mon_project_figures(f, 0, &opts, &p) == 0);
	CHECK(!p.have_latest && !bx_mon_projection_ok(&p));
	bx_mon_projection_reason(&p, reason, sizeof(reason));
	CHECK(!strcmp(reason, "no sample in the last 30d"));
}

static void test_format_duration(void)
{
	const struct { int64_t seconds; const char *text; } cases[] = {
		{ 0, "0s" }, { 15, "15s" }, { 200, "3m 20s" }, { 3600, "1h" }, { 86400, "1d" },
		{ 2 * 86400 + 4 * 3600 + 59, "2d 4h" }, { 400 * 86400, "400d" }, { -90, "-1m 30s" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bx_format_duration(cases[i].seconds, buf, sizeof(buf));
		CHECK(!strcmp(buf, cases[i].text));
	}
}

int main(void)
{
	test_burst_right_after_enabling();
	test_burst_then_a_quiet_day();
	test_samples_taken_by_hand();
	test_steady_leak();
	test_one_off_balance();
	test_deletion();
	test_options_and_empty_window();
	test_format_duration();
	return unit_summary();
}
