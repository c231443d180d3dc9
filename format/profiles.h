/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Block group profiles by their type bits: the per-profile constants, names
 * and the small questions every layer asks of a chunk's type. No format
 * structures here, so code that includes <linux/btrfs_tree.h> can use it too.
 */
#ifndef BTRFSX_PROFILES_H
#define BTRFSX_PROFILES_H

#include <stdbool.h>
#include <stdint.h>

/* The constants of one profile (the kernel's btrfs_raid_array row). */
struct bx_raid_attr {
	uint64_t bits;		/* the BTRFS_BLOCK_GROUP_* profile bit; 0: single */
	const char *name;	/* "single", "raid1", ... */
	int sub_stripes;
	int dev_stripes;
	int devs_max;		/* 0: as many as a chunk item holds */
	int devs_min;
	int devs_increment;
	int ncopies;
	int nparity;
};

/*
 * Profile constants for @type (any of the BTRFS_BLOCK_GROUP_* type bits plus at
 * most one profile bit). Returns: 0, or -EINVAL for more than one profile bit
 * or unknown bits.
 */
int bx_raid_attr(uint64_t type, struct bx_raid_attr *attr);

/*
 * "single", "RAID1", ... (any case) -> profile bits (0 for single). 0, or
 * -EINVAL with a message naming the profiles.
 */
int bx_profile_parse(const char *name, uint64_t *bits);

/* Profile name ("single", "raid1", ...) of chunk type bits; "unknown" for bad bits. */
const char *bx_profile_name(uint64_t type);
/* Whether reads of @type choose among mirrors (RAID1, RAID1C3, RAID1C4, RAID10). */
bool bx_profile_is_mirrored(uint64_t type);
/* Copies of every block a profile keeps (1 for single, raid0, raid5/6; 3 for raid1c3). */
int bx_profile_ncopies(uint64_t type);

/*
 * Device bytes each stripe of a chunk of @type, @length and @num_stripes
 * takes: the length over its data stripes. 0 when the type or the stripe
 * count cannot be a chunk's.
 */
uint64_t bx_profile_stripe_size(uint64_t type, uint64_t length, uint32_t num_stripes);

/* Whether @type is a mixed block group (data and metadata together). */
bool bx_type_is_mixed(uint64_t type);

/* Type name ("data", "metadata", "system", "data+metadata") of chunk type bits. */
const char *bx_block_group_type_name(uint64_t type);

#endif
