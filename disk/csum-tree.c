/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "disk/csum-tree.h"

void bx_csum_cursor_init(struct bx_csum_cursor *c, struct bx_fs *fs)
{
	memset(c, 0, sizeof(*c));
	c->fs = fs;
	c->have_root = !bx_find_root(fs, BTRFS_CSUM_TREE_OBJECTID, &c->root);
	if (!c->have_root)
		bx_error_clear();  /* no csum tree: every lookup finds nothing */
}

void bx_csum_cursor_release(struct bx_csum_cursor *c)
{
	free(c->data);
	c->data = NULL;
}

/* Keeps the csum item at the path as the cached range. */
static int cache_item(struct bx_csum_cursor *c, const struct bx_eb *leaf, int slot,
		      uint64_t start)
{
	uint32_t size = bx_item_size(leaf, slot);
	size_t n = size / c->fs->csum_size;

	if (size > c->cap) {
		uint8_t *grown = realloc(c->data, size);

		if (!grown)
			return bx_error(-ENOMEM, "out of memory");
		c->data = grown;
		c->cap = size;
	}
	memcpy(c->data, bx_item_ptr(leaf, slot), n * c->fs->csum_size);
	c->start = start;
	c->end = start + (uint64_t)n * c->fs->sectorsize;
	return 0;
}

int bx_csum_lookup(struct bx_csum_cursor *c, uint64_t logical, uint8_t *out)
{
	/* An item covers at most a node's worth of checksums: start that far back. */
	uint64_t span = (uint64_t)(c->fs->nodesize / c->fs->csum_size) * c->fs->sectorsize;
	struct btrfs_key key = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY,
				 logical > span ? logical - span : 0 };
	struct bx_path path;
	int ret;

	if (!c->have_root)
		return 0;
	if (logical < c->start || logical >= c->end) {
		c->start = c->end = 0;
		bx_path_init(&path, false);
		ret = bx_search(c->fs, &c->root, &key, &path);
		if (ret >= 0)
			ret = bx_path_settle(c->fs, &path);
		for (; ret == 0; ret = bx_next_item(c->fs, &path)) {
			struct bx_eb *leaf = bx_path_leaf(&path);
			uint64_t items_end;
			struct btrfs_key found;

			bx_item_key(leaf, path.slots[0], &found);
			if (found.objectid != BTRFS_EXTENT_CSUM_OBJECTID ||
			    found.type != BTRFS_EXTENT_CSUM_KEY || found.offset > logical)
				break;
			items_end = found.offset + (uint64_t)(bx_item_size(leaf, path.slots[0]) /
							      c->fs->csum_size) * c->fs->sectorsize;
			if (logical < items_end) {
				ret = cache_item(c, leaf, path.slots[0], found.offset);
				break;
			}
		}
		bx_path_release(&path);
		if (ret < 0)
			return bx_error_wrap(ret, "reading the csum tree");
		if (logical < c->start || logical >= c->end)
			return 0;
	}
	memcpy(out, c->data + (logical - c->start) / c->fs->sectorsize * c->fs->csum_size,
	       c->fs->csum_size);
	return 1;
}
