/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>

#include "common/clock.h"

double bx_monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
