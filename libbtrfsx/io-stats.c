/* Device read counters: the public face of fsops/io-stats.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/io-stats.h"
#include "fsops/mounted-fs.h"
#include "libbtrfsx/libbtrfsx-private.h"

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
	for (size_t i = 0; !ret && i < fs->nr_devs; i++) {
		stats[i].devid = reads[i].devid;
		snprintf(stats[i].path, sizeof(stats[i].path), "%s", reads[i].path);
		stats[i].present = reads[i].present;
		stats[i].reads = reads[i].reads;
		stats[i].read_bytes = reads[i].read_bytes;
	}
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
