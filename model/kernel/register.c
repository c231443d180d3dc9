/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The register of kernel behaviour (kernel.h): one entry per trait. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "model/allocator.h"
#include "model/kernel/kernel.h"

static const struct bx_kernel_trait_info traits[BX_KT_COUNT] = {
	[BX_KT_SORT_TIES_PRE_6_9] = {
		.name = "sort_ties_pre_6_9",
		.first = BX_KV(5, 2),
		.last = BX_KV(6, 8),
		.function = "lib/sort.c sort(), as fs/btrfs/volumes.c gather_device_info() calls it",
		.model = "model/allocator.c",
		.summary = "devices that tie on largest hole and free space end up in the order "
			   "of the heapsort of 5.2 .. 6.8, not of the one after it",
	},
	[BX_KT_HINT_DATA_ONLY_LAST] = {
		.name = "hint_data_only_last",
		.first = BX_KV(6, 2),
		.function = "the hint patches' gather_device_info() (fs/btrfs/volumes.c), built "
			    "with -funsigned-char",
		.model = "model/allocator.c",
		.summary = "a hint kernel sorts data_only devices last for data chunks: their "
			   "priority -1 is 255 in an unsigned char",
	},
	[BX_KT_SIZE_CLASSES] = {
		.name = "size_classes",
		.first = BX_KV(6, 3),
		.function = "fs/btrfs/extent-tree.c find_free_extent(), fs/btrfs/block-group.c "
			    "btrfs_calc_block_group_size_class()",
		.model = "model/kernel/extent-tree.c",
		.summary = "the data allocator keeps size classes (below 128 KiB, below 8 MiB, "
			   "larger) and tries a new chunk before a block group of another class",
	},
	[BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK] = {
		.name = "overcommit_keeps_data_chunk",
		.first = BX_KV(6, 7),
		.function = "fs/btrfs/space-info.c calc_available_free_space()",
		.model = "model/kernel/space-info.c",
		.summary = "metadata and system reservations are overcommitted only on the "
			   "unallocated space beyond the room of one data chunk",
	},
	[BX_KT_CLEANS_NEW_BLOCK_GROUPS] = {
		.name = "cleans_new_block_groups",
		.first = BX_KV(6, 8),
		.function = "fs/btrfs/block-group.c btrfs_make_block_group(), "
			    "btrfs_delete_unused_bgs()",
		.model = "model/kernel/block-group.c",
		.summary = "the cleaner deletes a new block group nothing was allocated in, as "
			   "one that became empty",
	},
};

const struct bx_kernel_trait_info *bx_kernel_trait_info(enum bx_kernel_trait trait)
{
	return (unsigned int)trait < BX_KT_COUNT ? &traits[trait] : NULL;
}

bool bx_kernel_version_has(unsigned int version, enum bx_kernel_trait trait)
{
	const struct bx_kernel_trait_info *t = bx_kernel_trait_info(trait);

	if (!t)
		return false;
	/* Unknown: the newest behaviour, as a kernel too new to be in the register. */
	if (!version)
		return !t->last;
	return version >= t->first && (!t->last || version <= t->last);
}

int bx_kernel_parse_version(const char *release, unsigned int *version)
{
	unsigned int major, minor;
	int end = 0;

	if (!release || sscanf(release, "%u.%u%n", &major, &minor, &end) != 2 || !end ||
	    major > 999 || minor > 999 || (release[end] && release[end] != '.' &&
					   release[end] != '-' && release[end] != '+'))
		return -EINVAL;
	*version = BX_KV(major, minor);
	return 0;
}

void bx_kernel_init(struct bx_kernel *k, const char *release, bool chosen)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->release, sizeof(k->release), "%s", release ? release : "");
	k->chosen = chosen;
	if (bx_kernel_parse_version(release, &k->version))
		k->version = 0;
	for (int t = 0; t < BX_KT_COUNT; t++)
		if (bx_kernel_version_has(k->version, (enum bx_kernel_trait)t))
			k->traits |= 1ULL << t;
}

int bx_kernel_choose(const char *version, struct bx_kernel *k)
{
	unsigned int v;

	if (bx_kernel_parse_version(version, &v))
		return bx_error(-EINVAL, "--kernel: '%s' is not a kernel version (MAJOR.MINOR, "
				"e.g. 6.1)", version ? version : "");
	if (v < BX_KV_OLDEST || v > BX_KV_NEWEST)
		return bx_error(-EINVAL, "--kernel: %s is not a kernel the model knows (%u.%u "
				"to %u.%u)", version, BX_KV_MAJOR(BX_KV_OLDEST),
				BX_KV_MINOR(BX_KV_OLDEST), BX_KV_MAJOR(BX_KV_NEWEST),
				BX_KV_MINOR(BX_KV_NEWEST));
	bx_kernel_init(k, version, true);
	return 0;
}

void bx_kernel_version_text(const struct bx_kernel *k, char *buf, size_t len)
{
	if (k->version)
		snprintf(buf, len, "%u.%u", BX_KV_MAJOR(k->version), BX_KV_MINOR(k->version));
	else
		snprintf(buf, len, "unknown");
}

uint32_t bx_kernel_alloc_flags(const struct bx_kernel *k)
{
	uint32_t flags = 0;

	if (bx_kernel_has(k, BX_KT_SORT_TIES_PRE_6_9))
		flags |= BX_ALLOC_SORT_PRE_6_9;
	if (bx_kernel_has(k, BX_KT_HINT_DATA_ONLY_LAST))
		flags |= BX_ALLOC_DATA_ONLY_LAST;
	return flags;
}
