/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scrub planning: which sectors of a 64 KiB window hold what, from forward
 * cursors over the extent tree (EXTENT_ITEM / METADATA_ITEM) and the csum
 * tree (EXTENT_CSUM items), both walked in logical order with the path's
 * forward readahead. Memory: two paths, whatever the tree sizes.
 */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "scrub/scrub-internal.h"

static bool is_extent_key(uint8_t type)
{
	return type == BTRFS_EXTENT_ITEM_KEY || type == BTRFS_METADATA_ITEM_KEY;
}

/* Decodes the item under the extent cursor; 1 if it is an extent, 0 to skip it. */
static int ext_decode(struct scrub_planner *p, struct btrfs_key *key)
{
	struct bx_eb *leaf = bx_path_leaf(&p->ext_path);
	int slot = p->ext_path.slots[0];
	const struct btrfs_extent_item *ei;
	uint32_t size = bx_item_size(leaf, slot);

	if (!is_extent_key(key->type))
		return 0;
	if (size < sizeof(*ei))
		return bx_error(-EUCLEAN, "extent item %llu is too small (%u bytes)",
				(unsigned long long)key->objectid, size);
	ei = bx_item_ptr(leaf, slot);
	p->ext.start = key->objectid;
	p->ext.flags = le64toh(ei->flags);
	p->ext.generation = le64toh(ei->generation);
	p->ext.level = -1;
	if (key->type == BTRFS_METADATA_ITEM_KEY) {
		p->ext.len = p->fs->nodesize;
		p->ext.level = (int)key->offset;
		p->ext.flags |= BTRFS_EXTENT_FLAG_TREE_BLOCK;
	} else {
		p->ext.len = key->offset;
		if ((p->ext.flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) &&
		    size >= sizeof(*ei) + sizeof(struct btrfs_tree_block_info))
			p->ext.level = ((const struct btrfs_tree_block_info *)(ei + 1))->level;
	}
	if (!p->ext.len)
		return 0;
	return 1;
}

/* Moves to the next extent item of the chunk (or the first, after a search). */
static int ext_settle(struct scrub_planner *p, bool step)
{
	for (;;) {
		struct btrfs_key key;
		int ret = step ? bx_next_item(p->fs, &p->ext_path) : bx_path_settle(p->fs, &p->ext_path);

		step = true;
		if (ret < 0)
			return bx_error_wrap(ret, "reading the extent tree");
		if (ret > 0) {
			p->ext_end = true;
			return 0;
		}
		bx_item_key(bx_path_leaf(&p->ext_path), p->ext_path.slots[0], &key);
		if (key.objectid >= p->chunk_end) {
			p->ext_end = true;
			return 0;
		}
		ret = ext_decode(p, &key);
		if (ret < 0)
			return ret;
		if (ret)
			return 0;
	}
}

static int csum_settle(struct scrub_planner *p, bool step)
{
	size_t csum_size = p->fs->csum_size;

	for (;;) {
		struct bx_eb *leaf;
		struct btrfs_key key;
		uint32_t size;
		int ret = step ? bx_next_item(p->fs, &p->csum_path) :
				 bx_path_settle(p->fs, &p->csum_path);

		step = true;
		if (ret < 0)
			return bx_error_wrap(ret, "reading the csum tree");
		if (ret > 0) {
			p->csum_end = true;
			return 0;
		}
		leaf = bx_path_leaf(&p->csum_path);
		bx_item_key(leaf, p->csum_path.slots[0], &key);
		if (key.objectid != BTRFS_EXTENT_CSUM_OBJECTID || key.type != BTRFS_EXTENT_CSUM_KEY) {
			if (key.objectid > BTRFS_EXTENT_CSUM_OBJECTID ||
			    (key.objectid == BTRFS_EXTENT_CSUM_OBJECTID &&
			     key.type > BTRFS_EXTENT_CSUM_KEY)) {
				p->csum_end = true;
				return 0;
			}
			continue;
		}
		if (key.offset >= p->chunk_end) {
			p->csum_end = true;
			return 0;
		}
		size = bx_item_size(leaf, p->csum_path.slots[0]);
		p->csum_start = key.offset;
		p->csum_stop = key.offset + (uint64_t)(size / csum_size) * p->fs->sectorsize;
		p->csum_data = bx_item_ptr(leaf, p->csum_path.slots[0]);
		if (p->csum_stop > p->csum_start)
			return 0;
	}
}

int scrub_planner_begin(struct scrub_planner *p, const struct bx_chunk *chunk)
{
	struct btrfs_key key = { chunk->logical, 0, 0 };
	int ret;

	p->chunk_start = chunk->logical;
	p->chunk_end = chunk->logical + chunk->length;
	p->data_chunk = (chunk->type & BTRFS_BLOCK_GROUP_DATA) && p->have_csum_root &&
			!p->tree_only;
	p->ext_end = false;
	p->csum_end = true;
	bx_path_init(&p->ext_path, p->reada);
	bx_path_init(&p->csum_path, p->reada);
	/* Each chunk is planned on its own: what lies past it is another plan's. */
	bx_path_bound_readahead(&p->ext_path, &(struct btrfs_key){ p->chunk_end, 0, 0 });
	bx_path_bound_readahead(&p->csum_path, &(struct btrfs_key){ BTRFS_EXTENT_CSUM_OBJECTID,
								    BTRFS_EXTENT_CSUM_KEY,
								    p->chunk_end });
	ret = bx_search(p->fs, &p->extent_root, &key, &p->ext_path);
	if (ret < 0)
		return bx_error_wrap(ret, "searching the extent tree");
	ret = ext_settle(p, false);
	if (ret || !p->data_chunk)
		return ret;
	/*
	 * A csum item that starts before the chunk may reach into it: start
	 * the cursor one maximal item earlier and let it skip forward.
	 */
	{
		uint64_t span = (uint64_t)(p->fs->nodesize / p->fs->csum_size) * p->fs->sectorsize;
		struct btrfs_key ckey = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY,
					  chunk->logical > span ? chunk->logical - span : 0 };

		p->csum_end = false;
		ret = bx_search(p->fs, &p->csum_root, &ckey, &p->csum_path);
		if (ret < 0)
			return bx_error_wrap(ret, "searching the csum tree");
		return csum_settle(p, false);
	}
}

void scrub_planner_end(struct scrub_planner *p)
{
	bx_path_release(&p->ext_path);
	bx_path_release(&p->csum_path);
}

/* Copies the checksum of the data sector at @logical; false when it has none. */
static int csum_lookup(struct scrub_planner *p, uint64_t logical, uint8_t *out, bool *found)
{
	*found = false;
	while (!p->csum_end && p->csum_stop <= logical) {
		int ret = csum_settle(p, true);

		if (ret)
			return ret;
	}
	if (p->csum_end || p->csum_start > logical)
		return 0;
	memcpy(out, p->csum_data + (logical - p->csum_start) / p->fs->sectorsize * p->fs->csum_size,
	       p->fs->csum_size);
	*found = true;
	return 0;
}

static int mark_extent(struct scrub_planner *p, struct scrub_window *w)
{
	const struct scrub_extent *e = &p->ext;
	uint32_t ss = p->fs->sectorsize;
	uint64_t from = e->start > w->logical ? e->start : w->logical;
	uint64_t to = e->start + e->len < w->logical + w->len ? e->start + e->len :
							       w->logical + w->len;
	bool tree = e->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK;

	if (!tree && (p->tree_only || !(e->flags & BTRFS_EXTENT_FLAG_DATA)))
		return 0;
	if (tree)
		w->tree_extents++;
	else
		w->data_extents++;
	/* Extents are sector aligned; a stray unaligned one is rounded outward. */
	from -= (from - w->logical) % ss;
	for (uint64_t l = from; l < to; l += ss) {
		uint32_t i = (uint32_t)((l - w->logical) / ss);
		struct scrub_sector *sec = &w->sec[i];

		if (sec->kind != SEC_NONE)
			continue;
		sec->logical = l;
		if (i < w->first)
			w->first = i;
		if (i + 1 > w->last)
			w->last = i + 1;
		if (tree) {
			sec->kind = l == e->start ? SEC_TREE_HEAD : SEC_TREE;
			sec->tree.generation = e->generation;
			sec->tree.level = (uint64_t)e->level;
			w->tree_sectors++;
			continue;
		}
		sec->extent.start = e->start;
		sec->extent.len = e->len;
		sec->kind = SEC_DATA;
		w->data_sectors++;
		if (p->data_chunk) {
			bool found;
			int ret = csum_lookup(p, l, w->csum + i * BTRFS_CSUM_SIZE, &found);

			if (ret)
				return ret;
			if (found)
				sec->kind = SEC_DATA_CSUM;
		}
		if (sec->kind == SEC_DATA)
			w->nocsum_sectors++;
	}
	return 0;
}

int scrub_planner_window(struct scrub_planner *p, uint64_t logical, uint32_t len,
			 struct scrub_window *w)
{
	uint64_t end = logical + len;
	int ret;

	w->logical = logical;
	w->len = len;
	w->nr_sectors = len / p->fs->sectorsize;
	w->first = w->nr_sectors;
	w->last = 0;
	w->data_extents = w->tree_extents = 0;
	w->data_sectors = w->tree_sectors = w->nocsum_sectors = 0;
	for (uint32_t i = 0; i < w->nr_sectors; i++)
		w->sec[i].kind = SEC_NONE;
	while (!p->ext_end && p->ext.start + p->ext.len <= logical) {
		ret = ext_settle(p, true);
		if (ret)
			return ret;
	}
	while (!p->ext_end && p->ext.start < end) {
		ret = mark_extent(p, w);
		if (ret)
			return ret;
		if (p->ext.start + p->ext.len > end)
			break;
		ret = ext_settle(p, true);
		if (ret)
			return ret;
	}
	if (w->first > w->last)
		w->first = w->last = 0;
	return 0;
}
