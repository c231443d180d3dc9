/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Timing for the C benchmarks (bench/usage-model.c, bench/plan-model.c, bench/hash-rate.c). */
#ifndef BTRFSX_BENCH_TIMING_H
#define BTRFSX_BENCH_TIMING_H

#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sorts @n run times ascending (few runs: insertion sort), for the median and the worst. */
static inline void bench_sort_times(double *times, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
			double t = times[j];

			times[j] = times[j - 1];
			times[j - 1] = t;
		}
}

#endif
