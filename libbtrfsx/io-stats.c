/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Device read counters: the public face of fsops/io-stats.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/io-stats.h"
#include "fsops/mounted-fs.h"
#include "libbtrfsx/libbtrfsx-private.h"

static void public_stats(const struct bx_dev_reads *in, struct btrfsx_io_stats *out)
{
	BX_DEV_READS_FIELDS(BX_FIELD_COPY)
}

static int sample(const char *sysfs_root, const struct bx_mounted_fs *fs,
		  struct btrfsx_io_stats *stats)
{
	struct bx_dev_reads *reads = calloc(fs->nr_devs + 1, sizeof(*reads));
	int ret;

	if (!reads)
		return bx_error(-ENOMEM, "out of memory");
	ret = bx_read_dev_reads(sysfs_root, fs, reads);
	if (!ret)
		bx_warn_no_dev_reads(fs, reads);
	for (size_t i = 0; !ret && i < fs->nr_devs; i++)
		public_stats(&reads[i], &stats[i]);
	free(reads);
	return ret;
}

PUBLIC enum btrfsx_error btrfsx_io_stats_sample(const char *path, const char *sysfs_root,
						struct btrfsx_io_stats **stats, size_t *nr_stats)
{
	struct btrfsx_io_stats *out;
	struct bx_mounted_fs fs;
	int ret;

	bx_api_begin();
	if (!path)
		return bx_api_missing("a path");
	if (!stats || !nr_stats)
		return bx_api_missing("stats and nr_stats");
	ret = bx_mounted_open(path, &fs);
	if (ret)
		return bx_api_result(ret);
	out = calloc(fs.nr_devs + 1, sizeof(*out));
	ret = out ? sample(bx_api_sysfs_root(sysfs_root), &fs, out) :
		    bx_error(-ENOMEM, "out of memory");
	if (ret) {
		free(out);
	} else {
		*stats = out;
		*nr_stats = fs.nr_devs;
	}
	bx_mounted_close(&fs);
	return bx_api_result(ret);
}
