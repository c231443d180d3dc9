/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-device read counters from the block devices' stat files. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/error.h"
#include "fsops/io-stats.h"

bool bx_blk_stat_path(const char *sysfs_root, const char *dev_path, char *out, size_t len)
{
	char resolved[PATH_MAX];
	const char *name;
	struct stat st;

	if (stat(dev_path, &st) == 0 && S_ISBLK(st.st_mode)) {
		snprintf(out, len, "%s/dev/block/%u:%u/stat", sysfs_root, major(st.st_rdev),
			 minor(st.st_rdev));
		if (access(out, R_OK) == 0)
			return true;
	}
	if (!realpath(dev_path, resolved))
		snprintf(resolved, sizeof(resolved), "%s", dev_path);
	name = strrchr(resolved, '/');
	name = name ? name + 1 : resolved;
	if (!*name)
		return false;
	snprintf(out, len, "%s/class/block/%s/stat", sysfs_root, name);
	return access(out, R_OK) == 0;
}

int bx_blk_stat_read(const char *path, struct bx_blk_counters *c)
{
	unsigned long long f[7];
	FILE *fp = fopen(path, "re");
	int n;

	if (!fp)
		return bx_error(-errno, "%s: %m", path);
	n = fscanf(fp, "%llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4],
		   &f[5], &f[6]);
	fclose(fp);
	if (n != 7)
		return bx_error(-EPROTO, "%s: cannot parse the block device statistics", path);
	/* Sectors are 512 bytes in this file, whatever the device's sector size. */
	*c = (struct bx_blk_counters){ .reads = f[0], .read_bytes = f[2] * 512,
				       .writes = f[4], .write_bytes = f[6] * 512 };
	return 0;
}

int bx_read_dev_reads(const char *sysfs_root, const struct bx_mounted_fs *fs,
		      struct bx_dev_reads *out)
{
	for (size_t i = 0; i < fs->nr_devs; i++) {
		struct bx_dev_reads *d = &out[i];
		struct bx_blk_counters c;
		int ret;

		memset(d, 0, sizeof(*d));
		d->devid = fs->devs[i].devid;
		snprintf(d->path, sizeof(d->path), "%s", fs->devs[i].path);
		if (!d->path[0] ||
		    !bx_blk_stat_path(sysfs_root, d->path, d->stat_path, sizeof(d->stat_path))) {
			d->stat_path[0] = '\0';
			continue;
		}
		ret = bx_blk_stat_read(d->stat_path, &c);
		if (ret)
			return ret;
		d->reads = c.reads;
		d->read_bytes = c.read_bytes;
		d->present = true;
	}
	return 0;
}

void bx_warn_no_dev_reads(const struct bx_mounted_fs *fs, const struct bx_dev_reads *reads)
{
	for (size_t i = 0; i < fs->nr_devs; i++)
		if (!reads[i].present)
			bx_warn("%s: device %llu (%s) has no block device statistics", fs->path,
				(unsigned long long)reads[i].devid,
				reads[i].path[0] ? reads[i].path : "missing");
}
