/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-device read counters of a mounted btrfs, from each member block
 * device's <sysfs_root>/dev/block/<major>:<minor>/stat (the kernel's
 * Documentation/block/stat.rst: field 1 reads completed, field 3 sectors
 * read, always in 512-byte units). Library style: no printing.
 */
#ifndef BTRFSX_IO_STATS_H
#define BTRFSX_IO_STATS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "fsops/mounted-fs.h"

/* What struct btrfsx_io_stats and Python's IoStats take as it is (common/fields.h). */
#define BX_DEV_READS_FIELDS(X)							\
	X(uint64_t, devid, )							\
	X(char, path, [1024])	/* the device as the kernel reports it */	\
	X(bool, present, )	/* false: missing device or no stat file */	\
	X(uint64_t, reads, )	/* completed read requests */			\
	X(uint64_t, read_bytes, )	/* sectors read * 512 */

struct bx_dev_reads {
	BX_DEV_READS_FIELDS(BX_FIELD_MEMBER)
	char stat_path[PATH_MAX + 64];  /* the stat file read; "" if none was found */
};

/* A block device's counters (Documentation/block/stat.rst fields 1, 3, 5 and 7). */
struct bx_blk_counters {
	uint64_t reads;       /* completed read requests */
	uint64_t read_bytes;
	uint64_t writes;      /* completed write requests */
	uint64_t write_bytes;
};

/*
 * The stat file of block device @dev_path under @sysfs_root, by device
 * number, else by name, into @out; false when there is none.
 */
bool bx_blk_stat_path(const char *sysfs_root, const char *dev_path, char *out, size_t len);

/* Reads the counters of stat file @path. */
int bx_blk_stat_read(const char *path, struct bx_blk_counters *c);

/*
 * Fills @out (room for fs->nr_devs entries) with the current counters of
 * every member device of @fs. A device whose stat cannot be found is marked
 * not present and counts 0; a stat file that cannot be parsed is an error.
 */
int bx_read_dev_reads(const char *sysfs_root, const struct bx_mounted_fs *fs,
		      struct bx_dev_reads *out);

/* Warns about each device of @reads (a sample of @fs) without statistics. */
void bx_warn_no_dev_reads(const struct bx_mounted_fs *fs, const struct bx_dev_reads *reads);

#endif
