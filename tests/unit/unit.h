/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A minimal unit test harness: CHECK records, the summary line is "N passed, N failed". */
#ifndef BTRFSX_UNIT_H
#define BTRFSX_UNIT_H

#include <stdio.h>

static int unit_passed, unit_failed;

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (cond) {                                                          \
			unit_passed++;                                               \
		} else {                                                             \
			unit_failed++;                                               \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
				#cond);                                              \
		}                                                                    \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                           \
	do {                                                                         \
		unsigned long long a_ = (a), b_ = (b);                               \
		if (a_ == b_) {                                                      \
			unit_passed++;                                               \
		} else {                                                             \
			unit_failed++;                                               \
			fprintf(stderr, "%s:%d: %s == %llu, expected %s == %llu\n",   \
				__FILE__, __LINE__, #a, a_, #b, b_);                 \
		}                                                                    \
	} while (0)

static inline int unit_summary(void)
{
	printf("%d passed, %d failed\n", unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}

#endif
