/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one clock durations are measured with. */
#ifndef BTRFSX_CLOCK_H
#define BTRFSX_CLOCK_H

/*
 * Seconds on the monotonic clock: only differences mean anything, and a
 * change of the wall clock (NTP, a suspended guest) does not move them.
 */
double bx_monotonic_seconds(void);

#endif
