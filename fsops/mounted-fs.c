/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A mounted btrfs through its ioctls. */
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "disk/device-claim.h"
#include "disk/volumes.h"
#include "format/ctree.h"

static int cmp_devid(const void *a, const void *b)
{
	const struct bx_mounted_dev *x = a, *y = b;

	return x->devid < y->devid ? -1 : x->devid > y->devid;
}

/*
 * Whether the device @di describes belongs to a seed filesystem: its fsid
 * is not the mounted filesystem's. Kernels from 6.3 say which fsid in the
 * arguments (16 bytes after total_bytes, where older ones leave zeros);
 * otherwise the device's own superblock does.
 */
static bool is_seed(const struct bx_mounted_fs *fs, const struct btrfs_ioctl_dev_info_args *di)
{
	static const uint8_t zero[16];
	const uint8_t *fsid = (const uint8_t *)di->unused;
	struct btrfs_super_block sb;
	uint64_t size;
	bool seed;
	int fd;

	if (memcmp(fsid, zero, sizeof(zero)))
		return memcmp(fsid, fs->fsid, sizeof(fs->fsid)) != 0;
	if (!di->path[0] || bx_open_raw((const char *)di->path, &fd, &size)) {
		bx_error_clear();	/* a device that cannot be read is taken as a member */
		return false;
	}
	seed = bx_read_super_copy(fd, size, 0, &sb, BX_IO_TIMEOUT_DEFAULT) == BX_SB_OK &&
	       (le64toh(sb.flags) & BTRFS_SUPER_FLAG_SEEDING) &&
	       memcmp(sb.fsid, fs->fsid, sizeof(fs->fsid));
	close(fd);
	return seed;
}

static int query_devices(struct bx_mounted_fs *fs, uint64_t max_id, uint64_t num_devices)
{
	size_t alloc = num_devices ? num_devices : 1;

	fs->devs = calloc(alloc, sizeof(*fs->devs));
	if (!fs->devs)
		return bx_error(-ENOMEM, "out of memory");
	for (uint64_t devid = 1; devid <= max_id; devid++) {
		struct btrfs_ioctl_dev_info_args di;
		struct bx_mounted_dev *dev;

		memset(&di, 0, sizeof(di));
		di.devid = devid;
		if (ioctl(fs->fd, BTRFS_IOC_DEV_INFO, &di) < 0) {
			if (errno == ENODEV)
				continue;
			return bx_error(-errno, "%s: cannot query device %llu: %m", fs->path,
					(unsigned long long)devid);
		}
		if (fs->nr_devs == alloc) {
			struct bx_mounted_dev *grown;

			alloc *= 2;
			grown = realloc(fs->devs, alloc * sizeof(*grown));
			if (!grown)
				return bx_error(-ENOMEM, "out of memory");
			fs->devs = grown;
		}
		dev = &fs->devs[fs->nr_devs++];
		memset(dev, 0, sizeof(*dev));
		dev->devid = di.devid;
		dev->total_bytes = di.total_bytes;
		dev->bytes_used = di.bytes_used;
		snprintf(dev->path, sizeof(dev->path), "%.*s", (int)sizeof(di.path),
			 (const char *)di.path);
		dev->seed = is_seed(fs, &di);
	}
	qsort(fs->devs, fs->nr_devs, sizeof(*fs->devs), cmp_devid);
	return 0;
}

/*
 * @path is a member device (or image file) of a filesystem the kernel has
 * mounted: where. Any command that wants a mounted filesystem takes a member
 * as well as the mount point, as filesystem usage always did.
 */
static bool member_mount_point(const char *path, char *mnt, size_t len)
{
	struct btrfs_super_block sb;
	uint64_t size;
	bool mounted;
	int fd;

	if (bx_open_raw(path, &fd, &size)) {
		bx_error_clear();
		return false;
	}
	mounted = bx_read_super_copy(fd, size, 0, &sb, BX_IO_TIMEOUT_DEFAULT) == BX_SB_OK &&
		  bx_fs_is_mounted("/sys", sb.fsid, mnt, len);
	close(fd);
	return mounted;
}

int bx_mounted_open(const char *path, struct bx_mounted_fs *fs)
{
	struct btrfs_ioctl_fs_info_args fi;
	struct statfs sfs;
	char mnt[4096];
	int ret;

	memset(fs, 0, sizeof(*fs));
	fs->fd = -1;
	/* Absolute, so what reports show as the mount point is one ("mnt" is not). */
	if (!realpath(path, fs->path))
		snprintf(fs->path, sizeof(fs->path), "%s", path);
	/* O_NONBLOCK: a FIFO named here must not block the open; it is refused below. */
	fs->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fs->fd < 0)
		return bx_error(-errno, "%s: %m", path);
	if (fstatfs(fs->fd, &sfs) < 0) {
		ret = bx_error(-errno, "%s: %m", path);
		goto fail;
	}
	if ((unsigned long)sfs.f_type != BTRFS_SUPER_MAGIC) {
		if (member_mount_point(path, mnt, sizeof(mnt))) {
			bx_mounted_close(fs);
			return bx_mounted_open(mnt, fs);
		}
		ret = bx_error_as(-EINVAL, BX_ERROR_KIND_NOT_BTRFS,
				  "%s: not on a mounted btrfs filesystem", path);
		goto fail;
	}
	memset(&fi, 0, sizeof(fi));
	if (ioctl(fs->fd, BTRFS_IOC_FS_INFO, &fi) < 0) {
		ret = bx_error(-errno, "%s: cannot query the filesystem: %m", path);
		goto fail;
	}
	memcpy(fs->fsid, fi.fsid, sizeof(fs->fsid));
	bx_fsid_unparse(fs->fsid, fs->fsid_str);
	fs->sectorsize = fi.sectorsize ? fi.sectorsize : 4096;
	fs->nodesize = fi.nodesize;
	ret = query_devices(fs, fi.max_id, fi.num_devices);
	if (ret)
		goto fail;
	return 0;
fail:
	bx_mounted_close(fs);
	return ret;
}

void bx_mounted_close(struct bx_mounted_fs *fs)
{
	if (fs->fd >= 0)
		close(fs->fd);
	fs->fd = -1;
	free(fs->devs);
	fs->devs = NULL;
	fs->nr_devs = 0;
}

int bx_mounted_label(const struct bx_mounted_fs *fs, char *label, size_t len)
{
	char buf[FSLABEL_MAX] = "";

	if (ioctl(fs->fd, FS_IOC_GETFSLABEL, buf) < 0)
		return bx_error(-errno, "%s: cannot read the label: %m", fs->path);
	snprintf(label, len, "%.*s", FSLABEL_MAX - 1, buf);
	return 0;
}

int bx_mounted_block_group_tree(int fd, const char *path, uint64_t *tree_id)
{
	struct btrfs_ioctl_feature_flags flags;

	if (ioctl(fd, BTRFS_IOC_GET_FEATURES, &flags) < 0)
		return bx_error(-errno, "%s: cannot read the filesystem's features: %m", path);
	*tree_id = flags.compat_ro_flags & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE ?
		   BTRFS_BLOCK_GROUP_TREE_OBJECTID : BTRFS_EXTENT_TREE_OBJECTID;
	return 0;
}

const char *const bx_dev_stat_names[BX_DEV_STAT_COUNT] = {
	"write_io_errs", "read_io_errs", "flush_io_errs", "corruption_errs", "generation_errs",
};

int bx_mounted_dev_stats(const struct bx_mounted_fs *fs, uint64_t devid,
			 uint64_t stats[BX_DEV_STAT_COUNT])
{
	struct btrfs_ioctl_get_dev_stats args;

	memset(&args, 0, sizeof(args));
	args.devid = devid;
	args.nr_items = BX_DEV_STAT_COUNT;
	if (ioctl(fs->fd, BTRFS_IOC_GET_DEV_STATS, &args) < 0)
		return bx_error(-errno, "%s: cannot read the error counters of devid %llu: %m",
				fs->path, (unsigned long long)devid);
	for (int i = 0; i < BX_DEV_STAT_COUNT; i++)
		stats[i] = (uint64_t)i < args.nr_items ? args.values[i] : 0;
	return 0;
}

int bx_mounted_has_devid(const struct bx_mounted_fs *fs, uint64_t devid)
{
	for (size_t i = 0; i < fs->nr_devs; i++)
		if (fs->devs[i].devid == devid)
			return 1;
	return 0;
}

int bx_mounted_space_info(int fd, const char *path, struct btrfs_ioctl_space_args **spaces)
{
	struct btrfs_ioctl_space_args probe = { 0 };
	struct btrfs_ioctl_space_args *args;

	*spaces = NULL;
	if (ioctl(fd, BTRFS_IOC_SPACE_INFO, &probe) < 0)
		return bx_error(-errno, "%s: cannot read space info: %m", path);
	args = calloc(1, sizeof(*args) + probe.total_spaces * sizeof(args->spaces[0]));
	if (!args)
		return bx_error(-ENOMEM, "out of memory");
	args->space_slots = probe.total_spaces;
	if (probe.total_spaces && ioctl(fd, BTRFS_IOC_SPACE_INFO, args) < 0) {
		int ret = bx_error(-errno, "%s: cannot read space info: %m", path);

		free(args);
		return ret;
	}
	*spaces = args;
	return 0;
}

int bx_mounted_space_flags(const struct bx_mounted_fs *fs, uint64_t *flags, size_t max,
			   size_t *nr)
{
	struct btrfs_ioctl_space_args *args;
	int ret = bx_mounted_space_info(fs->fd, fs->path, &args);

	*nr = 0;
	if (ret)
		return ret;
	for (uint64_t i = 0; i < args->total_spaces && *nr < max; i++)
		flags[(*nr)++] = args->spaces[i].flags;
	free(args);
	return 0;
}

#define SEARCH_BUF (256 * 1024)

int bx_mounted_search_tree(int fd, const char *path, uint64_t tree_id, uint64_t min_objectid,
		       uint64_t max_objectid, uint8_t type,
		       int (*fn)(void *arg, const struct btrfs_ioctl_search_header *sh,
				 const void *item),
		       void *arg)
{
	struct btrfs_ioctl_search_args_v2 *args;
	struct btrfs_ioctl_search_key *sk;
	int ret = 0;

	args = calloc(1, sizeof(*args) + SEARCH_BUF);
	if (!args)
		return bx_error(-ENOMEM, "out of memory");
	sk = &args->key;
	sk->tree_id = tree_id;
	sk->min_objectid = min_objectid;
	sk->max_objectid = max_objectid;
	sk->min_type = type;
	sk->max_type = type;
	sk->min_offset = 0;
	sk->max_offset = UINT64_MAX;
	sk->min_transid = 0;
	sk->max_transid = UINT64_MAX;
	for (;;) {
		size_t off = 0;
		struct btrfs_ioctl_search_header last = { 0 };

		sk->nr_items = UINT32_MAX;
		args->buf_size = SEARCH_BUF;
		if (ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2, args) < 0) {
			if (errno == EPERM)
				ret = bx_error(-EPERM, "%s: reading the chunk and device trees "
					       "needs root (CAP_SYS_ADMIN)", path);
			else
				ret = bx_error(-errno, "%s: tree search in tree %llu: %m", path,
					       (unsigned long long)tree_id);
			break;
		}
		if (!sk->nr_items)
			break;
		for (uint32_t i = 0; i < sk->nr_items && !ret; i++) {
			struct btrfs_ioctl_search_header sh;

			if (off + sizeof(sh) > SEARCH_BUF)
				break;
			memcpy(&sh, (const char *)args->buf + off, sizeof(sh));
			off += sizeof(sh);
			if (off + sh.len > SEARCH_BUF)
				break;
			if (sh.type == type)
				ret = fn(arg, &sh, (const char *)args->buf + off);
			off += sh.len;
			last = sh;
		}
		if (ret)
			break;
		/* Continue after the last key returned. */
		sk->min_objectid = last.objectid;
		sk->min_type = (uint8_t)last.type;
		sk->min_offset = last.offset + 1;
		if (!sk->min_offset) {
			if (sk->min_type == type) {
				if (last.objectid == UINT64_MAX || last.objectid >= max_objectid)
					break;
				sk->min_objectid = last.objectid + 1;
			}
			sk->min_type = type;
		}
	}
	free(args);
	return ret;
}
