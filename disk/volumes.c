/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Opening a filesystem: devices, superblocks, assembly by fsid, chunk tree. */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
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
#include "format/features.h"
#include "disk/write.h"

#define BLOCK_CACHE_SLOTS 1024

struct bx_device *bx_fs_device(struct bx_fs *fs, uint64_t devid)
{
	for (size_t i = 0; i < fs->nr_devs; i++)
		if (fs->devs[i]->devid == devid)
			return fs->devs[i];
	return NULL;
}

bool bx_device_short(const struct bx_device *dev, uint64_t claimed, char *buf, size_t len)
{
	if (claimed <= dev->size)
		return false;
	snprintf(buf, len, "devid %llu: the device item claims %llu bytes, but %s has %llu",
		 (unsigned long long)dev->devid, (unsigned long long)claimed, dev->path,
		 (unsigned long long)dev->size);
	return true;
}

int bx_fs_check_member_sizes(const struct bx_fs *fs)
{
	char msg[PATH_MAX + 128];

	for (size_t i = 0; i < fs->nr_devs; i++) {
		const struct bx_device *dev = fs->devs[i];

		if (dev->listed && bx_device_short(dev, le64toh(dev->item.total_bytes), msg,
						   sizeof(msg)))
			return bx_error(-EUCLEAN, "%s", msg);
	}
	return 0;
}

bool bx_fs_block_fsid_ok(const struct bx_fs *fs, const uint8_t *fsid)
{
	if (!memcmp(fsid, fs->metadata_uuid, BTRFS_FSID_SIZE))
		return true;
	for (size_t i = 0; i < fs->nr_seed_fsids; i++)
		if (!memcmp(fsid, fs->seed_fsids[i], BTRFS_FSID_SIZE))
			return true;
	return false;
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

	if (fs->nr_devs && !dev->seed && !same_filesystem(fs, dev)) {
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

/* Whether @path is the block device or file @dev was opened from. */
static bool fs_has_path_of(const struct bx_device *dev, const char *path)
{
	struct stat a, b;

	return stat(path, &a) == 0 && stat(dev->path, &b) == 0 &&
	       ((S_ISBLK(a.st_mode) && a.st_rdev == b.st_rdev) ||
		(a.st_dev == b.st_dev && a.st_ino == b.st_ino));
}

static bool fs_has_path(const struct bx_fs *fs, const char *path)
{
	for (size_t i = 0; i < fs->nr_devs; i++)
		if (fs_has_path_of(fs->devs[i], path))
			return true;
	return false;
}

/*
 * Opens @name, found by @fsid, and adds it (a device of a seed filesystem
 * when @seed); one that cannot be opened is remembered in scan_failures.
 */
static void scan_add(struct bx_fs *fs, const char *name, unsigned int flags, bool seed)
{
	size_t used = strlen(fs->scan_failures);
	struct bx_device *dev;
	int ret;

	if (fs_has_path(fs, name))
		return;
	/* A seed is never written: it is opened read-only, whatever the writer asked. */
	ret = device_open(name, seed ? flags & ~(unsigned int)BX_OPEN_WRITE : flags, fs->io_timeout,
			  &dev);
	if (ret) {
		fs->member_busy |= ret == -EBUSY;
		snprintf(fs->scan_failures + used, sizeof(fs->scan_failures) - used, "%s%s",
			 used ? "; " : "", bx_error_message(ret));
		return;
	}
	dev->seed = seed;
	if (fs_add_device(fs, dev))
		device_free(dev);
}

/* The members with @fsid among the block devices libblkid sees. */
static void scan_block_devices(struct bx_fs *fs, const uint8_t *fsid, unsigned int flags, bool seed)
{
	blkid_dev_iterate iter;
	blkid_cache cache;
	blkid_dev bdev;
	char text[37];

	if (blkid_get_cache(&cache, "/dev/null") < 0)
		return;
	blkid_probe_all(cache);
	uuid_unparse(fsid, text);
	iter = blkid_dev_iterate_begin(cache);
	blkid_dev_set_search(iter, "UUID", text);
	while (blkid_dev_next(iter, &bdev) == 0)
		scan_add(fs, blkid_dev_devname(bdev), flags, seed);
	blkid_dev_iterate_end(iter);
	blkid_put_cache(cache);
}

/* Whether the image file at @path holds a primary superblock of filesystem @fsid. */
static bool image_of(const char *path, const uint8_t *fsid)
{
	struct btrfs_super_block sb;
	struct stat st;
	bool match;
	int fd;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < BTRFS_SUPER_INFO_OFFSET + BTRFS_SUPER_INFO_SIZE)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	match = bx_read_super_copy(fd, (uint64_t)st.st_size, 0, &sb,
				   BX_IO_TIMEOUT_DEFAULT) == BX_SB_OK &&
		!memcmp(sb.fsid, fsid, BTRFS_FSID_SIZE);
	close(fd);
	return match;
}

/* The image files with @fsid in directory @dir. */
static void scan_directory(struct bx_fs *fs, const char *dir, const uint8_t *fsid,
			   unsigned int flags, bool seed)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[4096];

		if (e->d_name[0] == '.' || (size_t)snprintf(path, sizeof(path), "%s/%s", dir,
							    e->d_name) >= sizeof(path))
			continue;
		if (image_of(path, fsid))
			scan_add(fs, path, flags, seed);
	}
	closedir(d);
}

/*
 * Image files are no block devices libblkid would see: the members of an
 * image set are looked for beside the image files named (the directory of
 * each, once).
 */
static void scan_image_directories(struct bx_fs *fs, size_t nr_named, const uint8_t *fsid,
				   unsigned int flags, bool seed)
{
	char (*dirs)[4096] = calloc(nr_named + 1, sizeof(*dirs));
	size_t nr_dirs = 0;

	for (size_t i = 0; dirs && i < nr_named; i++) {
		struct stat st;
		char copy[4096];
		bool seen = false;

		if (stat(fs->devs[i]->path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		snprintf(copy, sizeof(copy), "%s", fs->devs[i]->path);
		snprintf(dirs[nr_dirs], sizeof(dirs[nr_dirs]), "%s", dirname(copy));
		for (size_t k = 0; k < nr_dirs; k++)
			seen |= !strcmp(dirs[k], dirs[nr_dirs]);
		if (!seen)
			scan_directory(fs, dirs[nr_dirs++], fsid, flags, seed);
	}
	free(dirs);
}

/* Finds the other members with @fsid (a seed's, when @seed): block devices, then images. */
static void fs_scan_members(struct bx_fs *fs, size_t nr_named, const uint8_t *fsid,
			    unsigned int flags, bool seed)
{
	scan_block_devices(fs, fsid, flags, seed);
	scan_image_directories(fs, nr_named, fsid, flags, seed);
	/* What could not be opened is in scan_failures, for the missing-device error. */
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

/*
 * What the chunk tree's device items say: their number, and those whose
 * device is not open (with the fsid their item carries: the filesystem's,
 * or a seed's, whose devices are looked for by it afterwards).
 */
struct dev_item_ref {
	uint64_t devid;
	uint8_t fsid[BTRFS_FSID_SIZE];
};

struct dev_items {
	uint64_t count;
	size_t nr_absent;
	struct dev_item_ref *absent;
};

static int note_absent(struct dev_items *items, const struct btrfs_dev_item *item)
{
	struct dev_item_ref *grown = realloc(items->absent, (items->nr_absent + 1) *
					     sizeof(*grown));

	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	items->absent = grown;
	grown[items->nr_absent].devid = le64toh(item->devid);
	memcpy(grown[items->nr_absent++].fsid, item->fsid, BTRFS_FSID_SIZE);
	return 0;
}

static int chunk_tree_item(struct bx_fs *fs, struct bx_eb *leaf, int slot, struct dev_items *items)
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
		items->count++;
		dev = bx_fs_device(fs, le64toh(item->devid));
		/* A named seed that is not this filesystem's is as good as absent. */
		if (!dev || (dev->seed && memcmp(item->fsid, metadata_identity(&dev->sb),
						 BTRFS_FSID_SIZE)))
			return note_absent(items, item);
		dev->item = *item;
		dev->listed = true;
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

/* Remembers the fsid a seed's tree blocks carry (once). */
static int add_seed_fsid(struct bx_fs *fs, const uint8_t *fsid)
{
	uint8_t (*grown)[BTRFS_FSID_SIZE];

	if (bx_fs_block_fsid_ok(fs, fsid))
		return 0;
	grown = realloc(fs->seed_fsids, (fs->nr_seed_fsids + 1) * sizeof(*grown));
	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	fs->seed_fsids = grown;
	memcpy(fs->seed_fsids[fs->nr_seed_fsids++], fsid, BTRFS_FSID_SIZE);
	return 0;
}

/*
 * The devices of the seed filesystems the chunk tree names and that are not
 * open yet: looked for by the seed's fsid (not with BX_OPEN_NO_SCAN).
 */
static void find_seeds(struct bx_fs *fs, size_t nr_named, const struct dev_items *items)
{
	for (size_t i = 0; i < items->nr_absent && !(fs->flags & BX_OPEN_NO_SCAN); i++) {
		const uint8_t *fsid = items->absent[i].fsid;

		if (memcmp(fsid, fs->metadata_uuid, BTRFS_FSID_SIZE) &&
		    !bx_fs_device(fs, items->absent[i].devid))
			fs_scan_members(fs, nr_named, fsid, fs->flags, true);
	}
}

/* Devices found after the chunk map was built (seeds): their stripes point at them now. */
static void attach_stripes(struct bx_fs *fs)
{
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		struct bx_chunk *chunk = fs->chunks.chunks[i];

		for (int s = 0; s < chunk->num_stripes; s++)
			if (!chunk->stripes[s].dev)
				chunk->stripes[s].dev = bx_fs_device(fs, chunk->stripes[s].devid);
	}
}

/* A named seed device the chunk tree does not list: not a seed of this filesystem. */
static int check_named_seeds(const struct bx_fs *fs)
{
	for (size_t i = 0; i < fs->nr_devs; i++) {
		const struct bx_device *dev = fs->devs[i];
		char seed[37], sprout[37];

		if (!dev->seed || dev->listed)
			continue;
		uuid_unparse(dev->sb.fsid, seed);
		uuid_unparse(fs->fsid, sprout);
		return bx_error(-EXDEV, "%s: belongs to seed filesystem %s, which is not a seed of "
				"%s", dev->path, seed, sprout);
	}
	return 0;
}

/* Counts what is still absent after the seeds were looked for; names it in @msg. */
static void count_missing(struct bx_fs *fs, const struct dev_items *items, char *msg, size_t len)
{
	size_t used = 0;

	msg[0] = '\0';
	fs->nr_missing = 0;
	for (size_t i = 0; i < items->nr_absent; i++) {
		struct bx_device *dev = bx_fs_device(fs, items->absent[i].devid);

		if (dev && dev->seed && !memcmp(items->absent[i].fsid, metadata_identity(&dev->sb),
						BTRFS_FSID_SIZE))
			continue;	/* a seed found by its fsid */
		fs->nr_missing++;
		if (used < len)
			used += (size_t)snprintf(msg + used, len - used, "%s%llu", used ? ", " : "",
						 (unsigned long long)items->absent[i].devid);
	}
}

static int read_chunk_tree(struct bx_fs *fs, size_t nr_named)
{
	struct btrfs_key first = { 0, 0, 0 };
	struct dev_items items = { 0 };
	struct bx_root root;
	struct bx_path path;
	char missing[256];
	int ret;

	bx_find_root(fs, BTRFS_CHUNK_TREE_OBJECTID, &root);
	bx_path_init(&path, fs->readahead);
	ret = bx_search(fs, &root, &first, &path);
	if (ret >= 0)
		ret = bx_path_settle(fs, &path);
	while (ret == 0) {
		ret = chunk_tree_item(fs, bx_path_leaf(&path), path.slots[0], &items);
		if (!ret)
			ret = bx_next_item(fs, &path);
	}
	bx_path_release(&path);
	if (ret < 0) {
		free(items.absent);
		return bx_error_wrap(ret, "reading the chunk tree");
	}
	/* The kernel refuses to mount this (super_num_devices mismatch). */
	if (items.count != le64toh(fs->sb.num_devices)) {
		free(items.absent);
		return bx_error(-EUCLEAN, "the superblock counts %llu devices, the chunk tree has "
				"%llu device items", (unsigned long long)le64toh(fs->sb.num_devices),
				(unsigned long long)items.count);
	}
	ret = check_named_seeds(fs);
	if (!ret) {
		find_seeds(fs, nr_named, &items);
		attach_stripes(fs);
	}
	for (size_t i = 0; !ret && i < fs->nr_devs; i++)
		if (fs->devs[i]->seed)
			ret = add_seed_fsid(fs, metadata_identity(&fs->devs[i]->sb));
	count_missing(fs, &items, missing, sizeof(missing));
	free(items.absent);
	if (ret)
		return ret;
	if (fs->nr_missing && !(fs->flags & BX_OPEN_DEGRADED))
		return bx_error(fs->member_busy ? -EBUSY : -ENODEV,
				"filesystem has %llu missing device%s (devid %s); "
				"name all members or attach them%s%s",
				(unsigned long long)fs->nr_missing, fs->nr_missing > 1 ? "s" : "",
				missing, *fs->scan_failures ? "; " : "", fs->scan_failures);
	if (fs->nr_missing)
		bx_warn("filesystem is degraded: devid %s missing", missing);
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

/*
 * Before any tree is read: an incompat feature btrfsx does not know changes
 * how they are to be read, a compat_ro one forbids writing (features.h).
 */
static int check_features(const struct bx_fs *fs, bool writing)
{
	char what[96];

	switch (bx_features_check(le64toh(fs->sb.incompat_flags), le64toh(fs->sb.compat_ro_flags),
				  writing, what, sizeof(what))) {
	case BX_FEATURES_NO_READ:
		return bx_error(-EOPNOTSUPP, "%s is not supported: btrfsx does not read this "
				"filesystem", what);
	case BX_FEATURES_NO_WRITE:
		return bx_error(-EOPNOTSUPP, "%s is not supported for writing: btrfsx reads this "
				"filesystem but does not write to it", what);
	default:
		return 0;
	}
}

/* The newest superblock among the members speaks for the filesystem (a seed has its own). */
static void fs_pick_super(struct bx_fs *fs)
{
	struct bx_device *best = fs->devs[0];

	for (size_t i = 1; i < fs->nr_devs; i++)
		if (!fs->devs[i]->seed &&
		    le64toh(fs->devs[i]->sb.generation) > le64toh(best->sb.generation))
			best = fs->devs[i];
	fs->sb = best->sb;
	fs->sb_devid = best->devid;
	/* After an interrupted fsid change the members disagree: the newest one is right. */
	memcpy(fs->fsid, best->sb.fsid, BTRFS_FSID_SIZE);
	for (size_t i = 0; i < fs->nr_devs; i++)
		if (!fs->devs[i]->seed && fs->devs[i]->sb.generation != best->sb.generation)
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

static bool is_seeding(const struct bx_device *dev)
{
	return le64toh(dev->sb.flags) & BTRFS_SUPER_FLAG_SEEDING;
}

/*
 * The filesystem the named devices stand for: the first one's, or, when a
 * seed is named with its sprout, the first non-seed one's (a sprout's
 * superblock does not name its seeds; the chunk tree's device items do, and
 * read_chunk_tree() checks them).
 */
static const struct bx_device *main_device(struct bx_device *const *devs, int n)
{
	for (int i = 0; i < n; i++)
		if (!is_seeding(devs[i]))
			return devs[i];
	return devs[0];
}

static int open_named(struct bx_fs *fs, char *const *paths, int nr_paths, unsigned int flags)
{
	struct bx_device **devs = calloc((size_t)nr_paths, sizeof(*devs));
	const struct bx_device *main_dev;
	int ret = devs ? 0 : bx_error(-ENOMEM, "out of memory");

	for (int i = 0; !ret && i < nr_paths; i++) {
		for (int k = 0; k < i && !ret; k++)
			if (fs_has_path_of(devs[k], paths[i]))
				ret = bx_error(-EINVAL, "%s: named twice", paths[i]);
		if (!ret)
			ret = device_open(paths[i], flags, fs->io_timeout, &devs[i]);
	}
	if (ret)
		goto out;
	main_dev = main_device(devs, nr_paths);
	memcpy(fs->fsid, main_dev->sb.fsid, BTRFS_FSID_SIZE);
	/* The main device first: it is the one the others are compared with. */
	ret = fs_add_device(fs, (struct bx_device *)main_dev);
	for (int i = 0; !ret && i < nr_paths; i++) {
		if (devs[i] == main_dev)
			continue;
		devs[i]->seed = is_seeding(devs[i]) &&
				memcmp(devs[i]->sb.fsid, fs->fsid, BTRFS_FSID_SIZE);
		/* Never written: the kernel keeps a seed read-only. */
		if (devs[i]->seed)
			devs[i]->writable = false;
		ret = fs_add_device(fs, devs[i]);
	}
out:
	/* What fs_add_device() took is freed with the filesystem; the rest here. */
	for (int i = 0; devs && i < nr_paths; i++) {
		bool taken = false;

		for (size_t k = 0; k < fs->nr_devs; k++)
			taken |= fs->devs[k] == devs[i];
		if (!taken)
			device_free(devs[i]);
	}
	free(devs);
	return ret;
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
	size_t nr_named;
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
	nr_named = fs->nr_devs;
	/* num_devices counts the seeds' devices too: they are found by the chunk tree. */
	if (!(flags & BX_OPEN_NO_SCAN) && fs->nr_devs < le64toh(fs->devs[0]->sb.num_devices))
		fs_scan_members(fs, nr_named, fs->fsid, flags, false);
	fs_pick_super(fs);
	ret = fs_init_from_super(fs);
	if (ret || (flags & BX_OPEN_SB_ONLY))
		goto done;
	ret = check_features(fs, flags & BX_OPEN_WRITE);
	if (ret)
		goto done;
	fs->cache = bx_block_cache_new(BLOCK_CACHE_SLOTS);
	if (!fs->cache) {
		ret = bx_error(-ENOMEM, "out of memory");
		goto fail;
	}
	ret = bx_parse_sys_chunk_array(&fs->sb, sys_chunk_cb, fs);
	if (!ret)
		ret = read_chunk_tree(fs, nr_named);
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
	free(fs->seed_fsids);
	free(fs);
}
