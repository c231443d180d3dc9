/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Making a new filesystem: allocation hints in the device items and the
 * first system, metadata and data chunks placed by the allocator model
 * (model/allocator.h) for those hints.
 *
 * Library style: no printing, no exit. Errors are negative errno values
 * with a message naming the device and the reason (common/error.h);
 * warnings are recorded with bx_warn().
 *
 * What is written, in this order (each step flushed before the next):
 *  1. the old signatures: the first MiB of every device (an old btrfs
 *     primary superblock with it), the btrfs superblock copies, and any
 *     other signature libblkid finds;
 *  2. every tree block, on every mirror; RAID5/6 rows whole, with parity;
 *  3. every device's primary superblock with generation + 1 and an incompat
 *     bit no kernel knows (BX_MKFS_INCOMPAT_UNFINISHED): each member is now
 *     recognised by a device scan, so the filesystem always assembles
 *     whole, and the kernel refuses to mount it;
 *  4. the superblock copies at 64 MiB and 256 GiB, final;
 *  5. the final primary superblocks. Until the last one is written some
 *     member carries the higher generation with the unknown bit, and the
 *     kernel mounts from the superblock of the member with the highest
 *     generation: the filesystem mounts (also with -o degraded) only once
 *     every member is final. Only a member hidden from the kernel on
 *     purpose would let the finished ones mount degraded, with complete
 *     trees.
 * A stop after any write therefore leaves no filesystem or a complete one.
 */
#ifndef BTRFSX_MKFS_H
#define BTRFSX_MKFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/ctree.h"
#include "format/features.h"     /* BX_MKFS_INCOMPAT_UNFINISHED */
#include "disk/write-plan.h"

/* Filesystem features (bx_mkfs_options.features). */
#define BX_MKFS_F_MIXED_BACKREF (1U << 0)      /* always on */
#define BX_MKFS_F_EXTREF (1U << 1)
#define BX_MKFS_F_SKINNY_METADATA (1U << 2)
#define BX_MKFS_F_NO_HOLES (1U << 3)
#define BX_MKFS_F_FREE_SPACE_TREE (1U << 4)
#define BX_MKFS_F_RAID56 (1U << 5)             /* set by the profiles */
#define BX_MKFS_F_RAID1C34 (1U << 6)           /* set by the profiles */
#define BX_MKFS_F_QUOTA (1U << 7)
#define BX_MKFS_F_BLOCK_GROUP_TREE (1U << 8)   /* needs no-holes and free-space-tree */
#define BX_MKFS_F_SQUOTA (1U << 9)             /* quota in simple mode */
/* What mkfs.btrfs 6.19 enables by default. */
#define BX_MKFS_F_DEFAULT (BX_MKFS_F_MIXED_BACKREF | BX_MKFS_F_EXTREF | \
			   BX_MKFS_F_SKINNY_METADATA | BX_MKFS_F_NO_HOLES | \
			   BX_MKFS_F_FREE_SPACE_TREE | BX_MKFS_F_BLOCK_GROUP_TREE)

/*
 * Parses a comma separated feature list ("no-holes,^free-space-tree,quota")
 * into @features, which holds the defaults on entry; the features named
 * (on or off) are added to *@asked. Returns 0 or -EINVAL naming the unknown
 * or unsupported feature.
 */
int bx_mkfs_parse_features(const char *list, uint32_t *features, uint32_t *asked);

/*
 * The features that go together, as mkfs.btrfs 6.19 has them: the block
 * group tree needs no-holes and the free space tree; when it was not asked
 * for (@asked), turning either off drops it with a warning; asked for, it
 * is refused (-EINVAL). squota is the quota tree in simple mode: with
 * quota, squota wins.
 */
int bx_mkfs_settle_features(uint32_t *features, uint32_t asked);
/* The feature names of @features, comma separated, into @buf. */
void bx_mkfs_feature_names(uint32_t features, char *buf, size_t len);

/*
 * Checks a sector and a node size as given (0: the default): the sector a
 * power of two from 4096 to 65536, the node one from the sector size to
 * 65536. Returns 0 or -EINVAL naming the bad size; the command line calls it
 * on its options, so a bad size is a usage error there.
 */
int bx_mkfs_check_sizes(uint32_t sectorsize, uint32_t nodesize);

struct bx_mkfs_device {
	const char *path;
	uint64_t hint;          /* BX_HINT_* */
};

struct bx_mkfs_options {
	const struct bx_mkfs_device *devs;
	size_t nr_devs;
	uint64_t data_profile;          /* BTRFS_BLOCK_GROUP_* profile bits; 0: single */
	uint64_t metadata_profile;      /* system chunks follow it */
	bool metadata_profile_default;  /* metadata_profile was not asked for: see below */
	const char *label;              /* NULL or "": none */
	const uint8_t *fsid;            /* NULL: random */
	unsigned int csum_type;         /* BTRFS_CSUM_TYPE_* */
	uint32_t nodesize;              /* 0: 16384 (or the sector size if larger) */
	uint32_t sectorsize;            /* 0: 4096 */
	uint64_t byte_count;            /* 0: whole devices; else each device's size (files grow) */
	uint32_t features;              /* BX_MKFS_F_* */
	bool force;                     /* overwrite existing signatures */
	struct bx_write_plan writes;    /* who may write, crash tests; zero: writes, no faults */
};

/*
 * Default profiles as mkfs.btrfs picks them: data single; metadata dup on
 * one device, raid1 on more. With metadata_profile_default set, raid1 is
 * lowered to dup when the hints leave only one device that takes metadata.
 */
void bx_mkfs_default_profiles(struct bx_mkfs_options *opts);

/*
 * Whether the devices named, with their hints, can hold the profiles: each
 * needs its minimum number of devices that allow its kind. Checked from the
 * options alone (no device is looked at), so the command line makes a
 * refusal a usage error; bx_mkfs() checks it too. 0 or -EINVAL with why.
 */
int bx_mkfs_check_profiles(const struct bx_mkfs_options *opts);

struct bx_mkfs_stripe {
	uint64_t devid;
	uint64_t physical;
};

struct bx_mkfs_chunk {
	uint64_t type;                  /* type and profile bits */
	uint64_t logical;
	uint64_t length;
	uint64_t stripe_size;           /* each device extent */
	uint64_t used;                  /* bytes of tree blocks in it */
	uint32_t num_stripes;
	uint32_t alloc_flags;           /* BX_ALLOC_F_* of the decision */
	struct bx_mkfs_stripe stripes[];
};

struct bx_mkfs_dev_result {
	uint64_t devid;
	char *path;
	uint64_t size;                  /* total_bytes of its device item */
	uint64_t bytes_used;
	uint64_t hint;
	uint8_t uuid[BTRFS_UUID_SIZE];
};

struct bx_mkfs_tree {
	uint64_t objectid;
	uint64_t bytenr;                /* of the root block */
	int level;
	size_t nr_blocks;
	size_t nr_items;
};

struct bx_mkfs_result {
	uint8_t fsid[BTRFS_FSID_SIZE];
	uint8_t chunk_tree_uuid[BTRFS_UUID_SIZE];
	char label[BTRFS_LABEL_SIZE];
	uint32_t nodesize;
	uint32_t sectorsize;
	unsigned int csum_type;
	uint32_t features;
	uint64_t generation;
	uint64_t total_bytes;
	uint64_t bytes_used;
	struct bx_mkfs_dev_result *devs;
	size_t nr_devs;
	struct bx_mkfs_chunk *chunks[3];        /* system, metadata, data */
	struct bx_mkfs_tree trees[12];
	size_t nr_trees;
	uint64_t nr_writes;
};

/*
 * Makes the filesystem. Refuses, before writing anything: a device named
 * twice, mounted or busy (held open exclusively, or an image file attached
 * to a loop device), read-only, holding a filesystem or partition table
 * (without force), too small for the profiles, or profiles the hints make
 * unsatisfiable. On success *result is set; free it with
 * bx_mkfs_result_free(). Returns 0 or a negative errno.
 */
int bx_mkfs(const struct bx_mkfs_options *opts, struct bx_mkfs_result **result);
void bx_mkfs_result_free(struct bx_mkfs_result *result);

#endif
