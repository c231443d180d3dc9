/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Times the full usage prediction (bx_usage_compute: btrfs-progs' figures, a
 * data fill, a metadata fill, data then metadata, the strict data fill, the
 * per-class breakdown) on a simulated 1 PiB array of 24 mixed devices.
 * Built and run by bench/usage; prints one line per layout.
 *
 *   usage-model [runs]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/array-1pib.h"
#include "bench/timing.h"
#include "common/error.h"
#include "fsops/usage.h"
#include "format/ctree.h"
#include "format/hints.h"

struct setup {
	const char *name;
	uint64_t data, metadata;
	uint64_t nvme_hint;
};

/* The array right after mkfs: one data and one metadata chunk, on the first devices. */
static void build(struct bx_snapshot *in, const struct setup *s,
		  struct bx_snap_dev *devs, struct bx_snap_extent (*ext)[2],
		  struct bx_snap_space *spaces, struct bx_snap_chunk *chunks,
		  struct bx_snap_stripe *stripes)
{
	size_t n = 0;

	memset(in, 0, sizeof(*in));
	bx_kernel_common(&in->kernel);
	for (size_t l = 0; l < sizeof(layout) / sizeof(layout[0]); l++) {
		for (int i = 0; i < layout[l].count; i++, n++) {
			memset(&devs[n], 0, sizeof(devs[n]));
			devs[n].devid = n + 1;
			snprintf(devs[n].path, sizeof(devs[n].path), "/dev/sim%zu", n);
			devs[n].total_bytes = layout[l].size;
			devs[n].device_size = layout[l].size;
			devs[n].hint = l == 0 ? s->nvme_hint : layout[l].hint;
			devs[n].writable = true;
			devs[n].extents = ext[n];
		}
	}
	/* metadata (mirrored) on devids 1 and 2, data on devid 5; 1 GiB each */
	chunks[0] = (struct bx_snap_chunk){ 1 * GiB, 1 * GiB, s->metadata, 2, 1, 0 };
	stripes[0] = (struct bx_snap_stripe){ 1, 1 * MiB };
	stripes[1] = (struct bx_snap_stripe){ 2, 1 * MiB };
	ext[0][0] = (struct bx_snap_extent){ 1 * MiB, 1 * GiB, 1 * GiB };
	devs[0].nr_extents = 1;
	ext[1][0] = (struct bx_snap_extent){ 1 * MiB, 1 * GiB, 1 * GiB };
	devs[1].nr_extents = 1;
	chunks[1] = (struct bx_snap_chunk){ 2 * GiB, 1 * GiB, BTRFS_BLOCK_GROUP_DATA, 1, 1, 2 };
	stripes[2] = (struct bx_snap_stripe){ 5, 1 * MiB };
	ext[4][0] = (struct bx_snap_extent){ 1 * MiB, 1 * GiB, 2 * GiB };
	devs[4].nr_extents = 1;
	spaces[0] = (struct bx_snap_space){ s->data, 1 * GiB, 0 };
	spaces[1] = (struct bx_snap_space){ BTRFS_BLOCK_GROUP_DATA, 1 * GiB, 0 };
	spaces[2] = (struct bx_snap_space){ s->metadata, 1 * GiB, 64 * MiB };
	in->devs = devs;
	in->nr_devs = n;
	in->spaces = spaces;
	in->nr_spaces = 3;
	in->chunks = chunks;
	in->nr_chunks = 2;
	in->stripes = stripes;
	in->nr_stripes = 3;
	in->nodesize = 16384;
	in->sectorsize = 4096;
	in->hints_effective = true;
}

int main(int argc, char **argv)
{
	static const struct setup setups[] = {
		{ "raid1/raid1c3", BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1,
		  BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1C3,
		  BX_HINT_METADATA_PREFERRED },
		{ "raid10/raid1", BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID10,
		  BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1, BX_HINT_METADATA_ONLY },
		{ "raid6/raid1c3", BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID6,
		  BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1C3,
		  BX_HINT_METADATA_PREFERRED },
		{ "single/raid1", BTRFS_BLOCK_GROUP_DATA,
		  BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1, BX_HINT_METADATA_ONLY },
	};
	int runs = argc > 1 ? atoi(argv[1]) : 3;
	double worst = 0;

	if (runs < 1)
		runs = 1;
	printf("%-15s %8s %8s %12s %12s %12s %12s\n", "profiles", "median", "max",
	       "free_est", "free_strict", "meta_room", "meta_after");
	for (size_t s = 0; s < sizeof(setups) / sizeof(setups[0]); s++) {
		struct bx_snap_dev devs[24];
		struct bx_snap_extent ext[24][2];
		struct bx_snap_space spaces[3];
		struct bx_snap_chunk chunks[2];
		struct bx_snap_stripe stripes[3];
		struct bx_snapshot in;
		struct bx_usage_report rep = { 0 };
		double times[64];

		build(&in, &setups[s], devs, ext, spaces, chunks, stripes);
		if (runs > 64)
			runs = 64;
		for (int r = 0; r < runs; r++) {
			double t0 = bench_now();
			int ret = bx_usage_compute(&in, 0, &rep);

			times[r] = bench_now() - t0;
			bx_warnings_clear();
			if (ret) {
				fprintf(stderr, "usage-model: %s\n", bx_error_message(ret));
				return 1;
			}
			if (r + 1 < runs)
				bx_usage_report_release(&rep);
		}
		bench_sort_times(times, runs);
		if (times[runs - 1] > worst)
			worst = times[runs - 1];
		printf("%-15s %7.3fs %7.3fs %9.2fTiB %9.2fTiB %9.2fTiB %9.2fTiB\n", setups[s].name,
		       times[runs / 2], times[runs - 1], (double)rep.free_estimated / TiB,
		       (double)rep.free_strict / TiB, (double)rep.metadata_room / TiB,
		       (double)rep.metadata_room_after_data / TiB);
		bx_usage_report_release(&rep);
	}
	printf("worst full prediction: %.3fs (goal < 0.5s)\n", worst);
	return worst < 0.5 ? 0 : 1;
}
