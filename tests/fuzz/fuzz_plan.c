/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: the input is a plan as the command line spells it, one
 * change per line, "op value" ("add 64G:metadata_only", "remove 3",
 * "relocate"). Each line goes through bx_plan_parse_change (the parser of
 * --add, --remove, ...); the changes that parse are planned with
 * bx_plan_compute on a small filesystem built here (four devices, one of
 * them hinted, raid1 data, dup metadata, a few chunks), so arbitrary
 * sequences reach every change, the relocation, the reports and the
 * warnings. Invariants: a parsed change describes itself without overflow;
 * a computed plan has a status per change, a change after an impossible one
 * is not reached, the after side's devices and chunks agree (every stripe on
 * a device that exists, extents inside it), and moved bytes are the sum of
 * the moved chunks' used bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "plan/plan.h"
#include "tests/fuzz/fuzz-common.h"

#define MiB (1024 * 1024ULL)
#define GiB (1024 * MiB)
#define MAX_CHANGES 8

static struct bx_snapshot fs;

static void add_chunk(uint64_t logical, uint64_t type, uint64_t length, uint64_t stripe,
		      uint64_t used, uint32_t n, const uint64_t *devids, const uint64_t *phys)
{
	struct bx_snap_chunk *c = &fs.chunks[fs.nr_chunks++];

	*c = (struct bx_snap_chunk){ .logical = logical, .length = length, .type = type,
				      .num_stripes = n, .first_stripe = fs.nr_stripes, .used = used };
	for (uint32_t k = 0; k < n; k++) {
		struct bx_snap_dev *d = &fs.devs[devids[k] - 1];

		fs.stripes[fs.nr_stripes++] = (struct bx_snap_stripe){ devids[k], phys[k] };
		d->extents[d->nr_extents++] = (struct bx_snap_extent){ phys[k], stripe, logical };
		d->bytes_used += stripe;
	}
	for (size_t i = 0; i < fs.nr_spaces; i++)
		if (fs.spaces[i].flags == type) {
			fs.spaces[i].total_bytes += length;
			fs.spaces[i].used_bytes += used;
			return;
		}
	fs.spaces[fs.nr_spaces++] = (struct bx_snap_space){ type, length, used };
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint64_t sizes[] = { 1 * GiB, 2 * GiB, 2 * GiB, 4 * GiB };
	static const uint64_t hints[] = { BX_HINT_METADATA_PREFERRED, 0, BX_HINT_DATA_ONLY, 0 };
	const uint64_t dup1[] = { 1, 1 }, dup_at[] = { 1 * MiB, 33 * MiB };
	const uint64_t r1a[] = { 2, 4 }, r1a_at[] = { 1 * MiB, 1 * MiB };
	const uint64_t r1b[] = { 3, 4 }, r1b_at[] = { 1 * MiB, 513 * MiB };
	const uint64_t sys[] = { 1, 1 }, sys_at[] = { 65 * MiB, 73 * MiB };

	bx_kernel_common(&fs.kernel);
	fs.nodesize = 16384;
	fs.sectorsize = 4096;
	fs.hints_effective = true;
	fs.chunks_used_known = true;
	fs.nr_devs = 4;
	fs.devs = calloc(4, sizeof(*fs.devs));
	fs.chunks = calloc(8, sizeof(*fs.chunks));
	fs.stripes = calloc(16, sizeof(*fs.stripes));
	fs.spaces = calloc(8, sizeof(*fs.spaces));
	for (size_t i = 0; i < 4; i++) {
		fs.devs[i] = (struct bx_snap_dev){ .devid = i + 1, .total_bytes = sizes[i],
						    .device_size = sizes[i], .hint = hints[i],
						    .writable = true };
		fs.devs[i].extents = calloc(8, sizeof(*fs.devs[i].extents));
	}
	add_chunk(1 * MiB, BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, 32 * MiB, 32 * MiB,
		  4 * MiB, 2, dup1, dup_at);
	add_chunk(64 * MiB, BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP, 8 * MiB, 8 * MiB,
		  16384, 2, sys, sys_at);
	add_chunk(1 * GiB, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1, 512 * MiB, 512 * MiB,
		  300 * MiB, 2, r1a, r1a_at);
	add_chunk(2 * GiB, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1, 512 * MiB, 512 * MiB,
		  500 * MiB, 2, r1b, r1b_at);
	return 0;
}

/* The after side: every stripe on a device there, every extent inside its device. */
static void check_after(const struct bx_plan_result *res)
{
	const struct bx_snapshot *in = &res->after_in;

	for (size_t c = 0; c < in->nr_chunks; c++)
		for (uint32_t k = 0; k < in->chunks[c].num_stripes; k++) {
			uint64_t devid = in->stripes[in->chunks[c].first_stripe + k].devid;
			bool found = false;

			for (size_t d = 0; d < in->nr_devs && !found; d++)
				found = in->devs[d].devid == devid;
			if (!found)
				abort();
		}
	for (size_t d = 0; d < in->nr_devs; d++)
		for (size_t e = 0; e < in->devs[d].nr_extents; e++) {
			const struct bx_snap_extent *x = &in->devs[d].extents[e];

			if (x->start + x->length < x->start)
				abort();
		}
}

static void check_steps(const struct bx_plan_result *res)
{
	bool blocked = false;

	for (size_t i = 0; i < res->nr_steps; i++) {
		const struct bx_plan_step *st = &res->steps[i];
		uint64_t sum = 0;

		if (blocked != (st->status == BX_PLAN_STEP_NOT_REACHED))
			abort();
		if (st->status == BX_PLAN_STEP_IMPOSSIBLE) {
			blocked = true;
			fuzz_touch(st->reason, strlen(st->reason));
		}
		for (size_t m = st->first_moved; m < st->first_moved + st->nr_moved; m++)
			sum += res->moved[m].used;
		if (sum != st->moved_bytes || st->first_moved + st->nr_moved > res->nr_moved)
			abort();
	}
	if (res->possible == blocked)
		abort();
	for (size_t i = 0; i < res->nr_warnings; i++)
		fuzz_touch(res->warnings[i], strlen(res->warnings[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bx_plan_change changes[MAX_CHANGES];
	struct bx_plan_result res;
	size_t nr = 0, pos = 0;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	while (pos < size && nr < MAX_CHANGES) {
		char *line = text + pos, *value, *end = strchr(line, '\n');
		char described[160];

		if (end)
			*end = '\0';
		pos += strlen(line) + 1;
		value = strchr(line, ' ');
		if (value)
			*value++ = '\0';
		if (bx_plan_parse_change(line, value, &changes[nr]))
			continue;
		bx_plan_describe_change(&changes[nr], described, sizeof(described));
		if (strlen(described) >= sizeof(described))
			abort();
		nr++;
	}
	free(text);
	if (nr && bx_plan_compute(&fs, changes, nr, &res) == 0) {
		check_steps(&res);
		check_after(&res);
	}
	if (nr)
		bx_plan_result_release(&res);
	bx_error_clear();
	bx_warnings_clear();
	return 0;
}
