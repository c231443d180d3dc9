/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's automatic block group reclaim, read from sysfs (reclaim.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "disk/device-claim.h"
#include "format/ctree.h"
#include "fsops/reclaim.h"
#include "format/profiles.h"

#define GiB (1ULL << 30)
/* The unallocated space dynamic reclaim aims at, in data chunks (Linux 6.11). */
#define UNALLOC_TARGET_CHUNKS 10

_Static_assert(sizeof(((struct bx_reclaim *)0)->kind) ==
	       BX_SNAP_NR_KINDS * sizeof(struct bx_reclaim_kind), "one per BX_SNAP_KIND_*");

/* The kernel's directory name of each kind (BX_SNAP_KIND_*). */
static const char *const kind_dirs[BX_SNAP_NR_KINDS] = { "data", "metadata", "system" };

/* The chunk type bit of each kind. */
static const uint64_t kind_types[BX_SNAP_NR_KINDS] = {
	BTRFS_BLOCK_GROUP_DATA, BTRFS_BLOCK_GROUP_METADATA, BTRFS_BLOCK_GROUP_SYSTEM,
};

/* The number in @dir/@name, or false when it cannot be read. */
static bool read_number(const char *dir, const char *name, uint64_t *value)
{
	char path[PATH_MAX];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fscanf(f, "%" SCNu64, value) == 1;
	fclose(f);
	return ok;
}

static void read_kind(const char *dir, struct bx_reclaim_kind *k)
{
	uint64_t v;

	memset(k, 0, sizeof(*k));
	if (!read_number(dir, "bg_reclaim_threshold", &v))
		return;
	k->known = true;
	k->threshold = v <= 100 ? (int)v : 100;
	/* Before 6.11 only the threshold exists: neither mode is on. */
	k->dynamic = read_number(dir, "dynamic_reclaim", &v) && v;
	k->periodic = read_number(dir, "periodic_reclaim", &v) && v;
	if (read_number(dir, "reclaim_count", &v))
		k->count = v;
	if (read_number(dir, "reclaim_bytes", &v))
		k->bytes = v;
	if (read_number(dir, "reclaim_errors", &v))
		k->errors = v;
}

void bx_reclaim_read(const char *sysfs_root, const uint8_t fsid[16], struct bx_reclaim *r)
{
	char fsid_str[BX_FSID_STR_LEN], dir[PATH_MAX];

	memset(r, 0, sizeof(*r));
	bx_fsid_unparse(fsid, fsid_str);
	for (unsigned int i = 0; i < BX_SNAP_NR_KINDS; i++) {
		snprintf(dir, sizeof(dir), "%s/fs/btrfs/%s/allocation/%s", sysfs_root, fsid_str,
			 kind_dirs[i]);
		read_kind(dir, &r->kind[i]);
		if (i == BX_SNAP_KIND_DATA && !read_number(dir, "chunk_size", &r->data_chunk_size))
			r->data_chunk_size = 0;
	}
}

bool bx_reclaim_on(const struct bx_reclaim_kind *k)
{
	return k->known && (k->dynamic || k->threshold > 0);
}

bool bx_reclaim_any(const struct bx_reclaim *r)
{
	for (unsigned int i = 0; i < BX_SNAP_NR_KINDS; i++)
		if (bx_reclaim_on(&r->kind[i]))
			return true;
	return false;
}

/* free_chunk_space: what the writable devices have outside device extents. */
static uint64_t unallocated(const struct bx_snapshot *in, uint64_t *rw_bytes)
{
	uint64_t sum = 0;

	*rw_bytes = 0;
	for (size_t i = 0; i < in->nr_devs; i++) {
		const struct bx_snap_dev *d = &in->devs[i];
		uint64_t taken = 0;

		if (!d->writable)
			continue;
		for (size_t e = 0; e < d->nr_extents; e++)
			taken += d->extents[e].length;
		*rw_bytes += d->total_bytes;
		sum += d->total_bytes > taken ? d->total_bytes - taken : 0;
	}
	return sum;
}

uint64_t bx_reclaim_data_chunk(const struct bx_snapshot *in, const struct bx_reclaim *r)
{
	uint64_t rw, chunk = r->data_chunk_size ? r->data_chunk_size : 10 * GiB;

	unallocated(in, &rw);
	if (chunk > rw / 10)
		chunk = rw / 10;
	return chunk < GiB ? chunk : GiB;
}

/* The logical bytes of @kind's block groups that hold nothing. */
static uint64_t kind_unused(const struct bx_snapshot *in, unsigned int kind)
{
	uint64_t unused = 0;

	for (size_t i = 0; i < in->nr_spaces; i++) {
		const struct bx_snap_space *sp = &in->spaces[i];

		if ((sp->flags & BX_SPACE_INFO_GLOBAL_RSV) ||
		    (sp->flags & BTRFS_BLOCK_GROUP_TYPE_MASK) != kind_types[kind])
			continue;
		unused += sp->total_bytes > sp->used_bytes ? sp->total_bytes - sp->used_bytes : 0;
	}
	return unused;
}

int bx_reclaim_threshold(const struct bx_snapshot *in, const struct bx_reclaim *r,
			 unsigned int kind)
{
	const struct bx_reclaim_kind *k = &r->kind[kind];
	uint64_t rw, free_space = unallocated(in, &rw);
	uint64_t chunk = bx_reclaim_data_chunk(in, r);
	uint64_t target = UNALLOC_TARGET_CHUNKS * chunk;

	if (!k->known || !k->dynamic)
		return k->known ? k->threshold : 0;
	/* Relocating needs room in the kind's own block groups (calc_dynamic_reclaim_threshold()). */
	if (!target || kind_unused(in, kind) < chunk || free_space >= target)
		return 0;
	return (int)((target - free_space) * 100 / target);
}

/* The block groups of @kind in @in used below @threshold percent of their size, into @out. */
static void count_below(const struct bx_snapshot *in, unsigned int kind, uint32_t threshold,
			struct bx_reclaim_kind_report *out)
{
	if (!in->chunks_used_known || !threshold)
		return;
	for (size_t i = 0; i < in->nr_chunks; i++) {
		const struct bx_snap_chunk *c = &in->chunks[i];

		/* A mixed block group is in no single kind's space. */
		if ((c->type & BTRFS_BLOCK_GROUP_TYPE_MASK) != kind_types[kind])
			continue;
		/* As the kernel compares (mult_perc): used below threshold % of the length. */
		if (c->used >= c->length * (uint64_t)threshold / 100)
			continue;
		out->below_block_groups++;
		out->below_used += c->used;
		out->below_size += c->length;
		out->below_device_bytes += bx_profile_stripe_size(c->type, c->length,
								  c->num_stripes) * c->num_stripes;
	}
}

void bx_reclaim_report(const struct bx_snapshot *settings, const struct bx_snapshot *in,
		       struct bx_reclaim_report *out)
{
	const struct bx_reclaim *r = &settings->reclaim;

	memset(out, 0, sizeof(*out));
	out->data_chunk_size = bx_reclaim_data_chunk(in, r);
	for (unsigned int i = 0; i < BX_SNAP_NR_KINDS; i++) {
		const struct bx_reclaim_kind *k = &r->kind[i];
		struct bx_reclaim_kind_report *kr = &out->kind[i];

		out->known |= settings->mounted && k->known;
		kr->known = k->known;
		kr->on = bx_reclaim_on(k);
		kr->dynamic = k->dynamic;
		kr->periodic = k->periodic;
		kr->threshold = (uint32_t)bx_reclaim_threshold(in, r, i);
		kr->reclaimed_block_groups = k->count;
		kr->reclaimed_bytes = k->bytes;
		kr->reclaim_errors = k->errors;
		if (kr->on)
			count_below(in, i, kr->threshold, kr);
		out->device_bytes_below_threshold += kr->below_device_bytes;
	}
}
