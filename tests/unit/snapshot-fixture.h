/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A filesystem built by hand for the unit tests of what reads one (the
 * planner, the relocation's decisions): a struct bx_snapshot with
 * devices, then chunks in logical order, their device extents and the
 * space infos. Release with bx_snapshot_release(&f.in).
 */
#ifndef BTRFSX_TESTS_UNIT_SNAPSHOT_FIXTURE_H
#define BTRFSX_TESTS_UNIT_SNAPSHOT_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "format/ctree.h"
#include "format/hints.h"
#include "model/snapshot.h"

#define MiB (1024 * 1024ULL)
#define GiB (1024 * MiB)
#define RAID1 BTRFS_BLOCK_GROUP_RAID1

/* A filesystem being built: devices, then chunks (in logical order). */
struct fs {
	struct bx_snapshot in;
	uint64_t next_logical;
};

static inline void fs_init(struct fs *f, size_t n, const uint64_t *sizes, const uint64_t *hints)
{
	memset(f, 0, sizeof(*f));
	/* The behaviours of every kernel; a test turns on the one it pins. */
	bx_kernel_common(&f->in.kernel);
	f->in.nodesize = 16384;
	f->in.sectorsize = 4096;
	f->in.hints_effective = true;
	f->in.chunks_used_known = true;
	f->in.devs = calloc(n, sizeof(*f->in.devs));
	f->in.nr_devs = n;
	for (size_t i = 0; i < n; i++) {
		struct bx_snap_dev *d = &f->in.devs[i];

		d->devid = i + 1;
		d->total_bytes = d->device_size = sizes[i];
		d->hint = hints ? hints[i] : BX_HINT_DATA_PREFERRED;
		d->writable = true;
		d->extents = calloc(64, sizeof(*d->extents));
	}
	f->next_logical = 1 * GiB;
}

static inline void add_space(struct fs *f, uint64_t type, uint64_t length, uint64_t used)
{
	struct bx_snapshot *in = &f->in;

	for (size_t i = 0; i < in->nr_spaces; i++)
		if (in->spaces[i].flags == type) {
			in->spaces[i].total_bytes += length;
			in->spaces[i].used_bytes += used;
			return;
		}
	in->spaces = realloc(in->spaces, (in->nr_spaces + 1) * sizeof(*in->spaces));
	in->spaces[in->nr_spaces++] = (struct bx_snap_space){ type, length, used };
}

/* A chunk of @type, @length logical, @used; stripe k on devids[k] at phys[k], each @stripe long. */
static inline void add_chunk(struct fs *f, uint64_t type, uint64_t length, uint64_t stripe,
		      uint64_t used, uint32_t n, const uint64_t *devids, const uint64_t *phys)
{
	struct bx_snapshot *in = &f->in;

	in->chunks = realloc(in->chunks, (in->nr_chunks + 1) * sizeof(*in->chunks));
	in->stripes = realloc(in->stripes, (in->nr_stripes + n) * sizeof(*in->stripes));
	in->chunks[in->nr_chunks++] = (struct bx_snap_chunk){
		.logical = f->next_logical, .length = length, .type = type, .num_stripes = n,
		.first_stripe = in->nr_stripes, .used = used };
	for (uint32_t k = 0; k < n; k++) {
		struct bx_snap_dev *d = &in->devs[devids[k] - 1];

		in->stripes[in->nr_stripes++] = (struct bx_snap_stripe){ devids[k], phys[k] };
		d->extents[d->nr_extents++] = (struct bx_snap_extent){ phys[k], stripe,
									f->next_logical };
		d->bytes_used += stripe;
	}
	add_space(f, type, length, used);
	f->next_logical += length;
}

/* raid1 chunk on devids a, b at the same offset @phys. */
static inline void raid1(struct fs *f, uint64_t type, uint64_t length, uint64_t used, uint64_t a,
		  uint64_t b, uint64_t phys)
{
	uint64_t devids[2] = { a, b }, physs[2] = { phys, phys };

	add_chunk(f, type | RAID1, length, length, used, 2, devids, physs);
}

/* Three devices of @size, raid1: metadata 256 MiB and two 1 GiB data chunks. */
static inline void three_raid1(struct fs *f, uint64_t size, const uint64_t *hints,
			       uint64_t data_used)
{
	uint64_t sizes[3] = { size, size, size };

	fs_init(f, 3, sizes, hints);
	raid1(f, BTRFS_BLOCK_GROUP_SYSTEM, 8 * MiB, 16384, 1, 2, 1 * MiB);
	raid1(f, BTRFS_BLOCK_GROUP_METADATA, 256 * MiB, 64 * MiB, 1, 2, 9 * MiB);
	raid1(f, BTRFS_BLOCK_GROUP_DATA, 1 * GiB, data_used, 2, 3, 265 * MiB);
	raid1(f, BTRFS_BLOCK_GROUP_DATA, 1 * GiB, data_used, 3, 1, 1289 * MiB);
}

#endif
