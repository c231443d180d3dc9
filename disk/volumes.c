/* Opening a filesystem: devices, superblocks, assembly by fsid, chunk tree. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>
#include <blkid/blkid.h>
#include <uuid/uuid.h>

#include "common/error.h"
#include "disk/device-claim.h"
#include "disk/btree.h"
#include "format/csum.h"
#include "disk/io.h"
#include "disk/volumes.h"
#include "disk/write.h"

#define BLOCK_CACHE_SLOTS 1024

struct bx_device *bx_fs_device(struct bx_fs *fs, uint64_t devid)
{
	for (size_t i = 0; i < fs->nr_devs; i++)
		if (fs->devs[i]->devid == devid)
			return fs->devs[i];
	return NULL;
}

static void device_free(struct bx_device *dev)
{
	if (!dev)
		return;
	if (dev->fd >= 0)
		close(dev->fd);
	free(dev->path);
	free(dev);
}

int bx_check_member_type(const struct stat *st, const char *path)
{
	if (S_ISREG(st->st_mode) || S_ISBLK(st->st_mode))
		return 0;
	if (S_ISDIR(st->st_mode))
		return bx_error(-EISDIR, "%s: is a directory, not a device or image file", path);
	return bx_error(-ENOTBLK, "%s: not a block device or image file", path);
}

static int device_size(int fd, const struct stat *st, const char *path, uint64_t *size)
{
	if (S_ISREG(st->st_mode)) {
		*size = (uint64_t)st->st_size;
		return 0;
	}
	if (ioctl(fd, BLKGETSIZE64, size) < 0)
		return bx_error(-errno, "%s: cannot get the device size: %m", path);
	return 0;
}

int bx_open_raw(const char *path, int *fd, uint64_t *size)
{
	struct stat st;
	int ret;

	*fd = -1;
	if (stat(path, &st) < 0)
		return bx_error(-errno, "%s: %m", path);
	ret = bx_check_member_type(&st, path);
	if (ret)
		return ret;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return bx_error(-errno, "%s: cannot open: %m", path);
	ret = device_size(*fd, &st, path, size);
	if (ret) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}

/* Picks the newest valid superblock copy; warns when the primary was not it. */
static int device_read_supers(struct bx_device *dev)
{
	struct btrfs_super_block copy;
	uint64_t best_gen = 0;

	dev->sb_mirror = -1;
	for (int i = 0; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		dev->sb_status[i] = bx_read_super_copy(dev->fd, dev->size, i, &copy,
						       dev->io_timeout);
		dev->sb_generation[i] = 0;
		if (dev->sb_status[i] == BX_SB_TIMEOUT)
			return bx_error(-ETIMEDOUT, "%s: superblock copy %d: the read did not complete "
					"within %u s (the device stalls)", dev->path, i,
					dev->io_timeout);
		if (dev->sb_status[i] != BX_SB_OK)
			continue;
		dev->sb_generation[i] = le64toh(copy.generation);
		if (dev->sb_mirror < 0 || dev->sb_generation[i] > best_gen) {
			dev->sb = copy;
			dev->sb_mirror = i;
			best_gen = dev->sb_generation[i];
		}
	}
	if (dev->sb_mirror < 0) {
		if (dev->sb_status[0] == BX_SB_BAD_MAGIC || dev->sb_status[0] == BX_SB_BEYOND_DEVICE)
			return bx_error_as(-EINVAL, BX_ERROR_KIND_NOT_BTRFS, "%s: not a btrfs filesystem",
					   dev->path);
		return bx_error(-EUCLEAN, "%s: no valid superblock (primary: %s)", dev->path,
				bx_sb_status_str(dev->sb_status[0]));
	}
	if (dev->sb_status[0] != BX_SB_OK)
		bx_warn("%s: primary superblock %s, using copy %d", dev->path,
			bx_sb_status_str(dev->sb_status[0]), dev->sb_mirror);
	else if (dev->sb_mirror != 0)
		bx_warn("%s: superblock copy %d is newer than the primary (generation %llu > %llu)",
			dev->path, dev->sb_mirror, (unsigned long long)best_gen,
			(unsigned long long)dev->sb_generation[0]);
	dev->devid = le64toh(dev->sb.dev_item.devid);
	dev->item = dev->sb.dev_item;
	return 0;
}

static int device_open(const char *path, unsigned int flags, unsigned int io_timeout,
		       struct bx_device **out)
{
	int oflags = (flags & BX_OPEN_WRITE) ? O_RDWR : O_RDONLY;
	struct bx_device *dev = calloc(1, sizeof(*dev));
	struct stat st;
	int ret;

	if (!dev)
		return bx_error(-ENOMEM, "out of memory");
	dev->fd = -1;
	dev->io_timeout = io_timeout;
	dev->path = strdup(path);
	if (!dev->path) {
		free(dev);
		return bx_error(-ENOMEM, "out of memory");
	}
	if (stat(path, &st) < 0) {
		ret = bx_error(-errno, "%s: %m", path);
		goto fail;
	}
	if (flags & BX_OPEN_EXCL) {
		ret = bx_open_claimed(path, &st, flags & BX_OPEN_WRITE, &dev->fd);
	} else {
		ret = bx_check_member_type(&st, path);
		if (!ret && (dev->fd = open(path, oflags | O_CLOEXEC)) < 0)
			ret = bx_error(-errno, "%s: cannot open: %m", path);
	}
	if (ret)
		goto fail;
	dev->writable = flags & BX_OPEN_WRITE;
	ret = device_size(dev->fd, &st, path, &dev->size);
	if (!ret)
		ret = device_read_supers(dev);
	if (ret)
		goto fail;
	*out = dev;
	return 0;
fail:
	device_free(dev);
	return ret;
}

/* What tree blocks carry: the metadata_uuid where the filesystem has one, else the fsid. */
static const uint8_t *metadata_identity(const struct btrfs_super_block *sb)
{
	if (le64toh(sb->incompat_flags) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID)
		return sb->metadata_uuid;
	return sb->fsid;
}

/*
 * Whether @dev belongs with the members already in @fs: the same fsid, or a
 * change of fsid (btrfstune -m/-M) that was interrupted, which leaves one side
 * flagged CHANGING_FSID_V2 and both with the same metadata identity; the
 * newest superblock then says what the fsid is (fs_pick_super), as btrfs-progs
 * and the kernel decide.
 */
static bool same_filesystem(const struct bx_fs *fs, const struct bx_device *dev)
{
	const struct btrfs_super_block *first = &fs->devs[0]->sb;

	if (!memcmp(dev->sb.fsid, fs->fsid, BTRFS_FSID_SIZE))
		return true;
	if (!((le64toh(dev->sb.flags) | le64toh(first->flags)) &
	      BTRFS_SUPER_FLAG_CHANGING_FSID_V2))
		return false;
	return !memcmp(metadata_identity(&dev->sb), metadata_identity(first), BTRFS_FSID_SIZE);
}

static int fs_add_device(struct bx_fs *fs, struct bx_device *dev)
{
	struct bx_device **devs;
	struct bx_device *other = bx_fs_device(fs, dev->devid);

	if (fs->nr_devs && !same_filesystem(fs, dev)) {
		char a[37], b[37];

		uuid_unparse(dev->sb.fsid, a);
		uuid_unparse(fs->fsid, b);
		return bx_error(-EXDEV, "%s: belongs to filesystem %s, not %s", dev->path, a, b);
	}
	if (other)
		return bx_error(-EEXIST, "%s and %s both claim devid %llu", other->path, dev->path,
				(unsigned long long)dev->devid);
	devs = realloc(fs->devs, (fs->nr_devs + 1) * sizeof(*devs));
	if (!devs)
		return bx_error(-ENOMEM, "out of memory");
	fs->devs = devs;
	fs->devs[fs->nr_devs++] = dev;
	return 0;
}

static bool fs_has_path(const struct bx_fs *fs, const char *path)
{
	struct stat a, b;

	if (stat(path, &a) < 0)
		return false;
	for (size_t i = 0; i < fs->nr_devs; i++)
		if (stat(fs->devs[i]->path, &b) == 0 &&
		    ((S_ISBLK(a.st_mode) && a.st_rdev == b.st_rdev) ||
		     (a.st_dev == b.st_dev && a.st_ino == b.st_ino)))
			return true;
	return false;
}

/* Finds the other members by fsid among the block devices libblkid sees. */
static void fs_scan_members(struct bx_fs *fs, unsigned int flags)
{
	blkid_dev_iterate iter;
	blkid_cache cache;
	blkid_dev bdev;
	char fsid[37];
	int ret;

	if (blkid_get_cache(&cache, "/dev/null") < 0)
		return;
	blkid_probe_all(cache);
	uuid_unparse(fs->fsid, fsid);
	iter = blkid_dev_iterate_begin(cache);
	blkid_dev_set_search(iter, "UUID", fsid);
	while (blkid_dev_next(iter, &bdev) == 0) {
		const char *name = blkid_dev_devname(bdev);
		struct bx_device *dev;

		size_t used = strlen(fs->scan_failures);

		if (fs_has_path(fs, name))
			continue;
		ret = device_open(name, flags, fs->io_timeout, &dev);
		if (ret) {
			fs->member_busy |= ret == -EBUSY;
			snprintf(fs->scan_failures + used, sizeof(fs->scan_failures) - used, "%s%s",
				 used ? "; " : "", bx_error_message(ret));
			continue;
		}
		if (fs_add_device(fs, dev))
			device_free(dev);
	}
	blkid_dev_iterate_end(iter);
	blkid_put_cache(cache);
	bx_error_clear();
}

static int sys_chunk_cb(void *arg, const struct btrfs_key *key, const struct btrfs_chunk *chunk,
			size_t size)
{
	struct bx_fs *fs = arg;
	int ret = bx_check_chunk_item(chunk, size, fs->sectorsize);

	if (!ret)
		ret = bx_chunk_map_insert(fs, key->offset, chunk);
	if (ret)
		return bx_error_wrap(ret, "system chunk at logical %llu",
				     (unsigned long long)key->offset);
	return 0;
}

/* Missing devices are remembered in a list so errors can name each of them. */
/* What the chunk tree's device items say: their number and the missing devids. */
struct missing_list {
	char msg[256];
	size_t used;
	uint64_t dev_items;
};

static int chunk_tree_item(struct bx_fs *fs, struct bx_eb *leaf, int slot,
			   struct missing_list *missing)
{
	const void *ptr = bx_item_ptr(leaf, slot);
	uint32_t size = bx_item_size(leaf, slot);
	struct btrfs_key key;
	int ret;

	bx_item_key(leaf, slot, &key);
	if (key.type == BTRFS_DEV_ITEM_KEY) {
		const struct btrfs_dev_item *item = ptr;
		struct bx_device *dev;

		if (size < sizeof(*item))
			return bx_error(-EUCLEAN, "device item %llu too small",
					(unsigned long long)key.offset);
		dev = bx_fs_device(fs, le64toh(item->devid));
		if (dev) {
			missing->dev_items++;
			dev->item = *item;
			return 0;
		}
		missing->dev_items++;
		fs->nr_missing++;
		if (missing->used < sizeof(missing->msg))
			missing->used += (size_t)snprintf(missing->msg + missing->used,
							  sizeof(missing->msg) - missing->used,
							  "%s%llu", missing->used ? ", " : "",
							  (unsigned long long)le64toh(item->devid));
		return 0;
	}
	if (key.type != BTRFS_CHUNK_ITEM_KEY)
		return 0;
	ret = bx_check_chunk_item(ptr, size, fs->sectorsize);
	if (!ret)
		ret = bx_chunk_map_insert(fs, key.offset, ptr);
	if (ret)
		return bx_error_wrap(ret, "chunk at logical %llu", (unsigned long long)key.offset);
	return 0;
}

static int read_chunk_tree(struct bx_fs *fs)
{
	struct btrfs_key first = { 0, 0, 0 };
	struct missing_list missing = { "", 0, 0 };
	struct bx_root root;
	struct bx_path path;
	int ret;

	bx_find_root(fs, BTRFS_CHUNK_TREE_OBJECTID, &root);
	bx_path_init(&path, fs->readahead);
	ret = bx_search(fs, &root, &first, &path);
	if (ret >= 0)
		ret = bx_path_settle(fs, &path);
	while (ret == 0) {
		ret = chunk_tree_item(fs, bx_path_leaf(&path), path.slots[0], &missing);
		if (!ret)
			ret = bx_next_item(fs, &path);
	}
	bx_path_release(&path);
	if (ret < 0)
		return bx_error_wrap(ret, "reading the chunk tree");
	/* The kernel refuses to mount this (super_num_devices mismatch). */
	if (missing.dev_items != le64toh(fs->sb.num_devices))
		return bx_error(-EUCLEAN, "the superblock counts %llu devices, the chunk tree has "
				"%llu device items", (unsigned long long)le64toh(fs->sb.num_devices),
				(unsigned long long)missing.dev_items);
	if (fs->nr_missing && !(fs->flags & BX_OPEN_DEGRADED))
		return bx_error(fs->member_busy ? -EBUSY : -ENODEV,
				"filesystem has %llu missing device%s (devid %s); "
				"name all members or attach them%s%s",
				(unsigned long long)fs->nr_missing, fs->nr_missing > 1 ? "s" : "",
				missing.msg, *fs->scan_failures ? "; " : "", fs->scan_failures);
	if (fs->nr_missing)
		bx_warn("filesystem is degraded: devid %s missing", missing.msg);
	return 0;
}

static int fs_init_from_super(struct bx_fs *fs)
{
	const struct btrfs_super_block *sb = &fs->sb;

	fs->csum_type = le16toh(sb->csum_type);
	fs->csum_size = btrfsx_csum_size(fs->csum_type);
	fs->nodesize = le32toh(sb->nodesize);
	fs->sectorsize = le32toh(sb->sectorsize);
	if (le64toh(sb->incompat_flags) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID)
		memcpy(fs->metadata_uuid, sb->metadata_uuid, BTRFS_FSID_SIZE);
	else
		memcpy(fs->metadata_uuid, sb->fsid, BTRFS_FSID_SIZE);
	if (fs->sectorsize < 4096 || fs->sectorsize > 65536 ||
	    (fs->sectorsize & (fs->sectorsize - 1)))
		return bx_error(-EUCLEAN, "invalid sector size %u", fs->sectorsize);
	if (fs->nodesize < fs->sectorsize || fs->nodesize > 65536 ||
	    (fs->nodesize & (fs->nodesize - 1)))
		return bx_error(-EUCLEAN, "invalid node size %u", fs->nodesize);
	if (sb->root_level >= BTRFS_MAX_LEVEL || sb->chunk_root_level >= BTRFS_MAX_LEVEL)
		return bx_error(-EUCLEAN, "invalid root level in the superblock");
	/* What btrfs-progs and the kernel refuse too (btrfs_check_super). */
	if (!le32toh(sb->stripesize) || (le32toh(sb->stripesize) & (le32toh(sb->stripesize) - 1)))
		return bx_error(-EUCLEAN, "invalid stripe size %u in the superblock",
				le32toh(sb->stripesize));
	if (!le64toh(sb->total_bytes))
		return bx_error(-EUCLEAN, "invalid total_bytes 0 in the superblock");
	if (le64toh(sb->bytes_used) < 6ULL * fs->nodesize)
		return bx_error(-EUCLEAN, "invalid bytes_used %llu in the superblock (less than "
				"6 tree blocks)", (unsigned long long)le64toh(sb->bytes_used));
	if (!le64toh(sb->num_devices))
		return bx_error(-EUCLEAN, "invalid num_devices 0 in the superblock");
	return 0;
}

/* The newest superblock among the members speaks for the filesystem. */
static void fs_pick_super(struct bx_fs *fs)
{
	struct bx_device *best = fs->devs[0];

	for (size_t i = 1; i < fs->nr_devs; i++)
		if (le64toh(fs->devs[i]->sb.generation) > le64toh(best->sb.generation))
			best = fs->devs[i];
	fs->sb = best->sb;
	fs->sb_devid = best->devid;
	/* After an interrupted fsid change the members disagree: the newest one is right. */
	memcpy(fs->fsid, best->sb.fsid, BTRFS_FSID_SIZE);
	for (size_t i = 0; i < fs->nr_devs; i++)
		if (fs->devs[i]->sb.generation != best->sb.generation)
			bx_warn("%s: stale device (generation %llu, filesystem %llu)",
				fs->devs[i]->path,
				(unsigned long long)le64toh(fs->devs[i]->sb.generation),
				(unsigned long long)le64toh(best->sb.generation));
}

/*
 * Asks for the superblock copies of every named device or image at once,
 * before device_open reads them one after another: on disks that seek each
 * read would wait for the one before (three copies on each of twelve HDDs:
 * 36 seeks in a row). @fds hold the pages in the cache until the devices
 * are open (a block device's cache goes with its last descriptor); -1 where
 * the path is neither a block device nor a file (device_open says why).
 */
static void prefetch_supers(char *const *paths, int nr_paths, int *fds)
{
	for (int i = 0; i < nr_paths; i++) {
		struct stat st;

		fds[i] = -1;
		if (stat(paths[i], &st) < 0 || !(S_ISBLK(st.st_mode) || S_ISREG(st.st_mode)))
			continue;
		fds[i] = open(paths[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fds[i] >= 0)
			bx_readahead_super_copies(fds[i]);
	}
}

static int open_named(struct bx_fs *fs, char *const *paths, int nr_paths, unsigned int flags)
{
	for (int i = 0; i < nr_paths; i++) {
		struct bx_device *dev;
		int ret;

		if (fs_has_path(fs, paths[i]))
			return bx_error(-EINVAL, "%s: named twice", paths[i]);
		ret = device_open(paths[i], flags, fs->io_timeout, &dev);
		if (ret)
			return ret;
		if (i == 0)
			memcpy(fs->fsid, dev->sb.fsid, BTRFS_FSID_SIZE);
		ret = fs_add_device(fs, dev);
		if (ret) {
			device_free(dev);
			return ret;
		}
	}
	return 0;
}

static int fs_open_named(struct bx_fs *fs, char *const *paths, int nr_paths, unsigned int flags)
{
	int *fds = malloc((size_t)nr_paths * sizeof(*fds));
	int ret;

	if (!fds)
		return bx_error(-ENOMEM, "out of memory");
	prefetch_supers(paths, nr_paths, fds);
	ret = open_named(fs, paths, nr_paths, flags);
	for (int i = 0; i < nr_paths; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return ret;
}

int bx_fs_open(struct bx_fs **out, char *const *paths, int nr_paths, unsigned int flags)
{
	return bx_fs_open_timed(out, paths, nr_paths, flags, BX_IO_TIMEOUT_DEFAULT);
}

int bx_fs_open_timed(struct bx_fs **out, char *const *paths, int nr_paths, unsigned int flags,
		     unsigned int io_timeout)
{
	struct bx_fs *fs;
	int ret;

	if (nr_paths < 1)
		return bx_error(-EINVAL, "no device given");
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return bx_error(-ENOMEM, "out of memory");
	fs->flags = flags;
	fs->readahead = true;
	fs->io_timeout = io_timeout;
	ret = fs_open_named(fs, paths, nr_paths, flags);
	if (ret)
		goto fail;
	if (!(flags & BX_OPEN_NO_SCAN) && fs->nr_devs < le64toh(fs->devs[0]->sb.num_devices))
		fs_scan_members(fs, flags);
	fs_pick_super(fs);
	ret = fs_init_from_super(fs);
	if (ret || (flags & BX_OPEN_SB_ONLY))
		goto done;
	fs->cache = bx_block_cache_new(BLOCK_CACHE_SLOTS);
	if (!fs->cache) {
		ret = bx_error(-ENOMEM, "out of memory");
		goto fail;
	}
	ret = bx_parse_sys_chunk_array(&fs->sb, sys_chunk_cb, fs);
	if (!ret)
		ret = read_chunk_tree(fs);
done:
	/* What the devices hold is wrong: say which filesystem, by the first path named. */
	if (ret) {
		ret = bx_error_about(ret, paths[0]);
		goto fail;
	}
	*out = fs;
	return 0;
fail:
	bx_fs_close(fs);
	return ret;
}

void bx_fs_close(struct bx_fs *fs)
{
	if (!fs)
		return;
	bx_write_log_release(fs);
	bx_block_cache_free(fs->cache);
	for (size_t i = 0; i < fs->chunks.nr; i++)
		free(fs->chunks.chunks[i]);
	free(fs->chunks.chunks);
	for (size_t i = 0; i < fs->nr_devs; i++)
		device_free(fs->devs[i]);
	free(fs->devs);
	free(fs);
}
