/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "disk/btree.h"
#include "disk/dev-item.h"
#include "disk/write.h"

/* Finds the DEV_ITEM of @devid; on success the path points at it. */
static int find_dev_item(struct bx_fs *fs, uint64_t devid, struct bx_path *path)
{
	struct btrfs_key key = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, devid };
	struct bx_root root;
	int ret;

	bx_find_root(fs, BTRFS_CHUNK_TREE_OBJECTID, &root);
	ret = bx_search(fs, &root, &key, path);
	if (ret > 0)
		return bx_error(-ENOENT, "devid %llu has no device item", (unsigned long long)devid);
	if (ret < 0)
		return ret;
	if (bx_item_size(bx_path_leaf(path), path->slots[0]) < sizeof(struct btrfs_dev_item))
		return bx_error(-EUCLEAN, "device item of devid %llu is too small",
				(unsigned long long)devid);
	return 0;
}

int bx_read_dev_item(struct bx_fs *fs, uint64_t devid, struct btrfs_dev_item *item)
{
	struct bx_path path;
	int ret;

	bx_path_init(&path, false);
	ret = find_dev_item(fs, devid, &path);
	if (!ret)
		memcpy(item, bx_item_ptr(bx_path_leaf(&path), path.slots[0]), sizeof(*item));
	bx_path_release(&path);
	return ret;
}

int bx_for_each_dev_item(struct bx_fs *fs,
			 int (*fn)(void *arg, const struct btrfs_dev_item *item), void *arg)
{
	struct btrfs_key key = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, 0 };
	struct bx_root root;
	struct bx_path path;
	int ret;

	bx_find_root(fs, BTRFS_CHUNK_TREE_OBJECTID, &root);
	bx_path_init(&path, false);
	ret = bx_search(fs, &root, &key, &path);
	if (ret >= 0)
		ret = bx_path_settle(fs, &path);
	for (; ret == 0; ret = bx_next_item(fs, &path)) {
		struct bx_eb *leaf = bx_path_leaf(&path);
		struct btrfs_key found;

		bx_item_key(leaf, path.slots[0], &found);
		if (found.objectid != BTRFS_DEV_ITEMS_OBJECTID || found.type != BTRFS_DEV_ITEM_KEY)
			break;
		if (bx_item_size(leaf, path.slots[0]) < sizeof(struct btrfs_dev_item))
			continue;
		ret = fn(arg, bx_item_ptr(leaf, path.slots[0]));
		if (ret)
			break;
	}
	bx_path_release(&path);
	return ret < 0 ? ret : 0;
}

static void set_super_dev_type(struct btrfs_super_block *sb, void *arg)
{
	sb->dev_item.type = htole64(*(const uint64_t *)arg);
}

/* Rewrites the leaf holding the DEV_ITEM with the new type, every mirror. */
static int write_dev_item_leaf(struct bx_fs *fs, struct bx_path *path, uint64_t type)
{
	struct bx_eb *leaf = bx_path_leaf(path);
	size_t item_offset = (const uint8_t *)bx_item_ptr(leaf, path->slots[0]) - leaf->data;
	uint8_t *block = malloc(fs->nodesize);
	uint64_t le_type = htole64(type);
	int ret;

	if (!block)
		return bx_error(-ENOMEM, "out of memory");
	memcpy(block, leaf->data, fs->nodesize);
	memcpy(block + item_offset + offsetof(struct btrfs_dev_item, type), &le_type,
	       sizeof(le_type));
	ret = bx_write_tree_block(fs, block, leaf->start);
	if (!ret)
		memcpy(leaf->data, block, fs->nodesize);
	free(block);
	return ret;
}

int bx_set_dev_type(struct bx_fs *fs, uint64_t devid, uint64_t type)
{
	struct bx_device *dev = bx_fs_device(fs, devid);
	struct bx_path path;
	int ret;

	if (!dev)
		return bx_error(-ENODEV, "devid %llu is missing", (unsigned long long)devid);
	bx_path_init(&path, false);
	ret = find_dev_item(fs, devid, &path);
	if (!ret)
		ret = write_dev_item_leaf(fs, &path, type);
	bx_path_release(&path);
	if (ret)
		return bx_error_wrap(ret, "chunk tree device item of devid %llu",
				     (unsigned long long)devid);
	ret = bx_write_super_copies(fs, dev, set_super_dev_type, &type);
	if (ret)
		return bx_error_wrap(ret, "%s", dev->path);
	dev->item.type = htole64(type);
	return 0;
}
