/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Times the what-if planner (bx_plan_compute: both usage reports, every
 * change through the allocator model, the relocations, the misplaced
 * reports before and after) on a simulated 1 PiB array of 24 mixed devices
 * half full, with five changes; data chunks move extent by extent. Built and run by bench/plan; prints one line
 * per plan and the worst time.
 *
 *   plan-model [runs]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/array-1pib.h"
#include "bench/timing.h"
#include "common/error.h"
#include "model/allocator.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "plan/plan.h"

#define DATA_TYPE (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1)
#define META_TYPE (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1C3)
#define NR_DEVS 24

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		fprintf(stderr, "plan-model: out of memory\n");
		exit(1);
	}
	return p;
}

static void add_space(struct bx_snapshot *in, uint64_t type, uint64_t length, uint64_t used)
{
	for (size_t i = 0; i < in->nr_spaces; i++)
		if (in->spaces[i].flags == type) {
			in->spaces[i].total_bytes += length;
			in->spaces[i].used_bytes += used;
			return;
		}
	in->spaces[in->nr_spaces++] = (struct bx_snap_space){ type, length, used };
}

/* Data extents per data chunk: what the relocations move one by one. */
#define EXTENTS_PER_CHUNK 8

/*
 * Chunk @uc's extents: EXTENTS_PER_CHUNK of its used bytes spread over it,
 * one at the start of each eighth (the free space between them in pieces).
 */
static void add_dextents(struct bx_snapshot *in, struct bx_snap_chunk *uc)
{
	uint64_t len = uc->used / EXTENTS_PER_CHUNK / 4096 * 4096;

	uc->first_dextent = in->nr_dextents;
	uc->nr_dextents = EXTENTS_PER_CHUNK;
	for (int k = 0; k < EXTENTS_PER_CHUNK; k++)
		in->dextents[in->nr_dextents++] = (struct bx_snap_dextent){
			uc->logical + (uint64_t)k * (uc->length / EXTENTS_PER_CHUNK), len };
	uc->used = len * EXTENTS_PER_CHUNK;
}

/*
 * The array as the allocator model fills it: @data_bytes of raid1 data and
 * @meta_bytes of raid1c3 metadata, chunk by chunk, 80 % of each chunk used,
 * the data chunks' in EXTENTS_PER_CHUNK extents each.
 */
static void build(struct bx_snapshot *in, uint64_t data_bytes, uint64_t meta_bytes)
{
	struct bx_alloc_device adevs[NR_DEVS];
	struct bx_alloc_params params = { .nodesize = 16384, .flags = BX_ALLOC_HINT_KERNEL };
	struct bx_alloc_sim *sim;
	size_t cap = 1 << 20, n = 0, cap_stripes = 4 << 20;
	uint64_t logical = 1 * GiB, data = 0, meta = 0;

	memset(in, 0, sizeof(*in));
	bx_kernel_common(&in->kernel);
	in->devs = xcalloc(NR_DEVS, sizeof(*in->devs));
	for (size_t l = 0; l < sizeof(layout) / sizeof(layout[0]); l++)
		for (int i = 0; i < layout[l].count; i++, n++) {
			struct bx_snap_dev *d = &in->devs[n];

			d->devid = n + 1;
			snprintf(d->path, sizeof(d->path), "/dev/sim%zu", n);
			d->total_bytes = d->device_size = layout[l].size;
			d->hint = layout[l].hint;
			d->writable = true;
			d->extents = xcalloc(cap / 8, sizeof(*d->extents));
			if (bx_alloc_device_init(&adevs[n], d->devid, d->total_bytes, d->hint))
				exit(1);
		}
	in->nr_devs = n;
	in->chunks = xcalloc(cap, sizeof(*in->chunks));
	in->stripes = xcalloc(cap_stripes, sizeof(*in->stripes));
	in->spaces = xcalloc(8, sizeof(*in->spaces));
	in->dextents = xcalloc(cap * EXTENTS_PER_CHUNK, sizeof(*in->dextents));
	if (bx_alloc_sim_new(adevs, NR_DEVS, &params, &sim))
		exit(1);
	while (data < data_bytes || meta < meta_bytes) {
		/* One metadata chunk for every 256 data chunks, as a workload would. */
		bool is_meta = meta < meta_bytes && (data >= data_bytes || in->nr_chunks % 257 == 0);
		uint64_t type = is_meta ? META_TYPE : DATA_TYPE;
		struct bx_alloc_chunk c;
		struct bx_snap_chunk *uc = &in->chunks[in->nr_chunks];

		if (bx_alloc_sim_step(sim, type, &c) || in->nr_chunks + 1 >= cap ||
		    in->nr_stripes + c.num_stripes >= cap_stripes)
			break;
		*uc = (struct bx_snap_chunk){ logical, c.length, type, c.num_stripes, c.sub_stripes,
					       in->nr_stripes, c.length / 10 * 8 };
		for (uint32_t k = 0; k < c.num_stripes; k++) {
			struct bx_snap_dev *d = &in->devs[c.stripes[k].dev_index];

			in->stripes[in->nr_stripes++] = (struct bx_snap_stripe){
				c.stripes[k].devid, c.stripes[k].physical };
			d->extents[d->nr_extents++] = (struct bx_snap_extent){
				c.stripes[k].physical, c.stripe_size, logical };
			d->bytes_used += c.stripe_size;
		}
		if (!is_meta)
			add_dextents(in, uc);
		add_space(in, type, c.length, uc->used);
		logical += c.length;
		*(is_meta ? &meta : &data) += c.length;
		in->nr_chunks++;
	}
	bx_alloc_sim_free(sim);
	for (size_t i = 0; i < NR_DEVS; i++)
		bx_alloc_device_release(&adevs[i]);
	in->nodesize = 16384;
	in->sectorsize = 4096;
	in->hints_effective = true;
	in->chunks_used_known = true;
	in->dextents_known = true;
	bx_kernel_set_trait(&in->kernel, BX_KT_SIZE_CLASSES, true);
}

static const char *const plans[][10] = {
	/* five changes: a device goes, one comes, one grows, a hint, metadata converted */
	{ "remove", "9", "add", "84T:data_only", "resize", "13=60T", "hint", "2=metadata_only",
	  "convert", "metadata=raid1" },
	/* an NVMe replaced (the hint not copied), two more, then what is misplaced moved */
	{ "replace", "3=8T", "hint", "3=metadata_preferred", "add", "8T:metadata_only", "remove",
	  "20", "relocate", NULL },
};

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 3;
	struct bx_snapshot in;
	double worst = 0;

	if (runs < 1 || runs > 64)
		runs = 3;
	build(&in, 256 * TiB, 4 * TiB);
	printf("array: 24 devices, %.0f TiB, %zu chunks (raid1 data, raid1c3 metadata)\n",
	       (double)(4 * 4 + 8 * 36 + 8 * 48 + 4 * 84), in.nr_chunks);
	printf("%-6s %8s %8s %8s %10s %12s %12s\n", "plan", "median", "max", "moved", "moved TiB",
	       "free before", "free after");
	for (size_t p = 0; p < sizeof(plans) / sizeof(plans[0]); p++) {
		struct bx_plan_change changes[5];
		struct bx_plan_result res;
		double times[64];
		uint64_t moved = 0, moved_bytes = 0;

		for (int c = 0; c < 5; c++)
			if (bx_plan_parse_change(plans[p][2 * c], plans[p][2 * c + 1], &changes[c])) {
				fprintf(stderr, "plan-model: %s\n", bx_error_message(-22));
				return 1;
			}
		for (int r = 0; r < runs; r++) {
			double t0 = bench_now();
			int ret = bx_plan_compute(&in, changes, 5, &res);

			times[r] = bench_now() - t0;
			bx_warnings_clear();
			if (ret) {
				fprintf(stderr, "plan-model: %s\n", bx_error_message(ret));
				return 1;
			}
			if (r + 1 < runs)
				bx_plan_result_release(&res);
		}
		bench_sort_times(times, runs);
		for (size_t s = 0; s < res.nr_steps; s++) {
			moved += res.steps[s].moved_chunks;
			moved_bytes += res.steps[s].moved_bytes;
		}
		if (times[runs - 1] > worst)
			worst = times[runs - 1];
		printf("%-6zu %7.3fs %7.3fs %8llu %10.1f %9.1fTiB %9.1fTiB%s\n", p + 1,
		       times[runs / 2], times[runs - 1], (unsigned long long)moved,
		       (double)moved_bytes / TiB, (double)res.before.free_estimated / TiB,
		       (double)res.after.free_estimated / TiB, res.possible ? "" : " (impossible)");
		for (size_t s = 0; s < res.nr_steps; s++)
			if (res.steps[s].status == BX_PLAN_STEP_IMPOSSIBLE)
				printf("       change %zu: %.150s\n", s + 1, res.steps[s].reason);
		bx_plan_result_release(&res);
	}
	printf("worst plan: %.3fs (goal < 1s)\n", worst);
	bx_snapshot_release(&in);
	return worst < 1.0 ? 0 : 1;
}
