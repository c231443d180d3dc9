/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pace of a maintain run (see pace.h). */
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "maintain/pace.h"

#define STEP_SECONDS 0.1
#define BUSY_RETRY_SECONDS 5.0

static int local_minute(void)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	return tm.tm_hour * 60 + tm.tm_min;
}

void bx_pacer_init(struct bx_pacer *p, const struct bx_maintain_policy *policy,
		   const struct bx_mounted_fs *mfs, const volatile int *stop,
		   int (*minute_now)(void))
{
	memset(p, 0, sizeof(*p));
	p->policy = policy;
	p->mfs = mfs;
	p->stop = stop;
	p->minute_now = minute_now ? minute_now : local_minute;
	p->start = bx_monotonic_seconds();
}

double bx_pace_budget_wait(double budget, uint64_t bytes, double elapsed)
{
	double due;

	if (budget <= 0)
		return 0;
	due = (double)bytes / (budget * 1024 * 1024);
	return due > elapsed ? due - elapsed : 0;
}

static bool stop_asked(const struct bx_pacer *p)
{
	return p->stop && *p->stop;
}

/* Sleeps @seconds in steps; false when a stop came. */
static bool sleep_for(struct bx_pacer *p, double seconds)
{
	double until = bx_monotonic_seconds() + seconds;

	while (bx_monotonic_seconds() < until) {
		struct timespec ts = { 0, (long)(STEP_SECONDS * 1e9) };

		if (stop_asked(p))
			return false;
		if (p->waiting)
			p->waiting(p->waiting_arg);
		nanosleep(&ts, NULL);
	}
	return !stop_asked(p);
}

/* /proc/pressure/io "full ... total=<microseconds>"; false when there is none. */
static bool pressure_full(uint64_t *us)
{
	FILE *fp = fopen("/proc/pressure/io", "re");
	char line[256];
	bool found = false;

	if (!fp)
		return false;
	while (!found && fgets(line, sizeof(line), fp)) {
		char *t = strstr(line, "total=");

		if (!strncmp(line, "full ", 5) && t && sscanf(t + 6, "%" SCNu64, us) == 1)
			found = true;
	}
	fclose(fp);
	return found;
}

/* io_ticks (milliseconds busy) of block device @path; false when unknown. */
static bool device_ticks(const char *path, uint64_t *ms)
{
	char copy[1024], stat_path[1200];
	uint64_t f[10];
	FILE *fp;
	bool ok;

	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(stat_path, sizeof(stat_path), "/sys/class/block/%s/stat", basename(copy));
	fp = fopen(stat_path, "re");
	if (!fp)
		return false;
	ok = fscanf(fp, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		    " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &f[0], &f[1], &f[2], &f[3],
		    &f[4], &f[5], &f[6], &f[7], &f[8], &f[9]) == 10;
	fclose(fp);
	*ms = f[9];
	return ok;
}

#define MAX_SAMPLED 64

/* Whether the devices are busy, measured over one second. */
static bool busy(struct bx_pacer *p)
{
	uint64_t before[MAX_SAMPLED], after, full0 = 0, full1 = 0;
	bool have[MAX_SAMPLED] = { false }, have_full = pressure_full(&full0);
	size_t n = p->mfs->nr_devs < MAX_SAMPLED ? p->mfs->nr_devs : MAX_SAMPLED;
	double t0 = bx_monotonic_seconds(), dt;
	bool is_busy = false;

	for (size_t i = 0; i < n; i++)
		have[i] = p->mfs->devs[i].path[0] && device_ticks(p->mfs->devs[i].path, &before[i]);
	if (!sleep_for(p, 1.0))
		return false;
	dt = bx_monotonic_seconds() - t0;
	for (size_t i = 0; i < n; i++)
		if (have[i] && device_ticks(p->mfs->devs[i].path, &after) &&
		    (double)(after - before[i]) >= dt * 1000 * p->policy->busy_device / 100)
			is_busy = true;
	if (have_full && p->policy->busy_pressure > 0 && pressure_full(&full1) &&
	    (double)(full1 - full0) >= dt * 1e6 * p->policy->busy_pressure / 100)
		is_busy = true;
	return is_busy;
}

enum bx_pace_wait bx_pacer_wait(struct bx_pacer *p, uint64_t bytes_moved)
{
	double t0 = bx_monotonic_seconds();
	double wait = bx_pace_budget_wait(p->policy->budget, bytes_moved, t0 - p->start);
	bool slept;

	if (stop_asked(p))
		return BX_PACE_STOPPED;
	if (!bx_maintain_in_window(p->policy, p->minute_now()))
		return BX_PACE_WINDOW;
	slept = wait <= 0 || sleep_for(p, wait);
	p->paused += bx_monotonic_seconds() - t0;
	if (!slept)
		return BX_PACE_STOPPED;
	while (p->policy->busy_pressure > 0 && busy(p)) {
		double waited;

		if (p->busy_paused >= BX_PACE_BUSY_MAX_SECONDS)
			return BX_PACE_BUSY;
		t0 = bx_monotonic_seconds();
		if (!sleep_for(p, BUSY_RETRY_SECONDS))
			return BX_PACE_STOPPED;
		waited = bx_monotonic_seconds() - t0;
		p->busy_paused += waited;
		p->paused += waited;
		if (!bx_maintain_in_window(p->policy, p->minute_now()))
			return BX_PACE_WINDOW;
	}
	return stop_asked(p) ? BX_PACE_STOPPED : BX_PACE_GO;
}
