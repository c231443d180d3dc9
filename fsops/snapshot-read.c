/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The readers of a snapshot: a mounted filesystem through its ioctls, an
 * unmounted one from its devices through our reader. See snapshot-read.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "fsops/alloc-hint.h"
#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "fsops/offline.h"
#include "fsops/reclaim.h"
#include "fsops/snapshot-read.h"
#include "disk/btree.h"
#include "disk/dev-item.h"
#include "format/hints.h"
#include "disk/volumes.h"

/* ---- growing arrays ---- */

static int grow(void **array, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*array, n * size);
	if (!p)
		return bx_error(-ENOMEM, "out of memory");
	*array = p;
	*cap = n;
	return 0;
}

struct builder {
	struct bx_snapshot *in;
	size_t chunks_cap, stripes_cap, spaces_cap;
	size_t *extents_cap;		/* per device */
};

static struct bx_snap_dev *dev_by_id(struct bx_snapshot *in, uint64_t devid, size_t *index)
{
	for (size_t i = 0; i < in->nr_devs; i++) {
		if (in->devs[i].devid == devid) {
			if (index)
				*index = i;
			return &in->devs[i];
		}
	}
	return NULL;
}

static int add_chunk(struct builder *b, uint64_t logical, uint64_t length, uint64_t type,
		     uint32_t num_stripes, uint32_t sub_stripes)
{
	struct bx_snapshot *in = b->in;
	struct bx_snap_chunk *c;
	int ret;

	ret = grow((void **)&in->chunks, &b->chunks_cap, in->nr_chunks + 1, sizeof(*in->chunks));
	if (!ret)
		ret = grow((void **)&in->stripes, &b->stripes_cap, in->nr_stripes + num_stripes,
			   sizeof(*in->stripes));
	if (ret)
		return ret;
	c = &in->chunks[in->nr_chunks++];
	c->logical = logical;
	c->length = length;
	c->type = type;
	c->num_stripes = num_stripes;
	c->sub_stripes = sub_stripes;
	c->first_stripe = in->nr_stripes;
	in->nr_stripes += num_stripes;
	return 0;
}

static int add_extent(struct builder *b, uint64_t devid, uint64_t start, uint64_t length,
		      uint64_t chunk_offset)
{
	size_t index;
	struct bx_snap_dev *d = dev_by_id(b->in, devid, &index);
	int ret;

	if (!d)
		return 0;	/* an extent of a device without a device item: ignored */
	ret = grow((void **)&d->extents, &b->extents_cap[index], d->nr_extents + 1,
		   sizeof(*d->extents));
	if (ret)
		return ret;
	d->extents[d->nr_extents++] = (struct bx_snap_extent){ start, length, chunk_offset };
	return 0;
}

/* Adds @used / @length to the space slot of @flags (summing block groups). */
static int add_space(struct builder *b, uint64_t flags, uint64_t total, uint64_t used)
{
	struct bx_snapshot *in = b->in;
	int ret;

	for (size_t i = 0; i < in->nr_spaces; i++) {
		if (in->spaces[i].flags == flags) {
			in->spaces[i].total_bytes += total;
			in->spaces[i].used_bytes += used;
			return 0;
		}
	}
	ret = grow((void **)&in->spaces, &b->spaces_cap, in->nr_spaces + 1, sizeof(*in->spaces));
	if (ret)
		return ret;
	in->spaces[in->nr_spaces++] = (struct bx_snap_space){ flags, total, used };
	return 0;
}

static int builder_init(struct builder *b, struct bx_snapshot *in)
{
	memset(b, 0, sizeof(*b));
	b->in = in;
	b->extents_cap = calloc(in->nr_devs ? in->nr_devs : 1, sizeof(*b->extents_cap));
	return b->extents_cap ? 0 : bx_error(-ENOMEM, "out of memory");
}

/* btrfs-progs' order of space infos: data, metadata, system; by profile within a type. */
static int space_cmp(const void *a, const void *b)
{
	const struct bx_snap_space *x = a, *y = b;
	uint64_t mask, fx = x->flags, fy = y->flags;

	if ((fx ^ fy) & BX_SPACE_INFO_GLOBAL_RSV)
		return (fx & BX_SPACE_INFO_GLOBAL_RSV) ? 1 : -1;
	if ((fx & BTRFS_BLOCK_GROUP_TYPE_MASK) == (fy & BTRFS_BLOCK_GROUP_TYPE_MASK))
		mask = BTRFS_BLOCK_GROUP_PROFILE_MASK;
	else if (fy & BTRFS_BLOCK_GROUP_SYSTEM)
		return -1;
	else if (fx & BTRFS_BLOCK_GROUP_SYSTEM)
		return 1;
	else
		mask = BTRFS_BLOCK_GROUP_TYPE_MASK;
	if ((fx & mask) != (fy & mask))
		return (fx & mask) > (fy & mask) ? 1 : -1;
	return 0;
}

static void sort_spaces(struct bx_snapshot *in)
{
	qsort(in->spaces, in->nr_spaces, sizeof(*in->spaces), space_cmp);
}

/* Size of the block device or file at @path; 0 when it cannot be opened. */
static uint64_t device_size(const char *path)
{
	struct stat st;
	uint64_t size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0) {
		if (S_ISBLK(st.st_mode)) {
			if (ioctl(fd, BLKGETSIZE64, &size) < 0)
				size = 0;
		} else if (S_ISREG(st.st_mode)) {
			size = (uint64_t)st.st_size;
		}
	}
	close(fd);
	return size;
}

/* ---- mounted: ioctls ---- */

static int read_space_info(int fd, const char *path, struct builder *b)
{
	struct btrfs_ioctl_space_args *args;
	int ret = bx_mounted_space_info(fd, path, &args);

	if (ret)
		return ret;
	for (uint64_t i = 0; i < args->total_spaces && !ret; i++) {
		const struct btrfs_ioctl_space_info *s = &args->spaces[i];

		if (s->flags & BX_SPACE_INFO_GLOBAL_RSV) {
			b->in->have_global_reserve = true;
			b->in->global_reserve = s->total_bytes;
			b->in->global_reserve_used = s->used_bytes;
		}
		ret = add_space(b, s->flags, s->total_bytes, s->used_bytes);
	}
	free(args);
	return ret;
}

static int chunk_item_cb(void *arg, const struct btrfs_ioctl_search_header *sh, const void *item)
{
	struct builder *b = arg;
	const struct btrfs_chunk *c = item;
	uint32_t n;
	int ret;

	if (sh->len < sizeof(*c))
		return 0;
	n = le16toh(c->num_stripes);
	if (!n || sh->len < sizeof(*c) + n * sizeof(struct btrfs_stripe))
		return 0;
	ret = add_chunk(b, sh->offset, le64toh(c->length), le64toh(c->type), n,
			le16toh(c->sub_stripes));
	for (uint32_t i = 0; !ret && i < n; i++) {
		struct bx_snap_stripe *s = &b->in->stripes[b->in->nr_stripes - n + i];

		s->devid = le64toh(c->stripe[i].devid);
		s->physical = le64toh(c->stripe[i].offset);
	}
	return ret;
}

static int dev_extent_cb(void *arg, const struct btrfs_ioctl_search_header *sh, const void *item)
{
	const struct btrfs_dev_extent *e = item;

	if (sh->len < sizeof(*e))
		return 0;
	return add_extent(arg, sh->objectid, sh->offset, le64toh(e->length),
			  le64toh(e->chunk_offset));
}

/* The convert targets of one balance's arguments, per kind, into @in. */
static void set_balance_targets(struct bx_snapshot *in, uint64_t data_flags, uint64_t data,
				uint64_t meta_flags, uint64_t meta, uint64_t sys_flags, uint64_t sys)
{
	in->balance_target[BX_SNAP_KIND_DATA] =
		bx_snap_balance_target(BTRFS_BLOCK_GROUP_DATA, data_flags, data);
	in->balance_target[BX_SNAP_KIND_METADATA] =
		bx_snap_balance_target(BTRFS_BLOCK_GROUP_METADATA, meta_flags, meta);
	in->balance_target[BX_SNAP_KIND_SYSTEM] =
		bx_snap_balance_target(BTRFS_BLOCK_GROUP_SYSTEM, sys_flags, sys);
}

/*
 * A balance the kernel runs or holds paused, and what it converts to. The
 * ioctl needs CAP_SYS_ADMIN, as the tree searches before it; a kernel that
 * cannot say leaves the input without a balance.
 */
static void read_balance_mounted(int fd, struct bx_snapshot *in)
{
	struct btrfs_ioctl_balance_args args;

	memset(&args, 0, sizeof(args));
	if (ioctl(fd, BTRFS_IOC_BALANCE_PROGRESS, &args) < 0)
		return;		/* ENOTCONN: none */
	in->balance = (args.state & BTRFS_BALANCE_STATE_RUNNING) ? BX_SNAP_BALANCE_RUNNING :
		      BX_SNAP_BALANCE_PAUSED;
	set_balance_targets(in, args.data.flags, args.data.target, args.meta.flags,
			    args.meta.target, args.sys.flags, args.sys.target);
}

/* Hints of every present device; whether the running kernel honours them. */
static void read_hints(const char *sysfs_root, struct bx_snapshot *in)
{
	bool all_effective = true, any = false;

	for (size_t i = 0; i < in->nr_devs; i++) {
		struct bx_snap_dev *d = &in->devs[i];
		struct bx_hint_state st;

		if (d->missing)
			continue;
		if (bx_hint_query(sysfs_root, d->path, &st)) {
			bx_error_clear();
			continue;
		}
		any = true;
		d->hint = st.hint;
		if (!st.effective)
			all_effective = false;
	}
	in->hints_effective = any && all_effective;
}

void bx_kernel_running(struct bx_kernel *k)
{
	struct utsname u;

	/* No release: an unknown kernel, which the register takes as the newest. */
	bx_kernel_init(k, uname(&u) ? NULL : u.release, false);
}

static int read_block_group_used(int fd, const char *path, uint64_t tree,
				 struct bx_snap_chunk *c);

/*
 * The used bytes of the chunks on seed devices: their free space is
 * read-only, and the report takes it off (bx_snap_chunk.used).
 */
static int read_seed_chunks_used(int fd, struct bx_snapshot *in)
{
	uint64_t tree = 0;
	int ret = 0;

	for (size_t i = 0; i < in->nr_chunks && !ret; i++) {
		struct bx_snap_chunk *c = &in->chunks[i];

		if (!bx_snap_chunk_on_seed(in, c))
			continue;
		if (!tree)
			ret = bx_mounted_block_group_tree(fd, in->path, &tree);
		if (!ret)
			ret = read_block_group_used(fd, in->path, tree, c);
	}
	return ret;
}

/*
 * A deleted subvolume keeps an orphan item in the root tree until the
 * kernel's cleaner has dropped its tree (btrfs_drop_snapshot()); until
 * then its extents are in use, in every figure read here.
 */
static int count_orphan_root(void *arg, const struct btrfs_ioctl_search_header *sh,
			     const void *item)
{
	(void)sh;
	(void)item;
	(*(unsigned int *)arg)++;
	return 0;
}

static void warn_deleted_subvolumes(int fd, const char *path)
{
	unsigned int pending = 0;

	if (bx_mounted_search_tree(fd, path, BTRFS_ROOT_TREE_OBJECTID, BTRFS_ORPHAN_OBJECTID,
				   BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, count_orphan_root,
				   &pending)) {
		/* Only a warning depends on it: the figures are read all the same. */
		bx_error_clear();
		return;
	}
	if (pending)
		bx_warn("%u deleted subvolume%s not cleaned up yet: the kernel frees %s space in "
			"the background, and until then it counts as used here; 'btrfs subvolume "
			"sync %s' waits for it", pending, pending == 1 ? " is" : "s are",
			pending == 1 ? "its" : "their", path);
}

static int read_mounted(const char *path, const char *sysfs_root, struct bx_snapshot *in,
			bool commit);

int bx_snapshot_read_mounted(const char *path, const char *sysfs_root, struct bx_snapshot *in)
{
	return read_mounted(path, sysfs_root, in, false);
}

/*
 * @commit: commit the running transaction first (BTRFS_IOC_SYNC), as the
 * kernel's device remove, resize, replace and balance do before they
 * start, so that what a file deletion freed is free here too.
 */
static int read_mounted(const char *path, const char *sysfs_root, struct bx_snapshot *in,
			bool commit)
{
	struct bx_mounted_fs mfs;
	struct builder b = { 0 };
	struct statvfs sv;
	int ret;

	memset(in, 0, sizeof(*in));
	ret = bx_mounted_open(path, &mfs);
	if (ret)
		return ret;
	/*
	 * Not fatal: on a read-only mount there is nothing to commit, and what
	 * was committed is what the change starts from.
	 */
	if (commit)
		(void)ioctl(mfs.fd, BTRFS_IOC_SYNC);
	in->mounted = true;
	bx_kernel_running(&in->kernel);
	snprintf(in->path, sizeof(in->path), "%s", mfs.path);
	memcpy(in->fsid, mfs.fsid, sizeof(in->fsid));
	in->nodesize = mfs.nodesize;
	in->sectorsize = mfs.sectorsize;
	in->devs = calloc(mfs.nr_devs ? mfs.nr_devs : 1, sizeof(*in->devs));
	if (!in->devs) {
		ret = bx_error(-ENOMEM, "out of memory");
		goto out;
	}
	in->nr_devs = mfs.nr_devs;
	for (size_t i = 0; i < mfs.nr_devs; i++) {
		struct bx_snap_dev *d = &in->devs[i];

		d->devid = mfs.devs[i].devid;
		snprintf(d->path, sizeof(d->path), "%s", mfs.devs[i].path);
		d->total_bytes = mfs.devs[i].total_bytes;
		d->bytes_used = mfs.devs[i].bytes_used;
		d->missing = !d->path[0];
		/* The kernel never allocates from a seed: its unallocated space is not writable. */
		d->seed = mfs.devs[i].seed;
		d->writable = !d->missing && !d->seed;
		d->device_size = d->missing ? 0 : device_size(d->path);
	}
	ret = builder_init(&b, in);
	if (!ret)
		ret = read_space_info(mfs.fd, path, &b);
	if (!ret)
		ret = bx_mounted_search_tree(mfs.fd, path, BTRFS_CHUNK_TREE_OBJECTID,
				  BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_FIRST_CHUNK_TREE_OBJECTID,
				  BTRFS_CHUNK_ITEM_KEY, chunk_item_cb, &b);
	if (!ret)
		ret = bx_mounted_search_tree(mfs.fd, path, BTRFS_DEV_TREE_OBJECTID, 1, UINT64_MAX,
				  BTRFS_DEV_EXTENT_KEY, dev_extent_cb, &b);
	if (ret)
		goto out;
	sort_spaces(in);
	read_balance_mounted(mfs.fd, in);
	warn_deleted_subvolumes(mfs.fd, in->path);
	ret = read_seed_chunks_used(mfs.fd, in);
	if (ret)
		goto out;
	if (fstatvfs(mfs.fd, &sv) == 0) {
		in->have_statfs = true;
		in->statfs_free = (uint64_t)sv.f_bavail * sv.f_bsize;
	}
	read_hints(sysfs_root ? sysfs_root : "/sys", in);
	in->kernel_hints = bx_snap_any_hint(in) ? in->hints_effective : -1;
	bx_reclaim_read(sysfs_root ? sysfs_root : "/sys", in->fsid, &in->reclaim);
out:
	free(b.extents_cap);
	bx_mounted_close(&mfs);
	if (ret)
		bx_snapshot_release(in);
	return ret;
}

/* ---- unmounted: our reader ---- */

struct offline_read {
	struct bx_fs *fs;
	struct builder b;
	size_t devs_cap;
};

static int offline_dev_item(void *arg, const struct btrfs_dev_item *item)
{
	struct offline_read *o = arg;
	struct bx_snapshot *in = o->b.in;
	struct bx_snap_dev *d;
	struct bx_device *dev;
	int ret;

	ret = grow((void **)&in->devs, &o->devs_cap, in->nr_devs + 1, sizeof(*in->devs));
	if (ret)
		return ret;
	d = &in->devs[in->nr_devs++];
	memset(d, 0, sizeof(*d));
	d->devid = le64toh(item->devid);
	d->total_bytes = le64toh(item->total_bytes);
	d->bytes_used = le64toh(item->bytes_used);
	d->hint = bx_hint_of_type(le64toh(item->type));
	dev = bx_fs_device(o->fs, d->devid);
	d->missing = !dev;
	/* The kernel never allocates from a seed: its unallocated space is not writable. */
	d->seed = dev && dev->seed;
	d->writable = dev && !d->seed;
	if (dev) {
		snprintf(d->path, sizeof(d->path), "%s", dev->path);
		d->device_size = dev->size;
		/*
		 * The kernel refuses to mount such a filesystem, and the model
		 * would allocate simulated chunks up to the claimed size (for
		 * exabytes, practically forever).
		 */
		char msg[PATH_MAX + 128];

		if (bx_device_short(dev, d->total_bytes, msg, sizeof(msg)))
			return bx_error(-EUCLEAN, "%s", msg);
	}
	return 0;
}

/* Every DEV_EXTENT of the device tree. */
static int offline_dev_extents(struct offline_read *o)
{
	struct btrfs_key key = { 1, BTRFS_DEV_EXTENT_KEY, 0 };
	struct bx_root root;
	struct bx_path path;
	int ret;

	ret = bx_find_root(o->fs, BTRFS_DEV_TREE_OBJECTID, &root);
	if (ret)
		return bx_error_wrap(ret, "device extents");
	bx_path_init(&path, o->fs->readahead);
	ret = bx_search(o->fs, &root, &key, &path);
	if (ret >= 0)
		ret = bx_path_settle(o->fs, &path);
	for (; ret == 0; ret = bx_next_item(o->fs, &path)) {
		struct bx_eb *leaf = bx_path_leaf(&path);
		const struct btrfs_dev_extent *e;
		struct btrfs_key found;

		bx_item_key(leaf, path.slots[0], &found);
		if (found.type != BTRFS_DEV_EXTENT_KEY ||
		    bx_item_size(leaf, path.slots[0]) < sizeof(*e))
			continue;
		e = bx_item_ptr(leaf, path.slots[0]);
		ret = add_extent(&o->b, found.objectid, found.offset, le64toh(e->length),
				 le64toh(e->chunk_offset));
		if (ret)
			break;
	}
	bx_path_release(&path);
	return ret < 0 ? ret : 0;
}

/* Chunks from the chunk map; block group items for used bytes. */
static int offline_chunks(struct offline_read *o)
{
	struct bx_fs *fs = o->fs;
	uint64_t bg_tree = BTRFS_EXTENT_TREE_OBJECTID;
	struct bx_root root;
	int ret;

	if (le64toh(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE)
		bg_tree = BTRFS_BLOCK_GROUP_TREE_OBJECTID;
	ret = bx_find_root(fs, bg_tree, &root);
	if (ret) {
		char tree[64];

		return bx_error_wrap(ret, "block group items: %s",
				     bx_tree_describe(bg_tree, tree, sizeof(tree)));
	}
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *c = fs->chunks.chunks[i];
		struct btrfs_key key = { c->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, c->length };
		uint64_t used = 0;
		struct bx_path path;

		ret = add_chunk(&o->b, c->logical, c->length, c->type, (uint32_t)c->num_stripes,
				(uint32_t)c->sub_stripes);
		if (ret)
			return ret;
		for (int s = 0; s < c->num_stripes; s++) {
			struct bx_snap_stripe *st = &o->b.in->stripes[o->b.in->nr_stripes -
								       c->num_stripes + s];

			st->devid = c->stripes[s].devid;
			st->physical = c->stripes[s].physical;
		}
		bx_path_init(&path, false);
		ret = bx_search(fs, &root, &key, &path);
		if (ret == 0) {
			const struct bx_eb *leaf = bx_path_leaf(&path);
			const struct btrfs_block_group_item *bg;

			if (bx_item_size(leaf, path.slots[0]) >= sizeof(*bg)) {
				bg = bx_item_ptr(leaf, path.slots[0]);
				used = le64toh(bg->used);
			}
		}
		bx_path_release(&path);
		if (ret < 0)
			return bx_error_wrap(ret, "block group %llu",
					     (unsigned long long)c->logical);
		if (ret > 0)
			return bx_error(-EUCLEAN, "chunk %llu has no block group item",
					(unsigned long long)c->logical);
		o->b.in->chunks[o->b.in->nr_chunks - 1].used = used;
		ret = add_space(&o->b, c->type, c->length, used);
		if (ret)
			return ret;
	}
	o->b.in->chunks_used_known = true;
	return 0;
}

/* The balance item in the root tree: a balance that was running or paused at unmount. */
static int offline_balance(struct offline_read *o)
{
	struct btrfs_key key = { BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY, 0 };
	struct bx_snapshot *in = o->b.in;
	const struct btrfs_balance_item *item;
	struct bx_root root;
	struct bx_path path;
	int ret;

	ret = bx_find_root(o->fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	if (ret)
		return bx_error_wrap(ret, "the root tree");
	bx_path_init(&path, false);
	ret = bx_search(o->fs, &root, &key, &path);
	if (ret == 0 && bx_item_size(bx_path_leaf(&path), path.slots[0]) < sizeof(*item))
		ret = bx_error(-EUCLEAN, "the balance item is too small");
	if (ret == 0) {
		item = bx_item_ptr(bx_path_leaf(&path), path.slots[0]);
		in->balance = BX_SNAP_BALANCE_INTERRUPTED;
		set_balance_targets(in, le64toh(item->data.flags), le64toh(item->data.target),
				    le64toh(item->meta.flags), le64toh(item->meta.target),
				    le64toh(item->sys.flags), le64toh(item->sys.target));
	}
	bx_path_release(&path);
	if (ret < 0)
		return bx_error_wrap(ret, "the balance item");
	return 0;
}

int bx_snapshot_read_offline(char *const *paths, int nr_paths, const char *sysfs_root,
			     struct bx_snapshot *in, char *mnt, size_t mnt_len)
{
	struct offline_read o = { 0 };
	int ret;

	memset(in, 0, sizeof(*in));
	/* The kernel that will mount it is unknown: the running one is the best guess. */
	bx_kernel_running(&in->kernel);
	ret = bx_fs_open(&o.fs, paths, nr_paths, BX_OPEN_DEGRADED);
	if (ret)
		return ret;
	/* The real kernel's view decides, whatever sysfs root tests point hints at. */
	if (bx_fs_is_mounted("/sys", o.fs->fsid, mnt, mnt_len)) {
		ret = bx_error_as(-EBUSY, BX_ERROR_KIND_MOUNTED, "%s: filesystem is mounted at %s",
				  paths[0], mnt);
		goto out;
	}
	memcpy(in->fsid, o.fs->fsid, sizeof(in->fsid));
	snprintf(in->path, sizeof(in->path), "%s", paths[0]);
	in->nodesize = o.fs->nodesize;
	in->sectorsize = o.fs->sectorsize;
	/* Unmounted: the kernel that mounts it next is assumed to honour the hints. */
	in->hints_effective = true;
	o.b.in = in;
	ret = bx_for_each_dev_item(o.fs, offline_dev_item, &o);
	if (!ret)
		ret = builder_init(&o.b, in);	/* per-device arrays, now that devices are known */
	if (!ret)
		ret = offline_chunks(&o);
	if (!ret)
		ret = offline_dev_extents(&o);
	if (!ret)
		ret = offline_balance(&o);
	if (!ret)
		sort_spaces(in);
	in->kernel_hints = bx_snap_any_hint(in) ? bx_hint_kernel_support(sysfs_root) : -1;
	/* What the devices hold is wrong: say which filesystem, by the first path named. */
	if (ret)
		ret = bx_error_about(ret, paths[0]);
out:
	free(o.b.extents_cap);
	bx_fs_close(o.fs);
	if (ret)
		bx_snapshot_release(in);
	return ret;
}

static int block_group_cb(void *arg, const struct btrfs_ioctl_search_header *sh,
			  const void *item)
{
	struct bx_snap_chunk *c = arg;
	const struct btrfs_block_group_item *bg = item;

	if (sh->len < sizeof(*bg) || sh->offset != c->length)
		return 0;
	c->used = le64toh(bg->used);
	return 1;	/* found: stop */
}

/*
 * The used bytes of chunk @c from its block group item in @tree. A chunk
 * listed without one was deleted since (-EUCLEAN: read it all again).
 */
static int read_block_group_used(int fd, const char *path, uint64_t tree,
				 struct bx_snap_chunk *c)
{
	int ret = bx_mounted_search_tree(fd, path, tree, c->logical, c->logical,
					 BTRFS_BLOCK_GROUP_ITEM_KEY, block_group_cb, c);

	if (ret == 0)
		return bx_error(-EUCLEAN, "%s: chunk %llu has no block group item", path,
				(unsigned long long)c->logical);
	return ret < 0 ? ret : 0;
}

/*
 * Fills bx_snap_chunk.used of a mounted filesystem's snapshot from the
 * block group items (one search per chunk); the offline reader fills it
 * already.
 */
static int read_chunk_used(struct bx_snapshot *in)
{
	uint64_t tree;
	int fd, ret;

	if (in->chunks_used_known || !in->mounted)
		return 0;
	fd = open(in->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return bx_error(-errno, "%s: %m", in->path);
	ret = bx_mounted_block_group_tree(fd, in->path, &tree);
	for (size_t i = 0; i < in->nr_chunks && !ret; i++)
		ret = read_block_group_used(fd, in->path, tree, &in->chunks[i]);
	close(fd);
	if (ret < 0)
		return ret;
	in->chunks_used_known = true;
	return 0;
}

/* bx_snapshot_read(); @commit: a mounted filesystem's transaction first (read_mounted()). */
static int read_any(char *const *paths, int nr_paths, const char *sysfs_root,
		    struct bx_snapshot *in, bool commit)
{
	char mnt[4096] = "";
	struct stat st;
	int ret;

	if (nr_paths < 1)
		return bx_error(-EINVAL, "no path given");
	if (stat(paths[0], &st) == 0 && S_ISDIR(st.st_mode)) {
		if (nr_paths > 1)
			return bx_error(-EINVAL, "a mount point takes no further paths");
		return read_mounted(paths[0], sysfs_root, in, commit);
	}
	ret = bx_snapshot_read_offline(paths, nr_paths, sysfs_root, in, mnt, sizeof(mnt));
	if (ret != -EBUSY || bx_error_last_kind() != BX_ERROR_KIND_MOUNTED || mnt[0] != '/')
		return ret;
	bx_error_clear();
	return read_mounted(mnt, sysfs_root, in, commit);
}

int bx_snapshot_read(char *const *paths, int nr_paths, const char *sysfs_root,
		     struct bx_snapshot *in)
{
	return read_any(paths, nr_paths, sysfs_root, in, false);
}

/* ---- whole reads ---- */

/*
 * A mounted filesystem can change between the searches that read it: a
 * block group the cleaner deletes after its chunk was listed has no block
 * group item any more (seen once in 60 aged plans on 6.18, and by a
 * maintain run beside a busy workload, whose cleaner deleted block groups
 * through three reads in a row). What is read then does not hold together
 * (-EUCLEAN): read it again, a little later each time.
 */
#define MOUNTED_READ_TRIES 6
#define MOUNTED_READ_PAUSE_MS 50

/* What read_whole() reads beside the snapshot. */
enum read_more {
	READ_COMMIT_FIRST = 1 << 0,	/* a mounted filesystem's transaction, first */
	READ_EXTENTS = 1 << 1,		/* the data chunks' extents */
	READ_USED_FOR_RECLAIM = 1 << 2,	/* the used bytes only with the kernel's reclaim on */
};

static int read_whole(char *const *paths, int nr_paths, const char *sysfs_root,
		      struct bx_snapshot *in, unsigned int more)
{
	for (int tries = 1;; tries++) {
		bool commit = (more & READ_COMMIT_FIRST) && tries == 1;
		int ret = read_any(paths, nr_paths, sysfs_root, in, commit);
		bool again;

		if (ret)
			return ret;
		if (!(more & READ_USED_FOR_RECLAIM) || bx_reclaim_any(&in->reclaim))
			ret = read_chunk_used(in);
		if (!ret && (more & READ_EXTENTS))
			ret = bx_snapshot_read_dextents(in);
		if (!ret)
			return 0;
		again = ret == -EUCLEAN && in->mounted && tries < MOUNTED_READ_TRIES;
		bx_snapshot_release(in);
		if (!again)
			return ret;
		/* Not an error: the kernel changed it meanwhile; the next read says. */
		bx_error_clear();
		usleep((useconds_t)tries * MOUNTED_READ_PAUSE_MS * 1000);
	}
}

int bx_snapshot_read_used(char *const *paths, int nr_paths, const char *sysfs_root,
			  struct bx_snapshot *in)
{
	return read_whole(paths, nr_paths, sysfs_root, in, READ_COMMIT_FIRST);
}

int bx_snapshot_read_committed_used(char *const *paths, int nr_paths, const char *sysfs_root,
				    struct bx_snapshot *in)
{
	return read_whole(paths, nr_paths, sysfs_root, in, 0);
}

int bx_snapshot_read_usage(char *const *paths, int nr_paths, const char *sysfs_root,
			   struct bx_snapshot *in)
{
	return read_whole(paths, nr_paths, sysfs_root, in, READ_USED_FOR_RECLAIM);
}

int bx_snapshot_read_extents(char *const *paths, int nr_paths, const char *sysfs_root,
			     struct bx_snapshot *in)
{
	return read_whole(paths, nr_paths, sysfs_root, in, READ_COMMIT_FIRST | READ_EXTENTS);
}
