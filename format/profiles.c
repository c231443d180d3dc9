/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profile table and what it answers about a chunk's type bits. */
#include <errno.h>
#include <strings.h>

#include "common/error.h"
#include "format/ctree.h"
#include "format/profiles.h"

/* bits, name, sub_stripes, dev_stripes, devs_max, devs_min, devs_increment, ncopies, nparity */
static const struct bx_raid_attr raid_table[] = {
	{ 0, "single", 1, 1, 1, 1, 1, 1, 0 },
	{ BTRFS_BLOCK_GROUP_RAID0, "raid0", 1, 1, 0, 1, 1, 1, 0 },
	{ BTRFS_BLOCK_GROUP_RAID1, "raid1", 1, 1, 2, 2, 2, 2, 0 },
	{ BTRFS_BLOCK_GROUP_DUP, "dup", 1, 2, 1, 1, 1, 2, 0 },
	{ BTRFS_BLOCK_GROUP_RAID10, "raid10", 2, 1, 0, 2, 2, 2, 0 },
	{ BTRFS_BLOCK_GROUP_RAID5, "raid5", 1, 1, 0, 2, 1, 1, 1 },
	{ BTRFS_BLOCK_GROUP_RAID6, "raid6", 1, 1, 0, 3, 1, 1, 2 },
	{ BTRFS_BLOCK_GROUP_RAID1C3, "raid1c3", 1, 1, 3, 3, 3, 3, 0 },
	{ BTRFS_BLOCK_GROUP_RAID1C4, "raid1c4", 1, 1, 4, 4, 4, 4, 0 },
};

#define NR_PROFILES (sizeof(raid_table) / sizeof(raid_table[0]))

int bx_raid_attr(uint64_t type, struct bx_raid_attr *attr)
{
	uint64_t profile = type & ~BTRFS_BLOCK_GROUP_TYPE_MASK;

	for (size_t i = 0; i < NR_PROFILES; i++) {
		if (raid_table[i].bits == profile) {
			*attr = raid_table[i];
			return 0;
		}
	}
	return -EINVAL;
}

int bx_profile_parse(const char *name, uint64_t *bits)
{
	for (size_t i = 0; i < NR_PROFILES; i++) {
		if (!strcasecmp(name, raid_table[i].name)) {
			*bits = raid_table[i].bits;
			return 0;
		}
	}
	return bx_error(-EINVAL, "unknown profile '%s' (single, dup, raid0, raid1, raid1c3, "
			"raid1c4, raid10, raid5, raid6)", name);
}

const char *bx_profile_name(uint64_t type)
{
	struct bx_raid_attr attr;

	return bx_raid_attr(type & BTRFS_BLOCK_GROUP_PROFILE_MASK, &attr) ? "unknown" : attr.name;
}

bool bx_profile_is_mirrored(uint64_t type)
{
	return type & (BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID1C3 |
		       BTRFS_BLOCK_GROUP_RAID1C4 | BTRFS_BLOCK_GROUP_RAID10);
}

int bx_profile_ncopies(uint64_t type)
{
	struct bx_raid_attr attr;

	return bx_raid_attr(type & BTRFS_BLOCK_GROUP_PROFILE_MASK, &attr) ? 0 : attr.ncopies;
}

uint64_t bx_profile_stripe_size(uint64_t type, uint64_t length, uint32_t num_stripes)
{
	struct bx_raid_attr r;
	uint32_t data_stripes;

	if (bx_raid_attr(type & BTRFS_BLOCK_GROUP_PROFILE_MASK, &r) ||
	    num_stripes <= (uint32_t)r.nparity)
		return 0;
	data_stripes = (num_stripes - (uint32_t)r.nparity) / (uint32_t)r.ncopies;
	return data_stripes ? length / data_stripes : 0;
}

bool bx_type_is_mixed(uint64_t type)
{
	return (type & BTRFS_BLOCK_GROUP_DATA) && (type & BTRFS_BLOCK_GROUP_METADATA);
}

const char *bx_block_group_type_name(uint64_t type)
{
	if (bx_type_is_mixed(type))
		return "data+metadata";
	if (type & BTRFS_BLOCK_GROUP_DATA)
		return "data";
	if (type & BTRFS_BLOCK_GROUP_METADATA)
		return "metadata";
	if (type & BTRFS_BLOCK_GROUP_SYSTEM)
		return "system";
	return "unknown";
}
