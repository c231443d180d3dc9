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

/* The stat file of a block device: by device number, else by its name. */
static bool find_stat(const char *sysfs_root, const char *dev_path, char *out, size_t len)
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

static int parse_stat(const char *path, uint64_t *reads, uint64_t *sectors)
{
	unsigned long long r, merged, s;
	FILE *fp = fopen(path, "re");
	int n;

	if (!fp)
		return bx_error(-errno, "%s: %m", path);
	n = fscanf(fp, "%llu %llu %llu", &r, &merged, &s);
	fclose(fp);
	if (n != 3)
		return bx_error(-EPROTO, "%s: cannot parse the block device statistics", path);
	*reads = r;
	*sectors = s;
	return 0;
}

int bx_read_dev_reads(const char *sysfs_root, const struct bx_mounted_fs *fs,
		      struct bx_dev_reads *out)
{
	for (size_t i = 0; i < fs->nr_devs; i++) {
		struct bx_dev_reads *d = &out[i];
		uint64_t sectors = 0;
		int ret;

		memset(d, 0, sizeof(*d));
		d->devid = fs->devs[i].devid;
		snprintf(d->path, sizeof(d->path), "%s", fs->devs[i].path);
		if (!d->path[0] || !find_stat(sysfs_root, d->path, d->stat_path, sizeof(d->stat_path))) {
			d->stat_path[0] = '\0';
			continue;
		}
		ret = parse_stat(d->stat_path, &d->reads, &sectors);
		if (ret)
			return ret;
		d->read_bytes = sectors * 512;
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
