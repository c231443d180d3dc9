/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A mounted btrfs seen through its ioctls: FSID, sector size and member
 * devices (BTRFS_IOC_FS_INFO, BTRFS_IOC_DEV_INFO) and the block group profiles
 * in use (BTRFS_IOC_SPACE_INFO). Library style: no printing; functions
 * return 0 or a negative errno with a message recorded by bx_error().
 */
#ifndef BTRFSX_MOUNTED_FS_H
#define BTRFSX_MOUNTED_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "disk/device-claim.h"

struct bx_mounted_dev {
	uint64_t devid;
	uint64_t total_bytes;
	uint64_t bytes_used;
	char path[1024];     /* as the kernel reports it; "" when missing */
	bool seed;           /* a device of a seed filesystem: read-only, never allocated from */
};

struct bx_mounted_fs {
	int fd;                          /* O_RDONLY on the path given to open */
	char path[4096];                 /* the path opened, made absolute */
	uint8_t fsid[16];
	char fsid_str[BX_FSID_STR_LEN];  /* lowercase, the name under /sys/fs/btrfs */
	uint32_t sectorsize;
	uint32_t nodesize;
	size_t nr_devs;
	struct bx_mounted_dev *devs;     /* sorted by devid */
};

/*
 * Opens a path on a mounted btrfs (the mount point or anything below it, or
 * a member device or image file of a mounted btrfs, which stands for its
 * mount point) and queries it. Fails with -EINVAL when @path is neither.
 * Release with bx_mounted_close().
 */
int bx_mounted_open(const char *path, struct bx_mounted_fs *fs);
void bx_mounted_close(struct bx_mounted_fs *fs);

/* True if @devid is a member device of @fs. */
int bx_mounted_has_devid(const struct bx_mounted_fs *fs, uint64_t devid);

/*
 * Block group flags in use (BTRFS_BLOCK_GROUP_* type and profile bits, one
 * entry per SPACE_INFO slot) from BTRFS_IOC_SPACE_INFO. @flags gets up to
 * @max entries; *@nr the count.
 */
int bx_mounted_space_flags(const struct bx_mounted_fs *fs, uint64_t *flags, size_t max,
			   size_t *nr);
/*
 * BTRFS_IOC_SPACE_INFO on @fd (any file of the mounted filesystem; @path
 * names it in errors): *@spaces is allocated with every slot filled; free()
 * it.
 */
struct btrfs_ioctl_space_args;
int bx_mounted_space_info(int fd, const char *path, struct btrfs_ioctl_space_args **spaces);

/* The filesystem's label (BTRFS_IOC_GET_FSLABEL), "" when it has none. */
int bx_mounted_label(const struct bx_mounted_fs *fs, char *label, size_t len);

/*
 * The tree that holds the block group items: the block group tree when
 * the filesystem has one (BTRFS_IOC_GET_FEATURES), else the extent tree.
 * @fd is any file of the mounted filesystem; @path names it in errors.
 */
int bx_mounted_block_group_tree(int fd, const char *path, uint64_t *tree_id);

/* The kernel's per-device error counters, in BTRFS_IOC_GET_DEV_STATS order. */
enum bx_dev_stat {
	BX_DEV_STAT_WRITE_ERRS,
	BX_DEV_STAT_READ_ERRS,
	BX_DEV_STAT_FLUSH_ERRS,
	BX_DEV_STAT_CORRUPTION_ERRS,
	BX_DEV_STAT_GENERATION_ERRS,
	BX_DEV_STAT_COUNT
};

/* "write_io_errs", ...: the names `btrfs device stats` prints. */
extern const char *const bx_dev_stat_names[BX_DEV_STAT_COUNT];

/*
 * Reads the error counters of device @devid (BTRFS_IOC_GET_DEV_STATS, without
 * resetting them); counters the kernel does not keep are 0. Needs
 * CAP_SYS_ADMIN.
 */
int bx_mounted_dev_stats(const struct bx_mounted_fs *fs, uint64_t devid,
			 uint64_t stats[BX_DEV_STAT_COUNT]);

struct btrfs_ioctl_search_header;

/*
 * Calls @fn for every item of tree @tree_id with key type @type and objectid
 * in [min_objectid, max_objectid], in key order (BTRFS_IOC_TREE_SEARCH_V2 on
 * @fd, any file of the mounted filesystem; @path names it in errors). Stops
 * at the first non-zero return of @fn and returns it. Needs CAP_SYS_ADMIN.
 */
int bx_mounted_search_tree(int fd, const char *path, uint64_t tree_id, uint64_t min_objectid,
			   uint64_t max_objectid, uint8_t type,
			   int (*fn)(void *arg, const struct btrfs_ioctl_search_header *sh,
				     const void *item),
			   void *arg);

#endif
