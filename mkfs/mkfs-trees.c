/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* B-trees built in memory: collect, sort, pack, render. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/csum.h"
#include "mkfs/mkfs-trees.h"

void bx_tb_init(struct bx_tree_build *tb, uint64_t owner)
{
	memset(tb, 0, sizeof(*tb));
	tb->owner = owner;
}

void bx_tb_reset(struct bx_tree_build *tb)
{
	for (size_t i = 0; i < tb->nr_items; i++)
		free(tb->items[i].data);
	tb->nr_items = 0;
	free(tb->blocks);
	tb->blocks = NULL;
	tb->nr_blocks = 0;
	tb->level = 0;
	tb->sorted = 0;
}

void bx_tb_release(struct bx_tree_build *tb)
{
	bx_tb_reset(tb);
	free(tb->items);
	tb->items = NULL;
	tb->items_cap = 0;
}

int bx_tb_add(struct bx_tree_build *tb, const struct btrfs_key *key, const void *data,
	      uint32_t size)
{
	struct bx_tb_item *item;

	if (tb->nr_items == tb->items_cap) {
		size_t cap = tb->items_cap ? tb->items_cap * 2 : 32;
		struct bx_tb_item *items = realloc(tb->items, cap * sizeof(*items));

		if (!items)
			return bx_error(-ENOMEM, "out of memory");
		tb->items = items;
		tb->items_cap = cap;
	}
	item = &tb->items[tb->nr_items];
	item->key = *key;
	item->size = size;
	item->data = NULL;
	if (size) {
		item->data = malloc(size);
		if (!item->data)
			return bx_error(-ENOMEM, "out of memory");
		memcpy(item->data, data, size);
	}
	tb->nr_items++;
	tb->sorted = 0;
	return 0;
}

static int item_cmp(const void *a, const void *b)
{
	return btrfs_key_cmp(&((const struct bx_tb_item *)a)->key,
			     &((const struct bx_tb_item *)b)->key);
}

static int push_block(struct bx_tree_build *tb, size_t *cap, const struct bx_tb_block *blk)
{
	if (tb->nr_blocks == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct bx_tb_block *blocks = realloc(tb->blocks, ncap * sizeof(*blocks));

		if (!blocks)
			return bx_error(-ENOMEM, "out of memory");
		tb->blocks = blocks;
		*cap = ncap;
	}
	tb->blocks[tb->nr_blocks++] = *blk;
	return 0;
}

static int pack_leaves(struct bx_tree_build *tb, uint32_t nodesize, size_t *cap)
{
	const uint32_t space = bx_tb_leaf_space(nodesize);
	struct bx_tb_block blk = { 0 };
	uint32_t used = 0;

	if (!tb->nr_items)
		return push_block(tb, cap, &blk);
	for (size_t i = 0; i < tb->nr_items; i++) {
		uint32_t need = (uint32_t)sizeof(struct btrfs_item) + tb->items[i].size;
		int ret;

		if (need > space)
			return bx_error(-E2BIG, "item of %u bytes does not fit a %u byte leaf",
					tb->items[i].size, nodesize);
		if (blk.nr && used + need > space) {
			ret = push_block(tb, cap, &blk);
			if (ret)
				return ret;
			blk.nr = 0;
			used = 0;
		}
		if (!blk.nr) {
			blk.first = i;
			blk.first_key = tb->items[i].key;
		}
		blk.nr++;
		used += need;
	}
	return push_block(tb, cap, &blk);
}

int bx_tb_layout(struct bx_tree_build *tb, uint32_t nodesize)
{
	const size_t per_node = bx_tb_leaf_space(nodesize) / sizeof(struct btrfs_key_ptr);
	size_t cap = 0, level_start = 0, level_end;
	int ret;

	free(tb->blocks);
	tb->blocks = NULL;
	tb->nr_blocks = 0;
	tb->level = 0;
	if (!tb->sorted && tb->nr_items) {
		qsort(tb->items, tb->nr_items, sizeof(*tb->items), item_cmp);
		tb->sorted = 1;
	}
	for (size_t i = 1; i < tb->nr_items; i++)
		if (!btrfs_key_cmp(&tb->items[i - 1].key, &tb->items[i].key))
			return bx_error(-EEXIST, "tree %llu: key (%llu %u %llu) added twice",
					(unsigned long long)tb->owner,
					(unsigned long long)tb->items[i].key.objectid,
					tb->items[i].key.type,
					(unsigned long long)tb->items[i].key.offset);
	ret = pack_leaves(tb, nodesize, &cap);
	if (ret)
		return ret;
	level_end = tb->nr_blocks;
	/* Nodes, one level at a time, until a level has a single block. */
	while (level_end - level_start > 1) {
		tb->level++;
		if (tb->level >= BTRFS_MAX_LEVEL)
			return bx_error(-E2BIG, "tree %llu needs more than %d levels",
					(unsigned long long)tb->owner, BTRFS_MAX_LEVEL);
		for (size_t child = level_start; child < level_end; child += per_node) {
			struct bx_tb_block blk = {
				.level = tb->level,
				.first = child,
				.nr = level_end - child < per_node ? level_end - child : per_node,
				.first_key = tb->blocks[child].first_key,
			};

			ret = push_block(tb, &cap, &blk);
			if (ret)
				return ret;
		}
		level_start = level_end;
		level_end = tb->nr_blocks;
	}
	return 0;
}

static void put_disk_key(struct btrfs_disk_key *dk, const struct btrfs_key *key)
{
	dk->objectid = htole64(key->objectid);
	dk->type = key->type;
	dk->offset = htole64(key->offset);
}

int bx_tb_render(const struct bx_tree_build *tb, size_t index, const struct bx_tb_header *hdr,
		 uint8_t *buf)
{
	const struct bx_tb_block *blk = &tb->blocks[index];
	struct btrfs_header *h = (struct btrfs_header *)buf;
	uint8_t *body = buf + sizeof(*h);

	memset(buf, 0, hdr->nodesize);
	memcpy(h->fsid, hdr->fsid, BTRFS_FSID_SIZE);
	h->bytenr = htole64(blk->bytenr);
	h->flags = htole64(BX_HEADER_FLAG_WRITTEN | BX_HEADER_BACKREF_MIXED);
	memcpy(h->chunk_tree_uuid, hdr->chunk_tree_uuid, BTRFS_UUID_SIZE);
	h->generation = htole64(hdr->generation);
	h->owner = htole64(tb->owner);
	h->nritems = htole32((uint32_t)blk->nr);
	h->level = (uint8_t)blk->level;
	if (blk->level == 0) {
		struct btrfs_item *items = (struct btrfs_item *)body;
		uint32_t end = bx_tb_leaf_space(hdr->nodesize);

		for (size_t i = 0; i < blk->nr; i++) {
			const struct bx_tb_item *it = &tb->items[blk->first + i];

			end -= it->size;
			put_disk_key(&items[i].key, &it->key);
			items[i].offset = htole32(end);
			items[i].size = htole32(it->size);
			if (it->size)
				memcpy(body + end, it->data, it->size);
		}
	} else {
		struct btrfs_key_ptr *ptrs = (struct btrfs_key_ptr *)body;

		for (size_t i = 0; i < blk->nr; i++) {
			const struct bx_tb_block *child = &tb->blocks[blk->first + i];

			put_disk_key(&ptrs[i].key, &child->first_key);
			ptrs[i].blockptr = htole64(child->bytenr);
			ptrs[i].generation = htole64(hdr->generation);
		}
	}
	if (btrfsx_csum(hdr->csum_type, buf + BTRFS_CSUM_SIZE, hdr->nodesize - BTRFS_CSUM_SIZE,
			h->csum))
		return bx_error(-EINVAL, "unknown checksum type %u", hdr->csum_type);
	return 0;
}
