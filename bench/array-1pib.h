/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The simulated array the model benchmarks (bench/usage-model.c,
 * bench/plan-model.c) plan on: 24 mixed devices, 1 PiB.
 */
#ifndef BTRFSX_BENCH_ARRAY_1PIB_H
#define BTRFSX_BENCH_ARRAY_1PIB_H

#include <stdint.h>

#include "format/hints.h"

#define MiB (1024 * 1024ULL)
#define GiB (1024 * MiB)
#define TiB (1024 * GiB)

/* 4 x 4 TiB NVMe, 8 x 36 TiB, 8 x 48 TiB, 4 x 84 TiB: 1024 TiB. */
static const struct {
	int count;
	uint64_t size;
	uint64_t hint;
} layout[] = {
	{ 4, 4 * TiB, BX_HINT_METADATA_PREFERRED },
	{ 8, 36 * TiB, BX_HINT_DATA_PREFERRED },
	{ 8, 48 * TiB, BX_HINT_DATA_PREFERRED },
	{ 4, 84 * TiB, BX_HINT_DATA_ONLY },
};

#endif
