/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The snapshot of a filesystem (snapshot.h): what the models ask of it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "format/profiles.h"
#include "model/snapshot.h"

void bx_snapshot_release(struct bx_snapshot *in)
{
	for (size_t i = 0; i < in->nr_devs; i++)
		free(in->devs[i].extents);
	free(in->devs);
	free(in->spaces);
	free(in->chunks);
	free(in->stripes);
	free(in->dextents);
	in->dextents = NULL;
	in->nr_dextents = 0;
	in->dextents_known = false;
	in->devs = NULL;
	in->spaces = NULL;
	in->chunks = NULL;
	in->stripes = NULL;
	in->nr_devs = in->nr_spaces = in->nr_chunks = in->nr_stripes = 0;
}

bool bx_snap_any_hint(const struct bx_snapshot *in)
{
	for (size_t i = 0; i < in->nr_devs; i++)
		if (in->devs[i].hint != BX_HINT_DATA_PREFERRED)
			return true;
	return false;
}

bool bx_snap_chunk_on_seed(const struct bx_snapshot *in, const struct bx_snap_chunk *c)
{
	for (uint32_t s = 0; s < c->num_stripes; s++)
		for (size_t i = 0; i < in->nr_devs; i++)
			if (in->devs[i].seed && in->devs[i].devid == in->stripes[c->first_stripe + s].devid)
				return true;
	return false;
}

/* ---- the profile of a new chunk ---- */

uint64_t bx_snap_alloc_profile(const struct bx_snap_space *spaces, size_t nr_spaces,
			       uint64_t kind, size_t nr_writable)
{
	/* Most redundant first, as the kernel reduces a set of allowed profiles. */
	static const uint64_t order[] = {
		BTRFS_BLOCK_GROUP_RAID1C4, BTRFS_BLOCK_GROUP_RAID6, BTRFS_BLOCK_GROUP_RAID1C3,
		BTRFS_BLOCK_GROUP_RAID5, BTRFS_BLOCK_GROUP_RAID10, BTRFS_BLOCK_GROUP_RAID1,
		BTRFS_BLOCK_GROUP_DUP, BTRFS_BLOCK_GROUP_RAID0,
	};
	uint64_t present = 0;

	for (size_t i = 0; i < nr_spaces; i++)
		if ((spaces[i].flags & kind) && !(spaces[i].flags & BX_SPACE_INFO_GLOBAL_RSV))
			present |= spaces[i].flags & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		struct bx_raid_attr attr;

		if (!(present & order[i]))
			continue;
		if (bx_raid_attr(BTRFS_BLOCK_GROUP_DATA | order[i], &attr) ||
		    (size_t)attr.devs_min > nr_writable)
			continue;
		return order[i];
	}
	return 0;
}

uint64_t bx_snap_balance_target(uint64_t kind, uint64_t args_flags, uint64_t target)
{
	if (!(args_flags & BTRFS_DISK_BALANCE_ARGS_CONVERT))
		return 0;
	/* "single" is a bit of its own in the arguments, no profile bit on a chunk. */
	return kind | (target & BTRFS_BLOCK_GROUP_PROFILE_MASK);
}

const char *bx_snap_balance_name(enum bx_snap_balance balance)
{
	switch (balance) {
	case BX_SNAP_BALANCE_RUNNING:
		return "running";
	case BX_SNAP_BALANCE_PAUSED:
		return "paused";
	case BX_SNAP_BALANCE_INTERRUPTED:
		return "interrupted";
	default:
		return NULL;
	}
}

uint64_t bx_snap_new_chunk_type(const struct bx_snapshot *in,
				const struct bx_snap_space *spaces, size_t nr_spaces,
				uint64_t kind, size_t nr_writable)
{
	int k = (kind & BTRFS_BLOCK_GROUP_DATA) ? BX_SNAP_KIND_DATA :
		(kind & BTRFS_BLOCK_GROUP_SYSTEM) ? BX_SNAP_KIND_SYSTEM : BX_SNAP_KIND_METADATA;
	uint64_t target = in->balance && bx_kernel_has(&in->kernel, BX_KT_PAUSED_BALANCE_TARGET) ?
			  in->balance_target[k] : 0;

	/* The kernel takes the target as it is, even where too few devices can hold it. */
	if (target)
		return kind | (target & BTRFS_BLOCK_GROUP_PROFILE_MASK);
	return kind | bx_snap_alloc_profile(spaces, nr_spaces, kind, nr_writable);
}

/* ---- the allocator model of the snapshot ---- */

/* The free ranges of a device: [1 MiB, total_bytes) minus its device extents. */
static int device_holes(const struct bx_snap_dev *d, struct bx_alloc_device *ad)
{
	struct bx_alloc_hole *ext = calloc(d->nr_extents + 1, sizeof(*ext));
	int ret;

	if (!ext)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < d->nr_extents; i++)
		ext[i] = (struct bx_alloc_hole){ d->extents[i].start, d->extents[i].length };
	ret = bx_alloc_device_set_extents(ad, ext, d->nr_extents);
	free(ext);
	return ret == -ENOMEM ? bx_error(ret, "out of memory") : ret;
}

void bx_snap_model_release(struct bx_snap_model *m)
{
	for (size_t i = 0; m->devs && i < m->nr; i++)
		bx_alloc_device_release(&m->devs[i]);
	free(m->devs);
	m->devs = NULL;
}

int bx_snap_model_init(const struct bx_snapshot *in, uint32_t model_flags,
		       struct bx_snap_model *m)
{
	int ret = 0;

	memset(m, 0, sizeof(*m));
	m->devs = calloc(in->nr_devs ? in->nr_devs : 1, sizeof(*m->devs));
	if (!m->devs)
		return bx_error(-ENOMEM, "out of memory");
	m->nr = in->nr_devs;
	m->params.nodesize = in->nodesize;
	m->params.flags = model_flags;
	for (size_t i = 0; i < in->nr_devs && !ret; i++) {
		const struct bx_snap_dev *d = &in->devs[i];

		ret = bx_alloc_device_init(&m->devs[i], d->devid, d->total_bytes, d->hint);
		if (!ret)
			ret = device_holes(d, &m->devs[i]);
		m->devs[i].writable = d->writable && !d->missing;
	}
	if (ret)
		bx_snap_model_release(m);
	return ret;
}

uint32_t bx_snap_alloc_flags(const struct bx_snapshot *in)
{
	uint32_t kernel = bx_kernel_alloc_flags(&in->kernel);
	uint32_t flags = kernel & ~BX_ALLOC_DATA_ONLY_LAST;

	/* Only a kernel known to run a hint patch shows its orders. */
	if (in->mounted && in->hints_effective) {
		if (bx_kernel_has(&in->kernel, BX_KT_HINT_SECOND_SORT))
			flags |= BX_ALLOC_HINT_KERNEL;
		flags |= kernel & BX_ALLOC_DATA_ONLY_LAST;
	}
	return flags;
}

/* ---- placement ---- */

static bool input_is_mixed(const struct bx_snapshot *in)
{
	for (size_t i = 0; i < in->nr_spaces; i++) {
		if (bx_type_is_mixed(in->spaces[i].flags))
			return true;
	}
	return false;
}

int bx_snap_place_model(const struct bx_snapshot *in, struct bx_snap_model *um,
			struct bx_place_model *pm)
{
	uint64_t data_kind = BTRFS_BLOCK_GROUP_DATA;
	size_t nr_writable = 0;
	int ret;

	memset(pm, 0, sizeof(*pm));
	ret = bx_snap_model_init(in, bx_snap_alloc_flags(in), um);
	if (ret)
		return ret;
	for (size_t i = 0; i < um->nr; i++)
		if (um->devs[i].writable)
			nr_writable++;
	if (input_is_mixed(in))
		data_kind |= BTRFS_BLOCK_GROUP_METADATA;
	pm->devs = um->devs;
	pm->nr_devs = um->nr;
	pm->params = um->params;
	pm->new_type[BX_PLACE_KIND_DATA] =
		bx_snap_new_chunk_type(in, in->spaces, in->nr_spaces, data_kind, nr_writable);
	pm->new_type[BX_PLACE_KIND_METADATA] =
		bx_snap_new_chunk_type(in, in->spaces, in->nr_spaces, BTRFS_BLOCK_GROUP_METADATA,
					nr_writable);
	pm->new_type[BX_PLACE_KIND_SYSTEM] =
		bx_snap_new_chunk_type(in, in->spaces, in->nr_spaces, BTRFS_BLOCK_GROUP_SYSTEM,
					nr_writable);
	return 0;
}

void bx_snap_place_chunk(const struct bx_snapshot *in, const struct bx_snap_chunk *c,
			 struct bx_place_stripe *stripes, struct bx_place_chunk *out)
{
	for (uint32_t s = 0; s < c->num_stripes; s++)
		stripes[s] = (struct bx_place_stripe){ in->stripes[c->first_stripe + s].devid,
						       in->stripes[c->first_stripe + s].physical };
	*out = (struct bx_place_chunk){
		.logical = c->logical,
		.length = c->length,
		.used = c->used,
		.type = c->type,
		.num_stripes = c->num_stripes,
		.stripes = stripes,
	};
}
