/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The extents of the data chunks (usage.h, bx_snapshot_read_dextents()): what
 * a relocation copies, extent by extent, and the free space between them
 * that the copies can land in. Read from the extent tree: EXTENT_ITEM keys
 * (bytenr, 168, length) in the address range of the data chunks.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "disk/btree.h"
#include "disk/volumes.h"
#include "format/ctree.h"
#include "fsops/mounted-fs.h"
#include "fsops/usage.h"

struct dext_list {
	struct bx_snapshot *in;
	size_t cap;
};

/* The data chunk holding @start, by binary search over the chunks (by address); or NULL. */
static struct bx_snap_chunk *data_chunk_at(struct bx_snapshot *in, uint64_t start)
{
	size_t lo = 0, hi = in->nr_chunks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (in->chunks[mid].logical + in->chunks[mid].length <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == in->nr_chunks || in->chunks[lo].logical > start ||
	    !(in->chunks[lo].type & BTRFS_BLOCK_GROUP_DATA))
		return NULL;
	return &in->chunks[lo];
}

/* Keys come in address order: each extent goes after the last of its chunk. */
static int add_dextent(struct dext_list *l, uint64_t start, uint64_t len)
{
	struct bx_snapshot *in = l->in;
	struct bx_snap_chunk *c = data_chunk_at(in, start);

	if (!c || !len)
		return 0;
	if (in->nr_dextents == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 1024;
		struct bx_snap_dextent *grown = realloc(in->dextents, cap * sizeof(*grown));

		if (!grown)
			return bx_error(-ENOMEM, "out of memory");
		in->dextents = grown;
		l->cap = cap;
	}
	if (!c->nr_dextents)
		c->first_dextent = in->nr_dextents;
	in->dextents[in->nr_dextents++] = (struct bx_snap_dextent){ start, len };
	c->nr_dextents++;
	return 0;
}

static int mounted_cb(void *arg, const struct btrfs_ioctl_search_header *sh, const void *item)
{
	(void)item;
	return add_dextent(arg, sh->objectid, sh->offset);
}

/* The address range that holds every data chunk: [*lo, *hi). */
static bool data_range(const struct bx_snapshot *in, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < in->nr_chunks; i++) {
		const struct bx_snap_chunk *c = &in->chunks[i];

		if (!(c->type & BTRFS_BLOCK_GROUP_DATA))
			continue;
		if (c->logical < *lo)
			*lo = c->logical;
		if (c->logical + c->length > *hi)
			*hi = c->logical + c->length;
	}
	return *hi > *lo;
}

static int read_mounted(struct dext_list *l, uint64_t lo, uint64_t hi)
{
	int fd = open(l->in->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return bx_error(-errno, "%s: %m", l->in->path);
	ret = bx_mounted_search_tree(fd, l->in->path, BTRFS_EXTENT_TREE_OBJECTID, lo, hi - 1,
				     BTRFS_EXTENT_ITEM_KEY, mounted_cb, l);
	close(fd);
	return ret;
}

static int read_offline(struct dext_list *l, uint64_t lo, uint64_t hi)
{
	char *paths[] = { l->in->path };
	struct btrfs_key key = { lo, BTRFS_EXTENT_ITEM_KEY, 0 };
	struct bx_root root;
	struct bx_path path;
	struct bx_fs *fs;
	int ret = bx_fs_open(&fs, paths, 1, BX_OPEN_DEGRADED);

	if (ret)
		return ret;
	ret = bx_find_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &root);
	if (ret) {
		bx_fs_close(fs);
		return bx_error_wrap(ret, "the extent tree");
	}
	bx_path_init(&path, fs->readahead);
	ret = bx_search(fs, &root, &key, &path);
	if (ret >= 0)
		ret = bx_path_settle(fs, &path);
	for (; ret == 0; ret = bx_next_item(fs, &path)) {
		struct btrfs_key found;

		bx_item_key(bx_path_leaf(&path), path.slots[0], &found);
		if (found.objectid >= hi)
			break;
		if (found.type == BTRFS_EXTENT_ITEM_KEY) {
			ret = add_dextent(l, found.objectid, found.offset);
			if (ret)
				break;
		}
	}
	bx_path_release(&path);
	bx_fs_close(fs);
	return ret < 0 ? ret : 0;
}

int bx_snapshot_read_dextents(struct bx_snapshot *in)
{
	struct dext_list l = { in, 0 };
	uint64_t lo, hi;
	int ret;

	if (in->dextents_known)
		return 0;
	for (size_t i = 0; i < in->nr_chunks; i++)
		in->chunks[i].first_dextent = in->chunks[i].nr_dextents = 0;
	in->nr_dextents = 0;
	ret = data_range(in, &lo, &hi) ?
	      (in->mounted ? read_mounted(&l, lo, hi) : read_offline(&l, lo, hi)) : 0;
	if (ret) {
		free(in->dextents);
		in->dextents = NULL;
		in->nr_dextents = 0;
		return ret;
	}
	in->dextents_known = true;
	return 0;
}
